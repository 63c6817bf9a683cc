package chash

import (
	"fmt"
	"math/bits"

	"github.com/cespare/xxhash/v2"
)

// DxEngine is the state of DxHash (Dong and Wang, "DxHash: A Scalable
// Consistent Hash Based on the Pseudo-Random Sequence", arXiv:2107.07930,
// 2021): an array of size nodes, each working or not. A key probes the
// array along a pseudo-random sequence of its own and takes the first
// working node; a node joins at the first free place of the sequence of
// the fixed key 1228, the array doubling when it is full. The state is the
// size and the set of working nodes only, whatever order they came in:
// DxHash is history-independent.
//
// Its nodes equal those of the authors' C++ DxHash (ChaosD/DxHash,
// src/DxHash.cpp, DxHash(n_total, n_working), updateRemoval,
// updateAddition and getNodeID) for every 32-bit key, including the
// CRC-32C hash it computes with the SSE 4.2 crc32 instruction (computed
// here in software on every platform); a 64-bit key is hashed as the same
// computation on all its bits. testdata/dxhash/vectors.tsv holds the
// reference's output that the tests compare with.
//
// The reference gives up after 4·size probes, returning -1, which happens
// for about e^(-4·working) of keys and so only when nearly every node is
// gone (1.8% of keys with one node working, 0.03% with two). Bucket then
// returns the first working node after the last place probed, cyclically:
// a lookup never fails while a node works, and never takes more than
// 5·size steps. A lookup takes size/working expected probes, so keep most
// nodes working (or rebuild smaller) where lookups must stay fast.
//
// A plain copy of a DxEngine shares its storage with the original: copy
// with Clone before changing either. Lookups may run concurrently with
// each other but not with Remove, Add or UnmarshalText. Memory is one bit
// per node of size. The zero DxEngine has no nodes: Bucket returns -1 and
// Add gives it node 0.
type DxEngine struct {
	set  []uint64 // bit b set: node b works
	size uint32
	n    uint32 // working nodes
	m    uint64 // fastModM(size)
}

// dxAddKey is the key whose probe sequence places new nodes: the
// reference's updateAddition calls getInactiveNodeID(1228).
const dxAddKey = 1228

// NewDxEngine returns an engine of size nodes of which 0 to working-1
// work, as the reference's constructor DxHash(size, working) does. It
// fails with ErrInvalidOption unless 1 <= working <= size <= 1<<24.
// O(size).
func NewDxEngine(size, working int) (DxEngine, error) {
	if working < 1 || working > size || size > maxBuckets {
		return DxEngine{}, fmt.Errorf("%w: NewDxEngine(%d, %d): want 1 <= working <= size <= 16777216", ErrInvalidOption, size, working)
	}
	e := DxEngine{set: make([]uint64, (size+63)/64), size: uint32(size), n: uint32(working), m: fastModM(uint32(size))}
	for b := 0; b < working; b++ {
		e.set[b/64] |= 1 << (b % 64)
	}
	return e, nil
}

// Len returns the number of working nodes.
func (e *DxEngine) Len() int {
	if e == nil {
		return 0
	}
	return int(e.n)
}

// Size returns the size of the node array.
func (e *DxEngine) Size() int {
	if e == nil {
		return 0
	}
	return int(e.size)
}

// Working reports whether node b works.
func (e *DxEngine) Working(b int) bool {
	return e != nil && b >= 0 && b < int(e.size) && e.works(uint32(b))
}

func (e *DxEngine) works(b uint32) bool { return e.set[b/64]&(1<<(b%64)) != 0 }

// Bucket returns the working node of a key, as the reference's getNodeID
// does for a key below 2^32, or -1 if no node works. It allocates nothing.
// See DxEngine for its cost and for what it returns where the reference
// gives up.
func (e *DxEngine) Bucket(key uint64) int {
	if e == nil || e.n == 0 {
		return -1
	}
	return int(e.bucket(key))
}

// bucket is Bucket for an engine with a working node.
func (e *DxEngine) bucket(key uint64) uint32 {
	key2, bs, b := e.start(key)
	if e.n == e.size {
		return b // every node works: the first place is the key's
	}
	return e.walk(key2, bs, b)
}

// start returns a key's second key (the reference's gen32bitRandNumber of
// its low 32 bits), its first CRC and its first place.
func (e *DxEngine) start(key uint64) (key2 uint64, bs, b uint32) {
	key2 = uint64(uint32(key)*421757 + 1)
	bs = crc32c(key, key2)
	return key2, bs, fastMod(bs, e.m, e.size)
}

// walk continues a lookup from its first place b, of CRC bs, to a working
// node, or to the working node scan finds where the reference gives up.
func (e *DxEngine) walk(key2 uint64, bs, b uint32) uint32 {
	b, ok := e.probe(key2, bs, b, true)
	if !ok {
		b = e.scan(b, true)
	}
	return b
}

// probe follows a key's sequence from its first place b, of CRC bs, to
// the first node whose state is want, as the reference's getNodeID (want
// working) and getInactiveNodeID (want free) do, and reports false, with
// the last place computed, where they give up: a place is tested for i = 1
// to 4·size-1 probes, and the 4·size-th is computed and not tested.
func (e *DxEngine) probe(key2 uint64, bs, b uint32, want bool) (uint32, bool) {
	limit := 4 * e.size
	for i := uint32(1); e.works(b) != want; {
		bs = crc32c(uint64(bs), key2)
		b = fastMod(bs, e.m, e.size)
		if i++; i >= limit {
			return b, false
		}
	}
	return b, true
}

// scan returns the first node from b on, cyclically, whose state is want.
func (e *DxEngine) scan(b uint32, want bool) uint32 {
	for e.works(b) != want {
		if b++; b == e.size {
			b = 0
		}
	}
	return b
}

// Remove takes node b, which must work, out of the working set, as the
// reference's updateRemoval does: only its keys move. It fails with
// ErrUnknownNode if b does not work and with ErrNoNodes if it is the last
// working node. O(1).
func (e *DxEngine) Remove(b int) error {
	switch {
	case !e.Working(b):
		return fmt.Errorf("%w: node %d is not a working node", ErrUnknownNode, b)
	case e.n == 1:
		return fmt.Errorf("%w: node %d is the last working node", ErrNoNodes, b)
	}
	e.remove(b)
	return nil
}

func (e *DxEngine) remove(b int) {
	e.set[b/64] &^= 1 << (b % 64)
	e.n--
}

// Add brings a node into the working set and returns it, as the
// reference's updateAddition does: when every node works the array first
// grows to the smallest power of two above their number; the new node is
// then the first free place along the probe sequence of key 1228 (or,
// where the reference gives up, the first free place after the last one
// probed). It takes about 1/(n+1) of the keys, all from the others. It
// fails with ErrTooLarge when the array would exceed 1<<24 nodes. O(1)
// expected, O(size) when the array grows.
func (e *DxEngine) Add() (int, error) {
	if e == nil {
		return -1, fmt.Errorf("%w: Add on a nil DxEngine", ErrNoNodes)
	}
	return e.add()
}

func (e *DxEngine) add() (int, error) {
	if e.n == e.size {
		size := uint32(1) << bits.Len32(e.n)
		if size > maxBuckets {
			return -1, fmt.Errorf("%w: a DxEngine holds at most %d nodes", ErrTooLarge, maxBuckets)
		}
		for len(e.set) < int(size+63)/64 {
			e.set = append(e.set, 0)
		}
		e.size, e.m = size, fastModM(size)
	}
	key2, bs, b := e.start(dxAddKey)
	b, ok := e.probe(key2, bs, b, false)
	if !ok {
		b = e.scan(b, false)
	}
	e.set[b/64] |= 1 << (b % 64)
	e.n++
	return int(b), nil
}

// Clone returns a copy of e that shares no storage with it. O(size).
func (e *DxEngine) Clone() DxEngine {
	if e == nil {
		return DxEngine{}
	}
	c := *e
	c.set = append([]uint64(nil), e.set...)
	return c
}

// MarshalText returns the state as text: "dx:" and the size, then "/" and
// the nodes that do not work in ascending order, separated by commas, with
// a run of three or more consecutive nodes written as "first-last". For
// example "dx:16/3,10-15" is an array of 16 whose nodes 0 to 9 work but
// node 3. Equal working sets give equal text. A nil engine is the zero
// one.
func (e *DxEngine) MarshalText() ([]byte, error) {
	if e == nil {
		return formatState("dx", 0, nil), nil
	}
	free := make([]uint32, 0, e.size-e.n)
	for b := uint32(0); b < e.size; b++ {
		if !e.works(b) {
			free = append(free, b)
		}
	}
	return formatState("dx", e.size, free), nil
}

// UnmarshalText sets e to the state MarshalText wrote (the free nodes may
// be listed in any order). It fails, leaving e unchanged, with an error
// wrapping ErrInvalidState for text that is malformed, lists a node twice
// or not below the size, or frees every node, and for a size above 1<<24.
// O(size).
func (e *DxEngine) UnmarshalText(text []byte) error {
	size, free, err := parseState(text, "dx", maxBuckets)
	if err != nil {
		return err
	}
	if size > 0 && len(free) >= int(size) {
		return fmt.Errorf("%w: all %d nodes free", ErrInvalidState, size)
	}
	if err := checkDistinct(free, size); err != nil {
		return err
	}
	if size == 0 {
		*e = DxEngine{}
		return nil
	}
	f, _ := NewDxEngine(int(size), int(size))
	for _, b := range free {
		f.remove(int(b))
	}
	*e = f
	return nil
}

// Dx places keys with DxHash: node i of the order given to NewDx is node
// i of the engine's array, and a key goes to the node its DxEngine gives
// for the key's hash.
//
// Any member can leave, Remove moving only its keys, and Add puts each new
// member at the first free place of a fixed sequence, doubling the array
// when it is full. The placement depends only on which places of the
// array the members hold and on the array's size, never on the order of
// past removals; processes that must agree share the engine's state
// ([Dx.Engine], [DxEngine.MarshalText]) with the member list and build
// with [NewDxFrom], and [Fingerprint] covers both. Lookups cost one hash
// plus size/n expected CRC steps: near one while most places work (the
// array starts at the smallest power of two that holds the nodes, or
// [WithCapacity]), but n of 10⁶ places working cost 10⁶/n. Memory is the
// member list plus one bit per place. Members must have equal weights.
//
// Dx is not positional in the sense of [IsPositional]: the order given to
// NewDx numbers the places, but no membership change renumbers them, so a
// member in the middle can leave without moving the keys of the others.
//
// A Dx is immutable and safe for concurrent use. Nodes are reported in
// array order. The zero Dx, like a nil *Dx, is empty: lookups return the
// zero Node, Len is 0, and Add builds a placer with the default options.
type Dx struct {
	slots[DxEngine, *DxEngine] // the engine, the members by place, the options
}

var (
	_ Placer        = (*Dx)(nil)
	_ Fingerprinter = (*Dx)(nil)
)

// NewDx builds a DxHash placer whose node i is nodes[i], in an array of
// WithCapacity places (by default the smallest power of two that holds the
// nodes, as the reference's DxHash(n) constructor does). It uses
// WithHasher and WithCapacity and ignores the other options. It fails as
// [NewJump] does (ErrNoNodes, ErrEmptyID, ErrDuplicateID, ErrInvalidWeight
// for an invalid or unequal weight), and with ErrInvalidOption if the
// capacity is smaller than the number of nodes. O(n log n).
func NewDx(nodes []Node, opts ...Option) (*Dx, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	if len(nodes) == 0 {
		return nil, ErrNoNodes
	}
	size := cfg.capacity
	if size == 0 {
		size = 1 << bits.Len(uint(len(nodes)-1))
	}
	if size < len(nodes) {
		return nil, fmt.Errorf("%w: WithCapacity(%d) is smaller than the %d nodes", ErrInvalidOption, size, len(nodes))
	}
	e, err := NewDxEngine(size, len(nodes))
	if err != nil {
		return nil, err
	}
	return newDxFrom(e, nodes, cfg)
}

// NewDxFrom builds a DxHash placer from an engine's state, such as another
// process's [Dx.Engine] read back with UnmarshalText, and the members:
// nodes[i] takes the i-th working place in ascending order, which is the
// order of [Dx.Nodes]. It uses WithHasher and ignores the other options
// (the size is the engine's). It fails with ErrInvalidState if the number
// of nodes is not e.Len(), and otherwise as NewDx does. e is copied.
// O(size + n log n).
func NewDxFrom(e DxEngine, nodes []Node, opts ...Option) (*Dx, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	return newDxFrom(e.Clone(), nodes, cfg)
}

func newDxFrom(e DxEngine, nodes []Node, cfg config) (*Dx, error) {
	s, err := newSlots[DxEngine](e, nodes, cfg)
	return wrap(&Dx{s}, err)
}

// Lookup returns the node of key's place. It allocates nothing.
func (p *Dx) Lookup(key []byte) Node {
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
func (p *Dx) LookupString(key string) Node {
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

// AppendTopK appends up to k distinct nodes for key; the first is
// Lookup's. Each later choice is drawn from the working places as Lookup
// draws a key's, with key hash mix64(h + j·φ) for j = 1, 2, ..., skipping
// nodes already chosen, so it is uniform over the members not chosen yet;
// past the 16th choice the rest follow in array order from a hashed
// start. A shorter list is a prefix of a longer one. Cost: O(k) lookups
// for k <= 16, plus O(size) for more; no allocation when dst has room.
func (p *Dx) AppendTopK(dst []Node, key []byte, k int) []Node {
	if p.empty() {
		return dst
	}
	return p.appendTopK(dst, p.cfg.hasher.sum(key), k)
}

// AppendTopKString is AppendTopK for a string key.
func (p *Dx) AppendTopKString(dst []Node, key string, k int) []Node {
	if p.empty() {
		return dst
	}
	return p.appendTopK(dst, p.cfg.hasher.sumString(key), k)
}

func (p *Dx) appendTopK(dst []Node, h uint64, k int) []Node {
	return appendDrawn(dst, p.nodes, p.e.Len(), int(p.bucket(h)), h, k, p.draw)
}

func (p *Dx) draw(h uint64) int { return int(p.bucket(h)) }

// bucket is the engine's lookup, except that a first place whose node is a
// member is the answer without a look at the engine's set: the node list
// the lookup reads anyway says that the place works.
func (p *Dx) bucket(h uint64) uint32 {
	key2, bs, b := p.e.start(h)
	if int(b) < len(p.nodes) && p.nodes[b].ID != "" {
		return b
	}
	return p.e.walk(key2, bs, b)
}

// Nodes returns the members in array order.
func (p *Dx) Nodes() []Node {
	if p.empty() {
		return nil
	}
	return p.members()
}

// Len returns the number of members.
func (p *Dx) Len() int {
	if p == nil {
		return 0
	}
	return p.e.Len()
}

// Stateful reports true: members keep numbered slots, the order given to
// the constructor numbers them, and a membership change must be derived
// from the last placer, not rebuilt from a list (see [Algorithm.Stateful]
// and [IsStateful]).
func (p *Dx) Stateful() bool { return true }

// Engine returns a copy of the placer's engine: the state that, with the
// members in array order, rebuilds the placer with NewDxFrom.
func (p *Dx) Engine() DxEngine {
	if p == nil {
		return DxEngine{}
	}
	return p.e.Clone()
}

// Add returns a Dx with the given nodes added in order, each at the place
// [DxEngine.Add] gives. Each takes about 1/(new n) of the keys, all from
// the others; no key moves between other members. The nodes must have the
// members' weight. O(size + n log n); p is unchanged.
func (p *Dx) Add(nodes ...Node) (*Dx, error) {
	if p.empty() {
		return NewDx(nodes)
	}
	s, err := p.added(nodes)
	return wrap(&Dx{s}, err)
}

// Remove returns a Dx without the given members: only their keys move, and
// the order of the IDs does not matter. It fails with ErrUnknownNode if an
// ID is not a member and with ErrNoNodes if no member would remain.
// O(size + n); p is unchanged.
func (p *Dx) Remove(ids ...string) (*Dx, error) {
	if p.empty() {
		return nil, removeFromEmpty(ids)
	}
	s, err := p.removed(ids)
	return wrap(&Dx{s}, err)
}

// Replace returns a Dx in which n takes the place of the member with ID id:
// only that member's keys move, to n. n must have the members' weight and
// an ID not otherwise in use. O(size + n log n); p is unchanged.
func (p *Dx) Replace(id string, n Node) (*Dx, error) {
	if p.empty() {
		return nil, replaceInEmpty(id)
	}
	s, err := p.replaced(id, n)
	return wrap(&Dx{s}, err)
}

// with is Derive for a Dx: see edit.derive.
func (p *Dx) with(nodes []Node) (Placer, error) {
	if p.empty() {
		return placer(NewDx(nodes))
	}
	s, err := p.derived(nodes)
	return placer(&Dx{s}, err)
}

// Fingerprint returns the placement's fingerprint for [Fingerprint], such
// as "dx-1f0c55b2d7a9e314": it covers the engine's state, the members in
// array order and the Hasher; FingerprintNone for an empty placer.
func (p *Dx) Fingerprint() string {
	if p.empty() {
		return FingerprintNone
	}
	text, _ := p.e.MarshalText()
	return fingerprintSlots("dx", text, p.Nodes(), p.cfg.hasher)
}

// empty reports whether p is nil or the zero Dx.
func (p *Dx) empty() bool { return p == nil || p.e.n == 0 }
