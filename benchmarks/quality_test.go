package benchmarks

import (
	"math"
	"strings"
	"testing"
)

// TestFindings runs the probes against every subject: the harness must
// survive every peer, chash must reject every bad input with an error, and
// a peer known to panic must be reported as panicking, not crash the run.
func TestFindings(t *testing.T) {
	var rows []Findings
	for _, s := range Subjects() {
		if s.Family == "hash" {
			continue
		}
		f := Probe(s)
		rows = append(rows, f)
		if !s.Ours {
			continue
		}
		for what, got := range map[string]string{
			"no nodes": f.Empty, "duplicate ID": f.Duplicate, "unknown ID": f.RemoveUnknown, "remove every member": f.RemoveAll,
		} {
			if got != Rejected && got != NoAPI {
				t.Errorf("%s %s: %s, want %q", s.Family, what, got, Rejected)
			}
		}
		if !strings.HasSuffix(f.Remove, MatchesRebuild) {
			t.Errorf("%s remove: %s, want %q", s.Family, f.Remove, MatchesRebuild)
		}
	}
	for _, f := range rows {
		if f.Subject.Name == "go-rendezvous" && !strings.HasPrefix(f.Remove, "**PANICS**") {
			t.Errorf("go-rendezvous Remove: %s; its Remove indexes past the end, the guard should report a panic", f.Remove)
		}
	}
	t.Logf("\n%s", FindingsTable(rows))
}

// TestQuality measures balance and movement of every subject over the
// same keys (20,000 with -short or -race, 200,000 otherwise) and holds chash to the
// bounds its algorithms promise.
func TestQuality(t *testing.T) {
	n := 200_000
	if testing.Short() || raceEnabled {
		n = 20_000
	}
	keys := QualityKeys(n)
	var rows []Quality
	for _, s := range Subjects() {
		if s.Family == "hash" {
			continue
		}
		q := MeasureQuality(s, keys)
		rows = append(rows, q)
		if s.Ours {
			checkQuality(t, q, n)
		}
	}
	t.Logf("\n%s", QualityTable(rows))
}

// Bounds for chash at 64 nodes. Sampling noise in one node's load is
// 1/sqrt(keys/64): about 1.8% at 200,000 keys, 5.7% at 20,000.
var (
	maxPeakMean = map[string]float64{"ring": 1.35, "rendezvous": 1.15, "jump": 1.15, "maglev": 1.15, "bounded": 1.30}
	// maxCollateral is the fraction of keys that may move between nodes
	// other than the changed one: Maglev's table shifts a little; the
	// others move none.
	maxCollateral = map[string]float64{"maglev": 0.02}
)

func checkQuality(t *testing.T, q Quality, keys int) {
	t.Helper()
	f := q.Subject.Family
	if q.Err != nil {
		t.Errorf("%s: %v", f, q.Err)
		return
	}
	noise := 3 / math.Sqrt(float64(keys)/QualityNodes)
	if bound, ok := maxPeakMean[f]; ok && q.PeakMean > bound+noise {
		t.Errorf("%s: peak/mean %.3f, want <= %.3f", f, q.PeakMean, bound+noise)
	}
	if f != "bounded" {
		if c := maxCollateral[f]; q.AddCollateral > c || q.RemoveCollateral > c {
			t.Errorf("%s: collateral moves %.4f on add, %.4f on remove, want <= %.4f", f, q.AddCollateral, q.RemoveCollateral, c)
		}
	}
	ideal := 1 / float64(QualityNodes+1)
	if q.AddMoved < ideal*0.7 || q.AddMoved > ideal*1.3+maxCollateral[f] {
		t.Errorf("%s: %.4f of keys moved on add, want about %.4f", f, q.AddMoved, ideal)
	}
}

// TestJumpMatchesGoJump checks that chash's jump and go-jump fed the same
// xxhash place every key identically: the comparison is like for like.
func TestJumpMatchesGoJump(t *testing.T) {
	var ours, peer *Subject
	for _, s := range Subjects() {
		if s.Family == "jump" {
			if s.Ours {
				ours = &s
			} else {
				peer = &s
			}
		}
	}
	if ours == nil || peer == nil {
		t.Skip("jump not in this build")
	}
	for _, n := range []int{1, 8, 64, 1000} {
		a, _ := ours.Build(NodeIDs(n))
		b, _ := peer.Build(NodeIDs(n))
		for _, k := range QualityKeys(10_000) {
			if x, y := a.Lookup(k), b.Lookup(k); x != y {
				t.Fatalf("%d nodes, key %q: chash %s, go-jump %s", n, k, x, y)
			}
		}
	}
}
