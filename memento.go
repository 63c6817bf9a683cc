package chash

import (
	"fmt"
	"math"
	"math/bits"

	"github.com/cespare/xxhash/v2"
	"github.com/keyplace/chash/internal/hashing"
)

// MementoEngine is the state of MementoHash (Coluzzi, Brocco, Antonucci and
// Leone, "MementoHash: A Stateful, Minimal Memory, Best Performing
// Consistent Hash Algorithm", IEEE/ACM Transactions on Networking, 2024):
// jump hash over a b-array of n buckets, plus a replacement set that
// remembers, for each bucket removed other than the last, the bucket that
// replaces it and the order of removals. Any bucket can be removed; Add
// restores the last bucket removed, or appends bucket n when none is.
// Memory is O(removed buckets).
//
// Its buckets equal those of the authors' C++ MementoEngine
// (slashdotted/cpp-consistent-hashing-algorithms, memento/mementoengine.h)
// after the same removals and additions: a key goes to bucket
// JumpHash(XXH64(key, 0), n), and while that bucket is removed it is
// re-hashed with XXH64(key, seed = bucket) modulo the working-set size
// when the bucket was removed. testdata/memento/vectors.tsv holds the
// reference's output that the tests compare with.
//
// The state depends on the order of removals: processes that must agree
// on placement must share it, for example as the text of MarshalText
// stored beside the member list. A plain copy of a MementoEngine shares
// its storage with the original: copy with Clone before changing either.
// Lookups may run concurrently with each other but not with Remove, Add
// or UnmarshalText. The zero MementoEngine has no buckets: Bucket returns
// -1 and Add gives it bucket 0.
type MementoEngine struct {
	n     uint32        // the b-array's size
	stack []uint32      // removed buckets, in order of removal
	slots []mementoSlot // open addressing over stack; nil when it is empty
	shift uint8         // 64 - log2(len(slots))
}

// mementoSlot is an entry of the replacement set: a removed bucket (plus
// one, so that 0 marks an empty slot) and its replacer, which is also the
// number of working buckets left by its removal.
type mementoSlot struct{ key, replacer uint32 }

// NewMementoEngine returns an engine of n working buckets, 0 to n-1, with
// none removed, or an error wrapping ErrInvalidOption if n is negative or
// above 2^31-1 (the reference's int32 bucket count).
func NewMementoEngine(n int) (MementoEngine, error) {
	if n < 0 || n > math.MaxInt32 {
		return MementoEngine{}, fmt.Errorf("%w: NewMementoEngine(%d): want 0 to 2147483647", ErrInvalidOption, n)
	}
	return MementoEngine{n: uint32(n)}, nil
}

// Len returns the number of working buckets. O(1).
func (e *MementoEngine) Len() int {
	if e == nil {
		return 0
	}
	return int(e.n) - len(e.stack)
}

// Size returns the size of the b-array: one more than the highest bucket
// that is working or remembered as removed.
func (e *MementoEngine) Size() int {
	if e == nil {
		return 0
	}
	return int(e.n)
}

// Removed returns the buckets removed and remembered, in the order they
// were removed; Add restores the last one first. (A removal of the last
// bucket when none is remembered shrinks the b-array instead, as jump
// does, and is not listed.)
func (e *MementoEngine) Removed() []int {
	if e == nil {
		return nil
	}
	out := make([]int, len(e.stack))
	for i, b := range e.stack {
		out[i] = int(b)
	}
	return out
}

// Working reports whether bucket b is working. O(1) expected.
func (e *MementoEngine) Working(b int) bool {
	return e != nil && b >= 0 && b < int(e.n) && e.replacer(uint32(b)) < 0
}

// Bucket returns the bucket of key, as the reference's getBucket does, or
// -1 if no bucket works. It costs a jump hash, plus for a key whose bucket
// was removed a few more XXH64 hashes of the key (the expected number is
// small while most buckets work: see the paper). It allocates nothing.
func (e *MementoEngine) Bucket(key []byte) int {
	if e.Len() == 0 {
		return -1
	}
	b := uint32(jumpHash(xxhash.Sum64(key), int(e.n)))
	if len(e.stack) == 0 {
		return int(b)
	}
	return int(mementoFollow(e, b, mementoBytes(key)))
}

// BucketString is Bucket for a string key, without copying it.
func (e *MementoEngine) BucketString(key string) int {
	if e.Len() == 0 {
		return -1
	}
	b := uint32(jumpHash(xxhash.Sum64String(key), int(e.n)))
	if len(e.stack) == 0 {
		return int(b)
	}
	return int(mementoFollow(e, b, mementoString(key)))
}

// bucketHash is the bucket of a key known only by its 64-bit hash h,
// which re-hashes with mix64(h + (b+1)·φ) instead of XXH64(key, b): the
// lookups of a placer with a custom Hasher, and the draws of AppendTopK.
func (e *MementoEngine) bucketHash(h uint64) int {
	b := uint32(jumpHash(h, int(e.n)))
	if len(e.stack) == 0 {
		return int(b)
	}
	return int(mementoFollow(e, b, mementoMix(h)))
}

// mementoRehash is a key's re-hash for a removed bucket b.
type mementoRehash interface{ rehash(b uint32) uint64 }

type (
	mementoBytes  []byte
	mementoString string
	mementoMix    uint64
)

func (k mementoBytes) rehash(b uint32) uint64 { return hashing.XX{Seed: uint64(b)}.Sum64(k) }
func (k mementoString) rehash(b uint32) uint64 {
	return hashing.XX{Seed: uint64(b)}.Sum64String(string(k))
}
func (h mementoMix) rehash(b uint32) uint64 { return mix64(uint64(h) + (uint64(b)+1)*phi) }

// mementoFollow is the reference's loop for a key whose jump bucket b may
// have been removed: re-hash into the working set as it was when b was
// removed, then follow replacers down to a bucket that was working then;
// repeat until the bucket works. It ends for every state Remove and
// UnmarshalText can build (the paper's Theorem: each round lowers the
// working-set size it draws from).
func mementoFollow[R mementoRehash](e *MementoEngine, b uint32, r R) uint32 {
	replacer := e.replacer(b)
	for replacer >= 0 {
		b = uint32(r.rehash(b) % uint64(replacer))
		next := e.replacer(b)
		for next >= replacer {
			b = uint32(next)
			next = e.replacer(b)
		}
		replacer = next
	}
	return b
}

// replacer returns the replacer of bucket b if it was removed, else -1.
func (e *MementoEngine) replacer(b uint32) int64 {
	if len(e.slots) == 0 {
		return -1
	}
	mask := uint32(len(e.slots) - 1)
	for i := e.home(b + 1); ; i = (i + 1) & mask {
		switch s := e.slots[i]; s.key {
		case b + 1:
			return int64(s.replacer)
		case 0:
			return -1
		}
	}
}

// home is the slot a key starts its probe at.
func (e *MementoEngine) home(key uint32) uint32 {
	return uint32((uint64(key) * phi) >> e.shift)
}

// Remove removes bucket b, which must be working, as the reference's
// removeBucket does: the last bucket when none is remembered shrinks the
// b-array (jump's removal); any other is remembered, with the working
// bucket that replaces it. Only the keys of b move. It fails with
// ErrUnknownNode if b is not a working bucket and with ErrNoNodes if it is
// the last one. O(1) expected.
func (e *MementoEngine) Remove(b int) error {
	switch {
	case !e.Working(b):
		return fmt.Errorf("%w: bucket %d is not a working bucket", ErrUnknownNode, b)
	case e.Len() == 1:
		return fmt.Errorf("%w: bucket %d is the last working bucket", ErrNoNodes, b)
	case len(e.stack) >= maxBuckets:
		return fmt.Errorf("%w: more than %d buckets removed", ErrTooLarge, maxBuckets)
	}
	e.remove(b)
	return nil
}

func (e *MementoEngine) remove(b int) {
	if len(e.stack) == 0 && uint32(b) == e.n-1 {
		e.n--
		return
	}
	// The replacer is the working-set size after the removal.
	e.insert(uint32(b), e.n-uint32(len(e.stack))-1)
	e.stack = append(e.stack, uint32(b))
}

// insert adds bucket b with its replacer to the slots, growing them to
// keep at most half full.
func (e *MementoEngine) insert(b, replacer uint32) {
	if 2*(len(e.stack)+1) > len(e.slots) {
		e.rehashSlots(4 * (len(e.stack) + 1))
	}
	mask := uint32(len(e.slots) - 1)
	i := e.home(b + 1)
	for e.slots[i].key != 0 {
		i = (i + 1) & mask
	}
	e.slots[i] = mementoSlot{key: b + 1, replacer: replacer}
}

// rehashSlots rebuilds the slots from the stack, at least min of them (a
// power of two, at least 8).
func (e *MementoEngine) rehashSlots(min int) {
	lg := max(3, bits.Len(uint(min-1)))
	size := 1 << lg
	e.slots = make([]mementoSlot, size)
	e.shift = uint8(64 - lg)
	mask := uint32(size - 1)
	for i, b := range e.stack {
		j := e.home(b + 1)
		for e.slots[j].key != 0 {
			j = (j + 1) & mask
		}
		e.slots[j] = mementoSlot{key: b + 1, replacer: e.n - uint32(i) - 1}
	}
}

// Add adds a bucket and returns it, as the reference's addBucket does: the
// last bucket removed if one is remembered (its keys return to it from
// the buckets that took them), else bucket Size(), which takes about
// 1/(n+1) of the keys. It fails with ErrTooLarge beyond 2^31-1 buckets.
// O(1) expected.
func (e *MementoEngine) Add() (int, error) {
	if len(e.stack) == 0 && e.n == math.MaxInt32 {
		return -1, fmt.Errorf("%w: a MementoEngine holds at most 2147483647 buckets", ErrTooLarge)
	}
	return e.add()
}

func (e *MementoEngine) add() (int, error) {
	if len(e.stack) == 0 {
		e.n++
		return int(e.n - 1), nil
	}
	b := e.stack[len(e.stack)-1]
	e.stack = e.stack[:len(e.stack)-1]
	e.delete(b)
	if len(e.stack) == 0 {
		e.slots = nil
	}
	return int(b), nil
}

// delete takes bucket b out of the slots, shifting back the entries after
// it in its probe run so that every entry stays reachable from its home.
func (e *MementoEngine) delete(b uint32) {
	mask := uint32(len(e.slots) - 1)
	i := e.home(b + 1)
	for e.slots[i].key != b+1 {
		i = (i + 1) & mask
	}
	for j := (i + 1) & mask; e.slots[j].key != 0; j = (j + 1) & mask {
		// The entry at j may move to i if its home is not in (i, j].
		if h := e.home(e.slots[j].key); (j-h)&mask >= (j-i)&mask {
			e.slots[i] = e.slots[j]
			i = j
		}
	}
	e.slots[i] = mementoSlot{}
}

// Clone returns a copy of e that shares no storage with it. O(removed).
func (e *MementoEngine) Clone() MementoEngine {
	if e == nil {
		return MementoEngine{}
	}
	c := *e
	c.stack = append([]uint32(nil), e.stack...)
	if len(e.slots) > 0 {
		c.slots = append([]mementoSlot(nil), e.slots...)
	}
	return c
}

// MarshalText returns the state as text: "memento:" and the b-array's
// size, then "/" and the removed buckets in order of removal, separated
// by commas, with a run of three or more consecutive buckets written as
// "first-last" (descending if first > last). For example
// "memento:10/7,3" is 10 buckets with bucket 7 removed, then 3. The
// engine is unchanged; a nil engine is the zero one.
func (e *MementoEngine) MarshalText() ([]byte, error) {
	if e == nil {
		return formatState("memento", 0, nil), nil
	}
	return formatState("memento", e.n, e.stack), nil
}

// UnmarshalText sets e to the state MarshalText wrote. It fails, leaving e
// unchanged, with an error wrapping ErrInvalidState for text that is
// malformed, lists a bucket twice or not below the size, removes every
// bucket, or starts with the last bucket (which the reference's removal
// shrinks instead of remembering), and ErrTooLarge for more than 1<<24
// removed buckets. O(length of the text + removed buckets).
func (e *MementoEngine) UnmarshalText(text []byte) error {
	n, stack, err := parseState(text, "memento", math.MaxInt32)
	if err != nil {
		return err
	}
	switch {
	case len(stack) > 0 && len(stack) >= int(n):
		return fmt.Errorf("%w: all %d buckets removed", ErrInvalidState, n)
	case len(stack) > 0 && stack[0] == n-1:
		return fmt.Errorf("%w: the first removal is the last bucket, %d, which shrinks the b-array to %d instead", ErrInvalidState, n-1, n-1)
	}
	if err := checkDistinct(stack, n); err != nil {
		return err
	}
	*e = MementoEngine{n: n, stack: stack}
	if len(stack) > 0 {
		e.rehashSlots(2 * len(stack))
	}
	return nil
}

// Memento places keys with MementoHash: node i of the order given to
// NewMemento is bucket i, and a key goes to the bucket its MementoEngine
// gives. The default Hasher gives exactly the reference's buckets; with
// another, a key is hashed once with it and re-hashed for removed buckets
// with mix64(hash + (bucket+1)·φ).
//
// Unlike Jump, any member can leave: Remove moves only the keys of the
// members removed, and Add moves to each new member about 1/(n+1) of the
// keys, taking the bucket removed last first. The placement then depends
// on the order of removals as well as on the members, so processes that
// must agree share the engine's state ([Memento.Engine], [MementoEngine.MarshalText])
// with the member list and build with [NewMementoFrom]; two placers with
// the same members in the same bucket order and the same state place
// every key alike, and [Fingerprint] covers both. Lookups cost one hash
// and a jump hash (O(log n)), plus a re-hash of the key for the few keys
// whose jump bucket was removed (the paper bounds their expected number);
// memory is the member list plus O(removed). Members must have equal
// weights.
//
// Memento is not positional in the sense of [IsPositional]: the order
// given to NewMemento numbers the buckets, but no membership change
// renumbers them, so a member in the middle can leave without moving the
// keys of the others.
//
// A Memento is immutable and safe for concurrent use. Nodes are reported
// in bucket order. The zero Memento, like a nil *Memento, is empty:
// lookups return the zero Node, Len is 0, and Add builds a placer with the
// default options.
type Memento struct {
	slots[MementoEngine, *MementoEngine] // the engine, the members by bucket, the options
}

var (
	_ Placer        = (*Memento)(nil)
	_ Fingerprinter = (*Memento)(nil)
)

// NewMemento builds a MementoHash placer whose bucket i is nodes[i], with
// no bucket removed. It uses WithHasher and ignores the other options. It
// fails as [NewJump] does: if nodes is empty, an ID is empty or repeated,
// a weight is negative, NaN or infinite, or the weights differ
// (ErrInvalidWeight). O(n log n).
func NewMemento(nodes []Node, opts ...Option) (*Memento, error) {
	e, err := NewMementoEngine(len(nodes))
	if err != nil {
		return nil, err
	}
	return NewMementoFrom(e, nodes, opts...)
}

// NewMementoFrom builds a MementoHash placer from an engine's state, such
// as another process's [Memento.Engine] read back with UnmarshalText, and
// the members: nodes[i] takes the i-th working bucket in ascending order,
// which is the order of [Memento.Nodes]. It fails with ErrInvalidState if
// the number of nodes is not e.Len(), and otherwise as NewMemento does. e
// is copied. O(n log n).
func NewMementoFrom(e MementoEngine, nodes []Node, opts ...Option) (*Memento, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	s, err := newSlots[MementoEngine](e.Clone(), nodes, cfg)
	return wrap(&Memento{s}, err)
}

// Lookup returns the node of key's bucket. It allocates nothing.
func (p *Memento) Lookup(key []byte) Node {
	if p.empty() {
		return Node{}
	}
	return p.nodes[p.bucket(key)]
}

// LookupString is Lookup for a string key.
func (p *Memento) LookupString(key string) Node {
	if p.empty() {
		return Node{}
	}
	return p.nodes[p.bucketString(key)]
}

// bucket and bucketString are the engine's lookups, except that a jump
// bucket whose node is a member is the answer without a look at the
// replacement set: the node list the lookup reads anyway says that the
// bucket works.
func (p *Memento) bucket(key []byte) int {
	if p.cfg.hasher.ext != nil {
		return p.e.bucketHash(p.cfg.hasher.ext.Sum64(key))
	}
	b := jumpHash(xxhash.Sum64(key), int(p.e.n))
	if b < len(p.nodes) && p.nodes[b].ID != "" {
		return b
	}
	return int(mementoFollow(&p.e, uint32(b), mementoBytes(key)))
}

func (p *Memento) bucketString(key string) int {
	if p.cfg.hasher.ext != nil {
		return p.e.bucketHash(p.cfg.hasher.ext.Sum64String(key))
	}
	b := jumpHash(xxhash.Sum64String(key), int(p.e.n))
	if b < len(p.nodes) && p.nodes[b].ID != "" {
		return b
	}
	return int(mementoFollow(&p.e, uint32(b), mementoString(key)))
}

// AppendTopK appends up to k distinct nodes for key; the first is
// Lookup's. Each later choice is drawn from the working buckets as Lookup
// draws a key's bucket, with key hash mix64(h + j·φ) for j = 1, 2, ...,
// skipping nodes already chosen, so it is uniform over the members not
// chosen yet; past the 16th choice the rest follow in bucket order from a
// hashed start. A shorter list is a prefix of a longer one. Cost: O(k)
// lookups for k <= 16, plus O(n) for more; no allocation when dst has
// room.
func (p *Memento) AppendTopK(dst []Node, key []byte, k int) []Node {
	if p.empty() {
		return dst
	}
	return appendDrawn(dst, p.nodes, p.e.Len(), p.bucket(key), p.cfg.hasher.sum(key), k, p.e.bucketHash)
}

// AppendTopKString is AppendTopK for a string key.
func (p *Memento) AppendTopKString(dst []Node, key string, k int) []Node {
	if p.empty() {
		return dst
	}
	return appendDrawn(dst, p.nodes, p.e.Len(), p.bucketString(key), p.cfg.hasher.sumString(key), k, p.e.bucketHash)
}

// Nodes returns the members in bucket order.
func (p *Memento) Nodes() []Node {
	if p.empty() {
		return nil
	}
	return p.members()
}

// Len returns the number of members.
func (p *Memento) Len() int {
	if p == nil {
		return 0
	}
	return p.e.Len()
}

// Stateful reports true: members keep numbered slots, the order given to
// the constructor numbers them, and a membership change must be derived
// from the last placer, not rebuilt from a list (see [Algorithm.Stateful]
// and [IsStateful]).
func (p *Memento) Stateful() bool { return true }

// Engine returns a copy of the placer's engine: the state that, with the
// members in bucket order, rebuilds the placer with NewMementoFrom.
func (p *Memento) Engine() MementoEngine {
	if p == nil {
		return MementoEngine{}
	}
	return p.e.Clone()
}

// Add returns a Memento with the given nodes added in order, each in the
// bucket [MementoEngine.Add] gives: the bucket removed last, or a new one
// at the end. Each takes about 1/(new n) of the keys, all from the others;
// no key moves between other members. The nodes must have the members'
// weight. O(n log n); p is unchanged.
func (p *Memento) Add(nodes ...Node) (*Memento, error) {
	if p.empty() {
		return NewMemento(nodes)
	}
	s, err := p.added(nodes)
	return wrap(&Memento{s}, err)
}

// Remove returns a Memento without the given members, removed in the order
// given: only their keys move. It fails with ErrUnknownNode if an ID is not
// a member and with ErrNoNodes if no member would remain. O(n); p is
// unchanged.
func (p *Memento) Remove(ids ...string) (*Memento, error) {
	if p.empty() {
		return nil, removeFromEmpty(ids)
	}
	s, err := p.removed(ids)
	return wrap(&Memento{s}, err)
}

// Replace returns a Memento in which n takes the bucket of the member with
// ID id: only that bucket's keys move, to n. n must have the members'
// weight and an ID not otherwise in use. The engine's state is unchanged.
// O(n log n); p is unchanged.
func (p *Memento) Replace(id string, n Node) (*Memento, error) {
	if p.empty() {
		return nil, replaceInEmpty(id)
	}
	s, err := p.replaced(id, n)
	return wrap(&Memento{s}, err)
}

// with is Derive for a Memento: see edit.derive.
func (p *Memento) with(nodes []Node) (Placer, error) {
	if p.empty() {
		return placer(NewMemento(nodes))
	}
	s, err := p.derived(nodes)
	return placer(&Memento{s}, err)
}

// Fingerprint returns the placement's fingerprint for [Fingerprint], such
// as "memento-1f0c55b2d7a9e314": it covers the engine's state, the members
// in bucket order and the Hasher; FingerprintNone for an empty placer.
func (p *Memento) Fingerprint() string {
	if p.empty() {
		return FingerprintNone
	}
	text, _ := p.e.MarshalText()
	return fingerprintSlots("memento", text, p.Nodes(), p.cfg.hasher)
}

// empty reports whether p is nil or the zero Memento.
func (p *Memento) empty() bool { return p == nil || p.e.Len() == 0 }
