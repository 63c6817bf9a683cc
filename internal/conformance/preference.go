package conformance

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/keyplace/chash"
)

// topKPrefix checks that every key has one preference order: the k-node
// list is the first k of the (k+1)-node list, for every k up to Len, so
// asking for more replicas never reorders the first ones. It also checks
// that a dst already holding members does not change what is appended.
func topKPrefix(t *testing.T, s Spec) {
	nodes := Nodes(10)
	if s.Weighted {
		for i := range nodes {
			nodes[i].Weight = float64(1 + i%4)
		}
	}
	p := build(t, s, nodes)
	n := p.Len()
	long := make([]chash.Node, 0, n)
	short := make([]chash.Node, 0, n)
	held := make([]chash.Node, 0, 2*n)
	for _, key := range keys()[:5_000] {
		long = p.AppendTopKString(long[:0], key, n)
		for k := 1; k < n; k++ {
			short = p.AppendTopKString(short[:0], key, k)
			if !slices.Equal(short, long[:k]) {
				t.Fatalf("key %q: top %d %v is not a prefix of top %d %v", key, k, IDs(short), n, IDs(long))
			}
		}
		// dst already holds members (a caller reusing a buffer it did not
		// reset): the appended nodes are the same k nodes.
		held = append(held[:0], long[n-1], long[0])
		held = p.AppendTopKString(held, key, 3)
		if !slices.Equal(held[2:], long[:3]) {
			t.Fatalf("key %q: appending to %v gave %v, want %v after them", key, IDs(held[:2]), IDs(held[2:]), IDs(long[:3]))
		}
	}
}

// weightVectors checks that every accepted weight vector is honoured: over
// random vectors at scales from 1e-6 to 1e12 with weights up to 100 times
// apart, the total variation distance between the nodes' shares of the
// suite's keys and w/Σw stays within s.WeightTVD. A placer whose weights
// are scale-free (every Spec without NewScaled) must accept them all; one
// whose weights are in a unit (the ring) is built in the smallest weight's
// unit.
func weightVectors(t *testing.T, s Spec) {
	if !s.Weighted {
		return
	}
	rng := rand.New(rand.NewPCG(1, 2))
	ks := keys()[:30_000]
	worst, rejected := 0.0, 0
	for v := 0; v < 24; v++ {
		scale := math.Pow(10, -6+18*rng.Float64())
		nodes := Nodes(2 + rng.IntN(11))
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
			// points, which honour them but cost a minute under -race;
			// its refusals are tested beside the ring.)
			rejected++
			if p, err = s.NewScaled(nodes, lo); err != nil {
				t.Fatalf("vector %d in unit %.3g: %v", v, lo, err)
			}
		} else if p, err = s.New(nodes); err != nil {
			t.Fatalf("vector %d (scale %.3g): rejected: %v", v, scale, err)
		}
		tvd := shareDistance(p, nodes, ks)
		worst = max(worst, tvd)
		if tvd > s.WeightTVD {
			t.Errorf("vector %d (%d nodes, scale %.3g): shares %.4f from w/Σw in total variation (bound %.4f)", v, len(nodes), scale, tvd, s.WeightTVD)
		}
	}
	t.Logf("24 weight vectors: worst total variation %.4f, %d built in a weight unit", worst, rejected)
}

// shareDistance returns half the L1 distance between the nodes' shares of
// keys and their weights' shares.
func shareDistance(p chash.Placer, nodes []chash.Node, keys []string) float64 {
	count := make(map[string]float64, len(nodes))
	for _, k := range keys {
		count[p.LookupString(k).ID]++
	}
	var total, d float64
	for _, n := range nodes {
		total += n.Weight
	}
	for _, n := range nodes {
		d += math.Abs(count[n.ID]/float64(len(keys)) - n.Weight/total)
	}
	return d / 2
}
