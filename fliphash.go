package chash

import (
	"math/bits"

	"github.com/cespare/xxhash/v2"
	"github.com/keyplace/chash/internal/digest"
)

// FlipHash returns the bucket in [0, buckets) of a 64-bit key by Masson and
// Lee's FlipHash ("FlipHash: A Constant-Time Consistent Range-Hashing
// Algorithm", arXiv:2402.17549, 2024). Its results equal those of the
// integer path of Datadog's Rust crate fliphash,
// fliphash_64_with_seed(key, 0, ..=buckets-1), for every key and count; the
// crate's seed s is the key key^s (the seed enters its hash only as that).
//
// Like [JumpHash] it is consistent: growing buckets from n to n+1 moves a
// fraction 1/(n+1) of keys, all into the new bucket n, and every bucket
// receives 1/n of the keys. Its cost does not grow with buckets: two 64-bit
// mixes for most keys, and an expected constant number more for the rest
// (at most 66 in all). The key should already be a hash.
//
// It allocates nothing and never panics. For buckets <= 1 it returns 0, the
// answer for one bucket.
func FlipHash(key uint64, buckets int) int {
	if buckets <= 1 {
		return 0
	}
	return int(flipHash(key, uint64(buckets-1)))
}

// flipHash is fliphash_64(key, ..=end): the value in [0, end] of key.
func flipHash(key, end uint64) uint64 {
	// end lies in [2^r, 2^(r+1)) with r = bits.Len64(end)-1. The key's
	// value in [0, 2^(r+1)) is flipped from its hash: kept if it is at
	// most end. (For end = 0 the mask is 0 and so is the value.) The
	// first value is computed here, with no call, for the 95% or more of
	// keys it settles; flipOn does the rest.
	mask := ^uint64(0) >> bits.LeadingZeros64(end) // 2^(r+1) - 1
	h := flipMix(key, 0, 0)
	// flipPow2(key, h, mask), written out: the compiler does not inline it.
	m := h & mask
	lz := bits.LeadingZeros64(m)
	if v := m ^ flipMix(key, uint32(63-lz), 0)&(^uint64(0)>>lz>>1); v <= end {
		return v
	}
	return flipOn(key, end, h, mask)
}

// flipOn is the rest of flipHash for a key whose value in [0, mask] is
// above end: draw from [0, mask] until a value falls in (mask/2, end]
// (the key's bucket) or at most mask/2 (the key keeps its value in
// [0, mask/2]); after 64 draws, the latter, as the crate does.
func flipOn(key, end, h, mask uint64) uint64 {
	r := uint32(bits.Len64(end) - 1)
	for i := uint32(1); i <= 64; i++ {
		d := flipMix(key, r, i) & mask
		if d <= mask>>1 {
			break
		}
		if d <= end {
			return d
		}
	}
	return flipPow2(key, h, mask>>1)
}

// flipPow2 is the key's value in [0, mask], mask = 2^b - 1, from its hash
// h: h's low b bits with the bits below their highest set one flipped by a
// hash of the key and that bit's position. (For m = 0 the shifts by 64
// give a zero mask in Go, so m = 0 needs no branch.)
func flipPow2(key, h, mask uint64) uint64 {
	m := h & mask
	lz := bits.LeadingZeros64(m)
	return m ^ flipMix(key, uint32(63-lz), 0)&(^uint64(0)>>lz>>1)
}

// flipMix is the crate's hash of the key for a bit position and an
// iteration: a multiply-xorshift mix after Moremur (Pelle Evensen, 2019),
// with odd multipliers from both.
func flipMix(key uint64, bit, iteration uint32) uint64 {
	k := key * (uint64(bit)*2 + 1)
	k = (k ^ k>>27) * 0x3c79ac492ba7b653
	k *= uint64(iteration)*2 + 1
	k = (k ^ k>>33) * 0x1c69b3f74ac4ae35
	return k ^ k>>27
}

// Flip places keys with [FlipHash]: node i of the order given to NewFlip is
// bucket i, and a key goes to bucket FlipHash(hash(key), n).
//
// It has [Jump]'s balance, memory (the node list only) and membership rules
// (equal weights; Add appends buckets, Remove accepts only the last ones,
// Replace swaps a node in place; each moves only the keys it must), and
// places keys differently from Jump and JumpBack. Its lookups cost one hash
// plus two 64-bit mixes for most keys, whatever the number of nodes.
//
// A Flip is immutable and safe for concurrent use. Nodes are reported in
// bucket order, as given. The zero Flip, like a nil *Flip, is empty:
// lookups return the zero Node, Len is 0, and Add builds a placer with the
// default options.
type Flip struct {
	// Jump's fields, so that a *Flip converts to the *Jump that holds its
	// node list, options and membership rules.
	nodes []Node // bucket order
	cfg   config
}

var _ Placer = (*Flip)(nil)

// NewFlip builds a FlipHash placer whose bucket i is nodes[i]. It uses
// WithHasher and ignores the other options. It fails as [NewJump] does: if
// nodes is empty, an ID is empty or repeated, a weight is negative, NaN or
// infinite, or the weights differ (ErrInvalidWeight). O(n log n).
func NewFlip(nodes []Node, opts ...Option) (*Flip, error) {
	return wrapFlip(NewJump(nodes, opts...))
}

// Lookup returns the node of key's bucket. O(1), no allocation.
func (p *Flip) Lookup(key []byte) Node {
	if p.empty() {
		return Node{}
	}
	return p.nodes[p.bucket(key)]
}

// LookupString is Lookup for a string key.
func (p *Flip) LookupString(key string) Node {
	if p.empty() {
		return Node{}
	}
	return p.nodes[p.bucketString(key)]
}

// bucket and bucketString keep Lookup and LookupString inlinable, as
// Jump's do.
func (p *Flip) bucket(key []byte) int {
	var h uint64
	if p.cfg.hasher.ext == nil {
		h = xxhash.Sum64(key)
	} else {
		h = p.cfg.hasher.ext.Sum64(key)
	}
	return int(flipHash(h, uint64(len(p.nodes)-1))) // n >= 1
}

func (p *Flip) bucketString(key string) int {
	var h uint64
	if p.cfg.hasher.ext == nil {
		h = xxhash.Sum64String(key)
	} else {
		h = p.cfg.hasher.ext.Sum64String(key)
	}
	return int(flipHash(h, uint64(len(p.nodes)-1))) // n >= 1
}

// AppendTopK appends up to k distinct nodes for key; the first is Lookup's.
// Choice i (1 <= i < 16) is drawn by FlipHash over the n-i buckets not yet
// chosen, with key hash mix64(h + i·φ), and mapped onto them in bucket
// order, as [Jump.AppendTopK] does: each later choice is uniform over the
// remaining nodes, and appending a bucket changes a choice only to the new
// bucket or through an earlier change. Past the 16th choice the rest follow
// in bucket order from a hashed start. A shorter list is a prefix of a
// longer one. Cost: O(k²) for k <= 16, plus O(16) per further choice; no
// allocation when dst has room.
func (p *Flip) AppendTopK(dst []Node, key []byte, k int) []Node {
	if p.empty() {
		return dst
	}
	return appendBuckets(dst, p.nodes, p.cfg.hasher.sum(key), k, FlipHash)
}

// AppendTopKString is AppendTopK for a string key.
func (p *Flip) AppendTopKString(dst []Node, key string, k int) []Node {
	if p.empty() {
		return dst
	}
	return appendBuckets(dst, p.nodes, p.cfg.hasher.sumString(key), k, FlipHash)
}

// Nodes returns the members in bucket order.
func (p *Flip) Nodes() []Node { return p.jump().Nodes() }

// Len returns the number of members.
func (p *Flip) Len() int { return p.jump().Len() }

// Positional reports true: node i of the list given to the constructor is
// bucket i, so the placement depends on the order of that list (see
// [Algorithm.Positional] and [IsPositional]).
func (p *Flip) Positional() bool { return true }

// Add returns a Flip with the given nodes appended as the next buckets, in
// order, under [Jump.Add]'s rules: each takes about 1/(new n) of the keys,
// all from the others. O(n log n); p is unchanged.
func (p *Flip) Add(nodes ...Node) (*Flip, error) {
	if p.empty() {
		return NewFlip(nodes)
	}
	return wrapFlip(p.jump().Add(nodes...))
}

// Remove returns a Flip without the given nodes, which must be the last
// buckets, under [Jump.Remove]'s rules and errors (ErrUnknownNode,
// ErrNotLast, ErrNoNodes): only their keys move. O(n); p is unchanged.
func (p *Flip) Remove(ids ...string) (*Flip, error) {
	if p.empty() {
		return nil, removeFromEmpty(ids)
	}
	return wrapFlip(p.jump().Remove(ids...))
}

// Replace returns a Flip in which n takes the bucket of the node with ID
// id, under [Jump.Replace]'s rules: only that bucket's keys move, to n.
// O(n log n); p is unchanged.
func (p *Flip) Replace(id string, n Node) (*Flip, error) {
	if p.empty() {
		return nil, replaceInEmpty(id)
	}
	return wrapFlip(p.jump().Replace(id, n))
}

// Fingerprint returns the digest [Fingerprint] reports for p: "flip-"
// and 16 hex digits over the members in bucket order and the Hasher, or
// FingerprintNone for an empty placer.
func (p *Flip) Fingerprint() string {
	if p.empty() {
		return FingerprintNone
	}
	return digestAll(digest.New().Str("flip"), p.nodes, p.cfg.hasher).Sum("flip")
}

// with is Derive's: nodes is a set, members keep their buckets, and new
// nodes fill departed ones' buckets first, as for Jump.
func (p *Flip) with(nodes []Node) (Placer, error) {
	if p.empty() {
		return NewFlip(nodes)
	}
	return wrapFlip(p.jump().derived(nodes))
}

func wrapFlip(j *Jump, err error) (*Flip, error) {
	if err != nil {
		return nil, err
	}
	return (*Flip)(j), nil
}

// jump is p as the Jump with p's node list and options (nil for nil).
func (p *Flip) jump() *Jump { return (*Jump)(p) }

// empty reports whether p is nil or the zero Flip.
func (p *Flip) empty() bool { return p == nil || len(p.nodes) == 0 }
