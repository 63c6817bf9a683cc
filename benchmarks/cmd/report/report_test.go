package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseMedian(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bench.txt")
	text := `goos: linux
BenchmarkLookup/ring/chash/nodes=64/key=13-2   100   30 ns/op   0 B/op   0 allocs/op
BenchmarkLookup/ring/chash/nodes=64/key=13-2   100   10 ns/op   0 B/op   0 allocs/op
BenchmarkLookup/ring/chash/nodes=64/key=13-2   100   20 ns/op   0 B/op   0 allocs/op
BenchmarkParallelLookup/ring/nodes=64/key=13/swapping-2   100   5 ns/op   40 swaps/s   0 B/op   1 allocs/op
PASS
`
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	useMin = false
	defer func() { useMin = true }()
	r := results{}
	if err := parseFile(path, r); err != nil {
		t.Fatal(err)
	}
	if v, ok := r.ns("Lookup/ring/chash/nodes=64/key=13"); !ok || v != 20 {
		t.Errorf("median ns/op = %v, %v; want 20, true", v, ok)
	}
	if v, _ := r.get("ParallelLookup/ring/nodes=64/key=13/swapping", "swaps/s"); v != 40 {
		t.Errorf("swaps/s = %v, want 40", v)
	}
	if w, n := r.maxOver("ParallelLookup/", "allocs/op"); w != 1 || n != 1 {
		t.Errorf("maxOver = %v over %d, want 1 over 1", w, n)
	}
	if _, ok := r.ns("Lookup/absent"); ok {
		t.Error("absent benchmark reported present")
	}
}

func TestStatus(t *testing.T) {
	for _, c := range []struct {
		got, bound float64
		want       string
	}{{1.9, 2, "met"}, {2, 2, "met"}, {2.4, 2, "**missed** by 20%"}} {
		if s := status(c.got, c.bound); s != c.want {
			t.Errorf("status(%v, %v) = %q, want %q", c.got, c.bound, s, c.want)
		}
	}
}

func TestScaleSplice(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "BENCHMARKS.md")
	bench := filepath.Join(dir, "scale.txt")
	text := "BenchmarkScale/hash/nodes=8/key=13-2   100   4 ns/op\n" +
		"BenchmarkScale/jump/nodes=8/Lookup/key=13-2   100   10 ns/op   0 B/op   0 allocs/op\n" +
		"scale-stop\tbounded\t100000\tchash: too large: 16384 partitions × 100000 nodes\n"
	if err := os.WriteFile(bench, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := readScale(bench)
	if err != nil {
		t.Fatal(err)
	}
	if s.stops["bounded/100000"] == "" {
		t.Errorf("stop not read: %v", s.stops)
	}
	var sec bytes.Buffer
	if err := s.section(&sec, "cmd", "settings", ""); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"10 ns (2.50×)", "stops¹", "bounded at 100,000 nodes"} {
		if !strings.Contains(sec.String(), want) {
			t.Errorf("section lacks %q:\n%s", want, sec.String())
		}
	}
	if err := os.WriteFile(path, []byte("# Benchmarks\nbefore\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for range 2 { // appended once, then replaced in place
		if err := splice(path, sec.Bytes()); err != nil {
			t.Fatal(err)
		}
	}
	got, _ := os.ReadFile(path)
	if strings.Count(string(got), scaleBegin) != 1 || !strings.HasPrefix(string(got), "# Benchmarks\nbefore\n") {
		t.Errorf("spliced file:\n%s", got)
	}
	if err := s.plots(dir); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{lookupPlot, memoryPlot} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("plot %s: %v", f, err)
		}
	}
}
