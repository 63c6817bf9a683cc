// Package hashing holds the hash functions that chash's packages share:
// xxhash64 with a seed, and the 64-bit mix that placers derive many values
// from one hash with.
package hashing

import "github.com/cespare/xxhash/v2"

// XX is xxhash64 (XXH64) with a seed, as computed by
// github.com/cespare/xxhash/v2; it implements chash.Hasher. Seed 0 is the
// plain xxhash64. Its methods do not allocate.
type XX struct{ Seed uint64 }

// Sum64 returns the hash of b.
func (x XX) Sum64(b []byte) uint64 {
	if x.Seed == 0 {
		return xxhash.Sum64(b)
	}
	var d xxhash.Digest
	d.ResetWithSeed(x.Seed)
	d.Write(b)
	return d.Sum64()
}

// Sum64String returns the hash of s, without copying it.
func (x XX) Sum64String(s string) uint64 {
	if x.Seed == 0 {
		return xxhash.Sum64String(s)
	}
	var d xxhash.Digest
	d.ResetWithSeed(x.Seed)
	d.WriteString(s)
	return d.Sum64()
}

// Phi is 2⁶⁴/φ, the golden ratio's fractional part in 64 bits, rounded to
// odd: adding it repeatedly visits every 64-bit value with the widest gaps
// (Weyl sequence; the SplitMix64 increment). Placers step by it to derive
// many values from one hash.
const Phi = 0x9e3779b97f4a7c15

// Mix64 is a bijective 64-bit finalizer: the output mix of SplitMix64
// (Steele, Lea and Flood, "Fast splittable pseudorandom number generators",
// OOPSLA 2014, with Stafford's "Mix13" constants). Placers use it to derive
// many well-spread values from one hash, such as a ring's points from a
// node's ID hash, or a rendezvous score from a key hash and a node hash.
func Mix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
