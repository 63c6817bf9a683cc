package chash_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/keyplace/chash"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// shareOf returns the exact share of the node with the given ID.
func shareOf(t *testing.T, p chash.Placer, id string) float64 {
	t.Helper()
	o, err := chash.Shares(p)
	require.NoError(t, err)
	for _, s := range o.Shares {
		if s.Node.ID == id {
			return s.Fraction
		}
	}
	t.Fatalf("no share for %q", id)
	return 0
}

// Ring weights are counted in a unit (WithWeightUnit, default 1): a weight
// the ring cannot honour within 5% of its points is an error, never a
// silently distorted share.
func TestRingWeightsTooSmallAreRejected(t *testing.T) {
	tiny := []chash.Node{{ID: "a", Weight: 0.001}, {ID: "b", Weight: 0.002}}
	_, err := chash.NewRing(tiny)
	require.ErrorIs(t, err, chash.ErrInvalidWeight)
	assert.Contains(t, err.Error(), "WithWeightUnit")

	r, err := chash.NewRing(tiny, chash.WithWeightUnit(0.001))
	require.NoError(t, err)
	assert.Equal(t, 3*chash.DefaultVnodes, r.Points())
	assert.InDelta(t, 2.0/3, shareOf(t, r, "b"), 0.1, "the heavier node must own about 2/3")

	hundred := make([]chash.Node, 100)
	for i := range hundred {
		hundred[i] = chash.Node{ID: fmt.Sprintf("node-%d", i), Weight: 0.01}
	}
	_, err = chash.NewRing(hundred)
	require.ErrorIs(t, err, chash.ErrInvalidWeight)
	r, err = chash.NewRing(hundred, chash.WithWeightUnit(0.01))
	require.NoError(t, err)
	o, err := chash.Shares(r)
	require.NoError(t, err)
	assert.Less(t, o.CV(), 0.12, "100 nodes of weight 0.01 in unit 0.01 balance like 100 of weight 1")
}

// Byte capacities are usable on every algorithm: the ring with a unit, the
// others as they are.
func TestByteCapacityWeights(t *testing.T) {
	nodes := []chash.Node{{ID: "big", Weight: 64 << 30}, {ID: "small", Weight: 32 << 30}, {ID: "tiny", Weight: 1 << 30}}
	_, err := chash.NewRing(nodes)
	require.ErrorIs(t, err, chash.ErrTooLarge)
	assert.Contains(t, err.Error(), "WithWeightUnit")
	opts := []chash.Option{chash.WithWeightUnit(1 << 30)}
	for _, a := range chash.Algorithms() {
		if !a.Weighted() {
			continue // equal weights only
		}
		p, err := chash.New(a, nodes, opts...)
		require.NoError(t, err, a)
		for _, n := range nodes {
			want := n.Weight / (97 << 30)
			got := shareOf(t, p, n.ID)
			assert.InDelta(t, 1, got/want, 0.3, "%v: %s owns %.4f, want %.4f", a, n.ID, got, want)
		}
	}
}

// With the unit scaled as the weights are, a ring places every key the same.
func TestRingWeightUnitScaleInvariant(t *testing.T) {
	nodes := []chash.Node{{ID: "a", Weight: 1}, {ID: "b", Weight: 2.5}, {ID: "c", Weight: 0.25}}
	base, err := chash.NewRing(nodes)
	require.NoError(t, err)
	for _, scale := range []float64{0x1p-20, 1e-6, 1e6, 0x1p40, 1e12} {
		scaled := make([]chash.Node, len(nodes))
		for i, n := range nodes {
			scaled[i] = chash.Node{ID: n.ID, Weight: n.Weight * scale}
		}
		r, err := chash.NewRing(scaled, chash.WithWeightUnit(scale))
		require.NoError(t, err, scale)
		m, err := chash.Diff(base, r)
		require.NoError(t, err)
		assert.Zero(t, m.Moved, "scale %v", scale)
	}
	for _, u := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		_, err := chash.NewRing(nodes, chash.WithWeightUnit(u))
		assert.ErrorIs(t, err, chash.ErrInvalidOption, u)
	}
}

// Ketama fixes the hash and the point counts: options that would change
// them are errors, not silently ignored.
func TestKetamaOptionConflicts(t *testing.T) {
	nodes := []chash.Node{{ID: "10.0.0.1:11211"}}
	for _, o := range []chash.Option{chash.WithHasher(chash.XXHashSeed(1)), chash.WithVnodes(100), chash.WithWeightUnit(2)} {
		_, err := chash.NewRing(nodes, chash.WithKetama(chash.KetamaLibmemcached), o)
		assert.ErrorIs(t, err, chash.ErrInvalidOption)
	}
}
