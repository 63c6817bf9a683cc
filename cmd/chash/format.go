package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// table writes aligned columns. A header starting with '>' names a column
// aligned to the right, as numbers are.
type table struct {
	head  []string
	right []bool
	rows  [][]string
}

func newTable(head ...string) *table {
	t := &table{right: make([]bool, len(head))}
	for i, h := range head {
		t.right[i] = strings.HasPrefix(h, ">")
		t.head = append(t.head, strings.TrimPrefix(h, ">"))
	}
	return t
}

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) write(w io.Writer) {
	width := make([]int, len(t.head))
	for _, r := range append([][]string{t.head}, t.rows...) {
		for i, c := range r {
			if i < len(width) {
				width[i] = max(width[i], utf8.RuneCountInString(c))
			}
		}
	}
	for _, r := range append([][]string{t.head}, t.rows...) {
		var b strings.Builder
		for i, c := range r {
			if i >= len(width) {
				break
			}
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(c))
			switch {
			case t.right[i]:
				b.WriteString(pad + c)
			case i < len(r)-1:
				b.WriteString(c + pad)
			default:
				b.WriteString(c)
			}
			if i < len(r)-1 {
				b.WriteString("  ")
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}

// commas formats n with thousands separators: 1,000,000.
func commas(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// percent prints a fraction as a percentage with two decimals, or, for a
// fraction too small for them (but not zero), with two significant digits:
// 5.0e-05 is "0.0050%", not "0.00%".
func percent(f float64) string {
	p := 100 * f
	if p == 0 || math.Abs(p) >= 0.01 || math.IsNaN(p) || math.IsInf(p, 0) {
		return fmt.Sprintf("%.2f%%", p)
	}
	digits := 1 - int(math.Floor(math.Log10(math.Abs(p))))
	return fmt.Sprintf("%.*f%%", digits, p)
}

func bytesize(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	default:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
}

// quantity is a positive number flag that takes 200000, 200k, 1.5M or
// 1,000,000.
type quantity float64

func (q *quantity) String() string { return strconv.FormatFloat(float64(*q), 'f', -1, 64) }

func (q *quantity) Set(s string) error {
	t := strings.NewReplacer(",", "", "_", "").Replace(strings.TrimSpace(s))
	mult := 1.0
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 'k', 'K':
			mult, t = 1e3, t[:n-1]
		case 'm', 'M':
			mult, t = 1e6, t[:n-1]
		case 'g', 'G':
			mult, t = 1e9, t[:n-1]
		}
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
		return fmt.Errorf("want a number such as 200000, 200k or 1.5M")
	}
	*q = quantity(f * mult)
	return nil
}

// fraction is a flag in [0, 1] that takes 0.94 or 94%.
type fraction float64

func (f *fraction) String() string { return strconv.FormatFloat(float64(*f), 'f', -1, 64) }

func (f *fraction) Set(s string) error {
	t := strings.TrimSpace(s)
	pct := strings.HasSuffix(t, "%")
	v, err := strconv.ParseFloat(strings.TrimSuffix(t, "%"), 64)
	if pct {
		v /= 100
	}
	if err != nil || !(v >= 0 && v <= 1) {
		return fmt.Errorf("want a fraction such as 0.94 or a percentage such as 94%%")
	}
	*f = fraction(v)
	return nil
}

// progressAfter is how long work runs before progress is shown.
var progressAfter = time.Second

// progress shows on stderr what a long piece of work is doing, once it has
// taken longer than progressAfter: on a terminal by rewriting one line,
// elsewhere (a log) by one line each time the step changes.
type progress struct {
	w     io.Writer
	tty   bool
	mu    sync.Mutex
	msg   string
	last  string // the message last shown
	shown bool
	start time.Time
	stop  chan struct{}
	done  chan struct{}
}

func startProgress(w io.Writer) *progress {
	tty := false
	if f, ok := w.(*os.File); ok {
		if fi, err := f.Stat(); err == nil {
			tty = fi.Mode()&os.ModeCharDevice != 0
		}
	}
	return newProgress(w, tty)
}

func newProgress(w io.Writer, tty bool) *progress {
	p := &progress{w: w, tty: tty, start: time.Now(), stop: make(chan struct{}), done: make(chan struct{})}
	go p.loop()
	return p
}

func (p *progress) loop() {
	defer close(p.done)
	wait := time.NewTimer(progressAfter)
	defer wait.Stop()
	select {
	case <-p.stop:
		return
	case <-wait.C:
	}
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		p.show()
		select {
		case <-p.stop:
			return
		case <-tick.C:
		}
	}
}

func (p *progress) show() {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.msg == "": // no step named yet
		return
	case p.tty:
		fmt.Fprintf(p.w, "\r%-60s", fmt.Sprintf("%s (%.1fs)", p.msg, time.Since(p.start).Seconds()))
	case p.msg != p.last:
		fmt.Fprintf(p.w, "chash: %s (%.1fs)\n", p.msg, time.Since(p.start).Seconds())
	}
	p.last, p.shown = p.msg, true
}

// set names the step in progress.
func (p *progress) set(format string, a ...any) {
	p.mu.Lock()
	p.msg = fmt.Sprintf(format, a...)
	p.mu.Unlock()
}

// finish stops the display and clears its line on a terminal.
func (p *progress) finish() {
	close(p.stop)
	<-p.done
	if p.shown && p.tty {
		fmt.Fprintf(p.w, "\r%60s\r", "")
	}
}
