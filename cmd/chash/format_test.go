package main

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestQuantityAndFraction(t *testing.T) {
	for in, want := range map[string]float64{"200000": 2e5, "200k": 2e5, "1.5M": 1.5e6, "1,000,000": 1e6, "25_000": 25e3, "2G": 2e9} {
		var q quantity
		if assert.NoError(t, q.Set(in), in) {
			assert.Equal(t, want, float64(q), in)
		}
	}
	for _, in := range []string{"", "k", "-1", "NaN", "Inf", "12x"} {
		var q quantity
		assert.Error(t, q.Set(in), "quantity %q accepted", in)
	}
	for in, want := range map[string]float64{"0.94": 0.94, "94%": 0.94, "1": 1, "0": 0} {
		var f fraction
		if assert.NoError(t, f.Set(in), in) {
			assert.Equal(t, want, float64(f), in)
		}
	}
	for _, in := range []string{"94", "101%", "-0.1", "NaN", "high"} {
		var f fraction
		assert.Error(t, f.Set(in), "fraction %q accepted", in)
	}
}

func TestFormatting(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 74667: "74,667", -1234567: "-1,234,567"} {
		assert.Equal(t, want, commas(n), "commas(%d)", n)
	}
	for n, want := range map[int64]string{272: "272 B", 37069: "36.2 KiB", 5 << 20: "5.0 MiB"} {
		assert.Equal(t, want, bytesize(n), "bytesize(%d)", n)
	}
	var b bytes.Buffer
	tb := newTable("name", ">n", "note")
	tb.add("a", "1", "x")
	tb.add("long name", "1000", "")
	tb.write(&b)
	want := "name          n  note\na             1  x\nlong name  1000\n"
	assert.Equal(t, want, b.String())
}

func TestProgress(t *testing.T) {
	defer func(d time.Duration) { progressAfter = d }(progressAfter)
	var b bytes.Buffer
	progressAfter = time.Hour
	p := startProgress(&b)
	p.set("quick")
	p.finish()
	assert.Zero(t, b.Len(), "quick work printed progress %q", b.String())
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
		if tty {
			assert.True(t, strings.HasPrefix(out, "\rslow step ("), "terminal: progress %q", out)
			assert.True(t, strings.HasSuffix(out, "\r"), "terminal: progress %q", out)
		} else {
			assert.True(t, strings.HasPrefix(out, "chash: slow step ("), "log: progress %q", out)
			assert.Equal(t, 1, strings.Count(out, "\n"), "log: progress %q, want one line", out)
			assert.NotContains(t, out, "\r", "log: progress")
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

// TestPercentSmall: fractions below a hundredth of a percent keep their
// digits (20,000 -> 20,001 nodes moves 5.0e-05 of the keys, printed as
// 0.00% before).
func TestPercentSmall(t *testing.T) {
	for f, want := range map[float64]string{
		0: "0.00%", 1: "100.00%", 0.0909: "9.09%", 0.0001: "0.01%",
		5.0e-05: "0.0050%", 4.99e-05: "0.0050%", 1.234e-07: "0.000012%", -5.0e-05: "-0.0050%",
	} {
		assert.Equal(t, want, percent(f), "%v", f)
	}
}
