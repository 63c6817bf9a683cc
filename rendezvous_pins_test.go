package chash_test

import (
	"slices"
	"testing"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/chashtest"
	"github.com/keyplace/chash/internal/conformance"
	"github.com/keyplace/chash/internal/measure"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStraw2Checksums pins the top 3 of 100,000 keys under the weighted
// (logarithmic) scores of rendezvous and bounded, a hundred times what the
// golden files hold: a logarithm that differs in the last bits for one
// grid point in a million, on any platform, changes a checksum. The
// constants were computed once and frozen; a change to them is a placement
// change (see conformance.Golden).
func TestStraw2Checksums(t *testing.T) {
	keys := chashtest.Keys(conformance.NumKeys)
	for _, tc := range []struct {
		name string
		want uint64
		new  func() (chash.Placer, error)
	}{
		{"rendezvous-weighted-10", 0xd163731726b6c698, func() (chash.Placer, error) {
			return chash.New(chash.AlgorithmRendezvous, weightedNodes(10))
		}},
		{"rendezvous-weighted-40-seed-7", 0x312b200742c122fb, func() (chash.Placer, error) {
			return chash.New(chash.AlgorithmRendezvous, weightedNodes(40), chash.WithHasher(chash.XXHashSeed(7)))
		}},
		{"rendezvous-extreme-weights", 0xd6ce69f0eca63ed, func() (chash.Placer, error) {
			return chash.New(chash.AlgorithmRendezvous, []chash.Node{
				{ID: "tiny", Weight: 0x1p-100}, {ID: "huge", Weight: 0x1p100}, {ID: "a", Weight: 1e-20},
				{ID: "b", Weight: 1e20}, {ID: "c", Weight: 1e20 * 1.0000001}, {ID: "d", Weight: 1},
			})
		}},
		{"bounded-weighted-10-partitions-131072", 0x6d8593dce6616e80, func() (chash.Placer, error) {
			return chash.New(chash.AlgorithmBounded, weightedNodes(10), chash.WithPartitions(1<<17))
		}},
		{"bounded-weighted-40-c-1.1", 0x3a7760733226f69c, func() (chash.Placer, error) {
			return chash.New(chash.AlgorithmBounded, weightedNodes(40), chash.WithLoadFactor(1.1))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := tc.new()
			require.NoError(t, err)
			assert.Equal(t, tc.want, topKChecksum(p, keys, 3), "checksum %#x", topKChecksum(p, keys, 3))
		})
	}
}

// TestRendezvousEqualScores gives two IDs one hash, so they score equally
// for every key: the lower ID ranks first, immediately followed by the
// other, and the higher never owns a key; with equal and unequal weights,
// in either input order.
func TestRendezvousEqualScores(t *testing.T) {
	h := pinHasher{"a": 0x1234567890abcdef, "b": 0x1234567890abcdef}
	for _, tc := range []struct {
		name  string
		nodes []chash.Node
	}{
		{"equal weights", []chash.Node{{ID: "b"}, {ID: "c"}, {ID: "a"}, {ID: "d"}}},
		{"unequal weights", []chash.Node{{ID: "b", Weight: 2}, {ID: "c", Weight: 1}, {ID: "a", Weight: 2}, {ID: "d", Weight: 3}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, nodes := range [][]chash.Node{tc.nodes, reversed(tc.nodes)} {
				r, err := chash.NewRendezvous(nodes, chash.WithHasher(h))
				require.NoError(t, err)
				owned := map[string]int{}
				for _, k := range chashtest.Keys(20_000) {
					top := measure.IDs(r.AppendTopKString(nil, k, 4))
					owned[r.LookupString(k).ID]++
					i := slices.Index(top, "a")
					require.Equal(t, "b", top[i+1], "key %q: %v: a and b score equally, a ranks first", k, top)
				}
				assert.Zero(t, owned["b"], "b never owns a key")
				assert.NotZero(t, owned["a"])
			}
		})
	}
}

// TestBoundedEqualScores: in a bounded placer two colliding IDs are ranked
// the same way: where neither owns the partition, a comes immediately
// before b.
func TestBoundedEqualScores(t *testing.T) {
	h := pinHasher{"a": 0x1234567890abcdef, "b": 0x1234567890abcdef}
	for _, nodes := range [][]chash.Node{
		{{ID: "b"}, {ID: "c"}, {ID: "a"}, {ID: "d"}},
		{{ID: "b", Weight: 2}, {ID: "c", Weight: 1}, {ID: "a", Weight: 2}, {ID: "d", Weight: 3}},
	} {
		p, err := chash.NewBounded(nodes, chash.WithHasher(h), chash.WithPartitions(512))
		require.NoError(t, err)
		for _, k := range chashtest.Keys(5000) {
			top := measure.IDs(p.AppendTopKString(nil, k, 4))
			if top[0] == "a" || top[0] == "b" {
				// The owner leads the list, out of its place in the
				// partition's order; the rest keep theirs.
				continue
			}
			i := slices.Index(top, "a")
			require.Equal(t, "b", top[i+1], "key %q: %v: a and b score equally, a ranks first", k, top)
		}
	}
}

func reversed(nodes []chash.Node) []chash.Node {
	out := slices.Clone(nodes)
	slices.Reverse(out)
	return out
}
