package chash

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"

	"github.com/keyplace/chash/internal/digest"
)

// FingerprintNone is the fingerprint of a placer that places no key: a nil
// Placer, a typed nil of any type, a zero-value placer, an empty Holder or
// any placer with no nodes.
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
//   - for a Zoned, the wrapped placer's fingerprint and each member's zone;
//     a Migration has its target's fingerprint;
//   - the Hasher, through its outputs (Sum64 and Sum64String) on 16 fixed
//     probe inputs, so that XXHashSeed(s) for each s, and any custom
//     Hasher, give their own fingerprint without being compared by value.
//     Two hashers that agree on every probe but differ elsewhere are not
//     told apart; a hasher that panics on a probe is digested as such.
//
// A Holder has the fingerprint of the placer it holds at the moment of the
// call, so it equals the fingerprint of that placer; so does any other
// Placer with a method Load() Placer, such as a watcher that serves the
// placer of a membership it follows. A placer of another package that
// implements [Fingerprinter], such as those of compat and shardmap,
// digests itself. Any other placer of a type this
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
	if isNil(p) {
		return FingerprintNone
	}
	d := digest.New()
	switch p := p.(type) {
	case *Holder:
		if depth >= maxHolderDepth {
			return FingerprintNone
		}
		return fingerprint(p.Load(), depth+1)
	case *Ring:
		if p.empty() {
			return FingerprintNone
		}
		d.Str("ring").Num(uint64(p.cfg.ketama))
		if p.cfg.ketama == 0 {
			d.Num(uint64(p.cfg.vnodes)).Float(p.cfg.weightUnit)
		}
		return digestAll(d, p.nodes, p.cfg.hasher).Sum("ring")
	case *Rendezvous:
		if p.empty() {
			return FingerprintNone
		}
		return digestAll(d.Str("rendezvous"), p.nodes, p.cfg.hasher).Sum("rendezvous")
	case *Jump:
		if p.empty() {
			return FingerprintNone
		}
		return digestAll(d.Str("jump"), p.nodes, p.cfg.hasher).Sum("jump")
	case *JumpBack:
		if p.empty() {
			return FingerprintNone
		}
		return digestAll(d.Str("jumpback"), p.nodes, p.cfg.hasher).Sum("jumpback")
	case *Maglev:
		if p.empty() {
			return FingerprintNone
		}
		return digestAll(d.Str("maglev").Num(p.size), p.nodes, p.cfg.hasher).Sum("maglev")
	case *Bounded:
		if p.empty() {
			return FingerprintNone
		}
		d.Str("bounded").Num(uint64(len(p.owner))).Float(p.c)
		return digestAll(d, p.nodes, p.cfg.hasher).Sum("bounded")
	case *Zoned:
		// Zone-aware lists depend on each member's zone as well as on the
		// wrapped placement.
		if depth >= maxHolderDepth || p.p == nil {
			return FingerprintNone
		}
		inner := fingerprint(p.p, depth+1)
		if inner == FingerprintNone {
			return FingerprintNone
		}
		d.Str("zoned").Str(inner)
		nodes := p.Nodes()
		slices.SortFunc(nodes, compareIDs)
		for _, n := range nodes {
			d.Str(n.ID).Str(n.Zone)
		}
		return d.Sum("zoned")
	case *Migration:
		// A migration places keys as its target does.
		if depth >= maxHolderDepth {
			return FingerprintNone
		}
		return fingerprint(p.to, depth+1)
	case loader:
		if depth >= maxHolderDepth {
			return FingerprintNone
		}
		if inner, ok := loadSafely(p); ok {
			return fingerprint(inner, depth+1)
		}
	case Fingerprinter:
		if fp, ok := own(p); ok {
			return fp
		}
	}
	return foreignFingerprint(d, p)
}

// Fingerprinter is a Placer that digests its own placement for
// [Fingerprint]: the placers of the compat and shardmap packages, and any
// placer of a user's whose placement is fully described by its settings
// and members. Fingerprint must return [FingerprintNone] when the placer
// places no key, a different string whenever the placement differs, and
// must not call [Fingerprint] on its own receiver.
type Fingerprinter interface {
	Placer
	Fingerprint() string
}

// own calls p.Fingerprint, reporting false if it panics or returns "".
func own(p Fingerprinter) (fp string, ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	fp = p.Fingerprint()
	return fp, fp != ""
}

// digestAll writes the members, then the hasher.
func digestAll(d *digest.Digest, nodes []Node, h hasher) *digest.Digest {
	return digestHasher(digestMembers(d, nodes), h)
}

// loader is a placer that, like Holder, serves the placer it loads, such
// as a watcher of a membership service.
type loader interface {
	Placer
	Load() Placer
}

// loadSafely calls l.Load, reporting false if it panics.
func loadSafely(l loader) (p Placer, ok bool) {
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
func foreignFingerprint(d *digest.Digest, p Placer) (fp string) {
	d.Str("placer").Str(fmt.Sprintf("%T", p))
	defer func() {
		if recover() != nil {
			d.Str("panicked")
			fp = d.Sum("placer")
		}
	}()
	nodes := p.Nodes()
	if len(nodes) == 0 {
		return FingerprintNone
	}
	nodes = slices.Clone(nodes)
	slices.SortStableFunc(nodes, func(a, b Node) int { return cmp.Compare(a.ID, b.ID) })
	digestMembers(d, nodes)
	k := min(len(nodes), 4)
	buf := make([]Node, 0, k)
	for _, key := range probeBytes {
		buf = p.AppendTopK(buf[:0], key, k)
		d.Num(uint64(len(buf)))
		for _, n := range buf {
			digestNode(d, n)
		}
	}
	return d.Sum("placer")
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

// digestNode writes n: its ID and effective weight.
func digestNode(d *digest.Digest, n Node) { d.Node(n.ID, n.Weight) }

// digestMembers digests nodes in the order given: sorted by ID for every
// algorithm but Jump, whose order is the bucket numbering.
func digestMembers(d *digest.Digest, nodes []Node) *digest.Digest {
	d.Num(uint64(len(nodes)))
	for _, n := range nodes {
		digestNode(d, n)
	}
	return d
}

// digestHasher digests h's outputs on the probe inputs.
func digestHasher(d *digest.Digest, h hasher) (out *digest.Digest) {
	out = d
	defer func() {
		if recover() != nil {
			d.Str("hasher panicked")
		}
	}()
	for i := range 16 {
		d.Num(h.sum(probeBytes[i])).Num(h.sumString(probes[i]))
	}
	return d
}
