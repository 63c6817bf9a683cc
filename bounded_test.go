package chash_test

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/chashtest"
	"github.com/keyplace/chash/internal/conformance"
	"github.com/keyplace/chash/internal/measure"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestContractBounded(t *testing.T) { chashtest.TestPlacer(t, boundedSpec()) }

// boundedSpec is the contract of bounded-load placement with the default
// options.
func boundedSpec() chashtest.Spec {
	// At 10 nodes no node nears its capacity, so nothing moves between
	// untouched nodes (measured 0); 0.001 is the bound documented for up
	// to 1,000 nodes.
	return chashtest.Spec{
		New:      conformance.Constructor(chash.NewBounded),
		Weighted: true,
		MaxCV:    0.05, MaxPeak: 1.08, ShareTol: 0.05, Collateral: 0.001,
		Add: func(p chash.Placer, n chash.Node) (chash.Placer, error) {
			return p.(*chash.Bounded).Add(n)
		},
		Remove: func(p chash.Placer, id string) (chash.Placer, error) {
			return p.(*chash.Bounded).Remove(id)
		},
		Zero:   &chash.Bounded{},
		Derive: true,
		Variants: []func() (chash.Placer, error){
			func() (chash.Placer, error) { return chash.NewBounded(chashtest.Nodes(10), chash.WithPartitions(1024)) },
			// A load factor that binds at 10 nodes: at 1.5 no cap binds,
			// the placement is the default's and only the fingerprint
			// (which digests the load factor) differs.
			func() (chash.Placer, error) { return chash.NewBounded(chashtest.Nodes(10), chash.WithLoadFactor(1.02)) },
		},
	}
}

// TestContractBoundedTight runs the contract where capacities bind: 102
// partitions a node at c = 1.1 (measured collateral up to 0.96% of keys).
func TestContractBoundedTight(t *testing.T) {
	opts := []chash.Option{chash.WithPartitions(1024), chash.WithLoadFactor(1.1)}
	chashtest.TestPlacer(t, chashtest.Spec{
		New:      conformance.Constructor(chash.NewBounded, opts...),
		Zero:     &chash.Bounded{},
		Derive:   true,
		Weighted: true,
		MaxCV:    0.1, MaxPeak: 1.15, ShareTol: 0.15, Collateral: 0.015,
		// 1,024 partitions and a 10% cap distort shares more than the default.
		WeightTVD: 0.06,
		Add: func(p chash.Placer, n chash.Node) (chash.Placer, error) {
			return p.(*chash.Bounded).Add(n)
		},
		Remove: func(p chash.Placer, id string) (chash.Placer, error) {
			return p.(*chash.Bounded).Remove(id)
		},
	})
}

// exactCapacity returns min(P, ceil(c × P × w / W)) in exact arithmetic,
// for total weight W.
func exactCapacity(c float64, parts int, total *big.Rat, n chash.Node) int {
	x := new(big.Rat).SetFloat64(c)
	x.Mul(x, new(big.Rat).SetInt64(int64(parts)))
	x.Mul(x, new(big.Rat).SetFloat64(n.Weight))
	x.Quo(x, total)
	q := new(big.Int).Add(x.Num(), new(big.Int).Sub(x.Denom(), big.NewInt(1)))
	q.Quo(q, x.Denom())
	if !q.IsInt64() || q.Int64() > int64(parts) {
		return parts
	}
	return int(q.Int64())
}

// checkFits checks that every partition has a member owner and no node
// owns more than its exact capacity.
func checkFits(t *testing.T, nodes []chash.Node, opts ...chash.Option) *chash.Bounded {
	t.Helper()
	b, err := chash.NewBounded(nodes, opts...)
	require.NoError(t, err, "%d nodes", len(nodes))
	count := map[string]int{}
	for p := 0; p < b.Partitions(); p++ {
		count[b.Owner(p).ID]++
	}
	total := new(big.Rat)
	for _, n := range b.Nodes() {
		total.Add(total, new(big.Rat).SetFloat64(n.Weight))
	}
	for _, n := range b.Nodes() {
		want := exactCapacity(b.LoadFactor(), b.Partitions(), total, n)
		require.Equal(t, want, b.Capacity(n.ID), "node %s (weight %v): capacity against exact", n.ID, n.Weight)
		require.LessOrEqual(t, count[n.ID], want, "node %s (weight %v): partitions owned against capacity", n.ID, n.Weight)
		delete(count, n.ID)
	}
	require.Empty(t, count, "partitions owned by non-members")
	return b
}

func TestBoundedFits(t *testing.T) {
	skewed := []chash.Node{{ID: "small", Weight: 1}, {ID: "big", Weight: 1e9}, {ID: "mid", Weight: 3}}
	extremes := []chash.Node{{ID: "tiny", Weight: 5e-324}, {ID: "huge", Weight: math.MaxFloat64}, {ID: "huge2", Weight: math.MaxFloat64}}
	for _, tc := range []struct {
		name  string
		nodes []chash.Node
		parts int
		c     float64
	}{
		{"c=1+2^-52", chashtest.Nodes(10), 1000, math.Nextafter(1, 2)},
		{"c=1.0000001", chashtest.Nodes(7), 4096, 1.0000001},
		{"c=1.0000001 exact share", chashtest.Nodes(8), 1024, 1.0000001},
		{"c=MaxFloat64", chashtest.Nodes(5), 100, math.MaxFloat64},
		{"c=1e300 one partition", chashtest.Nodes(5), 1, 1e300},
		{"one node", chashtest.Nodes(1), 64, 1.01},
		{"one node one partition", chashtest.Nodes(1), 1, 1.5},
		{"nodes > partitions", chashtest.Nodes(64), 16, 1.25},
		{"nodes = partitions", chashtest.Nodes(64), 64, 1.0000001},
		{"1000 nodes default", chashtest.Nodes(1000), 0, 0},
		{"weights 1 and 1e9", skewed, 1000, 1.0000001},
		{"weights 1 and 1e9, c=2", skewed, 1000, 2},
		{"subnormal and MaxFloat64 weights", extremes, 1000, 1.25},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var opts []chash.Option
			if tc.parts > 0 {
				opts = append(opts, chash.WithPartitions(tc.parts))
			}
			if tc.c > 0 {
				opts = append(opts, chash.WithLoadFactor(tc.c))
			}
			b := checkFits(t, tc.nodes, opts...)
			if len(tc.nodes) > b.Partitions() {
				owners := map[string]bool{}
				for p := 0; p < b.Partitions(); p++ {
					owners[b.Owner(p).ID] = true
				}
				assert.Len(t, owners, b.Partitions(), "%d partitions over %d nodes: want one partition each", b.Partitions(), len(tc.nodes))
				assert.Len(t, b.AppendTopKString(nil, "k", 100), len(tc.nodes), "AppendTopK lists every node")
			}
		})
	}
}

// TestBoundedBoundRandom checks the capacity bound over many random
// memberships, weights, partition counts and load factors.
func TestBoundedBoundRandom(t *testing.T) {
	rounds := 300
	if testing.Short() {
		rounds = 60
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for r := 0; r < rounds; r++ {
		nodes := make([]chash.Node, 1+rng.IntN(60))
		for i := range nodes {
			nodes[i] = chash.Node{ID: fmt.Sprintf("n%d-%d", r, i), Weight: []float64{0, 1, 2, 0.1, 7, rng.Float64() * 10, math.Exp(rng.NormFloat64() * 3)}[rng.IntN(7)]}
		}
		c := 1 + math.Pow(10, -rng.Float64()*8)
		if rng.IntN(3) == 0 {
			c = 1 + rng.Float64()*3
		}
		checkFits(t, nodes, chash.WithPartitions(1+rng.IntN(3000)), chash.WithLoadFactor(c))
	}
}

// TestBoundedPass checks the assignment against a model of the bounded-load
// pass: partitions in index order, each to the first node of its
// rendezvous order with room. The order comes from a placer whose load
// factor is so large that no capacity binds.
func TestBoundedPass(t *testing.T) {
	nodes := []chash.Node{{ID: "a", Weight: 1}, {ID: "b", Weight: 2}, {ID: "c", Weight: 0.7}, {ID: "d", Weight: 3}}
	nodes = append(nodes, chashtest.Nodes(16)...)
	const parts = 256
	free, err := chash.NewBounded(nodes, chash.WithPartitions(parts), chash.WithLoadFactor(1e9))
	require.NoError(t, err)
	order := make([][]chash.Node, parts)
	for i, found := 0, 0; found < parts; i++ {
		k := fmt.Sprint("model-", i)
		if p := free.PartitionString(k); order[p] == nil {
			order[p] = free.AppendTopKString(nil, k, len(nodes))
			found++
		}
	}
	for _, c := range []float64{1.0000001, 1.05, 1.25, 2} {
		b, err := chash.NewBounded(nodes, chash.WithPartitions(parts), chash.WithLoadFactor(c))
		require.NoError(t, err)
		load := map[string]int{}
		spilled := 0
		for p := 0; p < parts; p++ {
			i := slices.IndexFunc(order[p], func(n chash.Node) bool { return load[n.ID] < b.Capacity(n.ID) })
			want := order[p][i]
			require.Equal(t, want, b.Owner(p), "c=%v: partition %d against the model", c, p)
			load[want.ID]++
			if i > 0 {
				spilled++
			}
		}
		t.Logf("c=%v: %d of %d partitions not on their first choice", c, spilled, parts)
		if c < 1.1 {
			assert.NotZero(t, spilled, "c=%v: no partition spilled: the model is not exercised", c)
		}
	}
}

func TestBoundedOrderIndependence(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	for r := 0; r < 20; r++ {
		nodes := make([]chash.Node, 2+rng.IntN(40))
		for i := range nodes {
			nodes[i] = chash.Node{ID: fmt.Sprintf("m%d", rng.Uint32()), Weight: float64(1 + rng.IntN(4))}
		}
		opts := []chash.Option{chash.WithPartitions(512), chash.WithLoadFactor(1.05)}
		a, err := chash.NewBounded(nodes, opts...)
		if errors.Is(err, chash.ErrDuplicateID) {
			continue
		}
		require.NoError(t, err)
		shuffled := slices.Clone(nodes)
		rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		b, err := chash.NewBounded(shuffled, opts...)
		require.NoError(t, err)
		for p := 0; p < a.Partitions(); p++ {
			require.Equal(t, a.Owner(p), b.Owner(p), "partition %d: one order against another", p)
		}
	}
}

// TestBoundedTopKPrefix checks that AppendTopK's lists for growing k are
// prefixes of one order, across its 32-node chunks.
func TestBoundedTopKPrefix(t *testing.T) {
	nodes := chashtest.Nodes(100)
	nodes[7].Weight, nodes[40].Weight = 3, 0.25
	b, err := chash.NewBounded(nodes, chash.WithPartitions(128))
	require.NoError(t, err)
	for _, key := range []string{"a", "b", "user:7"} {
		all := b.AppendTopKString(nil, key, 100)
		ids := make([]string, len(all))
		for i, n := range all {
			ids[i] = n.ID
		}
		slices.Sort(ids)
		require.Len(t, slices.Compact(ids), 100, "key %s: AppendTopK(100) not 100 distinct nodes", key)
		for k := 1; k <= 100; k++ {
			require.Equal(t, all[:k], b.AppendTopKString(nil, key, k), "key %s: AppendTopK(%d) is not a prefix of AppendTopK(100)", key, k)
		}
	}
}

func partitionOwners(b *chash.Bounded) []string {
	out := make([]string, b.Partitions())
	for p := range out {
		out[p] = b.Owner(p).ID
	}
	return out
}

// TestBoundedMovement measures the partitions moved by adding and removing
// a node against the minimal 1/(n+1) and 1/n, with the default partitions.
func TestBoundedMovement(t *testing.T) {
	type limit struct{ moved, collateral float64 }
	cases := []struct {
		n      int
		limits map[float64]limit
	}{
		{100, map[float64]limit{1.1: {1.2, 0.001}, 1.25: {1.1, 0.0002}, 2: {1.1, 0}}},
		{1000, map[float64]limit{1.1: {2.0, 0.001}, 1.25: {1.6, 0.0004}, 2: {1.4, 0}}},
	}
	for _, tc := range cases {
		if tc.n > 100 && (testing.Short() || raceEnabled) {
			continue
		}
		for _, c := range []float64{1.1, 1.25, 2} {
			nodes := chashtest.Nodes(tc.n)
			b, err := chash.NewBounded(nodes, chash.WithLoadFactor(c))
			require.NoError(t, err)
			before := partitionOwners(b)
			var moved, collateral float64
			const trials = 2
			for tr := 0; tr < trials; tr++ {
				extra := chash.Node{ID: fmt.Sprint("extra-", tr)}
				added, err := b.Add(extra)
				require.NoError(t, err)
				m, col := measure.Moves(before, partitionOwners(added), extra.ID)
				moved, collateral = moved+m*float64(tc.n+1), max(collateral, col)
				gone := nodes[tr*37%tc.n].ID
				removed, err := b.Remove(gone)
				require.NoError(t, err)
				m, col = measure.Moves(before, partitionOwners(removed), gone)
				moved, collateral = moved+m*float64(tc.n), max(collateral, col)
			}
			moved /= 2 * trials
			t.Logf("%d nodes, c=%v: moved %.2f x minimal, collateral %.5f", tc.n, c, moved, collateral)
			l := tc.limits[c]
			assert.LessOrEqual(t, moved, l.moved, "%d nodes, c=%v: moved x minimal", tc.n, c)
			assert.LessOrEqual(t, collateral, l.collateral, "%d nodes, c=%v: collateral", tc.n, c)
		}
	}
}

func TestBoundedErrors(t *testing.T) {
	b, err := chash.NewBounded(chashtest.Nodes(3))
	require.NoError(t, err)
	_, err = b.Remove("node-0", "nope")
	assert.ErrorIs(t, err, chash.ErrUnknownNode, "Remove(unknown)")
	_, err = b.Remove("node-0", "node-1", "node-2")
	assert.ErrorIs(t, err, chash.ErrNoNodes, "Remove(all)")
	_, err = b.Add(chash.Node{ID: "node-1"})
	assert.ErrorIs(t, err, chash.ErrDuplicateID, "Add(duplicate)")
	_, err = chash.NewBounded(chashtest.Nodes(100), chash.WithPartitions(1<<24))
	assert.ErrorIs(t, err, chash.ErrTooLarge, "2^24 partitions × 100 nodes")
	for _, o := range []chash.Option{chash.WithLoadFactor(1), chash.WithLoadFactor(math.NaN()), chash.WithLoadFactor(math.Inf(1)), chash.WithPartitions(0)} {
		_, err := chash.NewBounded(chashtest.Nodes(3), o)
		assert.ErrorIs(t, err, chash.ErrInvalidOption, "bad option")
	}
	assert.Equal(t, chash.Node{}, b.Owner(-1), "out-of-range Owner")
	assert.Equal(t, chash.Node{}, b.Owner(b.Partitions()), "out-of-range Owner")
	assert.Zero(t, b.Capacity("nope"), "unknown Capacity")
	assert.Equal(t, chash.DefaultPartitions, b.Partitions(), "default partitions")
	assert.Equal(t, chash.DefaultLoadFactor, b.LoadFactor(), "default load factor")
}

func TestBoundedGolden(t *testing.T) {
	for _, tc := range []struct {
		name  string
		nodes []chash.Node
		opts  []chash.Option
	}{
		{"bounded-10", chashtest.Nodes(10), nil},
		{"bounded-weighted", []chash.Node{{ID: "a", Weight: 1}, {ID: "b", Weight: 2}, {ID: "c", Weight: 0.5}, {ID: "d", Weight: 4}}, nil},
		{"bounded-64-partitions-1024-c-1.1-seed-7", chashtest.Nodes(64), []chash.Option{chash.WithPartitions(1024), chash.WithLoadFactor(1.1), chash.WithHasher(chash.XXHashSeed(7))}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := chash.NewBounded(tc.nodes, tc.opts...)
			require.NoError(t, err)
			conformance.Golden(t, tc.name, b)
		})
	}
}

func FuzzBounded(f *testing.F) {
	f.Add([]byte("abcdefghi"), uint16(64), 1.25, "key")
	f.Add([]byte("a\x00b\x01c\x02d\x03"), uint16(3), 1.0000001, "")
	f.Add([]byte{}, uint16(0), 0.5, "k")
	weights := []float64{0, 1, 2, 0.5, -1, math.NaN(), math.Inf(1), 1e9, 1e-300, 5e-324, math.MaxFloat64}
	f.Fuzz(func(t *testing.T, spec []byte, parts uint16, c float64, key string) {
		var nodes []chash.Node
		for i := 0; i+1 < len(spec) && len(nodes) < 40; i += 2 {
			nodes = append(nodes, chash.Node{ID: string(spec[i : i+1]), Weight: weights[int(spec[i+1])%len(weights)]})
		}
		b, err := chash.NewBounded(nodes, chash.WithPartitions(int(parts)), chash.WithLoadFactor(c))
		if err != nil {
			require.Nil(t, b, "placer with an error")
			return
		}
		n := b.LookupString(key)
		require.Contains(t, b.Nodes(), n, "Lookup returned a non-member")
		top := b.AppendTopKString(nil, key, int(parts%50))
		want := min(int(parts%50), b.Len())
		require.Len(t, top, want, "AppendTopK(%d) = %v", parts%50, top)
		if want > 0 {
			require.Equal(t, n, top[0], "AppendTopK(%d)[0] against Lookup", parts%50)
		}
		if int(parts) <= 2000 {
			checkFits(t, b.Nodes(), chash.WithPartitions(int(parts)), chash.WithLoadFactor(c))
		}
	})
}

// Each partition is owned by one node; keys of a partition move together.
func ExampleNewBounded() {
	nodes := []chash.Node{{ID: "db-1"}, {ID: "db-2"}, {ID: "db-3", Weight: 2}}
	b, err := chash.NewBounded(nodes, chash.WithPartitions(1024), chash.WithLoadFactor(1.1))
	if err != nil {
		panic(err)
	}
	p := b.PartitionString("order:1001")
	fmt.Println(p, b.Owner(p).ID, b.LookupString("order:1001").ID)
	fmt.Println(b.Capacity("db-1"), b.Capacity("db-3")) // ceil(1.1 × 1024 × w / 4)
	// Output:
	// 830 db-2 db-2
	// 282 564
}

// TestBoundedDefaultPartitions: without WithPartitions, large fleets get
// enough partitions for the bound to hold (with DefaultPartitions, 5,000
// equal nodes left 147 nodes empty and peaked at 1.53 times the mean), and
// derived placers keep the count, so growth moves only what it must.
func TestBoundedDefaultPartitions(t *testing.T) {
	small, err := chash.NewBounded(chashtest.Nodes(1024))
	require.NoError(t, err)
	assert.Equal(t, chash.DefaultPartitions, small.Partitions())
	grown, err := small.Add(chash.Node{ID: "one-more"})
	require.NoError(t, err)
	assert.Equal(t, chash.DefaultPartitions, grown.Partitions(), "a derived placer keeps its count")
	if testing.Short() || raceEnabled {
		t.Skip("builds 5,000 nodes")
	}
	b, err := chash.NewBounded(chashtest.Nodes(5000))
	require.NoError(t, err)
	assert.Equal(t, 1<<17, b.Partitions())
	owned := map[string]int{}
	for p := range b.Partitions() {
		owned[b.Owner(p).ID]++
	}
	assert.Len(t, owned, 5000, "every node owns partitions")
	mean := float64(b.Partitions()) / 5000
	for id, n := range owned {
		require.LessOrEqual(t, float64(n)/mean, 1.25+1.0/16, "node %s", id)
	}
}
