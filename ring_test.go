package chash_test

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/chashtest"
	"github.com/keyplace/chash/internal/conformance"
	"github.com/keyplace/chash/internal/measure"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestContractRing(t *testing.T) { chashtest.TestPlacer(t, ringSpec()) }

// ringSpec is the contract of a ring with the default options; Zoned's
// and Holder's contracts wrap it.
func ringSpec() chashtest.Spec {
	return chashtest.Spec{
		New:      conformance.Constructor(chash.NewRing),
		Weighted: true,
		MaxCV:    0.12, MaxPeak: 1.25, ShareTol: 0.3,
		// 160 points a unit: each node's share is off by about 8% of itself.
		WeightTVD: 0.08,
		NewScaled: func(nodes []chash.Node, unit float64) (chash.Placer, error) {
			return chash.NewRing(nodes, chash.WithWeightUnit(unit))
		},
		Add: func(p chash.Placer, n chash.Node) (chash.Placer, error) {
			return p.(*chash.Ring).Add(n)
		},
		Remove: func(p chash.Placer, id string) (chash.Placer, error) {
			return p.(*chash.Ring).Remove(id)
		},
		Zero:   &chash.Ring{},
		Derive: true,
		Variants: []func() (chash.Placer, error){
			func() (chash.Placer, error) { return chash.NewRing(chashtest.Nodes(10), chash.WithVnodes(100)) },
			func() (chash.Placer, error) {
				return chash.NewRing(chashtest.Nodes(10), chash.WithHasher(chash.XXHashSeed(7)))
			},
			func() (chash.Placer, error) {
				return chash.NewRing(chashtest.Nodes(10), chash.WithKetama(chash.KetamaLibmemcached))
			},
		},
	}
}

func TestRingGolden(t *testing.T) {
	for _, tc := range []struct {
		name  string
		nodes []chash.Node
		opts  []chash.Option
	}{
		{"ring-10", chashtest.Nodes(10), nil},
		{"ring-weighted", []chash.Node{{ID: "a", Weight: 1}, {ID: "b", Weight: 2}, {ID: "c", Weight: 0.5}, {ID: "d", Weight: 4}}, nil},
		{"ring-10-vnodes-40-seed-7", chashtest.Nodes(10), []chash.Option{chash.WithVnodes(40), chash.WithHasher(chash.XXHashSeed(7))}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := chash.NewRing(tc.nodes, tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			conformance.Golden(t, tc.name, r)
		})
	}
}

// constHasher puts every point and every key at the same position, so the
// ring is nothing but collisions.
type constHasher struct{}

func (constHasher) Sum64([]byte) uint64       { return 7 }
func (constHasher) Sum64String(string) uint64 { return 7 }

func TestRingCollisionsOrderedByID(t *testing.T) {
	nodes := []chash.Node{{ID: "c"}, {ID: "a"}, {ID: "b"}}
	r, err := chash.NewRing(nodes, chash.WithHasher(constHasher{}), chash.WithVnodes(1))
	require.NoError(t, err)
	// All points sit at mix64(7): the lowest ID owns them, and the
	// preference list follows ID order.
	assert.Equal(t, "a", r.LookupString("x").ID)
	assert.Equal(t, []string{"a", "b", "c"}, measure.IDs(r.AppendTopKString(nil, "y", 5)))
	slices.Reverse(nodes)
	r2, _ := chash.NewRing(nodes, chash.WithHasher(constHasher{}), chash.WithVnodes(1))
	assert.Equal(t, measure.IDs(r.AppendTopKString(nil, "y", 5)), measure.IDs(r2.AppendTopKString(nil, "y", 5)))
}

// The load's coefficient of variation falls as 1/sqrt(vnodes). Measured
// here on keys, so the figure includes about 1% of sampling noise.
func TestRingBalanceByVnodes(t *testing.T) {
	nodes := chashtest.Nodes(10)
	for _, tc := range []struct {
		vnodes int
		maxCV  float64
	}{{1, 1.5}, {10, 0.5}, {100, 0.15}, {160, 0.12}, {1000, 0.05}} {
		r, err := chash.NewRing(nodes, chash.WithVnodes(tc.vnodes))
		require.NoError(t, err)
		assert.Equal(t, 10*tc.vnodes, r.Points())
		cv, peak := measure.Stats(measure.Load(conformance.Owners(r), measure.IDs(nodes)))
		t.Logf("vnodes %4d: CV %.3f peak/mean %.3f (1/sqrt(v) = %.3f)", tc.vnodes, cv, peak, 1/math.Sqrt(float64(tc.vnodes)))
		assert.Less(t, cv, tc.maxCV, "vnodes %d", tc.vnodes)
	}
}

func TestRingBalance100(t *testing.T) {
	nodes := chashtest.Nodes(100)
	r, err := chash.NewRing(nodes)
	require.NoError(t, err)
	cv, peak := measure.Stats(measure.Load(conformance.Owners(r), measure.IDs(nodes)))
	t.Logf("100 nodes: CV %.3f peak/mean %.3f", cv, peak)
	// 1,000 keys a node add about 3% of sampling noise to the ring's 8%.
	assert.Less(t, cv, 0.12)
	assert.Less(t, peak, 1.35)
}

func TestRingPointsFollowWeight(t *testing.T) {
	r, err := chash.NewRing([]chash.Node{{ID: "a", Weight: 0.05}, {ID: "b", Weight: 2.5}, {ID: "c"}}, chash.WithVnodes(100))
	require.NoError(t, err)
	assert.Equal(t, 5+250+100, r.Points())
	assert.Equal(t, []chash.Node{{ID: "a", Weight: 0.05}, {ID: "b", Weight: 2.5}, {ID: "c", Weight: 1}}, r.Nodes())
	// Rounded, not truncated: 1.2345 × 160 = 197.52 points is 198.
	r, err = chash.NewRing([]chash.Node{{ID: "a", Weight: 1.2345}})
	require.NoError(t, err)
	assert.Equal(t, 198, r.Points())
}

func TestRingTooLarge(t *testing.T) {
	_, err := chash.NewRing([]chash.Node{{ID: "a", Weight: 1e12}})
	assert.ErrorIs(t, err, chash.ErrTooLarge)
	_, err = chash.NewRing([]chash.Node{{ID: "a", Weight: math.MaxFloat64}})
	assert.ErrorIs(t, err, chash.ErrTooLarge)
	r, err := chash.NewRing([]chash.Node{{ID: "a"}})
	require.NoError(t, err)
	_, err = r.Add(chash.Node{ID: "b", Weight: 1e12})
	assert.ErrorIs(t, err, chash.ErrTooLarge)
	// Each node fits, the sum does not: checked before it could overflow a
	// 32-bit int or reach the allocator.
	heavy := make([]chash.Node, 129)
	for i := range heavy {
		heavy[i] = chash.Node{ID: fmt.Sprint(i), Weight: 100_000}
	}
	_, err = chash.NewRing(heavy)
	assert.ErrorIs(t, err, chash.ErrTooLarge)
}

func TestKetamaRejectsServersThatHashAlike(t *testing.T) {
	_, err := chash.NewRing([]chash.Node{{ID: "10.0.0.1:11211"}, {ID: "10.0.0.1"}}, chash.WithKetama(chash.KetamaLibmemcached))
	require.ErrorIs(t, err, chash.ErrDuplicateID)
	assert.Contains(t, err.Error(), `"10.0.0.1"`)
	// The other variants hash the IDs as given: both are distinct servers.
	_, err = chash.NewRing([]chash.Node{{ID: "10.0.0.1:11211"}, {ID: "10.0.0.1"}}, chash.WithKetama(chash.KetamaLibketama))
	assert.NoError(t, err)
}

func TestRingDeriveErrors(t *testing.T) {
	r, err := chash.NewRing(chashtest.Nodes(3))
	require.NoError(t, err)
	_, err = r.Add(chash.Node{ID: "node-1"})
	assert.ErrorIs(t, err, chash.ErrDuplicateID)
	_, err = r.Add(chash.Node{ID: "x", Weight: math.NaN()})
	assert.ErrorIs(t, err, chash.ErrInvalidWeight)
	_, err = r.Remove("nope")
	assert.ErrorIs(t, err, chash.ErrUnknownNode)
	_, err = r.Remove("node-0", "node-1", "node-2")
	assert.ErrorIs(t, err, chash.ErrNoNodes)
	same, err := r.Add()
	require.NoError(t, err)
	assert.Equal(t, conformance.Owners(r), conformance.Owners(same))
}

// Deriving through several steps, with reweighting, matches a fresh build.
func TestRingDeriveMatchesBuild(t *testing.T) {
	r, err := chash.NewRing(chashtest.Nodes(20))
	require.NoError(t, err)
	r, err = r.Remove("node-3", "node-17")
	require.NoError(t, err)
	r, err = r.Add(chash.Node{ID: "x", Weight: 3}, chash.Node{ID: "y", Weight: 0.5})
	require.NoError(t, err)
	want, err := chash.NewRing(r.Nodes())
	require.NoError(t, err)
	assert.Equal(t, r.Points(), want.Points())
	assert.Equal(t, conformance.Owners(want), conformance.Owners(r))
	top := func(p chash.Placer) [][]chash.Node {
		var out [][]chash.Node
		for _, k := range chashtest.Keys(2000) {
			out = append(out, p.AppendTopKString(nil, k, 4))
		}
		return out
	}
	assert.Equal(t, top(want), top(r))
}

func FuzzRing(f *testing.F) {
	f.Add("a,b,c", []byte{0, 1, 2}, "key", 3, 1)
	f.Add("", []byte{}, "", 0, 0)
	f.Add("x,y", []byte{5, 7}, "k", -1, 200)
	f.Fuzz(func(t *testing.T, idList string, weights []byte, key string, k, vnodes int) {
		r, err := chash.NewRing(conformance.FuzzNodes(idList, weights), chash.WithVnodes(1+vnodes%300))
		if err != nil {
			if r != nil {
				t.Fatal("non-nil ring with an error")
			}
			return
		}
		chashtest.CheckTopK(t, r, key, k%40)
		if d, err := r.Remove(r.Nodes()[0].ID); err == nil {
			chashtest.CheckTopK(t, d, key, k%40)
		}
	})
}
