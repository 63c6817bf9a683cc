package chash

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
	"math"
	"slices"
	"strconv"
)

// FingerprintNone is the fingerprint of a placer that places no key: a nil
// Placer, a typed nil, a zero-value placer, an empty Holder or any placer
// with no nodes.
const FingerprintNone = "none"

// Fingerprint returns a short printable digest of the placement p makes,
// such as "maglev-1f0c55b2d7a9e314": the algorithm's name, a dash and 16
// hex digits (64 bits of SHA-256). Two processes whose placers have equal
// fingerprints place every key on the same node; a process that logs or
// exports its fingerprint after each membership change lets operators see
// at a glance which processes disagree about the fleet.
//
// The digest covers everything that changes placement and nothing else:
//
//   - the algorithm, and for a ring its ketama variant;
//   - each option the algorithm uses: a ring's vnodes and weight unit (not
//     under ketama, which ignores them), Maglev's table size, Bounded's
//     partitions and load factor; options an algorithm ignores do not count;
//   - the members, as IDs with their effective weights (0 counts as 1),
//     independent of the order they were given in, except for Jump and
//     JumpBack, whose order is their bucket numbering;
//   - for a ShardMap, its own content hash (ShardMap.Fingerprint);
//   - the Hasher, through its outputs (Sum64 and Sum64String) on 16 fixed
//     probe inputs, so that XXHashSeed(s) for each s, and any custom
//     Hasher, give their own fingerprint without being compared by value.
//     Two hashers that agree on every probe but differ elsewhere are not
//     told apart; a hasher that panics on a probe is digested as such.
//
// A Holder has the fingerprint of the placer it holds at the moment of the
// call, so it equals the fingerprint of that placer; so does any other
// Placer with a method Load() Placer, such as a watcher that serves the
// placer of a membership it follows. A placer of a type this
// package does not define is digested by its Go type name, its Nodes() and
// the top nodes AppendTopK gives for 64 fixed probe keys, so it is never
// silently reported as equal to a different placement, although two such
// placers that differ only off the probes compare equal. (A Balancer is
// not a Placer: fingerprint its Placer().)
//
// Fingerprint never panics and is safe for concurrent use. It costs one
// pass over the members, O(n), and a few allocations (an unknown placer
// also costs its Nodes(), a sort by ID and 64 AppendTopK);
// BenchmarkFingerprint has the figures.
func Fingerprint(p Placer) string {
	return fingerprint(p, 0)
}

// maxHolderDepth bounds the Holders Fingerprint follows, so that a Holder
// that holds itself cannot make it loop forever.
const maxHolderDepth = 16

func fingerprint(p Placer, depth int) string {
	d := newDigest()
	switch p := p.(type) {
	case nil:
		return FingerprintNone
	case *Holder:
		if p == nil || depth >= maxHolderDepth {
			return FingerprintNone
		}
		return fingerprint(p.Load(), depth+1)
	case *Ring:
		if p.empty() {
			return FingerprintNone
		}
		d.str("ring").num(uint64(p.cfg.ketama))
		if p.cfg.ketama == 0 {
			d.num(uint64(p.cfg.vnodes)).num(math.Float64bits(p.cfg.weightUnit))
		}
		return d.members(p.nodes).hasher(p.cfg.hasher).sum("ring")
	case *Rendezvous:
		if p.empty() {
			return FingerprintNone
		}
		return d.str("rendezvous").members(p.nodes).hasher(p.cfg.hasher).sum("rendezvous")
	case *Jump:
		if p.empty() {
			return FingerprintNone
		}
		return d.str("jump").members(p.nodes).hasher(p.cfg.hasher).sum("jump")
	case *ShardMap:
		if p == nil || p.Len() == 0 {
			return FingerprintNone
		}
		// The map's own content hash covers every partition's replicas.
		return d.str("shardmap").num(p.Fingerprint()).sum("shardmap")
	case *JumpBack:
		if p.empty() {
			return FingerprintNone
		}
		return d.str("jumpback").members(p.nodes).hasher(p.cfg.hasher).sum("jumpback")
	case *Maglev:
		if p.empty() {
			return FingerprintNone
		}
		d.str("maglev").num(p.size)
		return d.members(p.nodes).hasher(p.cfg.hasher).sum("maglev")
	case *Bounded:
		if p.empty() {
			return FingerprintNone
		}
		d.str("bounded").num(uint64(len(p.owner))).num(math.Float64bits(p.c))
		return d.members(p.nodes).hasher(p.cfg.hasher).sum("bounded")
	case loader:
		if depth >= maxHolderDepth {
			return FingerprintNone
		}
		if inner, ok := load(p); ok {
			return fingerprint(inner, depth+1)
		}
	}
	return foreignFingerprint(d, p)
}

// loader is a placer that, like Holder, serves the placer it loads, such
// as a watcher of a membership service.
type loader interface {
	Placer
	Load() Placer
}

// load calls l.Load, reporting false if it panics.
func load(l loader) (p Placer, ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	return l.Load(), true
}

// foreignFingerprint digests a placer of a type this package does not
// know: its type, its members and its choices for fixed probe keys. A
// panic in any of its methods ends the digest with a marker.
func foreignFingerprint(d *digest, p Placer) (fp string) {
	d.str("placer").str(fmt.Sprintf("%T", p))
	defer func() {
		if recover() != nil {
			d.str("panicked")
			fp = d.sum("placer")
		}
	}()
	nodes := p.Nodes()
	if len(nodes) == 0 {
		return FingerprintNone
	}
	nodes = slices.Clone(nodes)
	slices.SortStableFunc(nodes, func(a, b Node) int { return cmp.Compare(a.ID, b.ID) })
	d.members(nodes)
	k := min(len(nodes), 4)
	buf := make([]Node, 0, k)
	for _, key := range probeBytes {
		buf = p.AppendTopK(buf[:0], key, k)
		d.num(uint64(len(buf)))
		for _, n := range buf {
			d.node(n)
		}
	}
	return d.sum("placer")
}

// probes are the fixed inputs on which hashers and unknown placers are
// digested: "chash-fp-0" to "chash-fp-63", as strings and as bytes.
var probes, probeBytes = func() ([]string, [][]byte) {
	s, b := make([]string, 64), make([][]byte, 64)
	for i := range s {
		s[i] = "chash-fp-" + strconv.Itoa(i)
		b[i] = []byte(s[i])
	}
	return s, b
}()

// digest accumulates a fingerprint. Every field is written with its length
// or at a fixed width, so distinct inputs cannot run together.
// Bytes are buffered and hashed a block at a time, which keeps the cost at
// a few allocations whatever the number of members.
type digest struct {
	h   hash.Hash
	buf []byte
}

func newDigest() *digest { return &digest{h: sha256.New(), buf: make([]byte, 0, 4096)} }

func (d *digest) num(v uint64) *digest {
	d.buf = binary.LittleEndian.AppendUint64(d.buf, v)
	return d.flush()
}

func (d *digest) str(s string) *digest {
	d.buf = append(binary.LittleEndian.AppendUint64(d.buf, uint64(len(s))), s...)
	return d.flush()
}

// flush hashes the buffer once it is nearly full.
func (d *digest) flush() *digest {
	if len(d.buf) >= 3072 {
		d.h.Write(d.buf)
		d.buf = d.buf[:0]
	}
	return d
}

func (d *digest) node(n Node) *digest {
	w := n.Weight
	if w == 0 {
		w = 1
	}
	return d.str(n.ID).num(math.Float64bits(w))
}

// members digests nodes in the order given: sorted by ID for every
// algorithm but Jump, whose order is the bucket numbering.
func (d *digest) members(nodes []Node) *digest {
	d.num(uint64(len(nodes)))
	for _, n := range nodes {
		d.node(n)
	}
	return d
}

// hasher digests h's outputs on the probe inputs.
func (d *digest) hasher(h hasher) (out *digest) {
	out = d
	defer func() {
		if recover() != nil {
			d.str("hasher panicked")
		}
	}()
	for i := range 16 {
		d.num(h.sum(probeBytes[i])).num(h.sumString(probes[i]))
	}
	return d
}

// sum returns the fingerprint: the algorithm's name and 64 bits of the
// digest in hex.
func (d *digest) sum(name string) string {
	d.h.Write(d.buf)
	s := d.h.Sum(nil)
	return name + "-" + hex.EncodeToString(s[:8])
}
