package chash

import (
	"fmt"

	"github.com/cespare/xxhash/v2"
)

// AnchorEngine is the state of AnchorHash (Mendelson, Vargaftik, Barabash,
// Lorenz, Keslassy and Orda, "AnchorHash: A Scalable Consistent Hash",
// IEEE/ACM Transactions on Networking, 2021): a fixed set of capacity
// buckets, the anchor, of which some work; any bucket can be removed, and
// Add restores the bucket removed last (the removed buckets form a stack).
// A lookup takes O(1) expected steps: about 1 + ln(capacity/working).
//
// Its buckets equal those of the authors' C++ AnchorHash of lower memory
// (anchorhash/cpp-anchorhash, mem/AnchorHash.cpp), ComputeBucket(key,
// seed), after the same removals and additions, including the CRC-32C
// (Castagnoli) hash it computes with the SSE 4.2 crc32 instruction, which
// this package computes in software on every platform.
// testdata/anchor/vectors.tsv holds the reference's output that the tests
// compare with.
//
// The state depends on the order of removals: processes that must agree
// on placement must share it, for example as the text of MarshalText
// stored beside the member list. A plain copy of an AnchorEngine shares
// its storage with the original: copy with Clone before changing either.
// Lookups may run concurrently with each other but not with Remove, Add or
// UnmarshalText. Memory is 8 bytes per bucket of capacity, plus 4 per
// removed bucket. The zero AnchorEngine has no buckets: Bucket returns -1
// and Add fails.
type AnchorEngine struct {
	ak    []anchorSlot // by bucket
	stack []uint32     // the reference's R: removed buckets, the first removed first
	n     uint32       // working buckets
	m     uint64       // fastModM(capacity)
}

// anchorSlot holds a bucket's entries of the reference's arrays A and K
// side by side, so that a lookup that reads both reads one cache line.
type anchorSlot struct {
	a uint32 // A: 0 if working, else the working-set size its removal left
	k uint32 // K: the bucket that replaced it
}

// NewAnchorEngine returns an engine of capacity buckets, of which 0 to
// working-1 work, as the reference's constructor AnchorHash(capacity,
// working) does: the others count as removed from the last one down. It
// fails with ErrInvalidOption unless 1 <= working <= capacity <= 1<<24.
// O(capacity).
func NewAnchorEngine(capacity, working int) (AnchorEngine, error) {
	if working < 1 || working > capacity || capacity > maxBuckets {
		return AnchorEngine{}, fmt.Errorf("%w: NewAnchorEngine(%d, %d): want 1 <= working <= capacity <= 16777216", ErrInvalidOption, capacity, working)
	}
	e := newAnchorEngine(uint32(capacity))
	for b := capacity - 1; b >= working; b-- {
		e.remove(b)
	}
	return e, nil
}

// newAnchorEngine returns an engine of capacity buckets, all working.
func newAnchorEngine(capacity uint32) AnchorEngine {
	e := AnchorEngine{ak: make([]anchorSlot, capacity), n: capacity, m: fastModM(capacity)}
	for b := range e.ak {
		e.ak[b].k = uint32(b)
	}
	return e
}

// Len returns the number of working buckets.
func (e *AnchorEngine) Len() int {
	if e == nil {
		return 0
	}
	return int(e.n)
}

// Capacity returns the number of buckets, working or not.
func (e *AnchorEngine) Capacity() int {
	if e == nil {
		return 0
	}
	return len(e.ak)
}

// Removed returns the buckets that do not work, in the order they were
// removed (a new engine's unused buckets first, from the last down); Add
// restores the last one first.
func (e *AnchorEngine) Removed() []int {
	if e == nil {
		return nil
	}
	out := make([]int, len(e.stack))
	for i, b := range e.stack {
		out[i] = int(b)
	}
	return out
}

// Working reports whether bucket b is working.
func (e *AnchorEngine) Working(b int) bool {
	return e != nil && b >= 0 && b < len(e.ak) && e.ak[b].a == 0
}

// Bucket returns the bucket of a 64-bit key under seed, as the reference's
// ComputeBucket(key, seed) does, or -1 if no bucket works. It allocates
// nothing.
func (e *AnchorEngine) Bucket(key, seed uint64) int {
	if e == nil || e.n == 0 {
		return -1
	}
	return int(e.bucket(key, seed))
}

// bucket is Bucket for an engine with a working bucket. While the bucket
// drawn was removed, the key draws again from the working set as it was
// after that removal, and the bucket drawn is translated to the one that
// stood for it then.
func (e *AnchorEngine) bucket(key, seed uint64) uint32 {
	bs := crc32c(key, seed)
	b := fastMod(bs, e.m, uint32(len(e.ak)))
	if e.n == uint32(len(e.ak)) {
		return b // every bucket works: no need to read the anchor
	}
	return e.walk(key, seed, bs, b)
}

// walk continues a lookup from its first draw bs, bucket b.
func (e *AnchorEngine) walk(key, seed uint64, bs, b uint32) uint32 {
	for v := e.ak[b].a; v != 0; v = e.ak[b].a {
		bs = crc32c(key-uint64(bs), seed+uint64(bs))
		b = e.translate(bs%v, v)
	}
	return b
}

// translate returns the bucket that stood for b when the working set had
// size v: the reference's ComputeTranslation.
func (e *AnchorEngine) translate(b, v uint32) uint32 {
	for e.ak[b].a >= v {
		b = e.ak[b].k
	}
	return b
}

// Remove removes bucket b, which must be working, as the reference's
// UpdateRemoval does: only the keys of b move. It fails with
// ErrUnknownNode if b is not a working bucket and with ErrNoNodes if it is
// the last one. O(1) expected.
func (e *AnchorEngine) Remove(b int) error {
	switch {
	case !e.Working(b):
		return fmt.Errorf("%w: bucket %d is not a working bucket", ErrUnknownNode, b)
	case e.n == 1:
		return fmt.Errorf("%w: bucket %d is the last working bucket", ErrNoNodes, b)
	}
	e.remove(b)
	return nil
}

func (e *AnchorEngine) remove(b int) {
	e.stack = append(e.stack, uint32(b))
	e.ak[b].k = e.translate(e.n-1, e.n)
	e.n--
	e.ak[b].a = e.n
}

// Add restores the bucket removed last and returns it, as the reference's
// UpdateNewBucket does: its keys return to it from the buckets that took
// them. It fails with ErrTooLarge when every bucket works. O(1).
func (e *AnchorEngine) Add() (int, error) {
	if e == nil {
		return -1, fmt.Errorf("%w: the zero AnchorEngine has no bucket to add", ErrTooLarge)
	}
	return e.add()
}

func (e *AnchorEngine) add() (int, error) {
	if len(e.stack) == 0 {
		return -1, fmt.Errorf("%w: all %d buckets of the anchor work (build with a larger capacity)", ErrTooLarge, len(e.ak))
	}
	b := e.stack[len(e.stack)-1]
	e.stack = e.stack[:len(e.stack)-1]
	e.n++
	e.ak[b] = anchorSlot{a: 0, k: b}
	return int(b), nil
}

// Clone returns a copy of e that shares no storage with it. O(capacity).
func (e *AnchorEngine) Clone() AnchorEngine {
	if e == nil {
		return AnchorEngine{}
	}
	c := *e
	c.ak = append([]anchorSlot(nil), e.ak...)
	c.stack = append([]uint32(nil), e.stack...)
	return c
}

// MarshalText returns the state as text: "anchor:" and the capacity, then
// "/" and the removed buckets in order of removal, separated by commas,
// with a run of three or more consecutive buckets written as "first-last"
// (descending if first > last). For example "anchor:16/15-10,3" is an
// anchor of 16 buckets built with 10 working, then bucket 3 removed. A nil
// engine is the zero one.
func (e *AnchorEngine) MarshalText() ([]byte, error) {
	if e == nil {
		return formatState("anchor", 0, nil), nil
	}
	return formatState("anchor", uint32(len(e.ak)), e.stack), nil
}

// UnmarshalText sets e to the state MarshalText wrote, by replaying the
// removals on an anchor whose buckets all work. It fails, leaving e
// unchanged, with an error wrapping ErrInvalidState for text that is
// malformed, lists a bucket twice or not below the capacity, or removes
// every bucket, and with ErrInvalidState for a capacity above 1<<24.
// O(capacity).
func (e *AnchorEngine) UnmarshalText(text []byte) error {
	capacity, stack, err := parseState(text, "anchor", maxBuckets)
	if err != nil {
		return err
	}
	if capacity > 0 && len(stack) >= int(capacity) {
		return fmt.Errorf("%w: all %d buckets removed", ErrInvalidState, capacity)
	}
	if err := checkDistinct(stack, capacity); err != nil {
		return err
	}
	if capacity == 0 {
		*e = AnchorEngine{}
		return nil
	}
	f := newAnchorEngine(capacity)
	for _, b := range stack {
		f.remove(int(b))
	}
	*e = f
	return nil
}

// crc32c returns the CRC-32C (Castagnoli) of key's 8 bytes in little-endian
// order, starting from the low 32 bits of seed, with no inversion before
// or after: what x86's crc32 instruction computes for 64-bit operands, and
// the hash AnchorHash's and DxHash's references use. It reads eight
// 256-entry tables (slicing by 8).
func crc32c(key, seed uint64) uint32 {
	t := &crc32cTables
	c := uint32(seed) ^ uint32(key)
	hi := uint32(key >> 32)
	return t[7][c&0xff] ^ t[6][c>>8&0xff] ^ t[5][c>>16&0xff] ^ t[4][c>>24] ^
		t[3][hi&0xff] ^ t[2][hi>>8&0xff] ^ t[1][hi>>16&0xff] ^ t[0][hi>>24]
}

// crc32cTables[j][i] is the CRC of byte i followed by j zero bytes, for
// the reflected Castagnoli polynomial 0x82F63B78.
var crc32cTables = func() (t [8][256]uint32) {
	for i := range t[0] {
		c := uint32(i)
		for range 8 {
			if c&1 != 0 {
				c = c>>1 ^ 0x82f63b78
			} else {
				c >>= 1
			}
		}
		t[0][i] = c
	}
	for j := 1; j < 8; j++ {
		for i := range t[j] {
			p := t[j-1][i]
			t[j][i] = p>>8 ^ t[0][p&0xff]
		}
	}
	return t
}()

// Anchor places keys with AnchorHash: node i of the order given to
// NewAnchor is bucket i, and a key goes to the bucket its AnchorEngine
// gives for the key's hash with seed 0.
//
// The anchor has a fixed capacity ([WithCapacity]; by default the number
// of nodes given): any member can leave, Remove moving only its keys, and
// Add puts new members in the buckets removed last, taking about 1/(n+1)
// of the keys each, until every bucket works. The placement depends on the
// order of removals as well as on the members, so processes that must
// agree share the engine's state ([Anchor.Engine],
// [AnchorEngine.MarshalText]) with the member list and build with
// [NewAnchorFrom]; two placers with the same members in the same bucket
// order and the same state place every key alike, and [Fingerprint]
// covers both. Lookups cost one hash plus O(1) expected CRC steps (about
// 1 + ln(capacity/n)); memory is the member list plus 8 bytes per bucket
// of capacity. Members must have equal weights.
//
// Anchor is not positional in the sense of [IsPositional]: the order given
// to NewAnchor numbers the buckets, but no membership change renumbers
// them, so a member in the middle can leave without moving the keys of the
// others.
//
// An Anchor is immutable and safe for concurrent use. Nodes are reported
// in bucket order. The zero Anchor, like a nil *Anchor, is empty: lookups
// return the zero Node, Len is 0, and Add builds a placer with the default
// options.
type Anchor struct {
	slots[AnchorEngine, *AnchorEngine] // the engine, the members by bucket, the options
}

var (
	_ Placer        = (*Anchor)(nil)
	_ Fingerprinter = (*Anchor)(nil)
)

// NewAnchor builds an AnchorHash placer whose bucket i is nodes[i], with
// WithCapacity buckets (by default len(nodes)) of which the first
// len(nodes) work. It uses WithHasher and WithCapacity and ignores the
// other options. It fails as [NewJump] does (ErrNoNodes, ErrEmptyID,
// ErrDuplicateID, ErrInvalidWeight for an invalid or unequal weight), and
// with ErrInvalidOption if the capacity is smaller than the number of
// nodes. O(capacity + n log n).
func NewAnchor(nodes []Node, opts ...Option) (*Anchor, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	if len(nodes) == 0 {
		return nil, ErrNoNodes
	}
	capacity := cfg.capacity
	if capacity == 0 {
		capacity = len(nodes)
	}
	if capacity < len(nodes) {
		return nil, fmt.Errorf("%w: WithCapacity(%d) is smaller than the %d nodes", ErrInvalidOption, capacity, len(nodes))
	}
	e, err := NewAnchorEngine(capacity, len(nodes))
	if err != nil {
		return nil, err
	}
	return newAnchorFrom(e, nodes, cfg)
}

// NewAnchorFrom builds an AnchorHash placer from an engine's state, such
// as another process's [Anchor.Engine] read back with UnmarshalText, and
// the members: nodes[i] takes the i-th working bucket in ascending order,
// which is the order of [Anchor.Nodes]. It uses WithHasher and ignores
// the other options (the capacity is the engine's). It fails with
// ErrInvalidState if the number of nodes is not e.Len(), and otherwise as
// NewAnchor does. e is copied. O(capacity + n log n).
func NewAnchorFrom(e AnchorEngine, nodes []Node, opts ...Option) (*Anchor, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	return newAnchorFrom(e.Clone(), nodes, cfg)
}

// newAnchorFrom builds the placer of engine e, which it keeps, and nodes.
func newAnchorFrom(e AnchorEngine, nodes []Node, cfg config) (*Anchor, error) {
	s, err := newSlots[AnchorEngine](e, nodes, cfg)
	return wrap(&Anchor{s}, err)
}

// Lookup returns the node of key's bucket. It allocates nothing.
func (p *Anchor) Lookup(key []byte) Node {
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
func (p *Anchor) LookupString(key string) Node {
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
// Lookup's. Each later choice is drawn from the working buckets as Lookup
// draws a key's bucket, with key hash mix64(h + j·φ) for j = 1, 2, ...,
// skipping nodes already chosen, so it is uniform over the members not
// chosen yet; past the 16th choice the rest follow in bucket order from a
// hashed start. A shorter list is a prefix of a longer one. Cost: O(k)
// lookups for k <= 16, plus O(capacity) for more; no allocation when dst
// has room.
func (p *Anchor) AppendTopK(dst []Node, key []byte, k int) []Node {
	if p.empty() {
		return dst
	}
	return p.appendTopK(dst, p.cfg.hasher.sum(key), k)
}

// AppendTopKString is AppendTopK for a string key.
func (p *Anchor) AppendTopKString(dst []Node, key string, k int) []Node {
	if p.empty() {
		return dst
	}
	return p.appendTopK(dst, p.cfg.hasher.sumString(key), k)
}

func (p *Anchor) appendTopK(dst []Node, h uint64, k int) []Node {
	return appendDrawn(dst, p.nodes, p.e.Len(), int(p.bucket(h)), h, k, p.draw)
}

func (p *Anchor) draw(h uint64) int { return int(p.bucket(h)) }

// bucket is the engine's lookup with seed 0, except that a first draw
// whose node is a member is the answer without a look at the anchor: the
// node list the lookup reads anyway says that the bucket works.
func (p *Anchor) bucket(h uint64) uint32 {
	bs := crc32c(h, 0)
	b := fastMod(bs, p.e.m, uint32(len(p.e.ak)))
	if int(b) < len(p.nodes) && p.nodes[b].ID != "" {
		return b
	}
	return p.e.walk(h, 0, bs, b)
}

// Nodes returns the members in bucket order.
func (p *Anchor) Nodes() []Node {
	if p.empty() {
		return nil
	}
	return p.members()
}

// Len returns the number of members.
func (p *Anchor) Len() int {
	if p == nil {
		return 0
	}
	return p.e.Len()
}

// Stateful reports true: members keep numbered slots, the order given to
// the constructor numbers them, and a membership change must be derived
// from the last placer, not rebuilt from a list (see [Algorithm.Stateful]
// and [IsStateful]).
func (p *Anchor) Stateful() bool { return true }

// Engine returns a copy of the placer's engine: the state that, with the
// members in bucket order, rebuilds the placer with NewAnchorFrom.
func (p *Anchor) Engine() AnchorEngine {
	if p == nil {
		return AnchorEngine{}
	}
	return p.e.Clone()
}

// Add returns an Anchor with the given nodes added in order, each in the
// bucket removed last ([AnchorEngine.Add]). Each takes about 1/(new n) of
// the keys, all from the others; no key moves between other members. The
// nodes must have the members' weight. It fails with ErrTooLarge when the
// anchor is full. O(capacity + n log n); p is unchanged.
func (p *Anchor) Add(nodes ...Node) (*Anchor, error) {
	if p.empty() {
		return NewAnchor(nodes)
	}
	s, err := p.added(nodes)
	return wrap(&Anchor{s}, err)
}

// Remove returns an Anchor without the given members, removed in the order
// given: only their keys move. It fails with ErrUnknownNode if an ID is not
// a member and with ErrNoNodes if no member would remain. O(capacity + n);
// p is unchanged.
func (p *Anchor) Remove(ids ...string) (*Anchor, error) {
	if p.empty() {
		return nil, removeFromEmpty(ids)
	}
	s, err := p.removed(ids)
	return wrap(&Anchor{s}, err)
}

// Replace returns an Anchor in which n takes the bucket of the member with
// ID id: only that bucket's keys move, to n. n must have the members'
// weight and an ID not otherwise in use. The engine's state is unchanged.
// O(capacity + n log n); p is unchanged.
func (p *Anchor) Replace(id string, n Node) (*Anchor, error) {
	if p.empty() {
		return nil, replaceInEmpty(id)
	}
	s, err := p.replaced(id, n)
	return wrap(&Anchor{s}, err)
}

// with is Derive for an Anchor: see edit.derive.
func (p *Anchor) with(nodes []Node) (Placer, error) {
	if p.empty() {
		return placer(NewAnchor(nodes))
	}
	s, err := p.derived(nodes)
	return placer(&Anchor{s}, err)
}

// Fingerprint returns the placement's fingerprint for [Fingerprint], such
// as "anchor-1f0c55b2d7a9e314": it covers the engine's state, the members
// in bucket order and the Hasher; FingerprintNone for an empty placer.
func (p *Anchor) Fingerprint() string {
	if p.empty() {
		return FingerprintNone
	}
	text, _ := p.e.MarshalText()
	return fingerprintSlots("anchor", text, p.Nodes(), p.cfg.hasher)
}

// empty reports whether p is nil or the zero Anchor.
func (p *Anchor) empty() bool { return p == nil || p.e.n == 0 }
