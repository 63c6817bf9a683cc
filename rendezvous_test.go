package chash_test

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/keyplace/chash"
	"github.com/keyplace/chash/chashtest"
	"github.com/keyplace/chash/internal/conformance"
	"github.com/keyplace/chash/internal/measure"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestContractRendezvous(t *testing.T) { chashtest.TestPlacer(t, rendezvousSpec()) }

// rendezvousSpec is the contract of rendezvous hashing with the default
// options.
func rendezvousSpec() chashtest.Spec {
	return chashtest.Spec{
		New:      conformance.Constructor(chash.NewRendezvous),
		Weighted: true,
		MaxCV:    0.02, MaxPeak: 1.05, ShareTol: 0.05,
		Collateral: 0,
		Add: func(p chash.Placer, n chash.Node) (chash.Placer, error) {
			return p.(*chash.Rendezvous).Add(n)
		},
		Remove: func(p chash.Placer, id string) (chash.Placer, error) {
			return p.(*chash.Rendezvous).Remove(id)
		},
		Zero:   &chash.Rendezvous{},
		Derive: true,
		Variants: []func() (chash.Placer, error){
			func() (chash.Placer, error) {
				return chash.NewRendezvous(chashtest.Nodes(10), chash.WithHasher(chash.XXHashSeed(7)))
			},
		},
	}
}

func TestRendezvousGolden(t *testing.T) {
	for _, tc := range []struct {
		name  string
		nodes []chash.Node
		opts  []chash.Option
	}{
		{"rendezvous-10", chashtest.Nodes(10), nil},
		{"rendezvous-weighted", []chash.Node{{ID: "a", Weight: 1}, {ID: "b", Weight: 2}, {ID: "c", Weight: 0.5}, {ID: "d", Weight: 4}}, nil},
		{"rendezvous-40-seed-7", chashtest.Nodes(40), []chash.Option{chash.WithHasher(chash.XXHashSeed(7))}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := chash.NewRendezvous(tc.nodes, tc.opts...)
			require.NoError(t, err)
			conformance.Golden(t, tc.name, r)
		})
	}
}

// refRank ranks nodes for key as Rendezvous documents it, with math.Log
// and plain sorting: equal weights by m, unequal ones by ln(u)/weight, ties
// by m, then ID.
func refRank(nodes []chash.Node, key string) []chash.Node {
	h := xxhash.Sum64String(key)
	type scored struct {
		n chash.Node
		v float64
		m uint64
	}
	nodes = slices.Clone(nodes)
	equal := true
	for i, n := range nodes {
		if n.Weight == 0 {
			nodes[i].Weight = 1
		}
		equal = equal && n.Weight == nodes[0].Weight
	}
	s := make([]scored, len(nodes))
	for i, n := range nodes {
		m := conformance.Mix64(h ^ xxhash.Sum64String(n.ID))
		s[i] = scored{n: n, m: m}
		if !equal {
			u := (float64(m>>24) + 0.5) * 0x1p-40
			s[i].v = math.Log(u) / n.Weight
		}
	}
	slices.SortFunc(s, func(a, b scored) int {
		if c := cmp.Compare(b.v, a.v); c != 0 {
			return c
		}
		if c := cmp.Compare(b.m, a.m); c != 0 {
			return c
		}
		return cmp.Compare(a.n.ID, b.n.ID)
	})
	out := make([]chash.Node, len(s))
	for i := range s {
		out[i] = s[i].n
	}
	return out
}

// TestRendezvousDefinition checks Lookup and whole rankings (k = n, which
// takes several selection passes) against refRank. The package computes
// its own logarithm; agreement with math.Log on every ranking shows that
// its error does not reach the order of scores.
func TestRendezvousDefinition(t *testing.T) {
	weighted := chashtest.Nodes(40)
	for i := range weighted {
		weighted[i].Weight = float64(1+i%7) * 0.75
	}
	for name, nodes := range map[string][]chash.Node{"equal": chashtest.Nodes(40), "weighted": weighted} {
		t.Run(name, func(t *testing.T) {
			r, err := chash.NewRendezvous(nodes)
			require.NoError(t, err)
			buf := make([]chash.Node, 0, len(nodes))
			for i, key := range chashtest.Keys(20_000) {
				want := refRank(nodes, key)
				require.Equal(t, want[0], r.LookupString(key), "Lookup(%q) against the definition", key)
				if i%10 != 0 {
					continue
				}
				for _, k := range []int{3, len(nodes)} {
					buf = r.AppendTopKString(buf[:0], key, k)
					require.Equal(t, want[:k], buf, "AppendTopK(%q, %d) against the definition", key, k)
				}
			}
		})
	}
}

// TestRendezvousEqualWeightPaths checks that the equal-weight path (raw
// mixed values, no logarithm) and the weighted path rank equal-weight
// nodes identically: adding one heavier node forces the weighted path and
// must leave the relative order of the other nodes unchanged, for every key
// and every rank. Scaling all weights together must change nothing.
func TestRendezvousEqualWeightPaths(t *testing.T) {
	nodes := chashtest.Nodes(10)
	fast, err := chash.NewRendezvous(nodes)
	require.NoError(t, err)
	slow, err := fast.Add(chash.Node{ID: "heavy", Weight: 2})
	require.NoError(t, err)
	scaled := slices.Clone(nodes)
	for i := range scaled {
		scaled[i].Weight = 3
	}
	tripled, err := chash.NewRendezvous(scaled)
	require.NoError(t, err)
	a := make([]chash.Node, 0, 10)
	b := make([]chash.Node, 0, 11)
	c := make([]chash.Node, 0, 10)
	for _, key := range chashtest.Keys(conformance.NumKeys) {
		a = fast.AppendTopKString(a[:0], key, 10)
		b = slow.AppendTopKString(b[:0], key, 11)
		b = slices.DeleteFunc(b, func(n chash.Node) bool { return n.ID == "heavy" })
		require.Equal(t, a, b, "key %q: equal-weight path against weighted path", key)
		c = tripled.AppendTopKString(c[:0], key, 10)
		require.Equal(t, measure.IDs(a), measure.IDs(c), "key %q: weights 1 against weights 3", key)
	}
}

// TestRendezvousShares measures weighted shares over 400,000 keys, where
// sampling noise is under 0.8% of the smallest share.
func TestRendezvousShares(t *testing.T) {
	cases := [][]float64{{1, 2, 3, 4}, {1, 100}, {0.001, 0.002}, {1, 1, 1, 5}}
	keys := chashtest.Keys(400_000)
	if testing.Short() {
		keys = keys[:100_000]
	}
	for _, weights := range cases {
		nodes := make([]chash.Node, len(weights))
		total := 0.0
		for i, w := range weights {
			nodes[i] = chash.Node{ID: fmt.Sprintf("w%d", i), Weight: w}
			total += w
		}
		r, err := chash.NewRendezvous(nodes)
		require.NoError(t, err)
		count := map[string]int{}
		for _, k := range keys {
			count[r.LookupString(k).ID]++
		}
		var report []string
		for i, n := range nodes {
			share, want := float64(count[n.ID])/float64(len(keys)), weights[i]/total
			// 5 standard deviations of the sampled share.
			tol := 5 * math.Sqrt(want*(1-want)/float64(len(keys)))
			report = append(report, fmt.Sprintf("%v: %.4f (ideal %.4f)", weights[i], share, want))
			assert.InDelta(t, want, share, tol, "weights %v: share of the node of weight %v", weights, weights[i])
		}
		t.Logf("%d keys, shares %s", len(keys), strings.Join(report, ", "))
	}
}

// TestRendezvousReweight changes one weight among unequal ones: keys move
// only to or from that node, and in proportion to its share.
func TestRendezvousReweight(t *testing.T) {
	nodes := chashtest.Nodes(20)
	for i := range nodes {
		nodes[i].Weight = float64(1 + i%4)
	}
	before, err := chash.NewRendezvous(nodes)
	require.NoError(t, err)
	changed := slices.Clone(nodes)
	changed[5].Weight /= 3 // weight 2 -> 2/3: it keeps a third of its keys
	after, err := chash.NewRendezvous(changed)
	require.NoError(t, err)
	moved, owned := 0, 0
	for _, k := range chashtest.Keys(conformance.NumKeys) {
		a, b := before.LookupString(k), after.LookupString(k)
		if a.ID == nodes[5].ID {
			owned++
		}
		if a.ID != b.ID {
			moved++
			require.Equal(t, nodes[5].ID, a.ID, "key %q moved to %s; only %s changed", k, b.ID, nodes[5].ID)
		}
	}
	// Its share goes from 2/50 to (2/3)/(48+2/3).
	want := 1 - (2.0/3/(48+2.0/3))/(2.0/50)
	assert.InDelta(t, want, float64(moved)/float64(owned), 0.03, "fraction of the node's keys that moved")
}

func TestRendezvousErrors(t *testing.T) {
	for _, w := range []float64{0x1p101, 1e31, 0x1p-101, 1e-31, math.SmallestNonzeroFloat64, math.MaxFloat64} {
		r, err := chash.NewRendezvous([]chash.Node{{ID: "a", Weight: 1}, {ID: "b", Weight: w}})
		assert.ErrorIs(t, err, chash.ErrInvalidWeight, "weight %v", w)
		assert.Nil(t, r, "weight %v", w)
	}
	for _, w := range []float64{0x1p100, 0x1p-100} {
		_, err := chash.NewRendezvous([]chash.Node{{ID: "a", Weight: 1}, {ID: "b", Weight: w}})
		assert.NoError(t, err, "weight %v", w)
	}
	r, err := chash.NewRendezvous(chashtest.Nodes(3))
	require.NoError(t, err)
	_, err = r.Remove("node-1", "nope")
	assert.ErrorIs(t, err, chash.ErrUnknownNode, "Remove(unknown)")
	_, err = r.Remove("node-0", "node-1", "node-2")
	assert.ErrorIs(t, err, chash.ErrNoNodes, "Remove(all)")
	_, err = r.Add(chash.Node{ID: "node-1"})
	assert.ErrorIs(t, err, chash.ErrDuplicateID, "Add(duplicate)")
	_, err = r.Add(chash.Node{ID: "x", Weight: 1e40})
	assert.ErrorIs(t, err, chash.ErrInvalidWeight, "Add(weight 1e40)")
	_, err = chash.NewRendezvous(chashtest.Nodes(3), chash.WithHasher(nil))
	assert.ErrorIs(t, err, chash.ErrInvalidOption, "WithHasher(nil)")
}

func FuzzRendezvous(f *testing.F) {
	f.Add("a,b,c", []byte{0, 1, 2}, "key", 2, uint64(0))
	f.Add("node-1,node-2,node-3,x", []byte{3, 4, 9, 10}, "", 5, uint64(7))
	f.Add("a,a", []byte{}, "k", 1, uint64(1))
	f.Add("a,b", []byte{5, 6}, "k", -1, uint64(0))
	f.Fuzz(func(t *testing.T, idList string, weights []byte, key string, k int, seed uint64) {
		r, err := chash.NewRendezvous(conformance.FuzzNodes(idList, weights), chash.WithHasher(chash.XXHashSeed(seed)))
		if err != nil {
			require.Nil(t, r, "non-nil placer with an error")
			return
		}
		chashtest.CheckTopK(t, r, key, k%40)
		if d, err := r.Remove(r.Nodes()[0].ID); err == nil {
			chashtest.CheckTopK(t, d, key, k%40)
		}
	})
}

func ExampleNewRendezvous() {
	r, err := chash.NewRendezvous([]chash.Node{
		{ID: "cache-a", Weight: 1},
		{ID: "cache-b", Weight: 1},
		{ID: "cache-c", Weight: 2}, // twice the capacity, twice the keys
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(r.LookupString("user:42").ID)
	// Output: cache-b
}

func ExampleRendezvous_AppendTopK() {
	r, err := chash.NewRendezvous(chashtest.Nodes(8))
	if err != nil {
		panic(err)
	}
	replicas := make([]chash.Node, 0, 3) // reuse across calls: no allocation
	replicas = r.AppendTopK(replicas[:0], []byte("object/1234"), 3)
	fmt.Println(measure.IDs(replicas))
	// Output: [node-3 node-6 node-2]
}

// BenchmarkRendezvousWeighted measures the weighted path (unequal weights,
// logarithm with pruning), which the shared BenchmarkLookup does not reach.
func BenchmarkRendezvousWeighted(b *testing.B) {
	for _, n := range benchNodeCounts {
		nodes := chashtest.Nodes(n)
		for i := range nodes {
			nodes[i].Weight = float64(1 + i%4)
		}
		r, err := chash.NewRendezvous(nodes)
		require.NoError(b, err)
		benchPaths(b, fmt.Sprintf("nodes=%d/key=13", n), r, 13)
	}
}
