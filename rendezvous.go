package chash

import (
	"fmt"
	"slices"

	"github.com/cespare/xxhash/v2"
	"github.com/keyplace/chash/internal/place"
)

// Rendezvous weights are bounded so that every score and pruning bound is a
// normal float64: 2^-100 to 2^100, about 7.9e-31 to 1.3e30.
const (
	minRendezvousWeight = 0x1p-100
	maxRendezvousWeight = 0x1p100
)

// Rendezvous places keys by highest random weight (Thaler and Ravishankar,
// "Using name-based mappings to increase hit rates", IEEE/ACM ToN 1998):
// every node scores every key, and the best score wins.
//
// A node's score for a key is derived from two 64-bit values, the key's
// hash h and the node's ID hash s, by m = mix64(h ^ s). When all weights are
// equal the highest m wins. Otherwise the scores are weighted by the
// logarithmic method (weighted HRW; Ceph's straw2): with u = (⌊m/2^24⌋ +
// 0.5)/2^40, uniform in (0, 1), the node with the highest ln(u)/weight wins,
// which is the order of -weight/ln(u). Each node then wins with probability
// weight/Σweight. Equal scores fall to the higher m, then to the lower ID,
// so every ranking is a strict total order.
//
// The two paths rank equal-weight nodes identically: u is non-decreasing in
// m, and on u's grid of 2^-40 the logarithm (computed by this package with
// every rounding explicit, so that scores are bit-identical on every
// platform) is strictly increasing. Because a pair of nodes is always
// ranked the same way whatever the other members are, adding a node moves
// only the keys it wins, removing one moves only its keys, and changing one
// node's weight moves keys only to or from it: exactly, with no collateral
// moves. Two nodes whose ID hashes collide are ranked the same for every
// key, and the one with the higher ID never owns a key.
//
// Lookup is O(n) for n nodes: with equal weights one mix64 and one compare
// per node. On amd64 CPUs with AVX-512 (AVX512F and AVX512DQ), lookups and
// top-2 and top-3 lists of 8 or more equal-weight nodes score eight nodes
// per instruction, 2 to 3 times as fast at 64 nodes and beyond, with the
// same result; build with the purego tag to use the portable loops only.
// Unequal weights add a logarithm only for nodes that might win:
// a bound from ln(u) <= u-1 skips it for the rest, about ln(n) logarithms
// per lookup. Beside the O(1) lookups of Ring, Maglev and Jump it is as fast
// at a few nodes and falls behind linearly (benchmarks/BENCHMARKS.md, BenchmarkLookup):
// it is the right choice up to about a hundred nodes, or beyond that when
// exact weights, zero collateral movement or ranked replicas matter more
// than the cost of a lookup. Memory is 8 bytes per node beside the node
// list, 16 with unequal weights.
//
// A Rendezvous is immutable and safe for concurrent use; Add and Remove
// derive new ones. Nodes are reported in ascending ID order. The zero
// Rendezvous, like a nil *Rendezvous, is empty: lookups return the zero
// Node, Len is 0, and Add builds a placer with the default options.
type Rendezvous struct {
	nodes  []Node // ascending by ID
	straw2        // the nodes' ID hashes and, if weights differ, 1/weight
	cfg    config
}

var _ Placer = (*Rendezvous)(nil)

// NewRendezvous builds a rendezvous placer of the given nodes. It uses
// WithHasher and ignores the other options. It fails if nodes is empty, an
// ID is empty or repeated, or a weight is negative, NaN, infinite or
// outside 2^-100 to 2^100 (a zero weight means 1). Building costs one hash
// per node and a sort by ID.
func NewRendezvous(nodes []Node, opts ...Option) (*Rendezvous, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	ns, err := checkNodes(nodes, true)
	if err != nil {
		return nil, err
	}
	return newRendezvous(cfg, ns)
}

// newRendezvous builds the placer of nodes, which checkNodes has sorted.
func newRendezvous(cfg config, nodes []Node) (*Rendezvous, error) {
	for _, n := range nodes {
		if n.Weight < minRendezvousWeight || n.Weight > maxRendezvousWeight {
			return nil, fmt.Errorf("%w: node %q has weight %v: rendezvous accepts 2^-100 to 2^100", ErrInvalidWeight, n.ID, n.Weight)
		}
	}
	return &Rendezvous{nodes: nodes, straw2: newStraw2(cfg.hasher, nodes, false), cfg: cfg}, nil
}

// Lookup returns the node with the best score for key.
func (r *Rendezvous) Lookup(key []byte) Node {
	if r.empty() {
		return Node{}
	}
	return r.nodes[r.index(key)]
}

// LookupString is Lookup for a string key.
func (r *Rendezvous) LookupString(key string) Node {
	if r.empty() {
		return Node{}
	}
	return r.nodes[r.indexString(key)]
}

// LookupIndex returns the index in Nodes() (ascending ID order) of the node
// Lookup returns for key, or -1 if r is empty. It is Lookup without the
// copy of the Node, which a caller that keeps its own per-node data in
// that order does not need: a Node is five words, more than Go keeps in
// registers, so Lookup's result goes through memory even when only its ID
// is read. It allocates nothing and is safe for concurrent use.
func (r *Rendezvous) LookupIndex(key []byte) int {
	if r.empty() {
		return -1
	}
	return r.index(key)
}

// LookupIndexString is LookupIndex for a string key.
func (r *Rendezvous) LookupIndexString(key string) int {
	if r.empty() {
		return -1
	}
	return r.indexString(key)
}

// index and indexString are the lookups' work, kept out of Lookup and
// LookupString so that those stay within the inliner's budget, as Jump's
// do: a caller then copies only the fields of the Node it reads. Copying
// the whole Node out of a call took 7 ns of the 8-node lookup's 47 in a
// profile of the comparison harness, as the copy's 16-byte loads waited on
// 8-byte stores. They call the default hash and the kernel themselves, as
// hasher.sum and straw2.best are not inlined: two frames fewer, which made
// 8-node LookupString 8–12% faster in interleaved runs.
func (r *Rendezvous) index(key []byte) int {
	var h uint64
	if r.cfg.hasher.ext == nil {
		h = xxhash.Sum64(key)
	} else {
		h = r.cfg.hasher.ext.Sum64(key)
	}
	if r.oneCall() {
		_, bi := best8(h, r.seeds, nil, false)
		return int(bi)
	}
	return r.bestSlow(h)
}

func (r *Rendezvous) indexString(key string) int {
	var h uint64
	if r.cfg.hasher.ext == nil {
		h = xxhash.Sum64String(key)
	} else {
		h = r.cfg.hasher.ext.Sum64String(key)
	}
	if r.oneCall() {
		_, bi := best8(h, r.seeds, nil, false)
		return int(bi)
	}
	return r.bestSlow(h)
}

// AppendTopK appends the k nodes with the best scores for key, best first.
// It keeps the best candidates in a sorted array of up to 16 on the stack
// rather than sorting all n scores: k <= 16 costs one pass, O(n), and larger
// k one pass per 16 nodes, O(n·⌈k/16⌉). It does not allocate when dst has
// room for k more nodes.
func (r *Rendezvous) AppendTopK(dst []Node, key []byte, k int) []Node {
	if r.empty() {
		return dst
	}
	return r.appendTopK(dst, r.cfg.hasher.sum(key), k)
}

// AppendTopKString is AppendTopK for a string key.
func (r *Rendezvous) AppendTopKString(dst []Node, key string, k int) []Node {
	if r.empty() {
		return dst
	}
	return r.appendTopK(dst, r.cfg.hasher.sumString(key), k)
}

func (r *Rendezvous) appendTopK(dst []Node, h uint64, k int) []Node {
	return r.appendTop(dst, r.nodes, h, place.ClampK(k, len(r.nodes)), -1)
}

// Nodes returns the members in ascending ID order.
func (r *Rendezvous) Nodes() []Node {
	if r == nil {
		return nil
	}
	return slices.Clone(r.nodes)
}

// Len returns the number of members.
func (r *Rendezvous) Len() int {
	if r == nil {
		return 0
	}
	return len(r.nodes)
}

// Add returns a placer with the given nodes added, as NewRendezvous would
// build it from the combined membership: O(n log n). Only keys that the new
// nodes win move, all to them. r is unchanged.
func (r *Rendezvous) Add(nodes ...Node) (*Rendezvous, error) {
	if r.empty() {
		return NewRendezvous(nodes)
	}
	all, err := checkNodes(append(slices.Clone(r.nodes), nodes...), true)
	if err != nil {
		return nil, err
	}
	return newRendezvous(r.cfg, all)
}

// Remove returns a placer without the nodes with the given IDs, as
// NewRendezvous would build it from the remaining membership: O(n). Only
// the removed nodes' keys move. It fails with ErrUnknownNode if an ID is not
// a member, and with ErrNoNodes if no node would remain. r is unchanged.
func (r *Rendezvous) Remove(ids ...string) (*Rendezvous, error) {
	if r.empty() {
		return nil, removeFromEmpty(ids)
	}
	rest, err := without(r.nodes, ids)
	if err != nil {
		return nil, err
	}
	return newRendezvous(r.cfg, rest)
}

// empty reports whether r is nil or the zero Rendezvous, which have no members.
func (r *Rendezvous) empty() bool { return r == nil || len(r.nodes) == 0 }
