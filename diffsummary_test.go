package chash_test

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/chashtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// flowSummary adds up m's flows per node by hand, the reference
// DiffSummary must agree with; members are taken from the placers.
func flowSummary(m chash.Movement, old, new chash.Placer) (map[string]*chash.NodeMove, float64) {
	nodes := map[string]*chash.NodeMove{}
	inOld, inNew := map[string]bool{}, map[string]bool{}
	for _, n := range old.Nodes() {
		inOld[n.ID] = true
		nodes[n.ID] = &chash.NodeMove{ID: n.ID}
	}
	for _, n := range new.Nodes() {
		inNew[n.ID] = true
		nodes[n.ID] = &chash.NodeMove{ID: n.ID}
	}
	var between float64
	for _, f := range m.Flows {
		nodes[f.From].Old += f.Fraction
		nodes[f.To].New += f.Fraction
		if f.From != f.To {
			nodes[f.From].Out += f.Fraction
			nodes[f.To].In += f.Fraction
			if inNew[f.From] && inOld[f.To] {
				between += f.Fraction
			}
		}
	}
	return nodes, between
}

// checkSummary checks DiffSummary(old, new) against Diff's flows and the
// invariants of any MoveSummary, and returns it.
func checkSummary(t *testing.T, name string, old, new chash.Placer) chash.MoveSummary {
	t.Helper()
	m, err := chash.Diff(old, new)
	require.NoError(t, err, name)
	s, err := chash.DiffSummary(old, new)
	require.NoError(t, err, name)
	assert.Equal(t, m.Exact, s.Exact, name)
	assert.Equal(t, m.Samples, s.Samples, name)
	const tol = 1e-12
	assert.InDelta(t, m.Moved, s.Moved, tol, name)
	want, between := flowSummary(m, unwrap(old), unwrap(new))
	assert.InDelta(t, between, s.Between, tol, "%s: between", name)
	require.Len(t, s.Nodes, len(want), name)
	assert.True(t, slices.IsSortedFunc(s.Nodes, func(a, b chash.NodeMove) int { return strings.Compare(a.ID, b.ID) }), name)
	var old1, new1, in, out float64
	for _, n := range s.Nodes {
		w := want[n.ID]
		require.NotNil(t, w, "%s: %q is not a member", name, n.ID)
		assert.InDelta(t, w.Old, n.Old, tol, "%s: %s old", name, n.ID)
		assert.InDelta(t, w.New, n.New, tol, "%s: %s new", name, n.ID)
		assert.InDelta(t, w.In, n.In, tol, "%s: %s in", name, n.ID)
		assert.InDelta(t, w.Out, n.Out, tol, "%s: %s out", name, n.ID)
		assert.InDelta(t, n.Old-n.Out, n.New-n.In, tol, "%s: %s keeps", name, n.ID)
		assert.False(t, n.In < 0 || n.Out < 0, "%s: %+v", name, n)
		old1, new1, in, out = old1+n.Old, new1+n.New, in+n.In, out+n.Out
	}
	assert.InDelta(t, 1, old1, 1e-9, name)
	assert.InDelta(t, 1, new1, 1e-9, name)
	assert.InDelta(t, s.Moved, out, tol, name)
	assert.InDelta(t, s.Moved, in, 1e-9, name)
	// Movement.Summary sees the same nodes where every member owns keys.
	fromFlows := m.Summary()
	assert.InDelta(t, s.Moved, fromFlows.Moved, tol, name)
	assert.InDelta(t, s.Between, fromFlows.Between, tol, name)
	assert.Equal(t, s.Exact, fromFlows.Exact, name)
	for _, n := range fromFlows.Nodes {
		w := want[n.ID]
		require.NotNil(t, w, name)
		assert.InDeltaSlice(t, []float64{w.Old, w.New, w.In, w.Out}, []float64{n.Old, n.New, n.In, n.Out}, tol, "%s: Summary of %s", name, n.ID)
	}
	return s
}

func unwrap(p chash.Placer) chash.Placer {
	if h, ok := p.(*chash.Holder); ok {
		return h.Load()
	}
	return p
}

type placerPair struct {
	name     string
	old, new chash.Placer
	between  int // 0: Between must be 0; 1: it must be positive; -1: anything
}

func summaryCases(t *testing.T) []placerPair {
	r10, r11 := ring(t, 10), ring(t, 11)
	rw, err := r10.Remove("node-3")
	require.NoError(t, err)
	rw, err = rw.Add(chash.Node{ID: "x", Weight: 2}, chash.Node{ID: "y"})
	require.NoError(t, err)
	g1, err := chash.NewMaglev(chashtest.Nodes(10))
	require.NoError(t, err)
	g2, err := g1.Add(chash.Node{ID: "node-10"})
	require.NoError(t, err)
	b1, err := chash.NewBounded(chashtest.Nodes(10))
	require.NoError(t, err)
	b2, err := b1.Add(chash.Node{ID: "node-10"})
	require.NoError(t, err)
	pairs := []placerPair{
		{"ring add", r10, r11, 0}, {"ring remove", r11, r10, 0}, {"ring remove and add weighted", r10, rw, 0},
		{"ring same", r10, ring(t, 10), 0},
		{"maglev add", g1, g2, -1}, {"ring to maglev", r10, g2, 1}, {"bounded add", b1, b2, -1},
		{"bounded to maglev", b1, g1, 1},
		{"sampled ring add", opaque{r10}, opaque{r11}, 0}, {"sampled mod-N", modN(10), modN(11), 1},
		{"holders", chash.NewHolder(r10), chash.NewHolder(rw), 0},
	}
	return append(append(pairs, jumpCases(t)...), rendezvousCases(t)...)
}

func jumpCases(t *testing.T) []placerPair {
	j7, err := chash.NewJump(chashtest.Nodes(7))
	require.NoError(t, err)
	j9, err := j7.Add(chash.Node{ID: "x"}, chash.Node{ID: "y"})
	require.NoError(t, err)
	jr, err := j9.Replace("node-2", chash.Node{ID: "z"})
	require.NoError(t, err)
	rev := chashtest.Nodes(12)
	slices.Reverse(rev)
	j12r, err := chash.NewJump(rev)
	require.NoError(t, err)
	// Node-0 ... node-8 in another order with new nodes between them.
	mixed := slices.Clone(rev[3:])
	mixed = slices.Insert(mixed, 4, chash.Node{ID: "p"}, chash.Node{ID: "q"})
	j11m, err := chash.NewJump(mixed)
	require.NoError(t, err)
	return []placerPair{
		{"jump append", j7, j9, 0}, {"jump remove last", j9, j7, 0}, {"jump replace", j7, jr, 0},
		{"jump replace back", jr, j7, 0}, {"jump same", j9, j9, 0},
		{"jump reversed", j7, j12r, 1}, {"jump reversed shrink", j12r, j7, 1},
		{"jump reordered mixed", j12r, j11m, 1}, {"jump reordered mixed grow", j11m, j12r, 1},
		{"jump to one", j9, mustJump(t, "node-6"), 0}, {"jump from one", mustJump(t, "node-6"), j9, 0},
	}
}

func mustJump(t *testing.T, ids ...string) *chash.Jump {
	nodes := make([]chash.Node, len(ids))
	for i, id := range ids {
		nodes[i].ID = id
	}
	j, err := chash.NewJump(nodes)
	require.NoError(t, err)
	return j
}

func rendezvousCases(t *testing.T) []placerPair {
	w := []chash.Node{{ID: "a", Weight: 1}, {ID: "b", Weight: 2}, {ID: "c", Weight: 3}, {ID: "d", Weight: 0.5}}
	r4, err := chash.NewRendezvous(w)
	require.NoError(t, err)
	r6, err := r4.Add(chash.Node{ID: "e", Weight: 2}, chash.Node{ID: "f"})
	require.NoError(t, err)
	r3, err := r4.Remove("b")
	require.NoError(t, err)
	both, err := chash.NewRendezvous([]chash.Node{w[0], w[2], w[3], {ID: "e", Weight: 2}, {ID: "f"}})
	require.NoError(t, err)
	u10, err := chash.NewRendezvous(chashtest.Nodes(10))
	require.NoError(t, err)
	u13, err := chash.NewRendezvous(chashtest.Nodes(13))
	require.NoError(t, err)
	disjoint, err := chash.NewRendezvous([]chash.Node{{ID: "x"}, {ID: "y", Weight: 4}})
	require.NoError(t, err)
	return []placerPair{
		{"rendezvous add", r4, r6, 0}, {"rendezvous remove", r4, r3, 0}, {"rendezvous both", r4, both, 0},
		{"rendezvous both back", both, r4, 0}, {"rendezvous uniform add", u10, u13, 0},
		{"rendezvous disjoint", r4, disjoint, 0}, {"rendezvous same", r4, r4, 0},
	}
}

// The main property: DiffSummary is Diff's flows summed per node.
func TestDiffSummaryAgreesWithDiff(t *testing.T) {
	for _, tc := range summaryCases(t) {
		s := checkSummary(t, tc.name, tc.old, tc.new)
		switch tc.between {
		case 0:
			assert.InDelta(t, 0, s.Between, 1e-15, "%s: between kept nodes", tc.name)
		case 1:
			assert.Greater(t, s.Between, 0.01, "%s: between kept nodes", tc.name)
		}
		assert.LessOrEqual(t, s.Between, s.Moved+1e-12, tc.name)
	}
}

func TestDiffSummaryClosedForms(t *testing.T) {
	j7, err := chash.NewJump(chashtest.Nodes(7))
	require.NoError(t, err)
	j9, err := j7.Add(chash.Node{ID: "x"}, chash.Node{ID: "y"})
	require.NoError(t, err)
	s, err := chash.DiffSummary(j7, j9)
	require.NoError(t, err)
	require.True(t, s.Exact)
	assert.InDelta(t, 2.0/9, s.Moved, 1e-15)
	for _, n := range s.Nodes {
		if strings.HasPrefix(n.ID, "node-") {
			assert.InDeltaSlice(t, []float64{1.0 / 7, 1.0 / 9, 0, 1.0/7 - 1.0/9}, []float64{n.Old, n.New, n.In, n.Out}, 1e-15, n.ID)
		} else {
			assert.InDeltaSlice(t, []float64{0, 1.0 / 9, 1.0 / 9, 0}, []float64{n.Old, n.New, n.In, n.Out}, 1e-15, n.ID)
		}
	}
	// Weights: b (2 of 6.5) leaves; a, c and d share its keys by weight.
	w := []chash.Node{{ID: "a", Weight: 1}, {ID: "b", Weight: 2}, {ID: "c", Weight: 3}, {ID: "d", Weight: 0.5}}
	r4, err := chash.NewRendezvous(w)
	require.NoError(t, err)
	r3, err := r4.Remove("b")
	require.NoError(t, err)
	s, err = chash.DiffSummary(r4, r3)
	require.NoError(t, err)
	assert.InDelta(t, 2/6.5, s.Moved, 1e-15)
	assert.InDeltaSlice(t, []float64{1 / 6.5, 1 / 4.5, 1/4.5 - 1/6.5, 0}, []float64{s.Nodes[0].Old, s.Nodes[0].New, s.Nodes[0].In, s.Nodes[0].Out}, 1e-15)
}

func TestDiffSummaryErrors(t *testing.T) {
	a := ring(t, 3)
	var nilRing *chash.Ring
	for name, pair := range map[string][2]chash.Placer{
		"nil old": {nil, a}, "nil new": {a, nil}, "typed nil": {a, nilRing},
		"empty holder": {a, new(chash.Holder)}, "zero ring": {&chash.Ring{}, a},
	} {
		s, err := chash.DiffSummary(pair[0], pair[1])
		assert.ErrorIs(t, err, chash.ErrNoNodes, name)
		assert.Contains(t, fmt.Sprint(err), "DiffSummary", name)
		assert.Zero(t, s, name)
	}
	_, err := chash.DiffSummary(a, liar{a})
	assert.True(t, errors.Is(err, chash.ErrUnknownNode), "non-member owner: %v", err)
	var zero chash.MoveSummary
	assert.Zero(t, zero.Moved)
	assert.Empty(t, chash.Movement{}.Summary().Nodes)
}

// 10,000 -> 20,000 nodes, where Diff would list 100 million flows, in
// O(n) memory.
func TestDiffSummaryLarge(t *testing.T) {
	jOld, err := chash.NewJump(chashtest.Nodes(10000))
	require.NoError(t, err)
	jNew, err := chash.NewJump(chashtest.Nodes(20000))
	require.NoError(t, err)
	rOld, err := chash.NewRendezvous(chashtest.Nodes(10000))
	require.NoError(t, err)
	rNew, err := chash.NewRendezvous(chashtest.Nodes(20000))
	require.NoError(t, err)
	for name, pair := range map[string][2]chash.Placer{"jump": {jOld, jNew}, "rendezvous": {rOld, rNew}} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		s, err := chash.DiffSummary(pair[0], pair[1])
		runtime.ReadMemStats(&after)
		require.NoError(t, err, name)
		assert.True(t, s.Exact, name)
		assert.InDelta(t, 0.5, s.Moved, 1e-12, name)
		assert.InDelta(t, 0, s.Between, 1e-15, name)
		assert.Len(t, s.Nodes, 20000, name)
		const limit = 64 << 20
		assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(limit), "%s: bytes allocated", name)
	}
}

func BenchmarkDiffSummaryJump10k20k(b *testing.B) {
	old, err := chash.NewJump(chashtest.Nodes(10000))
	require.NoError(b, err)
	new, err := chash.NewJump(chashtest.Nodes(20000))
	require.NoError(b, err)
	benchSummary(b, old, new)
}

func BenchmarkDiffSummaryRendezvous10k20k(b *testing.B) {
	old, err := chash.NewRendezvous(chashtest.Nodes(10000))
	require.NoError(b, err)
	new, err := chash.NewRendezvous(chashtest.Nodes(20000))
	require.NoError(b, err)
	benchSummary(b, old, new)
}

func BenchmarkDiffSummaryRing1000(b *testing.B) {
	benchSummary(b, ring(b, 1000), ring(b, 1001))
}

func benchSummary(b *testing.B, old, new chash.Placer) {
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := chash.DiffSummary(old, new); err != nil {
			b.Fatal(err)
		}
	}
}

func FuzzDiffSummary(f *testing.F) {
	f.Add("a,b,c", "a,b,c,d", 1.0, 4, uint64(0), uint8(0))
	f.Add("a,b,c", "c,a,d,e", 1.0, 4, uint64(0), uint8(1))
	f.Add("a,b", "b,c", 2.0, 1, uint64(3), uint8(2))
	f.Add("x,y", "y,z", math.NaN(), 0, uint64(1), uint8(0))
	f.Fuzz(func(t *testing.T, olds, news string, w float64, vnodes int, seed uint64, algo uint8) {
		parse := func(s string) []chash.Node {
			var out []chash.Node
			for _, id := range strings.Split(s, ",") {
				// By ID, so that a node keeps its weight and rendezvous
				// keeps its closed form: sampling is too slow to fuzz.
				weight := float64(len(id)%3) * w
				if algo%3 == 1 {
					weight = 1 // jump takes one weight
				}
				out = append(out, chash.Node{ID: id, Weight: weight})
			}
			return out
		}
		opts := []chash.Option{chash.WithVnodes(vnodes%300 + 1), chash.WithHasher(chash.XXHashSeed(seed))}
		build := func(nodes []chash.Node) (chash.Placer, error) {
			switch algo % 3 {
			case 1:
				return chash.NewJump(nodes, opts...)
			case 2:
				return chash.NewRendezvous(nodes, opts...)
			}
			return chash.NewRing(nodes, opts...)
		}
		a, errA := build(parse(olds))
		b, errB := build(parse(news))
		if errA != nil || errB != nil {
			return
		}
		checkSummary(t, fmt.Sprintf("%q -> %q", olds, news), a, b)
	})
}

func ExampleDiffSummary() {
	nodes := make([]chash.Node, 4)
	for i := range nodes {
		nodes[i] = chash.Node{ID: fmt.Sprintf("cache-%d", i)}
	}
	old, _ := chash.NewJump(nodes)
	new, _ := old.Add(chash.Node{ID: "cache-4"})
	s, _ := chash.DiffSummary(old, new)
	fmt.Printf("moved %.2f%% of keys (exact: %v), %.2f%% between kept nodes\n", 100*s.Moved, s.Exact, 100*s.Between)
	for _, n := range s.Nodes {
		fmt.Printf("%s %5.2f%% -> %5.2f%%  in %5.2f%%  out %5.2f%%\n", n.ID, 100*n.Old, 100*n.New, 100*n.In, 100*n.Out)
	}
	// Output:
	// moved 20.00% of keys (exact: true), 0.00% between kept nodes
	// cache-0 25.00% -> 20.00%  in  0.00%  out  5.00%
	// cache-1 25.00% -> 20.00%  in  0.00%  out  5.00%
	// cache-2 25.00% -> 20.00%  in  0.00%  out  5.00%
	// cache-3 25.00% -> 20.00%  in  0.00%  out  5.00%
	// cache-4  0.00% -> 20.00%  in 20.00%  out  0.00%
}
