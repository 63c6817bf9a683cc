package chash

import (
	"math"
	"math/bits"

	"github.com/cespare/xxhash/v2"
	"github.com/keyplace/chash/internal/digest"
)

// BinomialHash returns the bucket in [0, buckets) of a 64-bit key by
// BinomialHash (Coluzzi, Brocco and Antonucci, "BinomialHash: A Constant
// Time, Minimal Memory Consistent Hash Algorithm", arXiv:2406.19836,
// 2024). Its results equal those of the authors' Java BinomialEngine
// (SUPSI-DTI-ISIN/java-consistent-hashing-algorithms, as of May 2025)
// built for buckets by its constructor and given key as the key's hash,
// for every count it accepts (1 to 2^31-1); testdata/binomial/vectors.tsv
// holds the reference's output that the tests compare with.
//
// The key goes to a place in the smallest binary tree that holds the
// buckets, moved at random within its level; a place beyond the last
// bucket draws again (up to four times) and finally falls back into the
// largest tree that the buckets fill. Like [JumpHash] it is consistent:
// growing buckets from n to n+1 moves keys only into the new bucket n. It
// takes a constant number of integer steps (at most six multiplications
// of a 64-bit hash), with no division or floating point; the key should
// already be a hash.
//
// The reference's first published version (September 2024) draws again
// twice and without moving within the level; the current one, reproduced
// here, draws four times and spreads keys more evenly: over 2 million
// keys, the busiest or idlest bucket strays from the mean by 4.4% at 5
// buckets, 4.3% at 7 and 1.7% at 100, against 5.5%, 8.0% and 9.3% for the
// first version (sampling noise is 0.2% to 0.7%). BinomialHash is thus
// close to uniform but not exactly so, unlike JumpHash. Its incremental
// addBucket does not reach the state its constructor builds for the same
// count (for 4 buckets and more, half the keys differ), so the buckets
// here are always those of an engine built for the count.
//
// It allocates nothing and never panics. For buckets <= 1 it returns 0;
// counts above 2^31-1, beyond the reference's int range, are treated as
// 2^31-1.
func BinomialHash(key uint64, buckets int) int {
	if buckets <= 1 {
		return 0
	}
	return int(binomial(key, uint32(min(buckets, math.MaxInt32))))
}

// binomial is BinomialHash for 2 <= n < 2^31 buckets.
func binomial(key uint64, n uint32) uint32 {
	enclosing := uint32(1)<<bits.Len32(n-1) - 1 // the smallest tree's filter
	minor := enclosing >> 1
	b := binomialRelocate(uint32(key)&enclosing, key)
	if b < n {
		return b
	}
	h := key
	for range 4 {
		h = binomialRehash(h, enclosing)
		b = binomialRelocate(uint32(h)&enclosing, h)
		if b <= minor {
			break
		}
		if b < n {
			return b
		}
	}
	return binomialRelocate(uint32(key)&minor, key)
}

// binomialRehash is the reference's rehash: a linear congruential step,
// squared and scaled by seed, keeping bits 32 to 63.
func binomialRehash(v uint64, seed uint32) uint64 {
	h := 2862933555777941757*v + 1
	return h * h * uint64(seed) >> 32
}

// binomialRelocate moves bucket b to a place of its level of the tree,
// [2^i, 2^(i+1)) for 2^i <= b, drawn from h; buckets 0 and 1 stay.
func binomialRelocate(b uint32, h uint64) uint32 {
	if b < 2 {
		return b
	}
	base := uint32(1) << (bits.Len32(b) - 1)
	return base + uint32(binomialRehash(h, base-1))&(base-1)
}

// Binomial places keys with [BinomialHash]: node i of the order given to
// NewBinomial is bucket i, and a key goes to bucket
// BinomialHash(hash(key), n).
//
// It has [Jump]'s balance, memory (the node list only) and membership
// rules (equal weights; Add appends buckets, Remove accepts only the last
// ones, Replace swaps a node in place; each moves only the keys it must),
// and places keys differently from Jump. Its lookups cost one hash plus a
// constant number of integer steps whatever the number of nodes. It is
// positional ([IsPositional]): removing a node in the middle would
// renumber the buckets after it.
//
// A Binomial is immutable and safe for concurrent use. Nodes are reported
// in bucket order, as given. The zero Binomial, like a nil *Binomial, is
// empty: lookups return the zero Node, Len is 0, and Add builds a placer
// with the default options.
type Binomial struct {
	// Jump's fields, so that a *Binomial converts to the *Jump that holds
	// its node list, options and membership rules.
	nodes []Node // bucket order
	cfg   config
}

var (
	_ Placer        = (*Binomial)(nil)
	_ Fingerprinter = (*Binomial)(nil)
)

// NewBinomial builds a Binomial placer whose bucket i is nodes[i]. It uses
// WithHasher and ignores the other options. It fails as [NewJump] does: if
// nodes is empty, an ID is empty or repeated, a weight is negative, NaN or
// infinite, or the weights differ (ErrInvalidWeight). O(n log n).
func NewBinomial(nodes []Node, opts ...Option) (*Binomial, error) {
	return wrapBinomial(NewJump(nodes, opts...))
}

// Lookup returns the node of key's bucket. O(1), no allocation.
func (p *Binomial) Lookup(key []byte) Node {
	if p.empty() {
		return Node{}
	}
	var h uint64
	if p.cfg.hasher.ext == nil {
		h = xxhash.Sum64(key)
	} else {
		h = p.cfg.hasher.ext.Sum64(key)
	}
	return p.nodes[p.bucket(h)]
}

// LookupString is Lookup for a string key.
func (p *Binomial) LookupString(key string) Node {
	if p.empty() {
		return Node{}
	}
	var h uint64
	if p.cfg.hasher.ext == nil {
		h = xxhash.Sum64String(key)
	} else {
		h = p.cfg.hasher.ext.Sum64String(key)
	}
	return p.nodes[p.bucket(h)]
}

func (p *Binomial) bucket(h uint64) uint32 {
	if len(p.nodes) == 1 {
		return 0
	}
	return binomial(h, uint32(len(p.nodes))) // far below 2^31 nodes
}

// AppendTopK appends up to k distinct nodes for key; the first is Lookup's.
// Choice i (1 <= i < 16) is drawn by BinomialHash over the n-i buckets not
// yet chosen, with key hash mix64(h + i·φ), and mapped onto them in bucket
// order, as JumpBack's are; past the 16th choice the rest follow in bucket
// order from a hashed start. A shorter list is a prefix of a longer one.
// Cost: O(k²) for k <= 16, plus O(16) per further choice; no allocation
// when dst has room.
func (p *Binomial) AppendTopK(dst []Node, key []byte, k int) []Node {
	if p.empty() {
		return dst
	}
	return appendBuckets(dst, p.nodes, p.cfg.hasher.sum(key), k, BinomialHash)
}

// AppendTopKString is AppendTopK for a string key.
func (p *Binomial) AppendTopKString(dst []Node, key string, k int) []Node {
	if p.empty() {
		return dst
	}
	return appendBuckets(dst, p.nodes, p.cfg.hasher.sumString(key), k, BinomialHash)
}

// Nodes returns the members in bucket order.
func (p *Binomial) Nodes() []Node { return p.jump().Nodes() }

// Len returns the number of members.
func (p *Binomial) Len() int { return p.jump().Len() }

// Positional reports true: node i of the list given to the constructor is
// bucket i, so the placement depends on the order of that list (see
// [Algorithm.Positional] and [IsPositional]).
func (p *Binomial) Positional() bool { return true }

// Add returns a Binomial with the given nodes appended as the next
// buckets, in order, under [Jump.Add]'s rules: each takes about 1/(new n)
// of the keys, all from the others. O(n log n); p is unchanged.
func (p *Binomial) Add(nodes ...Node) (*Binomial, error) {
	if p.empty() {
		return NewBinomial(nodes)
	}
	return wrapBinomial(p.jump().Add(nodes...))
}

// Remove returns a Binomial without the given nodes, which must be the
// last buckets, under [Jump.Remove]'s rules and errors (ErrUnknownNode,
// ErrNotLast, ErrNoNodes): only their keys move. O(n); p is unchanged.
func (p *Binomial) Remove(ids ...string) (*Binomial, error) {
	if p.empty() {
		return nil, removeFromEmpty(ids)
	}
	return wrapBinomial(p.jump().Remove(ids...))
}

// Replace returns a Binomial in which n takes the bucket of the node with
// ID id, under [Jump.Replace]'s rules: only that bucket's keys move, to n.
// O(n log n); p is unchanged.
func (p *Binomial) Replace(id string, n Node) (*Binomial, error) {
	if p.empty() {
		return nil, replaceInEmpty(id)
	}
	return wrapBinomial(p.jump().Replace(id, n))
}

// with is Derive for a Binomial: Jump's, members keeping their buckets.
func (p *Binomial) with(nodes []Node) (Placer, error) {
	if p.empty() {
		return placer(NewBinomial(nodes))
	}
	return placer(wrapBinomial(p.jump().derived(nodes)))
}

// Fingerprint returns the placement's fingerprint for [Fingerprint], such
// as "binomial-1f0c55b2d7a9e314": it covers the members in bucket order and
// the Hasher; FingerprintNone for an empty placer.
func (p *Binomial) Fingerprint() string {
	if p.empty() {
		return FingerprintNone
	}
	return digestAll(digest.New().Str("binomial"), p.nodes, p.cfg.hasher).Sum("binomial")
}

func wrapBinomial(j *Jump, err error) (*Binomial, error) {
	if err != nil {
		return nil, err
	}
	return (*Binomial)(j), nil
}

// jump is p as the Jump with p's node list and options (nil for nil).
func (p *Binomial) jump() *Jump { return (*Jump)(p) }

// empty reports whether p is nil or the zero Binomial.
func (p *Binomial) empty() bool { return p == nil || len(p.nodes) == 0 }
