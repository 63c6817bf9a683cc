package main

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestQuantityAndFraction(t *testing.T) {
	for in, want := range map[string]float64{"200000": 2e5, "200k": 2e5, "1.5M": 1.5e6, "1,000,000": 1e6, "25_000": 25e3, "2G": 2e9} {
		var q quantity
		if err := q.Set(in); err != nil || float64(q) != want {
			t.Errorf("quantity %q = %v, %v; want %v", in, q, err, want)
		}
	}
	for _, in := range []string{"", "k", "-1", "NaN", "Inf", "12x"} {
		var q quantity
		if q.Set(in) == nil {
			t.Errorf("quantity %q accepted", in)
		}
	}
	for in, want := range map[string]float64{"0.94": 0.94, "94%": 0.94, "1": 1, "0": 0} {
		var f fraction
		if err := f.Set(in); err != nil || float64(f) != want {
			t.Errorf("fraction %q = %v, %v; want %v", in, f, err, want)
		}
	}
	for _, in := range []string{"94", "101%", "-0.1", "NaN", "high"} {
		var f fraction
		if f.Set(in) == nil {
			t.Errorf("fraction %q accepted", in)
		}
	}
}

func TestFormatting(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 74667: "74,667", -1234567: "-1,234,567"} {
		if got := commas(n); got != want {
			t.Errorf("commas(%d) = %q, want %q", n, got, want)
		}
	}
	for n, want := range map[int64]string{272: "272 B", 37069: "36.2 KiB", 5 << 20: "5.0 MiB"} {
		if got := bytesize(n); got != want {
			t.Errorf("bytesize(%d) = %q, want %q", n, got, want)
		}
	}
	var b bytes.Buffer
	tb := newTable("name", ">n", "note")
	tb.add("a", "1", "x")
	tb.add("long name", "1000", "")
	tb.write(&b)
	want := "name          n  note\na             1  x\nlong name  1000\n"
	if b.String() != want {
		t.Errorf("table:\n%q\nwant\n%q", b.String(), want)
	}
}

func TestProgress(t *testing.T) {
	defer func(d time.Duration) { progressAfter = d }(progressAfter)
	var b bytes.Buffer
	progressAfter = time.Hour
	p := startProgress(&b)
	p.set("quick")
	p.finish()
	if b.Len() != 0 {
		t.Errorf("quick work printed progress %q", b.String())
	}
	progressAfter = 0
	for _, tty := range []bool{false, true} {
		var lb lockedBuffer
		p = newProgress(&lb, tty)
		p.set("slow step")
		// Wait for a tick or two, however loaded the machine is.
		for deadline := time.Now().Add(10 * time.Second); !strings.Contains(lb.String(), "slow step") && time.Now().Before(deadline); {
			time.Sleep(20 * time.Millisecond)
		}
		time.Sleep(250 * time.Millisecond)
		p.finish()
		out := lb.String()
		if tty && (!strings.HasPrefix(out, "\rslow step (") || !strings.HasSuffix(out, "\r")) {
			t.Errorf("terminal: progress %q", out)
		}
		if !tty && (!strings.HasPrefix(out, "chash: slow step (") || strings.Count(out, "\n") != 1 || strings.Contains(out, "\r")) {
			t.Errorf("log: progress %q, want one line", out)
		}
	}
}

// lockedBuffer is a bytes.Buffer that the progress goroutine can write
// while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
