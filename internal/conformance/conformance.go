// Package conformance is the test suite every chash Placer must pass. Each
// algorithm's test calls Run with a Spec naming its constructor and the
// bounds it documents; the suite measures the defining properties of
// consistent placement over many keys and fails when a bound is exceeded.
package conformance

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"

	"github.com/keyplace/chash"
)

// Spec describes a placer under test and the bounds it promises.
type Spec struct {
	// New builds the placer from nodes, with the algorithm's options
	// already bound.
	New func(nodes []chash.Node) (chash.Placer, error)

	// Ordered is set when the node order is part of the placement (jump:
	// node i is bucket i). The suite then checks Nodes keeps the given
	// order instead of checking independence from input order.
	Ordered bool
	// Weighted is set when unequal weights are supported. When it is not,
	// the suite checks that unequal weights are rejected with
	// ErrInvalidWeight.
	Weighted bool
	// RemoveLast is set when only the last node can be removed without
	// renumbering (jump): the removal test removes the last node.
	RemoveLast bool

	// MaxCV and MaxPeak bound the coefficient of variation and the
	// peak/mean of the load of 10 equal nodes over the suite's keys
	// (sampling noise at 10,000 keys a node is about 1%).
	MaxCV, MaxPeak float64
	// ShareTol bounds |share/expected - 1| for weighted shares (weights
	// 1:2:3:4), and, with 2·MaxCV if that is larger, for the share a node
	// added to 10 takes (1/11) and the share of a node removed from 10
	// (1/10), not counting collateral moves.
	ShareTol float64
	// Collateral bounds the fraction of all keys that may move between
	// nodes other than the one added, removed or reweighted. Zero demands
	// that none move.
	Collateral float64
	// Spread bounds how concentrated second choices are: for the keys
	// whose first choice is a node, no other node may take more than
	// Spread/(n-1) of them as second choice, and every other node must
	// take some. Zero means 2.5.
	Spread float64

	// WeightTVD bounds the total variation distance between shares and
	// w/Σw over random weight vectors (see weightVectors). Zero means 0.03.
	WeightTVD float64
	// NewScaled, when set, builds the placer with weights counted in the
	// given unit, for placers whose weights are not scale-free (the ring):
	// a vector New rejects must then be accepted and honoured in its
	// smallest weight's unit.
	NewScaled func(nodes []chash.Node, unit float64) (chash.Placer, error)

	// Add and Remove, when set, derive a placer from another; the suite
	// checks the result places every key as New does for the same
	// membership.
	Add    func(p chash.Placer, n chash.Node) (chash.Placer, error)
	Remove func(p chash.Placer, id string) (chash.Placer, error)
}

// NumKeys is how many keys the suite places in each property check.
const NumKeys = 100_000

var keys = sync.OnceValue(func() []string { return Keys(NumKeys) })

// Keys returns n distinct keys shaped like real ones ("user:42:profile"),
// the same on every call.
func Keys(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("user:%d:profile", i)
	}
	return out
}

// Nodes returns n nodes of weight 0 (meaning 1) named node-0, node-1, ...:
// similar names, as fleets have, which a weak hash fails to spread.
func Nodes(n int) []chash.Node {
	out := make([]chash.Node, n)
	for i := range out {
		out[i] = chash.Node{ID: fmt.Sprintf("node-%d", i)}
	}
	return out
}

// Owners returns the owner's ID of each of the suite's keys.
func Owners(p chash.Placer) []string {
	ks := keys()
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = p.LookupString(k).ID
	}
	return out
}

// Run runs the whole suite as subtests of t.
func Run(t *testing.T, s Spec) {
	if s.Spread == 0 {
		s.Spread = 2.5
	}
	if s.WeightTVD == 0 {
		s.WeightTVD = 0.03
	}
	t.Run("BadInput", func(t *testing.T) { badInput(t, s) })
	t.Run("Nodes", func(t *testing.T) { nodesOrder(t, s) })
	t.Run("Determinism", func(t *testing.T) { determinism(t, s) })
	t.Run("Balance", func(t *testing.T) { balance(t, s) })
	t.Run("Add", func(t *testing.T) { add(t, s) })
	t.Run("Remove", func(t *testing.T) { remove(t, s) })
	t.Run("Weights", func(t *testing.T) { weights(t, s) })
	t.Run("TopK", func(t *testing.T) { topK(t, s) })
	t.Run("TopKSpread", func(t *testing.T) { topKSpread(t, s) })
	t.Run("TopKPrefix", func(t *testing.T) { topKPrefix(t, s) })
	t.Run("WeightVectors", func(t *testing.T) { weightVectors(t, s) })
	t.Run("Derive", func(t *testing.T) { derive(t, s) })
	t.Run("Allocs", func(t *testing.T) { allocs(t, s) })
	t.Run("Concurrent", func(t *testing.T) { concurrent(t, s) })
}

func build(t *testing.T, s Spec, nodes []chash.Node) chash.Placer {
	t.Helper()
	p, err := s.New(nodes)
	if err != nil {
		t.Fatalf("New(%d nodes): %v", len(nodes), err)
	}
	if p == nil {
		t.Fatalf("New(%d nodes) returned a nil Placer and no error", len(nodes))
	}
	return p
}

func badInput(t *testing.T, s Spec) {
	nan := math.NaN()
	cases := []struct {
		name  string
		nodes []chash.Node
		want  error
	}{
		{"nil", nil, chash.ErrNoNodes},
		{"empty", []chash.Node{}, chash.ErrNoNodes},
		{"empty ID", []chash.Node{{ID: "a"}, {ID: ""}}, chash.ErrEmptyID},
		{"duplicate ID", []chash.Node{{ID: "a"}, {ID: "b"}, {ID: "a"}}, chash.ErrDuplicateID},
		{"negative weight", []chash.Node{{ID: "a", Weight: -1}}, chash.ErrInvalidWeight},
		{"NaN weight", []chash.Node{{ID: "a", Weight: nan}}, chash.ErrInvalidWeight},
		{"infinite weight", []chash.Node{{ID: "a", Weight: math.Inf(1)}}, chash.ErrInvalidWeight},
	}
	if !s.Weighted {
		cases = append(cases, struct {
			name  string
			nodes []chash.Node
			want  error
		}{"unequal weights", []chash.Node{{ID: "a", Weight: 1}, {ID: "b", Weight: 2}}, chash.ErrInvalidWeight})
	}
	for _, c := range cases {
		p, err := s.New(c.nodes)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: got error %v, want %v", c.name, err, c.want)
		}
		if err != nil && p != nil {
			t.Errorf("%s: got a non-nil Placer with an error", c.name)
		}
	}
	// One node owns everything.
	p := build(t, s, []chash.Node{{ID: "only"}})
	for _, k := range keys()[:1000] {
		if got := p.LookupString(k); got.ID != "only" || got.Weight != 1 {
			t.Fatalf("single node: Lookup(%q) = %+v", k, got)
		}
	}
	if got := p.AppendTopKString(nil, "k", 3); len(got) != 1 {
		t.Errorf("single node: AppendTopK(k=3) gave %d nodes, want 1", len(got))
	}
}

func nodesOrder(t *testing.T, s Spec) {
	given := []chash.Node{{ID: "c"}, {ID: "a", Weight: 1}, {ID: "b"}}
	p := build(t, s, given)
	want := []chash.Node{{ID: "a", Weight: 1}, {ID: "b", Weight: 1}, {ID: "c", Weight: 1}}
	if s.Ordered {
		want = []chash.Node{{ID: "c", Weight: 1}, {ID: "a", Weight: 1}, {ID: "b", Weight: 1}}
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

func determinism(t *testing.T, s Spec) {
	nodes := Nodes(10)
	a := Owners(build(t, s, nodes))
	b := Owners(build(t, s, slices.Clone(nodes)))
	if !slices.Equal(a, b) {
		t.Fatal("two placers built from the same nodes disagree")
	}
	p := build(t, s, nodes)
	for i, k := range keys() {
		if got := p.Lookup([]byte(k)).ID; got != a[i] {
			t.Fatalf("Lookup(%q) = %s, LookupString = %s", k, got, a[i])
		}
	}
	if s.Ordered {
		return
	}
	shuffled := slices.Clone(nodes)
	slices.Reverse(shuffled)
	shuffled = append(shuffled[3:], shuffled[:3]...)
	if c := Owners(build(t, s, shuffled)); !slices.Equal(a, c) {
		t.Fatal("placement depends on the order nodes are given in")
	}
}

// Load returns the count of keys each node owns, in the order of ids.
func Load(owners []string, ids []string) []float64 {
	idx := make(map[string]int, len(ids))
	for i, id := range ids {
		idx[id] = i
	}
	out := make([]float64, len(ids))
	for _, o := range owners {
		out[idx[o]]++
	}
	return out
}

// Stats returns the coefficient of variation and the peak/mean of loads.
func Stats(loads []float64) (cv, peak float64) {
	var sum, sq, hi float64
	for _, l := range loads {
		sum += l
		hi = max(hi, l)
	}
	mean := sum / float64(len(loads))
	for _, l := range loads {
		sq += (l - mean) * (l - mean)
	}
	return math.Sqrt(sq/float64(len(loads))) / mean, hi / mean
}

func ids(nodes []chash.Node) []string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = n.ID
	}
	return out
}

func balance(t *testing.T, s Spec) {
	nodes := Nodes(10)
	cv, peak := Stats(Load(Owners(build(t, s, nodes)), ids(nodes)))
	t.Logf("10 nodes, %d keys: CV %.4f, peak/mean %.4f", NumKeys, cv, peak)
	if cv > s.MaxCV || peak > s.MaxPeak {
		t.Errorf("CV %.4f (bound %.4f), peak/mean %.4f (bound %.4f)", cv, s.MaxCV, peak, s.MaxPeak)
	}
}

// Moves compares owners before and after a change touching the node
// named changed: it returns the fraction of keys that moved, and the
// fraction that moved between two other nodes.
func Moves(before, after []string, changed string) (moved, collateral float64) {
	var m, c int
	for i := range before {
		if before[i] != after[i] {
			m++
			if before[i] != changed && after[i] != changed {
				c++
			}
		}
	}
	return float64(m) / float64(len(before)), float64(c) / float64(len(before))
}

func checkCollateral(t *testing.T, s Spec, what string, collateral float64) {
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
func checkShare(s Spec, what string, changed float64, n int) error {
	tol := max(s.ShareTol, 2*s.MaxCV)
	if !(math.Abs(changed*float64(n)-1) <= tol) {
		return fmt.Errorf("%s: %.4f of keys moved to or from the node, want 1/%d = %.4f within %.0f%%",
			what, changed, n, 1/float64(n), 100*tol)
	}
	return nil
}

func add(t *testing.T, s Spec) {
	nodes := Nodes(10)
	p := build(t, s, nodes)
	extra := chash.Node{ID: "node-10"}
	q := build(t, s, append(slices.Clone(nodes), extra))
	before, after := Owners(p), Owners(q)
	moved, collateral := Moves(before, after, extra.ID)
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
		if !slices.Equal(Owners(d), after) {
			t.Error("Add places keys differently from New with the same nodes")
		}
	}
}

func remove(t *testing.T, s Spec) {
	nodes := Nodes(10)
	gone := 4
	if s.RemoveLast {
		gone = len(nodes) - 1
	}
	p := build(t, s, nodes)
	rest := slices.Delete(slices.Clone(nodes), gone, gone+1)
	q := build(t, s, rest)
	before, after := Owners(p), Owners(q)
	id := nodes[gone].ID
	for i := range after {
		if after[i] == id {
			t.Fatalf("key %q placed on removed node", keys()[i])
		}
	}
	moved, collateral := Moves(before, after, id)
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
		if !slices.Equal(Owners(d), after) {
			t.Error("Remove places keys differently from New with the same nodes")
		}
	}
}

func weights(t *testing.T, s Spec) {
	if !s.Weighted {
		return
	}
	nodes := []chash.Node{{ID: "w1", Weight: 1}, {ID: "w2", Weight: 2}, {ID: "w3", Weight: 3}, {ID: "w4", Weight: 4}}
	loads := Load(Owners(build(t, s, nodes)), ids(nodes))
	for i, l := range loads {
		share, want := l/NumKeys, nodes[i].Weight/10
		t.Logf("weight %v: share %.4f (ideal %.4f)", nodes[i].Weight, share, want)
		if math.Abs(share/want-1) > s.ShareTol {
			t.Errorf("weight %v: share %.4f, want %.4f within %.0f%%", nodes[i].Weight, share, want, 100*s.ShareTol)
		}
	}
	// Doubling one node's weight moves keys only to it.
	ten := Nodes(10)
	heavier := slices.Clone(ten)
	heavier[3].Weight = 2
	before, after := Owners(build(t, s, ten)), Owners(build(t, s, heavier))
	moved, collateral := Moves(before, after, ten[3].ID)
	t.Logf("reweight 1 -> 2: %.4f of keys moved, collateral %.5f", moved, collateral)
	checkCollateral(t, s, "reweight", collateral)
	for i := range before {
		if before[i] != after[i] && after[i] != ten[3].ID && s.Collateral == 0 {
			t.Fatalf("reweight: key %q moved from %s to %s", keys()[i], before[i], after[i])
		}
	}
}

func topK(t *testing.T, s Spec) {
	nodes := Nodes(10)
	p := build(t, s, nodes)
	sentinel := chash.Node{ID: "sentinel"}
	for _, k := range keys()[:10_000] {
		got := p.AppendTopKString([]chash.Node{sentinel}, k, 3)
		if len(got) != 4 || got[0] != sentinel {
			t.Fatalf("AppendTopKString(%q, 3) = %v: want the sentinel then 3 nodes", k, got)
		}
		got = got[1:]
		if got[0] != p.LookupString(k) {
			t.Fatalf("key %q: first choice %v, Lookup %v", k, got[0], p.LookupString(k))
		}
		if got[0] == got[1] || got[0] == got[2] || got[1] == got[2] {
			t.Fatalf("key %q: top 3 not distinct: %v", k, got)
		}
		if b := p.AppendTopK(nil, []byte(k), 3); !slices.Equal(b, got) {
			t.Fatalf("key %q: AppendTopK %v, AppendTopKString %v", k, b, got)
		}
	}
	for _, k := range []int{0, -1, math.MinInt} {
		if got := p.AppendTopKString(nil, "k", k); len(got) != 0 {
			t.Errorf("k=%d appended %d nodes", k, len(got))
		}
	}
	for _, k := range []int{10, 11, math.MaxInt} {
		got := p.AppendTopKString(nil, "k", k)
		ids := ids(got)
		slices.Sort(ids)
		if len(slices.Compact(ids)) != 10 || len(got) != 10 {
			t.Errorf("k=%d: got %d nodes (%d distinct), want all 10", k, len(got), len(ids))
		}
	}
}

func topKSpread(t *testing.T, s Spec) {
	nodes := Nodes(10)
	p := build(t, s, nodes)
	second := map[string]map[string]int{}
	buf := make([]chash.Node, 0, 2)
	for _, k := range keys() {
		buf = p.AppendTopKString(buf[:0], k, 2)
		m := second[buf[0].ID]
		if m == nil {
			m = map[string]int{}
			second[buf[0].ID] = m
		}
		m[buf[1].ID]++
	}
	worst := 0.0
	for first, m := range second {
		total := 0
		for _, c := range m {
			total += c
		}
		if len(m) != len(nodes)-1 {
			t.Errorf("keys whose first choice is %s have only %d distinct second choices, want %d", first, len(m), len(nodes)-1)
		}
		for sec, c := range m {
			r := float64(c) / float64(total) * float64(len(nodes)-1)
			worst = max(worst, r)
			if r > s.Spread {
				t.Errorf("%s is second choice for %.1f%% of %s's keys (bound %.1f%%)", sec, 100*float64(c)/float64(total), first, 100*s.Spread/float64(len(nodes)-1))
			}
		}
	}
	t.Logf("most concentrated second choice: %.2f x even", worst)
}

func allocs(t *testing.T, s Spec) {
	if testing.CoverMode() != "" {
		t.Skip("coverage instrumentation allocates")
	}
	p := build(t, s, Nodes(64))
	key := []byte("user:12345:profile")
	str := "user:12345:profile"
	buf := make([]chash.Node, 0, 8)
	paths := map[string]func(){
		"Lookup":           func() { _ = p.Lookup(key) },
		"LookupString":     func() { _ = p.LookupString(str) },
		"AppendTopK":       func() { buf = p.AppendTopK(buf[:0], key, 3) },
		"AppendTopKString": func() { buf = p.AppendTopKString(buf[:0], str, 3) },
	}
	for name, f := range paths {
		if n := testing.AllocsPerRun(200, f); n != 0 {
			t.Errorf("%s: %v allocations per call, want 0", name, n)
		}
	}
}

func concurrent(t *testing.T, s Spec) {
	a := build(t, s, Nodes(10))
	b := build(t, s, Nodes(11))
	h := chash.NewHolder(a)
	iters := 20_000
	if testing.Short() {
		iters = 2_000
	}
	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			if i%2 == 0 {
				h.Store(b)
			} else {
				h.Store(a)
			}
		}
	}()
	errs := make(chan error, 4)
	var readers sync.WaitGroup
	for g := 0; g < 4; g++ {
		readers.Add(1)
		go func(g int) {
			defer readers.Done()
			buf := make([]chash.Node, 0, 3)
			for i := 0; i < iters; i++ {
				k := keys()[(g*iters+i)%NumKeys]
				n := h.LookupString(k)
				buf = h.AppendTopKString(buf[:0], k, 3)
				if n.ID == "" || len(buf) != 3 {
					errs <- fmt.Errorf("key %q: Lookup %+v, top 3 %v", k, n, buf)
					return
				}
			}
		}(g)
	}
	readers.Wait()
	close(done)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// Constructor adapts an algorithm's constructor, with options bound, to
// Spec.New; on error it returns a nil Placer rather than a typed nil.
func Constructor[P chash.Placer](f func([]chash.Node, ...chash.Option) (P, error), opts ...chash.Option) func([]chash.Node) (chash.Placer, error) {
	return func(nodes []chash.Node) (chash.Placer, error) {
		p, err := f(nodes, opts...)
		if err != nil {
			return nil, err
		}
		return p, nil
	}
}
