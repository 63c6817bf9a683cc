package chash

import (
	"math"
	"math/bits"

	"github.com/cespare/xxhash/v2"
)

// JumpBackHash returns the bucket in [0, buckets) of a 64-bit key by Ertl's
// JumpBackHash ("JumpBackHash: Say Goodbye to the Modulo Operation to
// Distribute Keys Uniformly to Buckets", Software: Practice and Experience,
// 2024), with SplitMix64 as its random sequence. Its results equal those of
// hash4j's ConsistentHashing.jumpBackHashSplitMix64() for every key and
// bucket count hash4j accepts (1 to 2^31-1), so Go and Java services agree
// on a bucket.
//
// Like [JumpHash] it is consistent: growing buckets from n to n+1 moves a
// fraction 1/(n+1) of keys, all into the new bucket n, and every bucket
// receives 1/n of the keys. Unlike JumpHash its cost does not grow with
// buckets: it takes an expected constant number of integer steps (one or
// two 64-bit mixes for most keys), with no division or floating point. The
// key should already be a hash.
//
// It allocates nothing and never panics. For buckets <= 1 it returns 0,
// the answer for one bucket (hash4j rejects counts below 1). Counts above
// 2^31-1, beyond hash4j's int range, are treated as 2^31-1: the result is
// in range but no bucket above 2^31-2 is ever chosen.
func JumpBackHash(key uint64, buckets int) int {
	if buckets <= 1 {
		return 0
	}
	b, _ := jumpBackSeq(key, uint32(min(buckets, math.MaxInt32)))
	return b
}

// jumpBack is JumpBackHash for 1 <= n < 2^31 buckets.
func jumpBack(key uint64, n uint32) int {
	b, _ := jumpBackSeq(key, n)
	return b
}

// jumpBackSeq is jumpBack that also returns the key's SplitMix64 state
// after its last draw: hash4j's JumpBackAnchor (see
// [JumpBackAnchorEngine]) goes on drawing from it.
func jumpBackSeq(key uint64, n uint32) (int, uint64) {
	r := mix64(key + phi)
	// The bits of x below the bucket count's width pick, from the highest
	// set bit down, the ranges [2^i, 2^(i+1)) the key jumps back through.
	// (The mask is shifted in 64 bits, which needs no guard for a count
	// of 32, and is 1 to 31 bits wide for these n.)
	x := uint32(r^r>>32) & uint32(uint64(1)<<bits.Len32(n-1)-1)
	// The first range is the key's unless it straddles n and the value
	// drawn from it is n or more: most keys end here, and the rest goes to
	// a function of its own to keep this one short. A key whose x is 0
	// gets bucket 0 from the draw itself: a test of x here, taken by
	// half the keys at 2 buckets and a quarter at 3, was mispredicted as
	// often (JumpBackHash 2x faster at 2 buckets without it, 1.2x at 3,
	// and within 2% elsewhere, in 4 interleaved rounds).
	lo, b := jumpBackDraw(r, x)
	if b < n {
		return int(b), key + phi
	}
	return jumpBackOn(key+phi, r, x, lo, n)
}

// jumpBackDraw returns the range [lo, 2·lo) of x's highest set bit and the
// bucket r draws from it; for x = 0, lo and the bucket are 0. hash4j
// shifts r by 32·popcount(x), which Java takes mod 64: the draw comes from
// r's low half when x has an even number of bits set, else from its high
// half. Picking the half with a conditional move rather than a shift by a
// variable count made JumpBackHash 8–11% faster on pre-hashed keys (the
// fastest of 200 interleaved rounds).
func jumpBackDraw(r uint64, x uint32) (lo, b uint32) {
	w := uint64(1) << uint(bits.Len32(x)) // 2·lo, or 1 for x = 0
	lo = uint32(w >> 1)
	v := uint32(r)
	if bits.OnesCount32(x)&1 != 0 {
		v = uint32(r >> 32)
	}
	return lo, lo + v&uint32((w-1)>>1)
}

// jumpBackOn is the rest of JumpBackHash for a key whose value drawn from
// its first range lo was n or more, with state the key's SplitMix64 state
// and r its first output; it returns the state after its last draw too.
func jumpBackOn(state, r uint64, x, lo, n uint32) (int, uint64) {
	// The range straddles n: draw from it, two values per mix, until one
	// falls below n; that bucket is the key's if it is in the range, else
	// the key takes its draw from the next lower range. That range lies
	// wholly below lo < n, so no draw from it needs a retry. Picking the
	// first of the two values below n with a conditional move leaves one
	// well-predicted branch per mix (hash4j tests each value against lo,
	// then n): about 10% faster at 10 buckets, measured in thread CPU
	// time, and the same elsewhere.
	mask := lo<<1 - 1
	for {
		state += phi
		s := mix64(state)
		b1, b2 := uint32(s)&mask, uint32(s>>32)&mask
		b := b2
		if b1 < n {
			b = b1
		}
		if b < n {
			if b < lo {
				_, b = jumpBackDraw(r, x^lo)
			}
			return int(b), state
		}
	}
}

// JumpBack places keys with [JumpBackHash]: node i of the order given to
// NewJumpBack is bucket i, and a key goes to bucket JumpBackHash(hash(key), n).
//
// It has [Jump]'s balance, memory (the node list only) and membership rules
// (equal weights; Add appends buckets, Remove accepts only the last ones,
// Replace swaps a node in place; each moves only the keys it must), and
// places keys differently from Jump. Its lookups cost one hash plus an
// expected constant number of integer steps whatever the number of nodes,
// where Jump's grow as log(n).
//
// A JumpBack is immutable and safe for concurrent use. Nodes are reported in
// bucket order, as given. The zero JumpBack, like a nil *JumpBack, is
// empty: lookups return the zero Node, Len is 0, and Add builds a placer
// with the default options.
type JumpBack struct {
	// Jump's fields, so that a *JumpBack converts to the *Jump that holds
	// its node list, options and membership rules.
	nodes []Node // bucket order
	cfg   config
}

var _ Placer = (*JumpBack)(nil)

// NewJumpBack builds a JumpBack placer whose bucket i is nodes[i]. It uses
// WithHasher and ignores the other options. It fails as [NewJump] does: if
// nodes is empty, an ID is empty or repeated, a weight is negative, NaN or
// infinite, or the weights differ (ErrInvalidWeight). O(n log n).
func NewJumpBack(nodes []Node, opts ...Option) (*JumpBack, error) {
	return wrapJumpBack(NewJump(nodes, opts...))
}

// Lookup returns the node of key's bucket. O(1) expected, no allocation.
func (p *JumpBack) Lookup(key []byte) Node {
	if p.empty() {
		return Node{}
	}
	return p.nodes[p.bucket(key)]
}

// LookupString is Lookup for a string key.
func (p *JumpBack) LookupString(key string) Node {
	if p.empty() {
		return Node{}
	}
	return p.nodes[p.bucketString(key)]
}

// bucket and bucketString keep Lookup and LookupString inlinable, as
// Jump's do.
func (p *JumpBack) bucket(key []byte) int {
	var h uint64
	if p.cfg.hasher.ext == nil {
		h = xxhash.Sum64(key)
	} else {
		h = p.cfg.hasher.ext.Sum64(key)
	}
	return jumpBack(h, uint32(len(p.nodes))) // n >= 1; far below 2^31
}

func (p *JumpBack) bucketString(key string) int {
	var h uint64
	if p.cfg.hasher.ext == nil {
		h = xxhash.Sum64String(key)
	} else {
		h = p.cfg.hasher.ext.Sum64String(key)
	}
	return jumpBack(h, uint32(len(p.nodes))) // n >= 1; far below 2^31
}

// AppendTopK appends up to k distinct nodes for key; the first is Lookup's.
// Choice i (1 <= i < 16) is drawn by JumpBackHash over the n-i buckets not
// yet chosen, with key hash mix64(h + i·φ), and mapped onto them in bucket
// order: each later choice is uniform over the remaining nodes, and
// appending a bucket changes a choice only to the new bucket or through an
// earlier change. Past the 16th choice the rest follow in bucket order from
// a hashed start. A shorter list is a prefix of a longer one. Cost: O(k²)
// for k <= 16, plus O(16) per further choice; no allocation when dst has
// room.
func (p *JumpBack) AppendTopK(dst []Node, key []byte, k int) []Node {
	if p.empty() {
		return dst
	}
	return p.appendTopK(dst, p.cfg.hasher.sum(key), k)
}

// AppendTopKString is AppendTopK for a string key.
func (p *JumpBack) AppendTopKString(dst []Node, key string, k int) []Node {
	if p.empty() {
		return dst
	}
	return p.appendTopK(dst, p.cfg.hasher.sumString(key), k)
}

func (p *JumpBack) appendTopK(dst []Node, h uint64, k int) []Node {
	return appendBuckets(dst, p.nodes, h, k, JumpBackHash)
}

// Nodes returns the members in bucket order.
func (p *JumpBack) Nodes() []Node { return p.jump().Nodes() }

// Len returns the number of members.
func (p *JumpBack) Len() int { return p.jump().Len() }

// Positional reports true: node i of the list given to the constructor is
// bucket i, so the placement depends on the order of that list (see
// [Algorithm.Positional] and [IsPositional]).
func (p *JumpBack) Positional() bool { return true }

// Add returns a JumpBack with the given nodes appended as the next buckets,
// in order, under [Jump.Add]'s rules: each takes about 1/(new n) of the
// keys, all from the others. O(n log n); p is unchanged.
func (p *JumpBack) Add(nodes ...Node) (*JumpBack, error) {
	if p.empty() {
		return NewJumpBack(nodes)
	}
	return wrapJumpBack(p.jump().Add(nodes...))
}

// Remove returns a JumpBack without the given nodes, which must be the last
// buckets, under [Jump.Remove]'s rules and errors (ErrUnknownNode,
// ErrNotLast, ErrNoNodes): only their keys move. O(n); p is unchanged.
func (p *JumpBack) Remove(ids ...string) (*JumpBack, error) {
	if p.empty() {
		return nil, removeFromEmpty(ids)
	}
	return wrapJumpBack(p.jump().Remove(ids...))
}

// Replace returns a JumpBack in which n takes the bucket of the node with ID
// id, under [Jump.Replace]'s rules: only that bucket's keys move, to n.
// O(n log n); p is unchanged.
func (p *JumpBack) Replace(id string, n Node) (*JumpBack, error) {
	if p.empty() {
		return nil, replaceInEmpty(id)
	}
	return wrapJumpBack(p.jump().Replace(id, n))
}

func wrapJumpBack(j *Jump, err error) (*JumpBack, error) {
	if err != nil {
		return nil, err
	}
	return (*JumpBack)(j), nil
}

// jump is p as the Jump with p's node list and options (nil for nil).
func (p *JumpBack) jump() *Jump { return (*Jump)(p) }

// empty reports whether p is nil or the zero JumpBack.
func (p *JumpBack) empty() bool { return p == nil || len(p.nodes) == 0 }
