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
	m := machine{CPU: "Test CPU, 2 logical CPUs", Date: "2026-01-02 03:04 UTC", Go: "go1.0 linux/amd64", Commit: "abc1234"}
	for range 2 { // a section created once, then its scaling part replaced in place
		if err := spliceScale(path, m, "cmd", sec.String()); err != nil {
			t.Fatal(err)
		}
	}
	got, _ := os.ReadFile(path)
	if strings.Count(string(got), scaleBegin) != 1 || strings.Count(string(got), m.marker()) != 1 {
		t.Errorf("spliced file:\n%s", got)
	}
	lookupPlot, memoryPlot = plotFiles(m)
	if err := s.plots(dir); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{lookupPlot, memoryPlot} {
		if !strings.Contains(f, "test-cpu") {
			t.Errorf("plot %s does not name the machine", f)
		}
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("plot %s: %v", f, err)
		}
	}
}

// TestMachineSections checks that a run keeps the sections of other
// machines, replaces its own, stamps every table with the machine, the Go
// version and the commit, and turns a document from before machine
// sections into the section of the machine in its table.
func TestMachineSections(t *testing.T) {
	legacy := "# Benchmarks\n\nintro\n\n| | |\n|---|---|\n| date | 2026-12-02 03:02 UTC |\n| Go | go1.26.8 linux/amd64 |\n" +
		"| CPU | Intel(R) Xeon(R) Processor, 2 logical CPUs |\n| commit | 962990b |\n\n## Headline\n\n| a |\n|---|\n| intel row |\n"
	amd := machine{CPU: "AMD EPYC, 2 logical CPUs", Date: "2026-12-04 10:00 UTC", Go: "go1.26.8 linux/amd64", Commit: "def5678"}
	body := machineTable(amd, "run.sh", "") + stampHeadings(demote("## Headline\n\n| a |\n|---|\n| amd row |\n"), amd)
	doc := merge(legacy, introText(), section{m: amd, body: body})
	for _, want := range []string{"intel row", "amd row", "### Headline", "commit 962990b", "commit def5678",
		"[AMD EPYC, 2 logical CPUs](#amd-epyc-2-logical-cpus)", "(#intelr-xeonr-processor-2-logical-cpus)"} {
		if !strings.Contains(doc, want) {
			t.Errorf("document lacks %q:\n%s", want, doc)
		}
	}
	if strings.Index(doc, "amd row") > strings.Index(doc, "intel row") {
		t.Error("the newest run is not first")
	}
	secs := parseSections(doc)
	if len(secs) != 2 {
		t.Fatalf("%d sections, want 2:\n%s", len(secs), doc)
	}
	for _, s := range secs {
		headings := strings.Count(s.body, "\n### ")
		if stamps := strings.Count(s.body, s.m.stamp()); headings == 0 || stamps != headings {
			t.Errorf("%s: %d headings, %d stamps:\n%s", s.m.CPU, headings, stamps, s.body)
		}
	}
	// A second run on the AMD machine replaces its section and keeps Intel's.
	amd2 := amd
	amd2.Date, amd2.Commit = "2026-12-05 10:00 UTC", "0123abc"
	body2 := machineTable(amd2, "run.sh", "") + stampHeadings(demote("## Headline\n\n| a |\n|---|\n| amd row 2 |\n"), amd2)
	doc2 := merge(doc, introText(), section{m: amd2, body: body2})
	if strings.Contains(doc2, "| amd row |") || !strings.Contains(doc2, "amd row 2") || !strings.Contains(doc2, "intel row") {
		t.Errorf("second run:\n%s", doc2)
	}
	if got := len(parseSections(doc2)); got != 2 {
		t.Errorf("%d sections after the second run, want 2", got)
	}
	if doc3 := merge(doc2, introText(), section{m: amd2, body: body2}); doc3 != doc2 {
		t.Errorf("merging the same section again changed the document:\n%s", doc3)
	}
}
