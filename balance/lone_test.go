package balance_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/balance"
	"github.com/keyplace/chash/chashtest"
)

// shuffled is a placer whose top-k lists are not prefixes of each other:
// after the first choice, AppendTopK(k) gives the inner placer's order
// rotated by k.
type shuffled struct{ chash.Placer }

func (s shuffled) AppendTopKString(dst []chash.Node, key string, k int) []chash.Node {
	all := s.Placer.AppendTopKString(nil, key, s.Len())
	k = min(k, len(all))
	if k <= 0 {
		return dst
	}
	dst = append(dst, all[0])
	rest := all[1:]
	for j := 0; j < k-1; j++ {
		dst = append(dst, rest[(j+k)%len(rest)])
	}
	return dst
}

func (s shuffled) AppendTopK(dst []chash.Node, key []byte, k int) []chash.Node {
	return s.AppendTopKString(dst, string(key), k)
}

// TestBalancerLone: a single goroutine never gets ErrOverloaded, whatever
// the placer's top-k lists, the load factor, the choices or the keys: the
// issue-12 Maglev (whose top-8 is not the prefix of its top-17), a placer
// whose top-k lists are never prefixes, and every algorithm.
func TestBalancerLone(t *testing.T) {
	var nodes []chash.Node
	for i, w := range []float64{5, 1, 2, 5, 5, 20, 1, 5, 1, 1, 100, 1, 1, 20, 5, 20, 100} {
		nodes = append(nodes, chash.Node{ID: fmt.Sprintf("n-%d", i), Weight: w})
	}
	maglev, err := chash.NewMaglev(nodes, chash.WithTableSize(1031))
	require.NoError(t, err)
	rv, err := chash.NewRendezvous(chashtest.Nodes(20))
	require.NoError(t, err)
	placers := map[string]chash.Placer{"maglev (issue 12)": maglev, "shuffled": shuffled{rv}}
	for _, a := range chash.Algorithms() {
		p, err := chash.New(a, nodes)
		if errors.Is(err, chash.ErrInvalidWeight) { // jump: equal weights only
			p, err = chash.New(a, chashtest.Nodes(17))
		}
		require.NoError(t, err, a.String())
		placers[a.String()] = p
	}
	for name, p := range placers {
		for _, opts := range [][]balance.Option{nil, {balance.WithLoadFactor(1.01)}, {balance.WithChoices(2)}} {
			loneRun(t, name, p, opts)
		}
	}
}

// loneRun holds ever more leases on one key ("k888" is the key with which
// the issue-12 Maglev failed on the 44th acquire while its heaviest node
// sat idle), then on random keys.
func loneRun(t *testing.T, name string, p chash.Placer, opts []balance.Option) {
	b := newBalancer(t, p, opts...)
	for i := 0; i < 1000; i++ {
		_, err := b.AcquireString("k888")
		require.NoError(t, err, "%s %d options: acquire %d of one key", name, len(opts), i+1)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for i := 0; i < 1000; i++ {
		_, err := b.Acquire([]byte(fmt.Sprint("k", rng.IntN(3))))
		require.NoError(t, err, "%s %d options: acquire %d of three keys", name, len(opts), i+1)
	}
	if name == "maglev (issue 12)" {
		assert.Positive(t, b.Load("n-10"), "%s %d options: the heaviest node was never used", name, len(opts))
	}
}

// TestBalancerRoundingEdge pins the bound ceil(c × t × w/W) exactly where
// c × t × w/W is an integer: one key whose first choice has room takes it
// while its count stays at or below the bound, so after t acquires its
// first choice holds exactly ceil(c × t × w/W). (c, the weights and t are
// chosen so that the products are exact in floating point.)
func TestBalancerRoundingEdge(t *testing.T) {
	for _, tc := range []struct {
		c       float64
		weights []float64
		target  int   // the node whose keys are acquired
		num     int64 // c × w/W = num/den
		den     int64
	}{
		{1.25, []float64{1, 1, 1, 1}, 0, 5, 16},
		{1.5, []float64{1, 2, 1}, 1, 3, 4},
		{2, []float64{3, 1, 4}, 2, 1, 1},
	} {
		var nodes []chash.Node
		for i, w := range tc.weights {
			nodes = append(nodes, chash.Node{ID: fmt.Sprint("node-", i), Weight: w})
		}
		p, err := chash.NewRendezvous(nodes)
		require.NoError(t, err)
		key := ""
		for i := 0; p.LookupString(key).ID != nodes[tc.target].ID; i++ {
			key = fmt.Sprint("key-", i)
		}
		b := newBalancer(t, p, balance.WithLoadFactor(tc.c))
		edges := 0
		for tt := int64(1); tt <= 200; tt++ {
			_, err := b.AcquireString(key)
			require.NoError(t, err)
			want := (tc.num*tt + tc.den - 1) / tc.den // ceil(num × t / den)
			want = min(want, tt)
			require.Equal(t, want, b.Load(nodes[tc.target].ID), "c=%v weights %v: after %d acquires", tc.c, tc.weights, tt)
			if tc.num*tt%tc.den == 0 {
				edges++
			}
		}
		assert.Positive(t, edges, "no acquire met an integer bound")
	}
}

// TestBalancerSetPlacerCounts follows per-node counts across SetPlacer: a
// node that stays keeps its count, a new one starts at 0, one that left
// reads 0 while its leases still count in the total and release
// correctly, and one that comes back starts afresh.
func TestBalancerSetPlacerCounts(t *testing.T) {
	mk := func(ids ...string) chash.Placer {
		var nodes []chash.Node
		for _, id := range ids {
			nodes = append(nodes, chash.Node{ID: id})
		}
		p, err := chash.NewRendezvous(nodes)
		require.NoError(t, err)
		return p
	}
	loads := func(b *balance.Balancer, ids ...string) map[string]int64 {
		out := map[string]int64{}
		for _, id := range ids {
			out[id] = b.Load(id)
		}
		return out
	}
	b := newBalancer(t, mk("a", "b", "c", "d"))
	var held []balance.Lease
	acquire := func(n int) {
		for i := 0; i < n; i++ {
			l, err := b.AcquireString(fmt.Sprint("key-", len(held)))
			require.NoError(t, err)
			held = append(held, l)
		}
	}
	acquire(200)
	before := loads(b, "a", "b", "c", "d")
	require.Positive(t, before["a"])
	require.NoError(t, b.SetPlacer(mk("b", "c", "d", "e")))
	assert.Equal(t, map[string]int64{"a": 0, "b": before["b"], "c": before["c"], "d": before["d"], "e": 0}, loads(b, "a", "b", "c", "d", "e"))
	assert.Equal(t, int64(200), b.InFlight(), "leases on a left node still count")
	acquire(100)
	mid := loads(b, "b", "c", "d", "e")
	require.Positive(t, mid["e"])
	require.NoError(t, b.SetPlacer(mk("a", "b", "c", "d")))
	assert.Zero(t, b.Load("a"), "a node that comes back starts afresh")
	assert.Equal(t, int64(300), b.InFlight())
	// Release the first 200 (the only ones that can be on a): b, c and d
	// lose exactly the leases they had then.
	for _, l := range held[:200] {
		require.True(t, l.Release())
	}
	for _, id := range []string{"b", "c", "d"} {
		assert.Equal(t, mid[id]-before[id], b.Load(id), "node %s", id)
	}
	assert.Zero(t, b.Load("a"))
	for _, l := range held[200:] {
		require.True(t, l.Release())
	}
	checkZero(t, b)
}

// TestBalancerOverloaded reaches ErrOverloaded: concurrent acquires,
// simulated through the hook, take every node's room while an acquire
// spills. The failed acquire leaves the total as it found it.
func TestBalancerOverloaded(t *testing.T) {
	p, err := chash.NewBounded(chashtest.Nodes(5))
	require.NoError(t, err)
	const c = 1.25
	b := newBalancer(t, p, balance.WithLoadFactor(c))
	bd := newBounds(p, c)
	var held []balance.Lease
	fill := func(tt int64) { // until every node is at its bound for tt
		for i := 0; ; i++ {
			full := true
			for _, n := range p.Nodes() {
				full = full && b.Load(n.ID) >= lim(bd.of(tt, n))
			}
			if full {
				return
			}
			l, err := b.AcquireString(fmt.Sprint("filler-", i))
			require.NoError(t, err)
			held = append(held, l)
		}
	}
	first := p.LookupString("hot")
	for b.Load(first.ID) < lim(bd.of(b.InFlight()+1, first)) { // until "hot" must spill
		l, err := b.AcquireString("hot")
		require.NoError(t, err)
		held = append(held, l)
	}
	calls := 0
	hook := func(stage int) {
		calls++
		restore := balance.SetOverloadHook(nil) // the fillers may spill too
		defer restore()
		fill(b.InFlight()) // the total the spilling acquire counted, or read
	}
	defer balance.SetOverloadHook(hook)()
	_, err = b.AcquireString("hot")
	require.ErrorIs(t, err, balance.ErrOverloaded)
	assert.Equal(t, 2, calls, "the hook ran on entry and before the last pass")
	assert.Equal(t, int64(len(held)), b.InFlight(), "the failed acquire is not counted")
	assert.Equal(t, uint64(1), b.Stats().Overloads)
	for _, l := range held {
		l.Release()
	}
	checkZero(t, b)
}
