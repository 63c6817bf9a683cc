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
	if cfg.ketama != 0 {
		points, err := ketamaPoints(cfg.ketama, ns)
		if err != nil {
			return nil, err
		}
		return newRing(cfg, ns, points), nil
	}
	v, err := newVnodes(cfg, ns)
	if err != nil {
		return nil, err
	}
	r := &Ring{nodes: ns, cfg: cfg}
	r.buildVnodes(v)
	return r, nil
}

// ringPoints returns the points of nodes, each naming its node by its index
// in nodes, in no particular order.
func ringPoints(cfg config, nodes []Node) ([]point, error) {
	if cfg.ketama != 0 {
		return ketamaPoints(cfg.ketama, nodes)
	}
	v, err := newVnodes(cfg, nodes)
	if err != nil {
		return nil, err
	}
	points := make([]point, 0, v.total)
	for i, base := range v.bases {
		for j := range v.counts[i] {
			points = append(points, point{pos: vnodePos(base, j), node: uint32(i)})
		}
	}
	return points, nil
}

// vnodes describes the points of a ring that is not ketama's: node i has
// counts[i] points, point j at vnodePos(bases[i], j).
type vnodes struct {
	bases  []uint64 // the hashes of the nodes' IDs
	counts []int
	total  int
}

// newVnodes returns the vnodes of nodes.
func newVnodes(cfg config, nodes []Node) (vnodes, error) {
	v := vnodes{bases: make([]uint64, len(nodes)), counts: make([]int, len(nodes))}
	for i, n := range nodes {
		c, err := cfg.pointCount(n)
		if err != nil {
			return vnodes{}, err
		}
		// Checked before adding, so that the sum cannot overflow a 32-bit int.
		if c > place.MaxPoints-v.total {
			return vnodes{}, fmt.Errorf("%w: ring of more than %d points", ErrTooLarge, place.MaxPoints)
		}
		v.bases[i], v.counts[i] = cfg.hasher.sumString(n.ID), c
		v.total += c
	}
	return v, nil
}

// vnodePos is the position of point j of the node whose ID hashes to base:
// mix64(base + j·φ), so that a node's first points do not depend on how
// many it has, and raising a weight only adds points.
func vnodePos(base uint64, j int) uint64 { return mix64(base + uint64(j)*phi) }

// newRing returns the ring of nodes (sorted by ID) and their points, in
// any order: building the index sorts them.
func newRing(cfg config, nodes []Node, points []point) *Ring {
	r := &Ring{nodes: nodes, cfg: cfg}
	r.buildFrom(points)
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

// The ring's index cuts the circle into between P and 2P buckets for P
// points (and at least 2, so that the shift is below 64: a ring has at
// least one point, as every member has points and a ring has members),
// the positions with the same top bits. Building it sorts the points: a
// counting sort on those top bits (buildFrom, buildVnodes), then a sort
// of each bucket that holds several points (finishIndex): 9% to 26% of
// buckets, with 2.2 to 2.4 points on average, in an honest ring. Positions
// are mix64 outputs, uniform on the circle, so this is O(P) where a
// comparison sort was O(P log P), with a branch a comparison that the CPU
// could not predict: that sort had been two thirds of the instructions of
// a build of 1,000 nodes at 160 points (benchmarks/notes.md). A bucket
// crowded by crafted IDs is sorted by comparisons, so that no input takes
// more than O(P log P).

// indexShift returns the shift that cuts the circle into the buckets of an
// index of p points, and their count.
func indexShift(p int) (uint8, int) {
	b := max(1, bits.Len(uint(p-1)))
	return uint8(64 - b), 1 << b
}

// buildFrom builds the ring of points, given in any order.
func (r *Ring) buildFrom(points []point) {
	shift, nb := indexShift(len(points))
	starts := make([]uint32, nb+1)
	for _, p := range points {
		starts[p.pos>>shift+1]++
	}
	sumStarts(starts)
	sorted := make([]point, len(points))
	for _, p := range points {
		x := p.pos>>shift + 1
		starts[x]--
		sorted[starts[x]] = p
	}
	r.finishIndex(sorted, starts, shift)
}

// buildVnodes builds the ring of v's points, computed twice, to count and
// to place them, rather than kept unsorted beside the sorted copy.
func (r *Ring) buildVnodes(v vnodes) {
	shift, nb := indexShift(v.total)
	starts := make([]uint32, nb+1)
	for i, base := range v.bases {
		for j := range v.counts[i] {
			starts[vnodePos(base, j)>>shift+1]++
		}
	}
	sumStarts(starts)
	sorted := make([]point, v.total)
	for i, base := range v.bases {
		for j := range v.counts[i] {
			pos := vnodePos(base, j)
			x := pos>>shift + 1
			starts[x]--
			sorted[starts[x]] = point{pos: pos, node: uint32(i)}
		}
	}
	r.finishIndex(sorted, starts, shift)
}

// sumStarts turns starts[x+1], the count of bucket x, into where the
// bucket ends: placing each of its points one before it then leaves it
// where the bucket starts.
func sumStarts(starts []uint32) {
	for x := 2; x < len(starts); x++ {
		starts[x] += starts[x-1]
	}
}

// finishIndex finishes a ring whose points have been placed in their buckets:
// starts[x+1] is where bucket x starts, once sumStarts and the placing are
// done. It sorts each bucket and builds r.index.
func (r *Ring) finishIndex(sorted []point, starts []uint32, shift uint8) {
	nb := len(starts) - 1
	copy(starts, starts[1:])
	starts[nb] = uint32(len(sorted))
	var most uint32
	// Entries are built from the last bucket to the first, each after its
	// bucket is sorted, as an entry reads the first point past its bucket;
	// the last ones read point 0, the least of the first bucket that has
	// points, which is sorted first.
	first := 1
	for starts[first] == 0 {
		first++
	}
	sortBucket(sorted[:starts[first]])
	index := make([]bucket, nb)
	last := uint32(len(sorted)) - 1
	for x := nb - 1; x >= 0; x-- {
		i, j := starts[x], starts[x+1]
		most = max(most, j-i)
		if j-i > 1 {
			sortBucket(sorted[i:j])
		}
		// Keys past the bucket's last point go to the first point after
		// it, wrapping to point 0. The entry is written without a branch
		// on the bucket's count, which is random.
		next := j
		if j > last {
			next = 0
		}
		// The bucket's last point, if it has one; else any point, unused.
		end := j - 1
		if i == j {
			end = 0
		}
		after := sorted[next].node
		e := bucket{pos: sorted[end].pos, after: after, node: sorted[end].node}
		if j-i > 1 {
			e.node = several
		}
		if i == j {
			e.pos, e.node = math.MaxUint64, after
		}
		index[x] = e
	}
	r.points, r.starts, r.index = sorted, starts, index
	r.shift, r.crowded = shift, most > crowdedBucket
}

// sortBucket sorts the points of one bucket: by insertion if they are few,
// as they are unless IDs were crafted to crowd the bucket.
func sortBucket(ps []point) {
	if len(ps) > crowdedBucket {
		slices.SortFunc(ps, comparePoints)
		return
	}
	for i := 1; i < len(ps); i++ {
		for j := i; j > 0 && comparePoints(ps[j], ps[j-1]) < 0; j-- {
			ps[j], ps[j-1] = ps[j-1], ps[j]
		}
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

// LookupIndex returns the index in Nodes() (ascending ID order) of the node
// Lookup returns for key, or -1 if r is empty. It is Lookup without the
// copy of the Node, which a caller that keeps its own per-node data in
// that order does not need: a Node is five words, more than Go keeps in
// registers, so Lookup's result goes through memory even when only its ID
// is read. It allocates nothing and is safe for concurrent use.
func (r *Ring) LookupIndex(key []byte) int {
	if r.empty() {
		return -1
	}
	return r.lookupIndex(key)
}

// LookupIndexString is LookupIndex for a string key.
func (r *Ring) LookupIndexString(key string) int {
	if r.empty() {
		return -1
	}
	return r.lookupIndexString(key)
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
// sorts them in with the others: O(P) for P points, as a rebuild is, with
// the hashing of the existing nodes' points saved. A ketama ring is
// rebuilt, since each of its nodes' point counts depends on the total
// weight. r is unchanged.
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
	points := make([]point, 0, len(r.points)+len(added))
	for _, p := range r.points {
		if j := old[p.node]; j >= 0 {
			points = append(points, point{p.pos, uint32(j)})
		}
	}
	if len(points)+len(added) > place.MaxPoints {
		return nil, fmt.Errorf("%w: ring of %d points (limit %d)", ErrTooLarge, len(points)+len(added), place.MaxPoints)
	}
	for _, p := range added {
		points = append(points, point{p.pos, freshIdx[p.node]})
	}
	return newRing(r.cfg, nodes, points), nil
}

// empty reports whether r is nil or the zero Ring, which have no members.
func (r *Ring) empty() bool { return r == nil || len(r.nodes) == 0 }
