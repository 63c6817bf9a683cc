package chash

import (
	"cmp"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"sort"

	"github.com/cespare/xxhash/v2"
	"github.com/keyplace/chash/internal/place"
)

// Ring is a consistent-hash ring with virtual nodes (Karger et al., STOC
// 1997): each node owns points on a 64-bit circle, and a key belongs to the
// first point at or after its hash, wrapping around.
//
// A node of weight w has round(vnodes × w / unit) points (WithVnodes,
// default 160; WithWeightUnit, default 1), so its share of keys is
// proportional to its weight; the load's coefficient of variation is about
// 1/sqrt(vnodes). A node's points depend on its own ID and weight only, so
// adding, removing or reweighting one node moves keys only to or from that
// node. Points that collide are ordered by node ID, so the ring does not
// depend on the order nodes were given in.
//
// Lookups cost one hash and one read of a bucket index, whose entry names
// the owners of its bucket's keys unless the bucket holds several points;
// 6% to 19% of keys then also search the points: O(1) expected operations
// (a bucket crowded by crafted IDs is bisected, O(log P)). Memory is 16
// bytes per point plus 20 to 40 bytes per point of index, at most 56 bytes
// per point (64 nodes at 160 points: 480 KiB). Once the index outgrows
// the caches (a few hundred thousand points), a lookup costs about one
// cache miss (benchmarks/BENCHMARKS.md).
//
// A Ring is immutable and safe for concurrent use; Add and Remove derive new
// rings. Nodes are reported in ascending ID order. The zero Ring, like a
// nil *Ring, is empty: lookups return the zero Node, AppendTopK appends
// nothing, Len is 0, and Add builds a ring with the default options.
type Ring struct {
	nodes  []Node  // members, ascending by ID
	points []point // ascending by position, then node ID
	// The circle is cut into 1<<(64-shift) buckets, the hashes with the
	// same top bits. index[b] answers most keys of bucket b, and starts[b]
	// is the first point whose position is in bucket b or after it (plus
	// a sentinel, len(points)).
	index   []bucket
	starts  []uint32
	shift   uint8
	crowded bool // some bucket holds more than crowdedBucket points
	cfg     config
}

type point struct {
	pos  uint64
	node uint32 // index into nodes
}

// bucket is an entry of the ring's index: the owners of the keys of one
// bucket, inline, so that most lookups need no read of the points.
type bucket struct {
	// Keys past pos belong to after, the node of the first point past the
	// bucket (wrapping). pos is the bucket's last point; MaxUint64 if it
	// has none.
	pos   uint64
	after uint32
	// Keys at or before pos belong to node, the node of the bucket's only
	// point (or after, if it has none); several if the bucket has more than
	// one point, which only a search of the points can tell apart.
	node uint32
}

// several marks a bucket of more than one point; node indexes are below
// it, as they fit point.node.
const several = math.MaxUint32

var _ Placer = (*Ring)(nil)

// NewRing builds a ring of the given nodes. It uses WithHasher, WithVnodes
// (default 160 points per unit of weight) and WithWeightUnit (default 1), or
// WithKetama instead of them, and ignores the other options. It fails if
// nodes is empty, an ID is empty or repeated, a weight is negative, NaN or
// infinite (ErrInvalidWeight), a weight would get a point count rounded by
// more than 5% of itself, fewer than 10 points unless nearly a whole number
// (ErrInvalidWeight: give weights in a smaller unit), or the ring would
// exceed 1<<24 points (ErrTooLarge: a larger unit).
func NewRing(nodes []Node, opts ...Option) (*Ring, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	ns, err := checkNodes(nodes, true)
	if err != nil {
		return nil, err
	}
	points, err := ringPoints(cfg, ns)
	if err != nil {
		return nil, err
	}
	return newRing(cfg, ns, points), nil
}

// ringPoints returns the points of nodes, sorted, each naming its node by
// its index in nodes.
func ringPoints(cfg config, nodes []Node) ([]point, error) {
	if cfg.ketama != 0 {
		return ketamaPoints(cfg.ketama, nodes)
	}
	total := 0
	counts := make([]int, len(nodes))
	for i, n := range nodes {
		c, err := cfg.pointCount(n)
		if err != nil {
			return nil, err
		}
		// Checked before adding, so that the sum cannot overflow a 32-bit int.
		if c > place.MaxPoints-total {
			return nil, fmt.Errorf("%w: ring of more than %d points", ErrTooLarge, place.MaxPoints)
		}
		counts[i] = c
		total += c
	}
	points := make([]point, 0, total)
	for i, n := range nodes {
		points = cfg.appendPoints(points, n, uint32(i), counts[i])
	}
	slices.SortFunc(points, comparePoints)
	return points, nil
}

// newRing returns the ring of nodes (sorted by ID) and their sorted points.
func newRing(cfg config, nodes []Node, points []point) *Ring {
	r := &Ring{nodes: nodes, points: points, cfg: cfg}
	r.buildIndex()
	return r
}

func comparePoints(a, b point) int {
	if c := cmp.Compare(a.pos, b.pos); c != 0 {
		return c
	}
	return cmp.Compare(a.node, b.node)
}

// crowdedBucket is the most points a bucket of the index may hold before
// lookups bisect it instead of scanning it. Honest rings hold about one a
// bucket; only points placed together on purpose reach it.
const crowdedBucket = 16

// pointTolerance is how far, relative to its exact share of points, a
// node's rounded point count may be off: a weight the ring would misstate
// by more is rejected rather than silently distorted.
const pointTolerance = 0.05

// pointCount returns how many points node n gets: round(vnodes × w / unit).
// It fails with ErrTooLarge beyond place.MaxPoints, and with ErrInvalidWeight when
// rounding would change the node's share of points by more than
// pointTolerance (fewer than 10 points, unless nearly a whole number).
func (c config) pointCount(n Node) (int, error) {
	x := float64(c.vnodes) * (n.Weight / c.weightUnit)
	if x > place.MaxPoints {
		return 0, fmt.Errorf("%w: node %q of weight %v needs %.4g points at %d per weight unit %v (limit %d; give weights in a larger unit with WithWeightUnit)",
			ErrTooLarge, n.ID, n.Weight, x, c.vnodes, c.weightUnit, place.MaxPoints)
	}
	f := math.Round(x)
	if math.Abs(f-x) > pointTolerance*x {
		return 0, fmt.Errorf("%w: node %q of weight %v would get %.4g points at %d per weight unit %v, rounded to %v: its share would be off by more than %v%% (give weights in a smaller unit with WithWeightUnit, or raise WithVnodes)",
			ErrInvalidWeight, n.ID, n.Weight, x, c.vnodes, c.weightUnit, f, 100*pointTolerance)
	}
	return int(f), nil
}

// appendPoints appends count points for the node at index i. Point j sits
// at mix64(h(ID) + j·φ), so a node's first points do not depend on how many
// it has: raising a weight only adds points.
func (c config) appendPoints(dst []point, n Node, i uint32, count int) []point {
	base := c.hasher.sumString(n.ID)
	for j := 0; j < count; j++ {
		dst = append(dst, point{pos: mix64(base + uint64(j)*phi), node: i})
	}
	return dst
}

// buildIndex builds r.index and r.starts in O(B + P) for B buckets and P
// points.
func (r *Ring) buildIndex() {
	// Between P and 2P buckets for P points, and at least 2, so that the
	// shift is below 64 (a ring has at least one point: every member has
	// points, and a ring has members).
	b := max(1, bits.Len(uint(len(r.points)-1)))
	r.shift = uint8(64 - b)
	r.starts = make([]uint32, 1<<b+1)
	for _, p := range r.points {
		r.starts[p.pos>>r.shift+1]++
	}
	for x := 1; x < len(r.starts); x++ {
		r.crowded = r.crowded || r.starts[x] > crowdedBucket
		r.starts[x] += r.starts[x-1]
	}
	r.index = make([]bucket, 1<<b)
	for x := range r.index {
		i, j := int(r.starts[x]), int(r.starts[x+1])
		after := r.points[0].node // the wrap
		if j < len(r.points) {
			after = r.points[j].node
		}
		e := bucket{pos: math.MaxUint64, node: after, after: after}
		switch {
		case j-i == 1:
			e.pos, e.node = r.points[i].pos, r.points[i].node
		case j-i > 1:
			e.pos, e.node = r.points[j-1].pos, several
		}
		r.index[x] = e
	}
}

// owner returns the index in r.nodes of the node owning hash h. Most keys
// are answered by their bucket's entry alone: those past the bucket's last
// point, and all of a bucket that has at most one point.
func (r *Ring) owner(h uint64) uint32 {
	e := &r.index[h>>r.shift]
	if h > e.pos {
		return e.after
	}
	if e.node == several {
		return r.search(h)
	}
	return e.node
}

// search is owner for a key that needs a search of its bucket's points.
func (r *Ring) search(h uint64) uint32 { return r.points[r.locate(h)].node }

// locate returns the index of the first point at or after h, wrapping: a
// scan of h's bucket, which holds about one point, or a bisection if
// crafted IDs crowded some bucket, so that no lookup is slower than
// O(log P).
func (r *Ring) locate(h uint64) int {
	b := h >> r.shift
	i, j := int(r.starts[b]), int(r.starts[b+1])
	if r.crowded {
		i += sort.Search(j-i, func(x int) bool { return r.points[i+x].pos >= h })
	} else {
		for i < j && r.points[i].pos < h {
			i++
		}
	}
	if i == len(r.points) {
		i = 0
	}
	return i
}

// Lookup returns the node owning the first point at or after key's hash.
func (r *Ring) Lookup(key []byte) Node {
	if r.empty() {
		return Node{}
	}
	return r.nodes[r.lookupIndex(key)]
}

// LookupString is Lookup for a string key.
func (r *Ring) LookupString(key string) Node {
	if r.empty() {
		return Node{}
	}
	return r.nodes[r.lookupIndexString(key)]
}

// lookupIndex and lookupIndexString are the lookups' work, kept out of
// Lookup and LookupString so that those stay within the inliner's budget
// (see Rendezvous.index). The default hash is called directly, since
// hasher.sum is not inlined.
func (r *Ring) lookupIndex(key []byte) int {
	var h uint64
	if r.cfg.hasher.ext == nil {
		h = xxhash.Sum64(key)
	} else {
		h = r.cfg.hasher.ext.Sum64(key)
	}
	return int(r.owner(h))
}

func (r *Ring) lookupIndexString(key string) int {
	var h uint64
	if r.cfg.hasher.ext == nil {
		h = xxhash.Sum64String(key)
	} else {
		h = r.cfg.hasher.ext.Sum64String(key)
	}
	return int(r.owner(h))
}

// AppendTopK appends up to k distinct nodes for key: the owners of the
// points met walking clockwise from key's hash, skipping nodes already
// chosen (a Dynamo-style preference list). The walk visits about
// n·ln(n/(n-k)) points, so k close to Len costs O(Len·log Len) comparisons.
func (r *Ring) AppendTopK(dst []Node, key []byte, k int) []Node {
	if r.empty() {
		return dst
	}
	return r.appendTopK(dst, r.cfg.hasher.sum(key), k)
}

// AppendTopKString is AppendTopK for a string key.
func (r *Ring) AppendTopKString(dst []Node, key string, k int) []Node {
	if r.empty() {
		return dst
	}
	return r.appendTopK(dst, r.cfg.hasher.sumString(key), k)
}

func (r *Ring) appendTopK(dst []Node, h uint64, k int) []Node {
	k = place.ClampK(k, len(r.nodes))
	if k == 0 {
		return dst
	}
	start := len(dst)
	seen := place.NewPicked(len(r.nodes), k)
	i := r.locate(h)
	for walked := 0; len(dst)-start < k && walked < len(r.points); walked++ {
		j := int(r.points[i].node)
		if n := &r.nodes[j]; take(seen, j, n.ID, dst[start:]) {
			dst = place.Append(dst, n)
		}
		if i++; i == len(r.points) {
			i = 0
		}
	}
	// A ketama node of tiny weight can own no point; it comes last.
	for j := 0; len(dst)-start < k && j < len(r.nodes); j++ {
		if take(seen, j, r.nodes[j].ID, dst[start:]) {
			dst = place.Append(dst, &r.nodes[j])
		}
	}
	seen.Release()
	return dst
}

// Nodes returns the members in ascending ID order.
func (r *Ring) Nodes() []Node {
	if r == nil {
		return nil
	}
	return slices.Clone(r.nodes)
}

// Len returns the number of members.
func (r *Ring) Len() int {
	if r == nil {
		return 0
	}
	return len(r.nodes)
}

// Points returns the number of points on the ring.
func (r *Ring) Points() int {
	if r == nil {
		return 0
	}
	return len(r.points)
}

// Add returns a ring with the given nodes added, as NewRing would build it
// from the combined membership. It hashes only the new nodes' points and
// merges them in: O(P + a·log a) for P points and a added points, against
// O(P·log P) for a rebuild. A ketama ring is rebuilt, since each of its
// nodes' point counts depends on the total weight. r is unchanged.
func (r *Ring) Add(nodes ...Node) (*Ring, error) {
	if r.empty() {
		return NewRing(nodes)
	}
	all, err := checkNodes(append(slices.Clone(r.nodes), nodes...), true)
	if err != nil {
		return nil, err
	}
	return r.derive(all)
}

// Remove returns a ring without the nodes with the given IDs, as NewRing
// would build it from the remaining membership: O(P). It fails with
// ErrUnknownNode if an ID is not a member, and with ErrNoNodes if no node
// would remain. r is unchanged.
func (r *Ring) Remove(ids ...string) (*Ring, error) {
	if r.empty() {
		return nil, removeFromEmpty(ids)
	}
	rest, err := without(r.nodes, ids)
	if err != nil {
		return nil, err
	}
	return r.derive(rest)
}

// derive builds the ring of nodes (sorted by ID), reusing the points of
// nodes that r already has with the same weight.
func (r *Ring) derive(nodes []Node) (*Ring, error) {
	if r.cfg.ketama != 0 {
		// Every ketama point count depends on the total weight: rebuild.
		points, err := ringPoints(r.cfg, nodes)
		if err != nil {
			return nil, err
		}
		return newRing(r.cfg, nodes, points), nil
	}
	// old[i] is the new index of r's node i, or -1 if it is gone or changed.
	old := make([]int32, len(r.nodes))
	kept := make([]bool, len(nodes))
	for i, n := range r.nodes {
		old[i] = -1
		if j := indexOf(nodes, n.ID); j >= 0 && nodes[j].Weight == n.Weight {
			old[i], kept[j] = int32(j), true
		}
	}
	points := make([]point, 0, len(r.points))
	for _, p := range r.points {
		if j := old[p.node]; j >= 0 {
			points = append(points, point{p.pos, uint32(j)})
		}
	}
	var fresh []Node
	var freshIdx []uint32
	for j, n := range nodes {
		if !kept[j] {
			fresh, freshIdx = append(fresh, n), append(freshIdx, uint32(j))
		}
	}
	added, err := ringPoints(r.cfg, fresh)
	if err != nil {
		return nil, err
	}
	if len(points)+len(added) > place.MaxPoints {
		return nil, fmt.Errorf("%w: ring of %d points (limit %d)", ErrTooLarge, len(points)+len(added), place.MaxPoints)
	}
	for i := range added {
		added[i].node = freshIdx[added[i].node]
	}
	return newRing(r.cfg, nodes, mergePoints(points, added)), nil
}

// mergePoints merges two sorted point lists.
func mergePoints(a, b []point) []point {
	out := make([]point, 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		if comparePoints(a[0], b[0]) <= 0 {
			out, a = append(out, a[0]), a[1:]
		} else {
			out, b = append(out, b[0]), b[1:]
		}
	}
	return append(append(out, a...), b...)
}

// empty reports whether r is nil or the zero Ring, which have no members.
func (r *Ring) empty() bool { return r == nil || len(r.nodes) == 0 }
