package chash

import (
	"reflect"

	"github.com/cespare/xxhash/v2"
)

// Hasher is a 64-bit hash of keys and node IDs. Implementations must be
// deterministic across processes and platforms, safe for concurrent use,
// and should not allocate: every lookup calls one of its methods.
// Sum64String(s) must equal Sum64([]byte(s)).
type Hasher interface {
	Sum64(b []byte) uint64
	Sum64String(s string) uint64
}

// XXHash is the default Hasher: xxhash64 (XXH64) with seed 0, as computed by
// github.com/cespare/xxhash/v2.
var XXHash Hasher = xxHasher{}

// XXHashSeed returns xxhash64 with the given seed. Placement under one seed
// is unrelated to placement under another, so a secret seed keeps keys
// chosen by an attacker from being aimed at one node. Seed 0 is [XXHash].
// Its methods do not allocate.
func XXHashSeed(seed uint64) Hasher { return xxHasher{seed: seed} }

type xxHasher struct{ seed uint64 }

func (x xxHasher) Sum64(b []byte) uint64 {
	if x.seed == 0 {
		return xxhash.Sum64(b)
	}
	var d xxhash.Digest
	d.ResetWithSeed(x.seed)
	d.Write(b)
	return d.Sum64()
}

func (x xxHasher) Sum64String(s string) uint64 {
	if x.seed == 0 {
		return xxhash.Sum64String(s)
	}
	var d xxhash.Digest
	d.ResetWithSeed(x.seed)
	d.WriteString(s)
	return d.Sum64()
}

// hasher is the Hasher a placer was built with. The default, xxhash with
// seed 0, is called directly (ext == nil), which keeps the interface call
// off the common path. sum and sumString cost a call of their own; Ring's
// and Maglev's Lookup and LookupString write the branch out instead, which
// measured about 1 ns faster on a 10 ns Maglev lookup.
type hasher struct {
	ext Hasher
}

var defaultHasher = hasher{}

func newHasher(h Hasher) hasher {
	if x, ok := h.(xxHasher); ok && x.seed == 0 {
		return hasher{}
	}
	return hasher{ext: h}
}

// equal reports whether h and o are the same Hasher, so that placements
// built with them can be compared structurally. A custom Hasher of a type
// that == cannot compare (a func or slice inside) is never equal, rather
// than making == panic.
func (h hasher) equal(o hasher) bool {
	if h.ext == nil || o.ext == nil {
		return h.ext == nil && o.ext == nil
	}
	t := reflect.TypeOf(h.ext)
	return t == reflect.TypeOf(o.ext) && t.Comparable() && h.ext == o.ext
}

func (h hasher) sum(b []byte) uint64 {
	if h.ext == nil {
		return xxhash.Sum64(b)
	}
	return h.ext.Sum64(b)
}

func (h hasher) sumString(s string) uint64 {
	if h.ext == nil {
		return xxhash.Sum64String(s)
	}
	return h.ext.Sum64String(s)
}

// phi is 2⁶⁴/φ, the golden ratio's fractional part in 64 bits, rounded to
// odd: adding it repeatedly visits every 64-bit value with the widest gaps
// (Weyl sequence; the SplitMix64 increment). Placers step by it to derive
// many values from one hash.
const phi = 0x9e3779b97f4a7c15

// mix64 is a bijective 64-bit finalizer: the output mix of SplitMix64
// (Steele, Lea and Flood, "Fast splittable pseudorandom number generators",
// OOPSLA 2014, with Stafford's "Mix13" constants). Placers use it to derive
// many well-spread values from one hash, such as a ring's points from a
// node's ID hash, or a rendezvous score from a key hash and a node hash.
func mix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
