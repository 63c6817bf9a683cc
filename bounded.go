package chash

import (
	"fmt"
	"math"
	"math/big"
	"math/bits"
	"slices"

	"github.com/keyplace/chash/internal/place"
)

// boundedAlts is how many choices after the owner Bounded stores per
// partition: AppendTopK up to k = boundedAlts+1 reads them, O(1).
const boundedAlts = 3

// maxBuildWork bounds partitions × nodes, the score evaluations a build
// performs (about a second of work).
const maxBuildWork = 1 << 30

// Bounded is consistent hashing with bounded loads (Mirrokni, Thorup and
// Zadimoghaddam, "Consistent Hashing with Bounded Loads", SODA 2018) over a
// fixed set of partitions. A key hashes to one of P partitions; each
// partition has a preference order over the nodes, weighted rendezvous
// order (Thaler and Ravishankar 1998, with the logarithmic "straw2" scores
// of Ceph's CRUSH); and a bounded-load pass gives each partition, in index
// order, to the first node in its preference order that has room. Node i
// has room for
//
//	capacity(i) = ceil(c × P × w_i / W)
//
// partitions, computed exactly, where c is the load factor and W the total
// weight. Since the capacities sum to at least c × P > P, every partition
// finds a node and no node ever exceeds its capacity, for any c > 1 and
// any number of nodes. With more nodes than partitions, some nodes own no
// partition: they never own a key, but they appear in AppendTopK's lists.
//
// When no node is near its capacity the assignment is plain weighted
// rendezvous and a membership change moves only the keys of the node added
// or removed. Near capacity, a partition may also move between two
// untouched nodes, because the capacities changed or because a node filled
// earlier or later in the pass. Measured with DefaultPartitions, averaged
// over 20 additions and removals, the fraction of partitions moved against
// the minimal 1/(n+1) for an addition (1/n for a removal) is:
//
//	nodes   c = 1.1         c = 1.25        c = 2
//	10      0.99 / 1.00     0.99 / 1.00     0.99 / 1.00
//	100     1.06 / 1.04     1.01 / 0.99     1.01 / 0.99
//	1000    1.52 / 1.49     1.17 / 1.25     1.02 / 1.06
//
// Between untouched nodes, no change moved more than 0.07% of the keys
// (none at 10 nodes, none at c = 2). Fewer partitions per node, or c
// nearer 1, move more: 1024 partitions over 10 nodes at c = 1.1 move up to
// 1% of keys between untouched nodes.
//
// DefaultPartitions, 16384, is the smallest power of two that keeps these
// figures: at 4096 partitions, 1,000 nodes move 2.0 times the minimum at
// c = 1.1 and the largest node holds 1.47 times the mean at c = 1.25
// (1.28 at 16384); 65536 partitions move 1.2 times the minimum but take
// four times the memory and four times as long to build.
//
// A lookup is one hash, a multiply-shift reduction of it to a partition
// (the high 64 bits of hash × P) and one table read: O(1), no allocation.
// A build scores every partition against every node: O(P × n) time. It
// keeps 16 bytes a partition (the owner and the next three choices, which
// make AppendTopK up to k = 4 a table read too) plus about 50 bytes a node.
//
// A Bounded is immutable and safe for concurrent use; Add and Remove
// derive new placers. Nodes are reported in ascending ID order. The zero
// Bounded, like a nil *Bounded, is empty: lookups return the zero Node, it
// has no partitions, and Add builds a placer with the default options.
type Bounded struct {
	nodes  []Node   // members, ascending by ID
	straw2          // the nodes' ID hashes and, if weights differ, largest/weight
	owner  []uint32 // owner[p] indexes the node that owns partition p
	// alts[p*boundedAlts:][:boundedAlts] index partition p's next choices
	// after its owner, in rendezvous order (as many as there are nodes).
	alts []uint32
	caps []int // caps[i] is node i's capacity
	c    float64
	cfg  config
}

var _ Placer = (*Bounded)(nil)

// NewBounded builds a bounded-load placer of the given nodes. It uses
// WithHasher, WithPartitions and WithLoadFactor (default 1.25) and ignores
// the other options. Without WithPartitions the partition count is
// DefaultPartitions for up to 1,024 nodes and otherwise the smallest power
// of two giving 16 partitions a node (65,536 at 4,000 nodes), so that the
// bound's rounding stays small; a placer derived from it by Add, Remove or
// Derive keeps its count, since changing it would move most keys. It fails
// if nodes is empty, an ID is empty or repeated, a weight is negative, NaN
// or infinite, or partitions × nodes exceeds 1<<30 (ErrTooLarge: beyond
// about 8,000 nodes at 16 partitions a node, where a build would take more
// than a second; a ring or Maglev suits fleets that large).
func NewBounded(nodes []Node, opts ...Option) (*Bounded, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	ns, err := checkNodes(nodes, true)
	if err != nil {
		return nil, err
	}
	return newBounded(cfg, ns)
}

// newBounded builds the placer of nodes, which are checked and sorted by ID.
func newBounded(cfg config, nodes []Node) (*Bounded, error) {
	if cfg.partitions == 0 {
		cfg.partitions = defaultPartitions(len(nodes))
	}
	if work := uint64(cfg.partitions) * uint64(len(nodes)); work > maxBuildWork {
		return nil, fmt.Errorf("%w: %d partitions × %d nodes (limit %d): set WithPartitions lower (fewer than 16 a node loosen the load bound), or use a ring or Maglev", ErrTooLarge, cfg.partitions, len(nodes), maxBuildWork)
	}
	b := &Bounded{
		nodes:  nodes,
		straw2: newStraw2(cfg.hasher, nodes, true),
		owner:  make([]uint32, cfg.partitions),
		alts:   make([]uint32, cfg.partitions*boundedAlts),
		c:      cfg.loadFactor,
		cfg:    cfg,
	}
	b.caps = capacities(cfg.loadFactor, cfg.partitions, nodes)
	b.assign()
	return b, nil
}

// defaultPartitions returns the partition count for n nodes without
// WithPartitions: DefaultPartitions, or the smallest power of two that
// gives each node partitionsPerNode, capped at 1<<24.
func defaultPartitions(n int) int {
	want := uint64(n) * partitionsPerNode
	if want <= DefaultPartitions {
		return DefaultPartitions
	}
	if want >= 1<<24 {
		return 1 << 24
	}
	return 1 << bits.Len64(want-1)
}

// capacities returns ceil(c × p × w_i / W) for each node, capped at p. The
// float quotient decides unless it lies within a millionth of an integer,
// where rounding could change the ceiling; then exact rational arithmetic
// does. Exactness is what guarantees the capacities sum to more than p.
func capacities(c float64, p int, nodes []Node) []int {
	total := summarize(nodes).total
	var exactTotal *big.Rat
	caps := make([]int, len(nodes))
	for i, n := range nodes {
		q := c * float64(p) * (n.Weight / total)
		if q >= float64(p) {
			caps[i] = p
			continue
		}
		if math.Abs(q-math.Round(q)) > 1e-6*max(q, 1) {
			caps[i] = int(math.Ceil(q))
			continue
		}
		if exactTotal == nil {
			exactTotal = new(big.Rat)
			for _, n := range nodes {
				exactTotal.Add(exactTotal, new(big.Rat).SetFloat64(n.Weight))
			}
		}
		r := new(big.Rat).SetFloat64(c)
		r.Mul(r, new(big.Rat).SetInt64(int64(p)))
		r.Mul(r, new(big.Rat).SetFloat64(n.Weight))
		r.Quo(r, exactTotal)
		num, den := r.Num(), r.Denom()
		ceil := new(big.Int).Add(num, new(big.Int).Sub(den, big.NewInt(1)))
		ceil.Quo(ceil, den)
		caps[i] = int(min(ceil.Int64(), int64(p)))
	}
	return caps
}

// assign is the bounded-load pass: partitions in index order, each to the
// highest-ranked node that still has room. The same pass stores each
// partition's next alternates, the first nodes of its rendezvous order
// other than its owner, so that AppendTopK for small k reads a table.
func (b *Bounded) assign() {
	full := make([]bool, len(b.nodes))
	load := make([]int, len(b.nodes))
	var top [boundedAlts + 1]candidate
	for p := range b.owner {
		ranked := top[:min(len(top), len(b.nodes))]
		best := b.rankOpen(partitionHash(p), full, ranked)
		b.owner[p] = uint32(best)
		if load[best]++; load[best] == b.caps[best] {
			full[best] = true
		}
		alts := b.alts[p*boundedAlts : (p+1)*boundedAlts]
		j := 0
		for _, c := range ranked {
			if c.i != best && j < len(alts) {
				alts[j] = uint32(c.i)
				j++
			}
		}
	}
}

// partitionHash returns the hash partition p is scored with.
func partitionHash(p int) uint64 {
	return mix64((uint64(p) + 1) * phi)
}

// partition reduces a key hash to a partition: the high 64 bits of h × P,
// which spreads any well-mixed hash evenly without a division.
func (b *Bounded) partition(h uint64) int {
	hi, _ := bits.Mul64(h, uint64(len(b.owner)))
	return int(hi)
}

// Lookup returns the owner of key's partition.
func (b *Bounded) Lookup(key []byte) Node {
	if b.empty() {
		return Node{}
	}
	return b.nodes[b.owner[b.partition(b.cfg.hasher.sum(key))]]
}

// LookupString is Lookup for a string key.
func (b *Bounded) LookupString(key string) Node {
	if b.empty() {
		return Node{}
	}
	return b.nodes[b.owner[b.partition(b.cfg.hasher.sumString(key))]]
}

// LookupIndex returns the position in Nodes() of the node that owns key,
// or -1 if b is empty: Lookup without the copy of the Node, for a caller
// that keeps its own per-node data in that order (the balancer does). It
// allocates nothing and is safe for concurrent use.
func (b *Bounded) LookupIndex(key []byte) int {
	if b.empty() {
		return -1
	}
	return int(b.owner[b.partition(b.cfg.hasher.sum(key))])
}

// LookupIndexString is LookupIndex for a string key.
func (b *Bounded) LookupIndexString(key string) int {
	if b.empty() {
		return -1
	}
	return int(b.owner[b.partition(b.cfg.hasher.sumString(key))])
}

// Partition returns the partition key belongs to, in [0, Partitions), or
// -1 if b is empty.
// Keys of one partition always move together.
func (b *Bounded) Partition(key []byte) int {
	if b.empty() {
		return -1
	}
	return b.partition(b.cfg.hasher.sum(key))
}

// PartitionString is Partition for a string key.
func (b *Bounded) PartitionString(key string) int {
	if b.empty() {
		return -1
	}
	return b.partition(b.cfg.hasher.sumString(key))
}

// Owner returns the node that owns partition p, or the zero Node if p is
// out of range.
func (b *Bounded) Owner(p int) Node {
	if b.empty() {
		return Node{}
	}
	if p < 0 || p >= len(b.owner) {
		return Node{}
	}
	return b.nodes[b.owner[p]]
}

// Partitions returns the number of partitions.
func (b *Bounded) Partitions() int {
	if b == nil {
		return 0
	}
	return len(b.owner)
}

// LoadFactor returns the load factor c.
func (b *Bounded) LoadFactor() float64 {
	if b == nil {
		return 0
	}
	return b.c
}

// Capacity returns the most partitions the node with the given ID may own,
// ceil(c × P × w / W), or 0 if it is not a member.
func (b *Bounded) Capacity(id string) int {
	if b.empty() {
		return 0
	}
	if i := indexOf(b.nodes, id); i >= 0 {
		return b.caps[i]
	}
	return 0
}

// AppendTopK appends up to k distinct nodes for key: the owner of its
// partition, then the other nodes in the partition's rendezvous order, the
// order the bounded-load pass tried them in. Every key of a partition gets
// the same list, and second choices are spread evenly over the other
// nodes. Up to k = 4 it reads the partition's stored choices, O(1); beyond,
// it scores every node once per 16 nodes appended, O(n × ceil(k/16)). No
// allocation when dst has room.
func (b *Bounded) AppendTopK(dst []Node, key []byte, k int) []Node {
	if b.empty() {
		return dst
	}
	return b.appendTopK(dst, b.partition(b.cfg.hasher.sum(key)), k)
}

// AppendTopKString is AppendTopK for a string key.
func (b *Bounded) AppendTopKString(dst []Node, key string, k int) []Node {
	if b.empty() {
		return dst
	}
	return b.appendTopK(dst, b.partition(b.cfg.hasher.sumString(key)), k)
}

func (b *Bounded) appendTopK(dst []Node, p, k int) []Node {
	k = place.ClampK(k, len(b.nodes))
	if k == 0 {
		return dst
	}
	own := int(b.owner[p])
	dst = place.Append(dst, &b.nodes[own])
	if k-1 <= boundedAlts {
		for _, i := range b.alts[p*boundedAlts:][:k-1] {
			dst = place.Append(dst, &b.nodes[i])
		}
		return dst
	}
	return b.appendTop(dst, b.nodes, partitionHash(p), k-1, own)
}

// Nodes returns the members in ascending ID order.
func (b *Bounded) Nodes() []Node {
	if b == nil {
		return nil
	}
	return slices.Clone(b.nodes)
}

// Len returns the number of members.
func (b *Bounded) Len() int {
	if b == nil {
		return 0
	}
	return len(b.nodes)
}

// Add returns a placer with the given nodes added, as NewBounded would
// build it from the combined membership, with the same options. It
// rebuilds: O(P × n). b is unchanged.
func (b *Bounded) Add(nodes ...Node) (*Bounded, error) {
	if b.empty() {
		return NewBounded(nodes)
	}
	all, err := checkNodes(append(slices.Clone(b.nodes), nodes...), true)
	if err != nil {
		return nil, err
	}
	return newBounded(b.cfg, all)
}

// Remove returns a placer without the nodes with the given IDs, as
// NewBounded would build it from the remaining membership. It fails with
// ErrUnknownNode if an ID is not a member, and with ErrNoNodes if no node
// would remain. b is unchanged.
func (b *Bounded) Remove(ids ...string) (*Bounded, error) {
	if b.empty() {
		return nil, removeFromEmpty(ids)
	}
	rest, err := without(b.nodes, ids)
	if err != nil {
		return nil, err
	}
	return newBounded(b.cfg, rest)
}

// empty reports whether b is nil or the zero Bounded, which have no members.
func (b *Bounded) empty() bool { return b == nil || len(b.nodes) == 0 }
