package chashtest

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/internal/measure"
)

// This file holds the cases that measure placement over many keys.

// badInput checks that New refuses what every constructor refuses, and
// that one node owns every key.
func badInput(t testing.TB, s *suite) {
	two := s.nodes(2)
	a, b := two[0], two[1]
	with := func(n chash.Node, w float64) chash.Node { n.Weight = w; return n }
	cases := []struct {
		name  string
		nodes []chash.Node
		want  error
	}{
		{"nil", nil, chash.ErrNoNodes},
		{"empty", []chash.Node{}, chash.ErrNoNodes},
		{"empty ID", []chash.Node{a, {}}, chash.ErrEmptyID},
		{"duplicate ID", []chash.Node{a, b, a}, chash.ErrDuplicateID},
		{"negative weight", []chash.Node{with(a, -1)}, chash.ErrInvalidWeight},
		{"NaN weight", []chash.Node{with(a, math.NaN())}, chash.ErrInvalidWeight},
		{"infinite weight", []chash.Node{with(a, math.Inf(1))}, chash.ErrInvalidWeight},
	}
	if !s.Weighted {
		cases = append(cases, struct {
			name  string
			nodes []chash.Node
			want  error
		}{"unequal weights", []chash.Node{with(a, 1), with(b, 2)}, chash.ErrInvalidWeight})
	}
	for _, c := range cases {
		p, err := s.New(c.nodes)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: got error %v, want %v", c.name, err, c.want)
		}
		if err != nil && !isNil(p) {
			t.Errorf("%s: got a non-nil Placer with an error", c.name)
		}
	}
	// One node owns everything.
	only := effective(s.nodes(1))[0]
	p := s.build(t, s.nodes(1))
	for _, k := range s.keys[:1000] {
		if got := p.LookupString(k); got != only {
			t.Fatalf("single node: Lookup(%q) = %+v, want %+v", k, got, only)
		}
	}
	if got := p.AppendTopKString(nil, "k", 3); len(got) != 1 || got[0] != only {
		t.Errorf("single node: AppendTopK(k=3) = %v, want the one node", got)
	}
}

// nodesOrder checks that Nodes reports the members, with effective
// weights, in the documented order, and returns a copy.
func nodesOrder(t testing.TB, s *suite) {
	three := s.nodes(3)
	given := []chash.Node{three[2], three[0], three[1]}
	p := s.build(t, given)
	want := effective(given)
	if !s.KeepsOrder {
		slices.SortFunc(want, func(a, b chash.Node) int { return cmpString(a.ID, b.ID) })
	}
	got := p.Nodes()
	if !slices.Equal(got, want) || p.Len() != len(want) {
		t.Fatalf("Nodes() = %v, Len() = %d; want %v", got, p.Len(), want)
	}
	got[0].ID = "mutated"
	if p.Nodes()[0].ID == "mutated" {
		t.Error("Nodes() returned the placer's own slice")
	}
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// determinism checks that two placers built alike agree on every key, and
// that Lookup and LookupString agree.
func determinism(t testing.TB, s *suite) {
	nodes := s.nodes(10)
	a := s.owners(s.build(t, nodes))
	if b := s.owners(s.build(t, slices.Clone(nodes))); !slices.Equal(a, b) {
		t.Fatal("two placers built from the same nodes disagree")
	}
	p := s.build(t, nodes)
	for i, k := range s.keys {
		if got := p.Lookup([]byte(k)).ID; got != a[i] {
			t.Fatalf("Lookup(%q) = %s, LookupString = %s", k, got, a[i])
		}
	}
}

// orderIndependence checks that, unless the Spec is Ordered, the
// placement does not depend on the order the nodes are given in.
func orderIndependence(t testing.TB, s *suite) {
	if s.Ordered {
		return
	}
	nodes := s.nodes(10)
	a := s.owners(s.build(t, nodes))
	if c := s.owners(s.build(t, reordered(nodes))); !slices.Equal(a, c) {
		t.Fatal("placement depends on the order nodes are given in (declare Ordered if it should)")
	}
}

// reordered returns nodes reversed and rotated by three: every node at
// another place.
func reordered(nodes []chash.Node) []chash.Node {
	out := slices.Clone(nodes)
	slices.Reverse(out)
	return append(out[3:], out[:3]...)
}

func balance(t testing.TB, s *suite) {
	nodes := s.nodes(10)
	cv, peak := measure.Stats(measure.Load(s.owners(s.build(t, nodes)), measure.IDs(nodes)))
	t.Logf("10 nodes, %d keys: CV %.4f, peak/mean %.4f", len(s.keys), cv, peak)
	if cv > s.MaxCV || peak > s.MaxPeak {
		t.Errorf("CV %.4f (bound %.4f), peak/mean %.4f (bound %.4f)", cv, s.MaxCV, peak, s.MaxPeak)
	}
}

func checkCollateral(t testing.TB, s *suite, what string, collateral float64) {
	t.Helper()
	if collateral > s.Collateral {
		t.Errorf("%s: %.5f of keys moved between untouched nodes (bound %.5f)", what, collateral, s.Collateral)
	}
}

// checkShare bounds the keys that moved to or from the node added or
// removed, moved less collateral: they are that node's share, 1/n of n
// equal nodes, within ShareTol or, if larger, 2·MaxCV (one node's load
// may stray from the mean by about the CV). Keys moving between other
// nodes are bounded apart, by Collateral, so they cannot make up for a
// node that takes or gives up too few keys, or none.
func checkShare(s *suite, what string, changed float64, n int) error {
	tol := max(s.ShareTol, 2*s.MaxCV)
	if !(math.Abs(changed*float64(n)-1) <= tol) {
		return fmt.Errorf("%s: %.4f of keys moved to or from the node, want 1/%d = %.4f within %.0f%%",
			what, changed, n, 1/float64(n), 100*tol)
	}
	return nil
}

func add(t testing.TB, s *suite) {
	nodes := s.nodes(10)
	p := s.build(t, nodes)
	eleven := s.nodes(11)
	extra := eleven[10]
	q := s.next(t, p, eleven)
	before, after := s.owners(p), s.owners(q)
	moved, collateral := measure.Moves(before, after, extra.ID)
	t.Logf("10 -> 11 nodes: %.4f of keys moved (ideal %.4f), collateral %.5f", moved, 1.0/11, collateral)
	checkCollateral(t, s, "add", collateral)
	if err := checkShare(s, "add", moved-collateral, 11); err != nil {
		t.Error(err)
	}
	if s.Add != nil {
		d, err := s.Add(p, extra)
		if err != nil {
			t.Fatalf("Add: %v", err)
		}
		if !slices.Equal(s.owners(d), after) {
			t.Error("Add places keys differently from New with the same nodes")
		}
	}
}

// removed returns the index of the node the removal tests remove from 10.
func (s *suite) removed() int {
	if s.RemoveLast {
		return 9
	}
	return 4
}

func remove(t testing.TB, s *suite) {
	nodes := s.nodes(10)
	gone := s.removed()
	p := s.build(t, nodes)
	rest := slices.Delete(slices.Clone(nodes), gone, gone+1)
	q := s.next(t, p, rest)
	before, after := s.owners(p), s.owners(q)
	id := nodes[gone].ID
	for i := range after {
		if after[i] == id {
			t.Fatalf("key %q placed on removed node", s.keys[i])
		}
	}
	moved, collateral := measure.Moves(before, after, id)
	t.Logf("10 -> 9 nodes: %.4f of keys moved, collateral %.5f", moved, collateral)
	checkCollateral(t, s, "remove", collateral)
	if err := checkShare(s, "remove", moved-collateral, 10); err != nil {
		t.Error(err)
	}
	if s.Remove != nil {
		d, err := s.Remove(p, id)
		if err != nil {
			t.Fatalf("Remove: %v", err)
		}
		if !slices.Equal(s.owners(d), after) {
			t.Error("Remove places keys differently from New with the same nodes")
		}
	}
}

// weighted returns n of the Spec's nodes with the given weights.
func (s *suite) weighted(weights ...float64) []chash.Node {
	nodes := s.nodes(len(weights))
	for i := range nodes {
		nodes[i].Weight = weights[i]
	}
	return nodes
}

func weights(t testing.TB, s *suite) {
	if !s.Weighted {
		return
	}
	nodes := s.weighted(1, 2, 3, 4)
	loads := measure.Load(s.owners(s.build(t, nodes)), measure.IDs(nodes))
	for i, l := range loads {
		share, want := l/float64(len(s.keys)), nodes[i].Weight/10
		t.Logf("weight %v: share %.4f (ideal %.4f)", nodes[i].Weight, share, want)
		if math.Abs(share/want-1) > s.ShareTol {
			t.Errorf("weight %v: share %.4f, want %.4f within %.0f%%", nodes[i].Weight, share, want, 100*s.ShareTol)
		}
	}
	// Doubling one node's weight moves keys only to it.
	ten := s.nodes(10)
	p := s.build(t, ten)
	heavier := slices.Clone(ten)
	heavier[3].Weight = 2
	before, after := s.owners(p), s.owners(s.next(t, p, heavier))
	moved, collateral := measure.Moves(before, after, ten[3].ID)
	t.Logf("reweight 1 -> 2: %.4f of keys moved, collateral %.5f", moved, collateral)
	checkCollateral(t, s, "reweight", collateral)
	for i := range before {
		if before[i] != after[i] && after[i] != ten[3].ID && s.Collateral == 0 {
			t.Fatalf("reweight: key %q moved from %s to %s", s.keys[i], before[i], after[i])
		}
	}
}

// topKSpread checks that second choices spread: for the keys whose first
// choice is a node, every other eligible node (of another domain, when
// ZoneAware) takes some of them as second choice, none more than Spread
// times its even share. A Spread of at least the eligible count declares
// that one node may take them all (a successor in a list), and the case
// then checks only that there is a second choice.
func topKSpread(t testing.TB, s *suite) {
	nodes := s.nodes(10)
	p := s.build(t, nodes)
	second := map[string]map[string]int{}
	buf := make([]chash.Node, 0, 2)
	for _, k := range s.keys {
		buf = p.AppendTopKString(buf[:0], k, 2)
		if len(buf) != 2 {
			t.Fatalf("AppendTopKString(%q, 2) = %v", k, buf)
		}
		m := second[buf[0].ID]
		if m == nil {
			m = map[string]int{}
			second[buf[0].ID] = m
		}
		m[buf[1].ID]++
	}
	worst := 0.0
	for first, m := range second {
		eligible := 0
		for _, n := range nodes {
			if n.ID != first && (!s.ZoneAware || measure.DomainOf(n) != measure.DomainOf(nodeByID(nodes, first))) {
				eligible++
			}
		}
		total := 0
		for _, c := range m {
			total += c
		}
		if s.Spread >= float64(eligible) {
			continue // declared: one node may take every second choice
		}
		if len(m) != eligible {
			t.Errorf("keys whose first choice is %s have %d distinct second choices, want %d", first, len(m), eligible)
		}
		for sec, c := range m {
			r := float64(c) / float64(total) * float64(eligible)
			worst = max(worst, r)
			if r > s.Spread {
				t.Errorf("%s is second choice for %.1f%% of %s's keys (bound %.1f%%)", sec, 100*float64(c)/float64(total), first, 100*s.Spread/float64(eligible))
			}
		}
	}
	t.Logf("most concentrated second choice: %.2f x even", worst)
}

func nodeByID(nodes []chash.Node, id string) chash.Node {
	for _, n := range nodes {
		if n.ID == id {
			return n
		}
	}
	return chash.Node{}
}

// topKPrefix checks that every key has one preference order: the k-node
// list is the first k of the Len-node list, for every k up to Len, so
// asking for more replicas never reorders the first ones.
func topKPrefix(t testing.TB, s *suite) {
	nodes := s.nodes(10)
	if s.Weighted {
		for i := range nodes {
			nodes[i].Weight = float64(1 + i%4)
		}
	}
	p := s.build(t, nodes)
	n := p.Len()
	long := make([]chash.Node, 0, n)
	short := make([]chash.Node, 0, n)
	for _, key := range s.keys[:s.few(5_000, 1_000)] {
		long = p.AppendTopKString(long[:0], key, n)
		for k := 1; k < n; k++ {
			short = p.AppendTopKString(short[:0], key, k)
			if !slices.Equal(short, long[:k]) {
				t.Fatalf("key %q: top %d %v is not a prefix of top %d %v", key, k, measure.IDs(short), n, measure.IDs(long))
			}
		}
	}
}

// weightVectors checks that every accepted weight vector is honoured: over
// random vectors at scales from 1e-6 to 1e12 with weights up to 100 times
// apart, the total variation distance between the nodes' shares of the
// suite's keys and w/Σw stays within WeightTVD. A placer whose weights
// are scale-free (every Spec without NewScaled) must accept them all; one
// whose weights are in a unit is built in the smallest weight's unit.
func weightVectors(t testing.TB, s *suite) {
	if !s.Weighted {
		return
	}
	rng := rand.New(rand.NewPCG(1, 2))
	ks := s.keys[:min(len(s.keys), 30_000)]
	worst, scaled := 0.0, 0
	vectors := s.few(24, 8)
	for v := 0; v < vectors; v++ {
		scale := math.Pow(10, -6+18*rng.Float64())
		nodes := s.nodes(2 + rng.IntN(11))
		lo := math.Inf(1)
		for i := range nodes {
			nodes[i].Weight = scale * math.Pow(100, rng.Float64())
			lo = min(lo, nodes[i].Weight)
		}
		var p chash.Placer
		var err error
		if s.NewScaled != nil {
			// Weights in a unit: build in the smallest weight's unit. (New
			// would accept some of these vectors as rings of millions of
			// points, which honour them but cost a minute under -race.)
			scaled++
			if p, err = s.NewScaled(nodes, lo); err != nil {
				t.Fatalf("vector %d in unit %.3g: %v", v, lo, err)
			}
		} else if p, err = s.New(nodes); err != nil {
			t.Fatalf("vector %d (scale %.3g): rejected: %v", v, scale, err)
		}
		tvd := measure.ShareDistance(p, nodes, ks)
		worst = max(worst, tvd)
		if tvd > s.WeightTVD {
			t.Errorf("vector %d (%d nodes, scale %.3g): shares %.4f from w/Σw in total variation (bound %.4f)", v, len(nodes), scale, tvd, s.WeightTVD)
		}
	}
	t.Logf("%d weight vectors: worst total variation %.4f, %d built in a weight unit", vectors, worst, scaled)
}

// derive checks chash.Derive, when the Spec declares it: adding, removing
// and (where weights are supported) reweighting a member gives a placer
// that places every key as New does for the new member set (as Next does,
// when set), directly and through a Holder, and leaves the placer it
// derived from unchanged.
func derive(t testing.TB, s *suite) {
	if !s.Derive {
		return
	}
	nodes := s.nodes(10)
	p := s.build(t, nodes)
	gone := s.removed()
	changes := map[string][]chash.Node{
		"add":    s.nodes(11),
		"remove": slices.Delete(slices.Clone(nodes), gone, gone+1),
	}
	if s.Weighted {
		heavier := slices.Clone(nodes)
		heavier[3].Weight = 3
		changes["reweight"] = heavier
	}
	before := s.owners(p)
	for _, name := range []string{"add", "remove", "reweight"} {
		next, ok := changes[name]
		if !ok {
			continue
		}
		want := s.owners(s.next(t, p, next))
		q, err := chash.Derive(p, next)
		if err != nil {
			t.Fatalf("%s: Derive: %v", name, err)
		}
		if !slices.Equal(s.owners(q), want) {
			t.Errorf("%s: Derive places keys differently from New (or Next) with the same nodes", name)
		}
		q, err = chash.Derive(chash.NewHolder(p), next)
		if err != nil || !slices.Equal(s.owners(q), want) {
			t.Errorf("%s: Derive through a Holder: %v", name, err)
		}
	}
	if _, err := chash.Derive(p, nil); err == nil {
		t.Error("Derive to no nodes: no error")
	}
	if !slices.Equal(s.owners(p), before) {
		t.Error("Derive changed the placer it derived from")
	}
}
