package shardmap

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"sync"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/internal/digest"
	"github.com/keyplace/chash/internal/hashing"
	"github.com/keyplace/chash/internal/place"
)

// Errors of the shard map, wrapped with detail naming what failed.
var (
	// ErrConstraint reports a shard map constraint that cannot be met:
	// distinct nodes, distinct zones, a zone's replicas (ZoneReplicas), a
	// residency, a node's load bound, a pin, or a safe order of moves; or,
	// from Map.Check, one an observed map breaks.
	ErrConstraint = errors.New("shardmap: constraint cannot be met")
	// ErrInvalid reports a serialised shard map that is corrupted or
	// inconsistent, an observed assignment that is not R distinct members
	// per partition, or a Kafka document that is not a topic's assignment.
	ErrInvalid = errors.New("shardmap: invalid shard map")
)

// Map is an explicit placement: P partitions, keys hashed into them,
// each partition held by R replicas on nodes listed primary first. Unlike
// the hash placers it is data: a control plane computes it with
// [New] and [Map.Rebalance], publishes it ([Map.MarshalJSON];
// the format is described at [Parse]) and every client loads the
// same map, checked by its version and fingerprint.
//
// Every map built satisfies, or was refused with an error wrapping
// ErrConstraint that names the unmet one:
//   - a partition's replicas are on R distinct nodes;
//   - they span min(R, z) zones, z the number of failure domains among the
//     nodes of positive weight it may use (a node without a Zone is its
//     own domain), or, with ZoneReplicas, keep exactly the replicas each
//     zone is given; partitions of a Residency range use only its zones;
//   - no node holds more than its bound ceil(c·S), nor more than P: S is
//     its share, P·R·w/W (for a spec with ZoneReplicas or Residency, the
//     sum over the partitions that may use the node of the replicas their
//     rule keeps in its zone class × w over the weight of the nodes they
//     may use); a node of weight 0 (draining, unlike the hash placers,
//     where 0 means 1) holds none;
//   - every pinned partition's primary is its pin.
//
// Balance: a fresh build ([New]) gives every node its fair share of its
// zone's replicas and of the primaries, rounded (see [Map.Loads]): the
// zones share the replicas in proportion to weight, each capped at what a
// zone can hold (one replica of each partition when partitions span R
// zones: with R = 3 over 3 zones every zone holds P), and a zone's nodes
// share its replicas by weight; primaries go by weight, capped by the
// node's replicas. Rebalancing keeps every replica of the previous map
// that breaks no constraint, fills the missing ones on the nodes furthest
// below their share, and moves replicas from the nodes furthest above
// their share to those more than the spec's Tolerance below it, within a
// zone first, until every node is within the tolerance of what a fresh
// build gives it, in replicas and primaries, where the constraints allow
// ([Map.Distance] says how far the map is). It moves the least any map
// within that tolerance moves: max(D, L+E), for D the replicas the nodes
// below the tolerance lack, L the replicas lost with departed nodes and E
// those the nodes above it hold beyond it.
//
// As a [Placer], a key's partition is ⌊h·P/2^64⌋ for h the key's xxhash64
// with the spec's seed; Lookup returns the partition's primary and
// AppendTopK its replicas in order, then (for k > R) the other nodes of
// positive weight in rendezvous order of the partition. Lookup is O(1) and
// allocation-free. A Map is immutable and safe for concurrent use.
// The zero Map and a nil *Map have no partitions and no members: Lookup
// returns the zero Node, AppendTopK appends nothing and Partition -1.
//
// An observed map ([Import]) records a placement found in a running
// system and is checked only for its structure (R distinct members of
// positive weight per partition): it may break the zone, bound and pin
// constraints, and is a starting point for Rebalance and PlanMoves.
type Map struct {
	spec     Spec
	version  uint64
	nodes    []chash.Node // every member, ascending by ID, drained ones too
	live     []chash.Node // members of positive weight, ascending by ID
	liveIdx  []int32      // liveIdx[i] is the index in nodes of live[i]
	seeds    []uint64
	assign   []int32 // P·R indexes into nodes, partition by partition
	hasher   hashing.XX
	fp       uint64
	observed bool
}

var _ chash.Placer = (*Map)(nil)

// New computes the first map (version 1) of nodes under spec: every node
// holds exactly its fair share of replicas (see [Map]) and, but for rare
// rounding across zones, of primaries. O(P·R·log R + n log n) time and
// O(P·R + n) memory: 2^20 partitions × 3 replicas over 64 nodes in 0.3 to
// 0.7 s on a loaded 2-core machine, flat per partition from 2^14 up
// (BenchmarkScale; 2^16 partitions of a tight fleet took 10.9 s before).
func New(nodes []chash.Node, spec Spec) (*Map, error) {
	return buildShardMap(nil, nodes, spec)
}

// Rebalance computes the next map (version m.Version()+1) for nodes and
// spec, moving as few replicas from m as the constraints and the spec's
// Tolerance allow (see [Map]). Pass m.Spec() to keep the spec. The spec's
// Partitions must equal m's; R, the load factor, the tolerance, pins,
// zone replicas and residency may change. If m's replicas cannot all be
// kept or moved within the new bounds, the result is a fresh build. m is
// unchanged. O(P·R·log n) for the moves, plus O(P·R) a promotion chain
// where primaries cannot be balanced directly: 0.3 to 0.7 s at 2^20
// partitions (BenchmarkScale).
func (m *Map) Rebalance(nodes []chash.Node, spec Spec) (*Map, error) {
	return buildShardMap(m, nodes, spec)
}

func buildShardMap(prev *Map, nodes []chash.Node, spec Spec) (*Map, error) {
	ns, spec, err := checkMapInput(nodes, spec)
	if err != nil {
		return nil, err
	}
	if prev != nil && prev.spec.Partitions != spec.Partitions {
		return nil, fmt.Errorf("%w: rebalancing %d partitions into %d: the partition count cannot change (every key would move)", chash.ErrInvalidOption, prev.spec.Partitions, spec.Partitions)
	}
	l, err := newLayout(ns, spec)
	if err != nil {
		return nil, err
	}
	t, err := l.targets()
	if err != nil {
		return nil, err
	}
	var assign []int32
	if prev != nil && !prev.empty() {
		assign, _ = rebalance(l, t, prev)
	}
	if assign == nil {
		if assign, err = build(l, t); err != nil {
			return nil, err
		}
		polishPrimaries(l, t, assign)
	}
	if err := l.checkMap(assign); err != nil {
		return nil, err // a safety net: the steps above should never fail it
	}
	version := uint64(1)
	if prev != nil {
		version = prev.version + 1
	}
	return newMap(l, version, assign, false), nil
}

// Derive returns m rebalanced for nodes with m's spec, for [chash.Derive]:
// m.Rebalance(nodes, m.Spec()). It fails with chash.ErrNilPlacer for a nil
// or empty map, which has no spec to keep; build one with [New].
func (m *Map) Derive(nodes []chash.Node) (chash.Placer, error) {
	if m == nil || len(m.nodes) == 0 {
		return nil, fmt.Errorf("%w: Derive from an empty shard map (use shardmap.New)", chash.ErrNilPlacer)
	}
	q, err := m.Rebalance(nodes, m.Spec())
	if err != nil {
		return nil, err
	}
	return q, nil
}

var (
	_ chash.Deriver       = (*Map)(nil)
	_ chash.Fingerprinter = (*Map)(nil)
)

// Version returns the map's version: 1 for New, one more for each
// Rebalance.
func (m *Map) Version() uint64 {
	if m == nil {
		return 0
	}
	return m.version
}

// Observed reports whether m records an observed placement ([Import]),
// checked for its structure only.
func (m *Map) Observed() bool { return m != nil && m.observed }

// Checksum returns a 64-bit hash of the map's whole content, the
// "fingerprint" field of its JSON form (see [Parse]); two maps with the
// same checksum place every key identically.
func (m *Map) Checksum() uint64 {
	if m == nil {
		return 0
	}
	return m.fp
}

// Fingerprint returns the map's fingerprint for [chash.Fingerprint], such
// as "shardmap-1f0c55b2d7a9e314": a digest of its checksum, so that two
// maps have equal fingerprints exactly when their checksums are equal. A
// nil or empty map's is [chash.FingerprintNone].
func (m *Map) Fingerprint() string {
	if m == nil || m.Len() == 0 {
		return chash.FingerprintNone
	}
	return digest.New().Str("shardmap").Num(m.fp).Sum("shardmap")
}

// Spec returns the spec the map was built with, its defaults resolved
// and its lists sorted.
func (m *Map) Spec() Spec {
	if m == nil {
		return Spec{}
	}
	return cloneSpec(m.spec)
}

// Partitions returns P.
func (m *Map) Partitions() int {
	if m == nil {
		return 0
	}
	return m.spec.Partitions
}

// Replicas returns R.
func (m *Map) Replicas() int {
	if m == nil {
		return 0
	}
	return m.spec.Replicas
}

// Members returns every node of the map, draining ones (weight 0)
// included, in ascending ID order.
func (m *Map) Members() []chash.Node {
	if m == nil {
		return nil
	}
	return slices.Clone(m.nodes)
}

// Nodes returns the nodes of positive weight, the ones that hold
// replicas, in ascending ID order.
func (m *Map) Nodes() []chash.Node {
	if m == nil {
		return nil
	}
	return slices.Clone(m.live)
}

// Len returns the number of nodes of positive weight.
func (m *Map) Len() int {
	if m == nil {
		return 0
	}
	return len(m.live)
}

// empty reports whether m is nil or the zero Map, which have no partitions
// and no members.
func (m *Map) empty() bool { return m == nil || len(m.assign) == 0 }

// Partition returns the partition of key: -1 for a map with no
// partitions (a nil or zero Map).
func (m *Map) Partition(key []byte) int {
	if m.empty() {
		return -1
	}
	return m.partition(m.hasher.Sum64(key))
}

// PartitionString is Partition for a string key.
func (m *Map) PartitionString(key string) int {
	if m.empty() {
		return -1
	}
	return m.partition(m.hasher.Sum64String(key))
}

func (m *Map) partition(h uint64) int {
	hi, _ := bits.Mul64(h, uint64(m.spec.Partitions))
	return int(hi)
}

// AppendReplicas appends partition p's R replicas, primary first, to dst;
// nothing if p is out of range.
func (m *Map) AppendReplicas(dst []chash.Node, p int) []chash.Node {
	if m.empty() || p < 0 || p >= m.spec.Partitions {
		return dst
	}
	r := m.spec.Replicas
	for _, i := range m.assign[p*r : p*r+r] {
		dst = place.Append(dst, &m.nodes[i])
	}
	return dst
}

// Load returns how many replicas node id holds, and its bound (see
// [Map]). Both are 0 for a draining or unknown node. O(P·R).
func (m *Map) Load(id string) (replicas, bound int) {
	if m.empty() {
		return 0, 0
	}
	i := indexByID(m.nodes, id)
	if i < 0 {
		return 0, 0
	}
	for _, a := range m.assign {
		if int(a) == i {
			replicas++
		}
	}
	return replicas, m.layout().bound[i]
}

// layout rebuilds the layout of a map's nodes and spec, which loaded
// without error when the map was made.
func (m *Map) layout() *layout {
	l, err := newLayout(m.nodes, m.spec)
	if err != nil && l == nil {
		l = &layout{spec: m.spec, nodes: m.nodes, bound: make([]int, len(m.nodes))}
	}
	return l
}

// Lookup returns the primary of key's partition.
func (m *Map) Lookup(key []byte) chash.Node {
	if m.empty() {
		return chash.Node{}
	}
	return m.nodes[m.assign[m.partition(m.hasher.Sum64(key))*m.spec.Replicas]]
}

// LookupString is Lookup for a string key.
func (m *Map) LookupString(key string) chash.Node {
	if m.empty() {
		return chash.Node{}
	}
	return m.nodes[m.assign[m.partition(m.hasher.Sum64String(key))*m.spec.Replicas]]
}

// AppendTopK appends up to k nodes for key: its partition's replicas in
// order, then the other nodes of positive weight by rendezvous score of
// the partition, O(n) for each node past R. It does not allocate when dst
// has room for k more nodes.
func (m *Map) AppendTopK(dst []chash.Node, key []byte, k int) []chash.Node {
	return m.appendTopK(dst, m.Partition(key), k)
}

// AppendTopKString is AppendTopK for a string key.
func (m *Map) AppendTopKString(dst []chash.Node, key string, k int) []chash.Node {
	return m.appendTopK(dst, m.PartitionString(key), k)
}

func (m *Map) appendTopK(dst []chash.Node, p, k int) []chash.Node {
	k = place.ClampK(k, m.Len())
	if k == 0 || p < 0 {
		return dst
	}
	r := m.spec.Replicas
	reps := m.assign[p*r : p*r+r]
	for _, i := range reps[:min(k, r)] {
		dst = place.Append(dst, &m.nodes[i])
	}
	ph := shardHash(p)
	if k-r > place.BigK {
		return m.appendRanked(dst, ph, reps, k-r)
	}
	// Scores rank the others, highest first; equal scores (IDs of one
	// hash) by index, lowest first.
	lastScore, lastIdx := uint64(math.MaxUint64), -1
	for n := r; n < k; n++ {
		best, bi := uint64(0), -1
		for i, s := range m.seeds {
			sc := hashing.Mix64(ph ^ s)
			after := sc < lastScore || sc == lastScore && i > lastIdx
			if after && (bi < 0 || sc > best) && !slices.Contains(reps, m.liveIdx[i]) {
				best, bi = sc, i
			}
		}
		if bi < 0 {
			break
		}
		dst, lastScore, lastIdx = place.Append(dst, &m.live[bi]), best, bi
	}
	return dst
}

// scored is a live node's score for a partition, by its index in live.
type scored struct {
	s uint64
	i int32
}

// scores are pooled buffers for appendRanked.
var scores = sync.Pool{New: func() any { return new([]scored) }}

// appendRanked appends the first want live nodes outside reps in the
// order appendTopK's selection gives (score, highest first, then index),
// by sorting them all: O(n log n) for a long list, where selecting each
// next one is O(n) per node.
func (m *Map) appendRanked(dst []chash.Node, ph uint64, reps []int32, want int) []chash.Node {
	in := place.NewPicked(len(m.nodes), place.BigK+1) // a bitmap
	for _, i := range reps {
		in.Take(int(i))
	}
	bp := scores.Get().(*[]scored)
	buf := (*bp)[:0]
	for i, s := range m.seeds {
		if in.Take(int(m.liveIdx[i])) {
			buf = append(buf, scored{hashing.Mix64(ph ^ s), int32(i)})
		}
	}
	in.Release()
	slices.SortFunc(buf, func(a, b scored) int {
		if a.s != b.s {
			return cmp.Compare(b.s, a.s)
		}
		return cmp.Compare(a.i, b.i)
	})
	for _, c := range buf[:min(want, len(buf))] {
		dst = place.Append(dst, &m.live[c.i])
	}
	*bp = buf
	scores.Put(bp)
	return dst
}

// newMap assembles a map from checked parts and fingerprints it.
func newMap(l *layout, version uint64, assign []int32, observed bool) *Map {
	m := &Map{spec: l.spec, version: version, nodes: l.nodes, assign: assign, observed: observed,
		hasher: hashing.XX{Seed: l.spec.Seed}}
	for i, n := range l.nodes {
		if n.Weight > 0 {
			m.live = append(m.live, n)
			m.liveIdx = append(m.liveIdx, int32(i))
			m.seeds = append(m.seeds, l.seeds[i])
		}
	}
	m.fp = m.fingerprint()
	return m
}

// shardHash is partition p's hash for the rendezvous orders of the map's
// builder and of AppendTopK past R.
func shardHash(p int) uint64 { return hashing.Mix64(uint64(p) + hashing.Phi) }
