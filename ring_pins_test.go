package chash_test

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
	"testing"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/chashtest"
	"github.com/keyplace/chash/internal/conformance"
	"github.com/keyplace/chash/internal/measure"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// refPoint is a ring point as documented: position, then owner ID.
type refPoint struct {
	pos uint64
	id  string
}

// refRingPoints computes a ring from its definition: a node has
// max(1, round(vnodes × weight)) points, point j at mix64(h(ID) + j·φ),
// and points that coincide are ordered by node ID.
func refRingPoints(nodes []chash.Node, vnodes int, h chash.Hasher) []refPoint {
	var pts []refPoint
	for _, n := range nodes {
		count := max(1, int(math.Round(float64(vnodes)*effWeight(n))))
		base := h.Sum64String(n.ID)
		for j := 0; j < count; j++ {
			pts = append(pts, refPoint{conformance.Mix64(base + uint64(j)*phi), n.ID})
		}
	}
	slices.SortFunc(pts, func(a, b refPoint) int {
		if c := cmp.Compare(a.pos, b.pos); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
	return pts
}

// refRingTop walks clockwise from the first point at or after h, wrapping,
// and returns the first k distinct owners.
func refRingTop(pts []refPoint, h uint64, k int) []string {
	i := sort.Search(len(pts), func(i int) bool { return pts[i].pos >= h })
	var out []string
	for walked := 0; walked < len(pts) && len(out) < k; walked++ {
		id := pts[(i+walked)%len(pts)].id
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// TestRingKeyOnAPoint aims keys exactly at every point, one below and one
// above: a key hashing onto a point belongs to that point's node ("at or
// after"), not to the next one.
func TestRingKeyOnAPoint(t *testing.T) {
	h := pinHasher{"a": 1 << 60, "b": 2 << 60, "c": 3 << 60}
	nodes := []chash.Node{{ID: "a"}, {ID: "b"}, {ID: "c"}}
	pts := refRingPoints(nodes, 8, h)
	require.Len(t, pts, 24)
	for i, p := range pts {
		next := pts[(i+1)%len(pts)]
		h[fmt.Sprintf("at-%d", i)] = p.pos
		h[fmt.Sprintf("below-%d", i)] = p.pos - 1
		h[fmt.Sprintf("above-%d", i)] = p.pos + 1
		require.NotEqual(t, p.pos-1, pts[(i+len(pts)-1)%len(pts)].pos, "test needs a gap below point %d", i)
		require.NotEqual(t, p.pos+1, next.pos, "test needs a gap above point %d", i)
	}
	h["zero"], h["max"] = 0, math.MaxUint64
	r, err := chash.NewRing(nodes, chash.WithHasher(h), chash.WithVnodes(8))
	require.NoError(t, err)
	require.Equal(t, len(pts), r.Points())
	for i, p := range pts {
		next := pts[(i+1)%len(pts)]
		assert.Equal(t, p.id, r.LookupString(fmt.Sprintf("at-%d", i)).ID, "key on point %d", i)
		assert.Equal(t, p.id, r.Lookup([]byte(fmt.Sprintf("at-%d", i))).ID, "key on point %d", i)
		assert.Equal(t, p.id, r.LookupString(fmt.Sprintf("below-%d", i)).ID, "key just below point %d", i)
		assert.Equal(t, next.id, r.LookupString(fmt.Sprintf("above-%d", i)).ID, "key just above point %d", i)
		top := r.AppendTopKString(nil, fmt.Sprintf("at-%d", i), 3)
		assert.Equal(t, refRingTop(pts, p.pos, 3), measure.IDs(top), "top 3 of a key on point %d", i)
	}
	assert.Equal(t, pts[0].id, r.LookupString("zero").ID)
	require.Less(t, pts[len(pts)-1].pos, uint64(math.MaxUint64))
	assert.Equal(t, pts[0].id, r.LookupString("max").ID, "past the last point the ring wraps")
}

// TestRingPointCounts pins round(vnodes × weight), at least one, for
// weights that are not whole multiples of 1/vnodes: floor or ceil, or
// banker's rounding at .5, give other counts.
func TestRingPointCounts(t *testing.T) {
	for _, tc := range []struct {
		vnodes int
		weight float64
		points int
	}{
		{10, 1.26, 13},     // 12.6: floor 12
		{10, 1.24, 12},     // 12.4: ceil 13
		{10, 1.25, 13},     // 12.5: half away from zero (to even: 12)
		{10, 0.1, 1},       // exactly one point
		{10, 0.5, 5},       // exactly five
		{20, 1.02, 20},     // 20.4, 2% off
		{160, 1.0031, 160}, // 160.496
		{160, 1.0032, 161}, // 160.512: floor 160
		{160, 0.3, 48},
		{7, 1.5, 11}, // 10.5, 4.8% off
	} {
		r, err := chash.NewRing([]chash.Node{{ID: "x", Weight: tc.weight}}, chash.WithVnodes(tc.vnodes))
		require.NoError(t, err)
		assert.Equal(t, tc.points, r.Points(), "vnodes %d × weight %v", tc.vnodes, tc.weight)
	}
	// Counts rounded by more than 5% of themselves misstate a share: refused.
	for _, tc := range []struct {
		vnodes int
		weight float64
	}{
		{10, 0.35}, // 3.5 -> 4, 14% off
		{10, 0.45}, // 4.5 -> 5, 11%
		{10, 0.04}, // 0.4 -> 0
		{10, 0.16}, // 1.6 -> 2, 25%
		{1, 2.5},   // 2.5 -> 3, 20%
	} {
		_, err := chash.NewRing([]chash.Node{{ID: "x", Weight: tc.weight}}, chash.WithVnodes(tc.vnodes))
		assert.ErrorIs(t, err, chash.ErrInvalidWeight, "vnodes %d × weight %v", tc.vnodes, tc.weight)
	}
	// Together, the counts add up, and each node's own count is the same.
	nodes := []chash.Node{{ID: "a", Weight: 1.26}, {ID: "b", Weight: 1.24}, {ID: "c", Weight: 0.5}, {ID: "d", Weight: 0.1}}
	r, err := chash.NewRing(nodes, chash.WithVnodes(10))
	require.NoError(t, err)
	assert.Equal(t, 13+12+5+1, r.Points())
	assert.Len(t, refRingPoints(nodes, 10, chash.XXHash), r.Points())
}

// TestRingReference checks the ring against refRingPoints for ordinary
// and weighted nodes: every key's owner and top 4.
func TestRingReference(t *testing.T) {
	for _, tc := range []struct {
		name   string
		nodes  []chash.Node
		vnodes int
	}{
		{"equal", chashtest.Nodes(10), 160},
		{"weighted", weightedNodes(10), 400}, // the lightest, 0.013, gets 5 points
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := chash.NewRing(tc.nodes, chash.WithVnodes(tc.vnodes))
			require.NoError(t, err)
			pts := refRingPoints(tc.nodes, tc.vnodes, chash.XXHash)
			require.Equal(t, len(pts), r.Points())
			for _, k := range chashtest.Keys(20_000) {
				want := refRingTop(pts, chash.XXHash.Sum64String(k), 4)
				require.Equal(t, want, measure.IDs(r.AppendTopKString(nil, k, 4)), "key %q", k)
				require.Equal(t, want[0], r.LookupString(k).ID, "key %q", k)
			}
		})
	}
}

// TestRingCollidingIDs gives four IDs one hash, so each of their points
// coincides with the others': the lowest ID owns every such point, the
// others follow it in ID order in every preference list, and Add and
// Remove keep that rule exactly as a fresh build does.
func TestRingCollidingIDs(t *testing.T) {
	h := pinHasher{"c1": 0xdeadbeef, "c2": 0xdeadbeef, "c3": 0xdeadbeef, "c4": 0xdeadbeef}
	all := []chash.Node{{ID: "c3"}, {ID: "x"}, {ID: "c1"}, {ID: "y"}, {ID: "c4"}, {ID: "c2"}}
	keys := pinKeys(20_000, 4)
	build := func(nodes []chash.Node) *chash.Ring {
		r, err := chash.NewRing(nodes, chash.WithHasher(h))
		require.NoError(t, err)
		return r
	}
	check := func(name string, r *chash.Ring) {
		t.Helper()
		pts := refRingPoints(r.Nodes(), chash.DefaultVnodes, h)
		var colliders []string
		for _, n := range r.Nodes() {
			if _, ok := h[n.ID]; ok {
				colliders = append(colliders, n.ID)
			}
		}
		owned := map[string]int{}
		for _, k := range keys {
			top := measure.IDs(r.AppendTopKString(nil, k, r.Len()))
			require.Equal(t, refRingTop(pts, chash.XXHash.Sum64String(k), r.Len()), top, "%s: key %q", name, k)
			owned[top[0]]++
			if top[0] == colliders[0] {
				require.Equal(t, colliders, top[:len(colliders)], "%s: key %q: colliding nodes follow in ID order", name, k)
			}
		}
		assert.NotZero(t, owned[colliders[0]], "%s: the lowest colliding ID owns keys", name)
		for _, id := range colliders[1:] {
			assert.Zero(t, owned[id], "%s: %s shares every point with a lower ID and owns nothing", name, id)
		}
	}
	full := build(all)
	check("built", full)

	// Add the lowest colliding ID last: it takes over every shared point.
	partial := build([]chash.Node{{ID: "x"}, {ID: "y"}, {ID: "c4"}, {ID: "c2"}})
	check("4 nodes", partial)
	grown, err := partial.Add(chash.Node{ID: "c3"}, chash.Node{ID: "c1"})
	require.NoError(t, err)
	check("added", grown)
	assert.Equal(t, conformance.Owners(full), conformance.Owners(grown))

	// Remove the owner of the shared points: the next ID takes them.
	shrunk, err := full.Remove("c1")
	require.NoError(t, err)
	check("removed", shrunk)
	want := build([]chash.Node{{ID: "x"}, {ID: "y"}, {ID: "c2"}, {ID: "c3"}, {ID: "c4"}})
	assert.Equal(t, conformance.Owners(want), conformance.Owners(shrunk))
	assert.Equal(t, want.Points(), shrunk.Points())
}
