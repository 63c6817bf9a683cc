package main

import (
	"os"
	"path/filepath"
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
