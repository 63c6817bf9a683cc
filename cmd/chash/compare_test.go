package main

import (
	"math"
	"strings"
	"testing"
)

func rowOf(t *testing.T, rep compareReport, name string) compareRow {
	t.Helper()
	for _, r := range rep.Rows {
		if r.Algorithm == name {
			return r
		}
	}
	t.Fatalf("no %s row in %+v", name, rep.Rows)
	return compareRow{}
}

// The seed figures: mod-N 10 -> 11 moves about 90.9% of keys, consistent
// placement about 9.1%.
func TestCompareMovement(t *testing.T) {
	var rep compareReport
	runJSON(t, &rep, "compare", "-keys", "200k", "-points", "")
	const keys = 200_000
	se := func(p float64) float64 { return 5 * math.Sqrt(p*(1-p)/keys) }
	mod := rowOf(t, rep, "mod-N")
	if want := 1 - 1.0/11; math.Abs(mod.MovedAdd-want) > se(want) {
		t.Errorf("mod-N 10 -> 11 moved %.4f, want %.4f", mod.MovedAdd, want)
	}
	if want := 0.9; math.Abs(mod.MovedRemove-want) > se(want) {
		t.Errorf("mod-N 10 -> 9 moved %.4f, want %.4f", mod.MovedRemove, want)
	}
	ring := rowOf(t, rep, "ring")
	// The ring's exact figure for node-0..node-10 is 9.111% (TestDiff...).
	if math.Abs(ring.MovedAdd-0.09111) > se(0.09111) {
		t.Errorf("ring 10 -> 11 moved %.4f, want 0.0911", ring.MovedAdd)
	}
	if ring.MovedRemove < 0.07 || ring.MovedRemove > 0.13 {
		t.Errorf("ring 10 -> 9 moved %.4f, want about 0.10", ring.MovedRemove)
	}
	for _, r := range rep.Rows {
		if r.LookupNs <= 0 || r.PeakToMean < 1 || r.CV < 0 {
			t.Errorf("%s: implausible row %+v", r.Algorithm, r)
		}
		if r.Algorithm != "mod-N" && (r.MovedAdd > 0.2 || r.MovedRemove > 0.2) {
			t.Errorf("%s moves like mod-N: %+v", r.Algorithm, r)
		}
	}
	if mod.CV > 0.02 || ring.CV > 0.12 {
		t.Errorf("CV: mod-N %.3f, ring %.3f", mod.CV, ring.CV)
	}
	// 1,600 points of 16 bytes at least; mod-N holds 10 nodes.
	if ring.MemoryBytes < 1600*16 || ring.MemoryBytes > 1<<20 || mod.MemoryBytes > 4096 {
		t.Errorf("memory: ring %d B, mod-N %d B", ring.MemoryBytes, mod.MemoryBytes)
	}
}

// The seed's ring CV against points per node: about 0.94 at 1, 0.06 at 100
// and 0.03 at 1,000 for 10 nodes. Those are single rings; the expected CV
// is sqrt(9/(10v+1)): 0.905, 0.095, 0.030.
func TestCompareRingPoints(t *testing.T) {
	var rep compareReport
	runJSON(t, &rep, "compare", "-keys", "1000", "-points", "1,100,1000")
	if len(rep.RingPoints) != 3 {
		t.Fatalf("ring points rows: %+v", rep.RingPoints)
	}
	for i, seed := range []float64{0.94, 0.058, 0.028} {
		r := rep.RingPoints[i]
		if r.Seeds < 10 || r.SeedP10 > r.SeedMean || r.SeedMean > r.SeedP90 {
			t.Errorf("points %d: seed summary %+v", r.Points, r)
		}
		if math.Abs(r.SeedMean/r.Theory-1) > 0.1 {
			t.Errorf("points %d: mean CV %.3f over %d seeds, theory %.3f", r.Points, r.SeedMean, r.Seeds, r.Theory)
		}
		// The seed's figure is a draw from the same spread.
		if math.Abs(seed-r.SeedMean) > 0.4*r.Theory {
			t.Errorf("points %d: seed figure %.3f far from mean %.3f", r.Points, seed, r.SeedMean)
		}
	}
	if r := rep.RingPoints[0]; r.CV < 0.5 || r.PeakToMean < 2 {
		t.Errorf("one point a node should balance badly: %+v", r)
	}
}

func TestCompareText(t *testing.T) {
	out, _ := runCode(t, 0, "-nodes", "5", "-keys", "20000", "-points", "1,10")
	for _, want := range []string{"5 nodes, 20,000 keys", "mod-N", "ring", "ideal", "16.67%", "20.00%", "theory"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// Aligned: every row of the first table is as wide as its header.
	lines := strings.Split(out, "\n")
	head := lines[2]
	for _, l := range lines[3:5] {
		if len(strings.TrimRight(l, " ")) != len(head) {
			t.Errorf("row %q not aligned with header %q", l, head)
		}
	}
}
