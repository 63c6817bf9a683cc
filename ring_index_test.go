package chash

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
)

// handRing builds a ring straight from points given as (position, node)
// pairs, so that the index can be tested at positions no hash would give.
func handRing(t *testing.T, nodes int, pts []point) *Ring {
	t.Helper()
	ns := make([]Node, nodes)
	for i := range ns {
		ns[i] = Node{ID: fmt.Sprintf("n%03d", i), Weight: 1}
	}
	pts = slices.Clone(pts)
	slices.SortFunc(pts, comparePoints)
	cfg, err := newConfig(nil)
	require.NoError(t, err)
	return newRing(cfg, ns, pts)
}

// randomPoints returns n points at random positions over nodes nodes,
// with some positions repeated so that ties occur.
func randomPoints(rng *rand.Rand, n, nodes int) []point {
	pts := make([]point, n)
	for i := range pts {
		pts[i] = point{pos: rng.Uint64(), node: uint32(rng.IntN(nodes))}
		if i > 0 && rng.IntN(10) == 0 {
			pts[i].pos = pts[i-1].pos
		}
	}
	return pts
}

// clumpPoints crowds n points into a few hundred positions, as crafted
// IDs do, so that lookups take the bisecting path.
func clumpPoints(n, nodes int) []point {
	pts := make([]point, n)
	for i := range pts {
		pts[i] = point{pos: 1<<40 + uint64(i)*7, node: uint32(i % nodes)}
	}
	return pts
}

// TestRingIndexMatchesSearch checks the bucket index against a plain
// binary search of the points: for random hashes, hashes on, below and
// above every point, every bucket's edges, 0 and MaxUint64, owner and
// locate give the first point at or after the hash, wrapping.
func TestRingIndexMatchesSearch(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	cases := map[string][]point{
		"one point":         {{pos: 12345, node: 0}},
		"one point at 0":    {{pos: 0, node: 0}},
		"one point at max":  {{pos: math.MaxUint64, node: 0}},
		"two, same spot":    {{pos: 1 << 63, node: 1}, {pos: 1 << 63, node: 0}},
		"ends":              {{pos: 0, node: 0}, {pos: math.MaxUint64, node: 1}, {pos: 1 << 63, node: 2}},
		"random 1000":       randomPoints(rng, 1000, 7),
		"random 1024":       randomPoints(rng, 1024, 3),
		"random 1025":       randomPoints(rng, 1025, 50),
		"crowded":           append(clumpPoints(5000, 40), randomPoints(rng, 300, 40)...),
		"random 16387 ties": randomPoints(rng, 1<<14+3, 200),
	}
	for name, pts := range cases {
		t.Run(name, func(t *testing.T) {
			nodes := 0
			for _, p := range pts {
				nodes = max(nodes, int(p.node)+1)
			}
			r := handRing(t, nodes, pts)
			want := func(h uint64) int {
				i := sort.Search(len(r.points), func(i int) bool { return r.points[i].pos >= h })
				if i == len(r.points) {
					i = 0
				}
				return i
			}
			check := func(h uint64) {
				w := want(h)
				require.Equal(t, w, r.locate(h), "locate(%#x)", h)
				require.Equal(t, r.points[w].node, r.owner(h), "owner(%#x)", h)
			}
			hs := []uint64{0, 1, math.MaxUint64, math.MaxUint64 - 1}
			for _, p := range r.points {
				hs = append(hs, p.pos-1, p.pos, p.pos+1)
			}
			for b := range uint64(len(r.index)) {
				start := b << r.shift
				hs = append(hs, start, start-1, start+1)
			}
			for range 20_000 {
				hs = append(hs, rng.Uint64())
			}
			for _, h := range hs {
				check(h)
			}
		})
	}
}

// TestRingIndexAnswersMostKeys measures the promise in Ring's doc: most
// keys are answered by their bucket's entry alone, without reading the
// points. With between P and 2P buckets for P points, the share of the
// hash space that lies before the last point of a bucket of several is
// 6% to 19% (one point a bucket on average at most).
func TestRingIndexAnswersMostKeys(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{1000, 1 << 14, 1<<14 + 1, 160_000} {
		r := handRing(t, 100, randomPoints(rng, n, 100))
		search := 0
		const keys = 200_000
		for range keys {
			h := rng.Uint64()
			if e := r.index[h>>r.shift]; h <= e.pos && e.node == several {
				search++
			}
		}
		frac := float64(search) / keys
		require.Less(t, frac, 0.2, "%d points: %.3f of keys read the points", n, frac)
		require.Greater(t, frac, 0.01, "%d points: %.3f of keys read the points: the index is not what it claims", n, frac)
		require.Len(t, r.index, 1<<(64-r.shift), "%d points", n)
		require.True(t, len(r.index) >= n && len(r.index) < 2*n, "%d points, %d buckets", n, len(r.index))
	}
}
