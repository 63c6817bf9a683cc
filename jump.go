package chash

import (
	"fmt"
	"math"
	"math/bits"
	"slices"

	"github.com/cespare/xxhash/v2"
	"github.com/keyplace/chash/internal/place"
)

// jumpTopMax is how many of AppendTopK's choices are drawn by jump hash;
// its array of bucket numbers lives on the stack.
const jumpTopMax = 16

// JumpHash returns the bucket in [0, buckets) of a 64-bit key by the jump
// consistent hash of Lamping and Veach ("A Fast, Minimal Memory, Consistent
// Hash Algorithm", arXiv:1406.2294, 2014). For buckets up to 1<<31 the
// results equal those of the paper's C++ function for the same key and
// bucket count. Growing buckets from n to n+1 moves a fraction 1/(n+1) of
// keys, all into the new bucket n.
//
// The key should already be well mixed (a hash): the function's linear
// congruential steps do not spread nearby integers. It takes at least
// bits.Len(buckets) steps of a multiply and a division: the paper's loop
// needs about ln(buckets) + 0.6 on average, but exits after a count the
// CPU cannot predict, and running one it can is faster. It allocates
// nothing and never panics. For buckets <= 0 it returns 0, the answer for
// one bucket, so that the result is never negative. Above 1<<31 buckets,
// beyond the paper's 32-bit range, the same computation continues and
// still returns a value in [0, buckets).
func JumpHash(key uint64, buckets int) int {
	if buckets <= 0 {
		return 0
	}
	if uint64(buckets) > 1<<53 {
		return jumpWide(key, buckets)
	}
	return jumpHash(key, buckets)
}

// jumpHash is JumpHash for 1 to 2^53 buckets, small enough to inline into
// lookups: jumpGo's loop, run by jumpFMA, its assembly, where the CPU has
// FMA (jump_amd64.s).
func jumpHash(key uint64, buckets int) int {
	if jumpKernel {
		return jumpFMA(key, buckets)
	}
	return jumpGo(key, buckets)
}

// jumpGo is jumpHash in Go.
func jumpGo(key uint64, buckets int) int {
	limit := float64(buckets)
	// The paper's loop is j = int64(float64(b+1) * r) with b the last j,
	// where r = 2^31 / (key>>33 + 1) depends on the key's sequence only,
	// so the loop's speed is the chain from one j to the next. Here j is
	// kept as a float64 holding an integer, t = Trunc(f), and the next
	// product is FMA(t, r, r): the exact (t+1)·r rounded once, as
	// float64(b+1) * r is, since t+1 is exact. Every product, and so every
	// bucket, is the paper's, with a two-instruction chain (truncate,
	// fused multiply-add) instead of four (convert, add, convert,
	// multiply).
	//
	// The paper's exit, at the first f >= buckets, comes after a random
	// number of steps (H(buckets) on average), so the CPU mispredicts it
	// about once a key and cannot start the next key's work early. This
	// loop runs bits.Len(buckets) steps whatever happens (a count the
	// CPU predicts, since it depends on buckets only), keeping the last
	// bucket below the limit with a conditional move, and then goes on
	// only while the last step stayed below it (6-11% of keys at 8 to
	// 1,000 buckets). Steps past the exit change nothing: r >= 1, so once
	// f >= limit every later f is too (or +Inf, never NaN). The result is
	// still the paper's. A lone lookup waits for bits.Len(buckets) -
	// H(buckets) more steps on average (1.3 at 8 buckets, 2.5 at 1,000),
	// against one mispredicted exit saved; a stream of lookups takes 30%
	// less time each (BenchmarkLookup in benchmarks/, 8 to 1,000 buckets,
	// Intel Xeon and AMD EPYC). Those figures need keys the CPU cannot
	// learn: replaying a few thousand keys in the same order, a branch
	// predictor as large as the EPYC's learns the paper's exits for each
	// key (benchmarks/notes.md).
	t, res := 0.0, 0
	for s := bits.Len(uint(buckets)); s > 0 || t < limit; s-- {
		key = key*2862933555777941757 + 1
		// key>>33+1 fits an int64, whose conversion is one instruction.
		r := float64(1<<31) / float64(int64(key>>33)+1)
		f := math.FMA(t, r, r)
		t = math.Trunc(f)
		// Comparing as float64 is exactly the paper's j < buckets when
		// buckets fits 32 bits, and keeps the bucket in range otherwise.
		if f < limit {
			res = int(t)
		}
	}
	return res
}

// jumpWide is JumpHash beyond 2^53 buckets, where jumpHash's t+1 is no
// longer exact in a float64: the paper's loop as written, its integer j
// converted back each time, so that results stay what they always were.
func jumpWide(key uint64, buckets int) int {
	limit := float64(buckets)
	b, j := int64(-1), int64(0)
	for {
		b = j
		key = key*2862933555777941757 + 1
		f := float64(b+1) * (float64(1<<31) / float64(int64(key>>33)+1))
		if f >= limit {
			return int(b)
		}
		j = int64(f)
	}
}

// Jump places keys with [JumpHash]: node i of the order given to NewJump is
// bucket i, and a key goes to bucket JumpHash(hash(key), n).
//
// Jump needs no memory beyond its node list and its lookups cost one hash
// plus bits.Len(n) or a few more cheap iterations (see [JumpHash]), with a
// nearly perfect balance. The trade is in membership: nodes must have
// equal weights, and only the last node can leave without renumbering the
// others. Add appends nodes at the end and moves about 1/(n+1) of keys per
// added node, all to it; Remove accepts only the last nodes and moves only
// their keys; Replace swaps a node in place, moving only its keys, to the
// replacement. Removing a node in the middle fails with ErrNotLast,
// because jump would renumber every later bucket and move most keys; if
// that is really wanted, build a new Jump from the remaining nodes.
//
// A Jump is immutable and safe for concurrent use. Nodes are reported in
// bucket order, as given. The zero Jump, like a nil *Jump, is empty:
// lookups return the zero Node, Len is 0, and Add builds a placer with the
// default options.
type Jump struct {
	nodes []Node // bucket order
	cfg   config
}

var _ Placer = (*Jump)(nil)

// NewJump builds a jump placer whose bucket i is nodes[i]. It uses
// WithHasher and ignores the other options. It fails if nodes is empty, an
// ID is empty or repeated, a weight is negative, NaN or infinite, or the
// weights differ (ErrInvalidWeight): any common weight is accepted, and 0
// means 1. Building copies the list and checks IDs for duplicates: O(n log n).
func NewJump(nodes []Node, opts ...Option) (*Jump, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	ns, err := checkNodes(nodes, false)
	if err != nil {
		return nil, err
	}
	if err := equalWeights(ns); err != nil {
		return nil, err
	}
	return &Jump{nodes: ns, cfg: cfg}, nil
}

// Lookup returns the node of key's bucket.
func (p *Jump) Lookup(key []byte) Node {
	if p.empty() {
		return Node{}
	}
	return p.nodes[p.bucket(key)]
}

// LookupString is Lookup for a string key.
func (p *Jump) LookupString(key string) Node {
	if p.empty() {
		return Node{}
	}
	return p.nodes[p.bucketString(key)]
}

// LookupIndex returns the bucket of key: the index, in Nodes() and in the
// order given to NewJump, of the node Lookup returns, or -1 if p is empty.
// It is Lookup without the copy of the Node, which a caller that keeps its
// own per-node data in bucket order (a slice of clients, say) does not
// need: a Node is five words, more than Go keeps in registers, so
// Lookup's result goes through memory even when only its ID is read. It
// allocates nothing and is safe for concurrent use.
func (p *Jump) LookupIndex(key []byte) int {
	if p.empty() {
		return -1
	}
	return p.bucket(key)
}

// LookupIndexString is LookupIndex for a string key.
func (p *Jump) LookupIndexString(key string) int {
	if p.empty() {
		return -1
	}
	return p.bucketString(key)
}

// bucket and bucketString are the lookups' work, kept out of Lookup and
// LookupString so that those stay within the inliner's budget: a caller
// then pays one call (and no Node copy beyond the fields it reads), as it
// would calling xxhash and JumpHash itself. The default hash is called
// directly, since hasher.sum is not inlined.
func (p *Jump) bucket(key []byte) int {
	var h uint64
	if p.cfg.hasher.ext == nil {
		h = xxhash.Sum64(key)
	} else {
		h = p.cfg.hasher.ext.Sum64(key)
	}
	return jumpHash(h, len(p.nodes)) // a node list is far below 2^53
}

func (p *Jump) bucketString(key string) int {
	var h uint64
	if p.cfg.hasher.ext == nil {
		h = xxhash.Sum64String(key)
	} else {
		h = p.cfg.hasher.ext.Sum64String(key)
	}
	return jumpHash(h, len(p.nodes))
}

// AppendTopK appends up to k distinct nodes for key. The first is Lookup's.
// Choice i (i >= 1) is drawn by jump hash over the n-i buckets not yet
// chosen, with key hash mix64(h + i·φ), and mapped onto them in bucket
// order, so each later choice is uniform over the remaining nodes and
// appending a bucket changes a choice only to the new bucket or through an
// earlier change. Past the 16th choice the rest follow in bucket order from
// a hashed start, skipping the first 16. Cost: O(k·(k + log n)) for k <= 16,
// plus O(16) per further choice; no allocation when dst has room.
func (p *Jump) AppendTopK(dst []Node, key []byte, k int) []Node {
	if p.empty() {
		return dst
	}
	return p.appendTopK(dst, p.cfg.hasher.sum(key), k)
}

// AppendTopKString is AppendTopK for a string key.
func (p *Jump) AppendTopKString(dst []Node, key string, k int) []Node {
	if p.empty() {
		return dst
	}
	return p.appendTopK(dst, p.cfg.hasher.sumString(key), k)
}

func (p *Jump) appendTopK(dst []Node, h uint64, k int) []Node {
	return appendBuckets(dst, p.nodes, h, k, jumpHash)
}

// appendBuckets is the top-k of Jump and JumpBack, whose bucket function
// is bucket: choice i < jumpTopMax is drawn by bucket over the n-i buckets
// not yet chosen, with key hash mix64(h + i·φ), and mapped onto them in
// bucket order; the rest follow in bucket order from a hashed start.
func appendBuckets(dst, nodes []Node, h uint64, k int, bucket func(uint64, int) int) []Node {
	n := len(nodes)
	k = place.ClampK(k, n)
	var c chosenBuckets
	var start int
	for i := 0; i < k; i++ {
		var r int
		switch {
		case i == 0:
			r = bucket(h, n)
		case i < jumpTopMax:
			r = bucket(mix64(h+uint64(i)*phi), n-i)
		default:
			if i == jumpTopMax {
				start = int(mix64(h) % uint64(n-jumpTopMax))
			}
			r = (start + i - jumpTopMax) % (n - jumpTopMax)
		}
		dst = place.Append(dst, &nodes[c.take(r)])
	}
	return dst
}

// chosenBuckets records the first jumpTopMax buckets a top-k has chosen, in
// ascending order, on the stack.
type chosenBuckets struct {
	b [jumpTopMax]int
	m int
}

// take maps r, an index among the buckets not chosen yet, to its bucket,
// and records the bucket if there is room.
func (c *chosenBuckets) take(r int) int {
	b := r
	for _, x := range c.b[:c.m] {
		if x <= b {
			b++
		}
	}
	if c.m < jumpTopMax {
		i := c.m
		for ; i > 0 && c.b[i-1] > b; i-- {
			c.b[i] = c.b[i-1]
		}
		c.b[i] = b
		c.m++
	}
	return b
}

// Nodes returns the members in bucket order.
func (p *Jump) Nodes() []Node {
	if p == nil {
		return nil
	}
	return slices.Clone(p.nodes)
}

// Len returns the number of members.
func (p *Jump) Len() int {
	if p == nil {
		return 0
	}
	return len(p.nodes)
}

// Positional reports true: node i of the list given to the constructor is
// bucket i, so the placement depends on the order of that list (see
// [Algorithm.Positional] and [IsPositional]).
func (p *Jump) Positional() bool { return true }

// Add returns a Jump with the given nodes appended as the next buckets, in
// order. Each appended node takes about 1/(new n) of the keys, all from the
// others; no key moves between existing nodes. O(n log n); p is unchanged.
func (p *Jump) Add(nodes ...Node) (*Jump, error) {
	if p.empty() {
		return NewJump(nodes)
	}
	return p.derive(append(slices.Clone(p.nodes), nodes...))
}

// derive checks nodes and returns the Jump of them, in the given order.
func (p *Jump) derive(nodes []Node) (*Jump, error) {
	ns, err := checkNodes(nodes, false)
	if err != nil {
		return nil, err
	}
	if err := equalWeights(ns); err != nil {
		return nil, err
	}
	return &Jump{nodes: ns, cfg: p.cfg}, nil
}

// Remove returns a Jump without the given nodes, which must be the last
// ones (in any order): only their keys move. It fails with ErrUnknownNode if
// an ID is not a member, with ErrNotLast if a node is not among the last
// len(ids) buckets, and with ErrNoNodes if no node would remain. O(n); p is
// unchanged.
func (p *Jump) Remove(ids ...string) (*Jump, error) {
	if p.empty() {
		return nil, removeFromEmpty(ids)
	}
	gone := make(map[string]bool, len(ids))
	for _, id := range ids {
		gone[id] = true
	}
	keep := len(p.nodes) - len(gone)
	for _, id := range ids {
		i := p.index(id)
		switch {
		case i < 0:
			return nil, fmt.Errorf("%w: %q", ErrUnknownNode, id)
		case i < keep:
			return nil, fmt.Errorf("%w: %q is bucket %d of %d; removing it would renumber buckets %d to %d and move most of their keys (use Replace to swap it in place)",
				ErrNotLast, id, i, len(p.nodes), i+1, len(p.nodes)-1)
		}
	}
	if keep == 0 {
		return nil, fmt.Errorf("%w: removing %d of %d nodes", ErrNoNodes, len(gone), len(p.nodes))
	}
	return &Jump{nodes: slices.Clone(p.nodes[:keep]), cfg: p.cfg}, nil
}

// Replace returns a Jump in which node n takes the bucket of the node with
// ID id: the keys of that bucket move to n, and no other key moves. n must
// have the others' weight (0 means 1) and an ID not otherwise in use; it may
// keep id. It fails with ErrUnknownNode if id is not a member. O(n log n);
// p is unchanged.
func (p *Jump) Replace(id string, n Node) (*Jump, error) {
	if p.empty() {
		return nil, replaceInEmpty(id)
	}
	i := p.index(id)
	if i < 0 {
		return nil, fmt.Errorf("%w: %q", ErrUnknownNode, id)
	}
	all := slices.Clone(p.nodes)
	all[i] = n
	return p.derive(all)
}

// index returns the bucket of the node with the given ID, or -1.
func (p *Jump) index(id string) int {
	return slices.IndexFunc(p.nodes, func(n Node) bool { return n.ID == id })
}

// empty reports whether p is nil or the zero Jump, which have no members.
func (p *Jump) empty() bool { return p == nil || len(p.nodes) == 0 }
