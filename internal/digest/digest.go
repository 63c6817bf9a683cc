// Package digest accumulates the SHA-256 digests behind chash.Fingerprint,
// for the root package and for the packages whose placers fingerprint
// themselves (compat, shardmap), so that every fingerprint is written the
// same way.
package digest

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
	"math"
)

// Digest accumulates a fingerprint. Every field is written with its length
// or at a fixed width, so distinct inputs cannot run together. Bytes are
// buffered and hashed a block at a time, which keeps the cost at a few
// allocations whatever the number of members.
type Digest struct {
	h   hash.Hash
	buf []byte
}

// New returns an empty digest.
func New() *Digest { return &Digest{h: sha256.New(), buf: make([]byte, 0, 4096)} }

// Num writes v.
func (d *Digest) Num(v uint64) *Digest {
	d.buf = binary.LittleEndian.AppendUint64(d.buf, v)
	return d.flush()
}

// Float writes f's bits.
func (d *Digest) Float(f float64) *Digest { return d.Num(math.Float64bits(f)) }

// Str writes s, with its length.
func (d *Digest) Str(s string) *Digest {
	d.buf = append(binary.LittleEndian.AppendUint64(d.buf, uint64(len(s))), s...)
	return d.flush()
}

// Node writes a member: its ID and its effective weight (0 counts as 1).
func (d *Digest) Node(id string, weight float64) *Digest {
	if weight == 0 {
		weight = 1
	}
	return d.Str(id).Float(weight)
}

// flush hashes the buffer once it is nearly full.
func (d *Digest) flush() *Digest {
	if len(d.buf) >= 3072 {
		d.h.Write(d.buf)
		d.buf = d.buf[:0]
	}
	return d
}

// Sum returns the fingerprint: name, a dash and 64 bits of the digest in
// hex.
func (d *Digest) Sum(name string) string {
	d.h.Write(d.buf)
	s := d.h.Sum(nil)
	return name + "-" + hex.EncodeToString(s[:8])
}
