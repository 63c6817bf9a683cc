package shardmap

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/internal/digest"
	"github.com/keyplace/chash/internal/hashing"
	"github.com/keyplace/chash/internal/place"
)

// Errors of the shard map, wrapped with detail naming what failed.
var (
	// ErrConstraint reports a shard map constraint that cannot be met:
	// distinct nodes, distinct zones, a node's load bound, a pin, or a safe
	// order of moves.
	ErrConstraint = errors.New("shardmap: constraint cannot be met")
	// ErrInvalid reports a serialised shard map that is corrupted or
	// inconsistent.
	ErrInvalid = errors.New("shardmap: invalid shard map")
)

// Shard map limits.
const (
	maxMapPartitions = 1 << 20
	maxMapReplicas   = 16
	// DefaultLoadFactor is a shard map's load factor c unless its spec
	// says otherwise: no node holds more than ceil(1.25·P·R·w/W) replicas.
	DefaultLoadFactor = 1.25
)

// Spec is what a shard map must satisfy.
type Spec struct {
	// Partitions is P, the fixed number of partitions keys hash into,
	// from 1 to 1<<20. It cannot change from one map to the next: every
	// key would move.
	Partitions int
	// Replicas is R, the replicas per partition, from 1 to 16.
	Replicas int
	// LoadFactor is c: no node holds more than ceil(c·P·R·w/W) replicas,
	// for its weight w and the total weight W. At least 1; 0 means
	// DefaultLoadFactor.
	LoadFactor float64
	// Pins put partitions' primaries on given nodes.
	Pins []Pin
	// Seed seeds the xxhash64 of keys to partitions.
	Seed uint64
}

// Pin places a partition's primary replica on a node.
type Pin struct {
	Partition int
	Node      string
}

// Map is an explicit placement: P partitions, keys hashed into them,
// each partition held by R replicas on nodes listed primary first. Unlike
// the hash placers it is data: a control plane computes it with
// [New] and [Map.Rebalance], publishes it ([Map.MarshalJSON];
// the format is described at [Parse]) and every client loads the
// same map, checked by its version and fingerprint.
//
// Every map satisfies, or was refused with an error wrapping ErrConstraint
// that names the unmet one:
//   - a partition's replicas are on R distinct nodes;
//   - they span min(R, z) zones, z the number of failure domains among the
//     nodes of positive weight (a node without a Zone is its own domain);
//   - no node holds more than ceil(c·P·R·w/W) replicas, and a node of
//     weight 0 (draining, unlike the hash placers, where 0 means 1) holds
//     none;
//   - every pinned partition's primary is its pin.
//
// Rebalancing keeps every replica of the previous map that does not break
// a constraint, then fills the missing ones on the least loaded eligible
// nodes, then moves replicas from nodes above their fair share P·R·w/W to
// nodes below it (a node just added) until each holds at least the floor
// of its share, where zones allow. Nothing moves otherwise.
//
// As a [Placer], a key's partition is ⌊h·P/2^64⌋ for h the key's xxhash64
// with the spec's seed; Lookup returns the partition's primary and
// AppendTopK its replicas in order, then (for k > R) the other nodes of
// positive weight in rendezvous order of the partition. Lookup is O(1) and
// allocation-free. A Map is immutable and safe for concurrent use.
// The zero Map and a nil *Map have no partitions and no members: Lookup
// returns the zero Node, AppendTopK appends nothing and Partition -1.
type Map struct {
	spec    Spec
	version uint64
	nodes   []chash.Node // every member, ascending by ID, drained ones too
	live    []chash.Node // members of positive weight, ascending by ID
	liveIdx []int32      // liveIdx[i] is the index in nodes of live[i]
	seeds   []uint64
	assign  []int32 // P·R indexes into nodes, partition by partition
	hasher  hashing.XX
	fp      uint64
}

var _ chash.Placer = (*Map)(nil)

// New computes the first map (version 1) of nodes under spec. Each of the
// P·R replicas picks among the n nodes with room, O(P·R·n) time and
// O(P·R + n) memory: 50 ms for 16,384 partitions × 3 replicas over 64
// nodes (BenchmarkNew). On fleets whose bounds leave little room, the
// repairs that meet them grow faster than linearly in P (about 0.6 s at
// 16,384 partitions for 12 nodes in 2 zones at c = 1.075).
func New(nodes []chash.Node, spec Spec) (*Map, error) {
	return buildShardMap(nil, nodes, spec)
}

// Rebalance computes the next map (version m.Version()+1) for nodes and
// spec, moving as few replicas from m as the constraints and the balance
// goal allow (see [Map]). Pass m.Spec() to keep the spec. The spec's
// Partitions must equal m's. m is unchanged.
func (m *Map) Rebalance(nodes []chash.Node, spec Spec) (*Map, error) {
	return buildShardMap(m, nodes, spec)
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

// Spec returns the spec the map was built with, its load factor resolved.
func (m *Map) Spec() Spec {
	if m == nil {
		return Spec{}
	}
	s := m.spec
	s.Pins = slices.Clone(s.Pins)
	return s
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

// Load returns how many replicas node id holds, and its bound
// ceil(c·P·R·w/W). Both are 0 for a draining or unknown node. O(P·R).
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
	return replicas, mapBounds(m.spec, m.nodes)[i]
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
	last := uint64(math.MaxUint64)
	for n := r; n < k; n++ {
		best, bi := uint64(0), -1
		for i, s := range m.seeds {
			sc := hashing.Mix64(ph ^ s)
			if sc < last && (bi < 0 || sc > best) && !slices.Contains(reps, m.liveIdx[i]) {
				best, bi = sc, i
			}
		}
		if bi < 0 {
			break // colliding scores: unreachable in practice
		}
		dst, last = place.Append(dst, &m.live[bi]), best
	}
	return dst
}

// mapBounds returns each node's replica bound ceil(c·P·R·w/W).
func mapBounds(s Spec, nodes []chash.Node) []int {
	total := 0.0
	for _, n := range nodes {
		total += n.Weight
	}
	out := make([]int, len(nodes))
	for i, n := range nodes {
		if n.Weight > 0 {
			// The tiny margin keeps an exact product from rounding up.
			out[i] = int(math.Ceil(s.LoadFactor*float64(s.Partitions*s.Replicas)*n.Weight/total - 1e-9))
		}
	}
	return out
}

// checkMapInput validates spec and nodes and returns the nodes sorted by
// ID and the spec with its load factor resolved.
func checkMapInput(nodes []chash.Node, spec Spec) ([]chash.Node, Spec, error) {
	switch {
	case spec.Partitions < 1 || spec.Partitions > maxMapPartitions:
		return nil, spec, fmt.Errorf("%w: shard map of %d partitions: want 1 to %d", chash.ErrInvalidOption, spec.Partitions, maxMapPartitions)
	case spec.Replicas < 1 || spec.Replicas > maxMapReplicas:
		return nil, spec, fmt.Errorf("%w: shard map of %d replicas: want 1 to %d", chash.ErrInvalidOption, spec.Replicas, maxMapReplicas)
	case spec.LoadFactor == 0:
		spec.LoadFactor = DefaultLoadFactor
	case !(spec.LoadFactor >= 1) || math.IsInf(spec.LoadFactor, 0):
		return nil, spec, fmt.Errorf("%w: shard map load factor %v: want a finite value >= 1", chash.ErrInvalidOption, spec.LoadFactor)
	}
	if len(nodes) == 0 {
		return nil, spec, fmt.Errorf("%w: shard map", chash.ErrNoNodes)
	}
	ns := slices.Clone(nodes)
	for i, n := range ns {
		switch {
		case n.ID == "":
			return nil, spec, fmt.Errorf("%w: node %d", chash.ErrEmptyID, i)
		case n.Weight < 0 || math.IsNaN(n.Weight) || math.IsInf(n.Weight, 0) || n.Weight > 1e12:
			return nil, spec, fmt.Errorf("%w: node %q has weight %v: a shard map accepts 0 (draining) to 1e12", chash.ErrInvalidWeight, n.ID, n.Weight)
		}
	}
	slices.SortFunc(ns, byID)
	for i := 1; i < len(ns); i++ {
		if ns[i].ID == ns[i-1].ID {
			return nil, spec, fmt.Errorf("%w: %q", chash.ErrDuplicateID, ns[i].ID)
		}
	}
	pins := slices.Clone(spec.Pins)
	slices.SortFunc(pins, func(a, b Pin) int { return a.Partition - b.Partition })
	for i, p := range pins {
		switch {
		case p.Partition < 0 || p.Partition >= spec.Partitions:
			return nil, spec, fmt.Errorf("%w: pin of partition %d: want 0 to %d", chash.ErrInvalidOption, p.Partition, spec.Partitions-1)
		case i > 0 && pins[i-1].Partition == p.Partition:
			return nil, spec, fmt.Errorf("%w: partition %d pinned twice", chash.ErrInvalidOption, p.Partition)
		case indexByID(ns, p.Node) < 0:
			return nil, spec, fmt.Errorf("%w: pin of partition %d to %q", chash.ErrUnknownNode, p.Partition, p.Node)
		case ns[indexByID(ns, p.Node)].Weight == 0:
			return nil, spec, fmt.Errorf("%w: pin: partition %d is pinned to %q, which is draining (weight 0)", ErrConstraint, p.Partition, p.Node)
		}
	}
	spec.Pins = pins
	return ns, spec, nil
}

// newMap assembles a map from checked parts and fingerprints it.
func newMap(spec Spec, version uint64, nodes []chash.Node, assign []int32) *Map {
	m := &Map{spec: spec, version: version, nodes: nodes, assign: assign,
		hasher: hashing.XX{Seed: spec.Seed}}
	for i, n := range nodes {
		if n.Weight > 0 {
			m.live = append(m.live, n)
			m.liveIdx = append(m.liveIdx, int32(i))
			m.seeds = append(m.seeds, m.hasher.Sum64String(n.ID))
		}
	}
	m.fp = m.fingerprint()
	return m
}

// shardHash is partition p's hash for the rendezvous orders of the map's
// builder and of AppendTopK past R.
func shardHash(p int) uint64 { return hashing.Mix64(uint64(p) + hashing.Phi) }

// indexByID returns the position of the node with the given ID in nodes,
// which are sorted by ID, or -1.
func indexByID(nodes []chash.Node, id string) int {
	i, ok := slices.BinarySearchFunc(nodes, id, func(n chash.Node, id string) int { return cmp.Compare(n.ID, id) })
	if !ok {
		return -1
	}
	return i
}

// byID orders nodes by ID.
func byID(a, b chash.Node) int { return cmp.Compare(a.ID, b.ID) }
