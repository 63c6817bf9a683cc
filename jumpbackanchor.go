package chash

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/keyplace/chash/internal/place"
)

// JumpBackAnchorEngine is the bucket set of hash4j's JumpBackAnchor
// (ConsistentHashing.jumpBackAnchorHash with SplitMix64 in Dynatrace's
// hash4j, after Ertl's JumpBackHash and the memory-optimised AnchorHash of
// Mendelson et al., IEEE/ACM ToN 2021): buckets numbered from 0 that are
// added at the end or back into the last removed one, and removed in any
// order, each change moving only the keys it must. Its lookups, its
// buckets' numbers and its serialised form (MarshalBinary) equal hash4j's
// ConsistentBucketSetHasher's getBucket, addBucket and getState after the
// same history, so Go and Java services can share one placement and one
// state.
//
// The state is the number of buckets ever in use at once and the removed
// buckets in the order they were removed: two states with the same
// working buckets removed in different orders place keys differently,
// which is why a fleet must share the state itself, not only its members.
//
// Bucket costs one JumpBackHash plus, for a key whose bucket was removed,
// about ln²(max/n) expected further steps (max the bucket range, n the
// working buckets); hash4j notes that some removal orders (0, then
// max-1, max-2, ... down to 2) make it O(max/n). Memory is 8 bytes per
// bucket up to the highest removed one. The zero value has no buckets. A
// state is safe for concurrent lookups; Add, Remove and UnmarshalBinary
// must not run concurrently with any other method.
type JumpBackAnchorEngine struct {
	n       int32   // hash4j's historicMaxNumBuckets, "a" in the paper
	removed []int32 // the removed buckets, in the order removed
	// ka[b] holds, for a removed bucket b, the anchor arrays of the
	// memory-optimised AnchorHash packed as hash4j packs them: k[b]-b in
	// the high 32 bits and a[b] (the working count after b's removal,
	// never 0) in the low ones; 0 for a working bucket. Its length is the
	// highest removed bucket + 1 at least.
	ka []uint64
}

// NewJumpBackAnchorEngine returns an engine of n working buckets, 0 to
// n-1, with none removed, or an error wrapping ErrInvalidOption if n is
// negative or ErrTooLarge if it is above 2^24.
func NewJumpBackAnchorEngine(n int) (JumpBackAnchorEngine, error) {
	switch {
	case n < 0:
		return JumpBackAnchorEngine{}, fmt.Errorf("%w: NewJumpBackAnchorEngine(%d): want 0 to %d", ErrInvalidOption, n, maxBuckets)
	case n > maxBuckets:
		return JumpBackAnchorEngine{}, fmt.Errorf("%w: NewJumpBackAnchorEngine(%d): want 0 to %d", ErrTooLarge, n, maxBuckets)
	}
	return JumpBackAnchorEngine{n: int32(n)}, nil
}

// Len returns the number of working buckets.
func (s *JumpBackAnchorEngine) Len() int { return int(s.n) - len(s.removed) }

// Range returns the bucket range [0, Range()) the working buckets lie in:
// hash4j's historic maximum number of buckets.
func (s *JumpBackAnchorEngine) Range() int { return int(s.n) }

// Buckets returns the working buckets in ascending order, as hash4j's
// getBuckets does. O(Range()).
func (s *JumpBackAnchorEngine) Buckets() []int {
	out := make([]int, 0, s.Len())
	for b := range int(s.n) {
		if !s.isRemoved(int32(b)) {
			out = append(out, b)
		}
	}
	return out
}

// Working reports whether bucket b works.
func (s *JumpBackAnchorEngine) Working(b int) bool {
	return b >= 0 && b < int(s.n) && !s.isRemoved(int32(b))
}

// isRemoved reports whether bucket b is a removed bucket of the range.
func (s *JumpBackAnchorEngine) isRemoved(b int32) bool {
	return int(b) < len(s.ka) && s.ka[b] != 0
}

// Add adds a bucket and returns its number: the last removed bucket if
// any, else Range() (which grows by one), as hash4j's addBucket does.
// About 1/(n+1) of keys move to it, all from other buckets. It fails with
// ErrTooLarge, adding nothing, when the range is full (2^24 buckets).
// O(1).
func (s *JumpBackAnchorEngine) Add() (int, error) { return s.add() }

func (s *JumpBackAnchorEngine) add() (int, error) {
	if len(s.removed) == 0 {
		if s.n >= maxBuckets {
			return 0, fmt.Errorf("%w: a JumpBackAnchor engine of %d buckets", ErrTooLarge, maxBuckets)
		}
		s.n++
		return int(s.n - 1), nil
	}
	b := s.removed[len(s.removed)-1]
	s.removed = s.removed[:len(s.removed)-1]
	s.ka[b] = 0
	return int(b), nil
}

// Remove removes working bucket b, whose keys move to the other working
// buckets evenly, as hash4j's removeBucket does, or fails with
// ErrUnknownNode if b is not a working bucket. Removing the last working
// bucket empties the engine; removing bucket Range()-1 when none is
// removed shrinks the range. O(1) expected, plus the growth of the
// bucket storage to b+1 entries.
func (s *JumpBackAnchorEngine) Remove(b int) error {
	switch {
	case !s.Working(b):
		return fmt.Errorf("%w: bucket %d is not a working bucket of the JumpBackAnchor engine", ErrUnknownNode, b)
	case s.Len() == 1:
		*s = JumpBackAnchorEngine{}
	default:
		s.remove(b)
	}
	return nil
}

// remove is Remove for a working bucket that is not the last working one.
func (s *JumpBackAnchorEngine) remove(b int) {
	if b == int(s.n)-1 && len(s.removed) == 0 {
		s.n--
		return
	}
	s.removed = append(s.removed, int32(b))
	if b >= len(s.ka) {
		s.ka = slices.Grow(s.ka, b+1-len(s.ka))[:b+1]
	}
	s.anchor(int32(b), s.n-int32(len(s.removed)))
}

// anchor records b's removal, after which n buckets work.
func (s *JumpBackAnchorEngine) anchor(b, n int32) {
	h := s.atView(n, n+1)
	s.ka[b] = uint64(uint32(h-b))<<32 | uint64(uint32(n))
}

// atView follows the removed buckets' replacements from b to the bucket
// that stands for b in the view of the first v working buckets.
func (s *JumpBackAnchorEngine) atView(b, v int32) int32 {
	for int(b) < len(s.ka) {
		e := s.ka[b]
		if int32(uint32(e)) < v {
			break
		}
		b += int32(uint32(e >> 32))
	}
	return b
}

// Bucket returns the working bucket of a 64-bit key (already a hash), as
// hash4j's getBucket does with SplitMix64, or -1 if no bucket works. It
// allocates nothing and is safe for concurrent use with other lookups.
func (s *JumpBackAnchorEngine) Bucket(key uint64) int {
	if s.Len() <= 0 {
		return -1
	}
	return s.bucket(key)
}

// bucket is Bucket for a state with a working bucket.
func (s *JumpBackAnchorEngine) bucket(key uint64) int {
	if s.n <= 1 {
		return 0
	}
	b, state := jumpBackSeq(key, uint32(s.n))
	for b < len(s.ka) {
		a := int32(uint32(s.ka[b]))
		if a == 0 {
			break
		}
		var u int32
		u, state = uniformInt(state, a)
		b = int(s.atView(u, a))
	}
	return b
}

// uniformInt draws a value in [0, bound) from the SplitMix64 sequence whose
// state is given, by Lemire's method with 32-bit draws ("Fast Random
// Integer Generation in an Interval", ACM TOMACS 2019, algorithm 5) as
// hash4j's uniformInt does, and returns it with the new state.
func uniformInt(state uint64, bound int32) (int32, uint64) {
	s := uint64(bound)
	state += phi
	m := uint64(uint32(mix64(state))) * s
	if uint32(m) < uint32(s) {
		t := uint32((1 << 32) % s)
		for uint32(m) < t {
			state += phi
			m = uint64(uint32(mix64(state))) * s
		}
	}
	return int32(m >> 32), state
}

// Clone returns a copy of s that shares no memory with it.
func (s *JumpBackAnchorEngine) Clone() JumpBackAnchorEngine {
	return JumpBackAnchorEngine{n: s.n, removed: slices.Clone(s.removed), ka: slices.Clone(s.ka)}
}

// MarshalBinary returns the state as hash4j's getState writes it: the
// bucket range, then each removed bucket in the order removed, as
// little-endian 32-bit integers (4 + 4·removed bytes). It never fails.
func (s *JumpBackAnchorEngine) MarshalBinary() ([]byte, error) {
	return s.AppendBinary(make([]byte, 0, 4+4*len(s.removed)))
}

// AppendBinary appends MarshalBinary's bytes to b.
func (s *JumpBackAnchorEngine) AppendBinary(b []byte) ([]byte, error) {
	b = binary.LittleEndian.AppendUint32(b, uint32(s.n))
	for _, r := range s.removed {
		b = binary.LittleEndian.AppendUint32(b, uint32(r))
	}
	return b, nil
}

// UnmarshalBinary sets s to the state data holds, as hash4j's setState
// does, or fails with ErrInvalidState, leaving s unchanged, if data is not
// a state: shorter than 4 bytes or not a multiple of 4, a negative range,
// a removed bucket outside it or removed twice, or no working bucket left
// while buckets are removed (a state hash4j never writes). A range above
// 2^24 fails with ErrTooLarge. O(len(data) + highest removed bucket)
// expected.
func (s *JumpBackAnchorEngine) UnmarshalBinary(data []byte) error {
	if len(data) < 4 || len(data)%4 != 0 {
		return fmt.Errorf("%w: %d bytes: a JumpBackAnchor state is 4 bytes and 4 per removed bucket", ErrInvalidState, len(data))
	}
	n := int32(binary.LittleEndian.Uint32(data))
	removed := make([]int32, (len(data)-4)/4)
	switch {
	case n < 0:
		return fmt.Errorf("%w: negative bucket range %d", ErrInvalidState, n)
	case n > maxBuckets:
		return fmt.Errorf("%w: bucket range %d above %d", ErrTooLarge, n, maxBuckets)
	case len(removed) > 0 && len(removed) >= int(n):
		return fmt.Errorf("%w: %d of %d buckets removed", ErrInvalidState, len(removed), n)
	}
	top := int32(-1)
	for i := range removed {
		b := int32(binary.LittleEndian.Uint32(data[4+4*i:]))
		if b < 0 || b >= n {
			return fmt.Errorf("%w: removed bucket %d outside [0, %d)", ErrInvalidState, b, n)
		}
		removed[i], top = b, max(top, b)
	}
	t := JumpBackAnchorEngine{n: n, removed: removed, ka: make([]uint64, top+1)}
	for i, b := range removed {
		if t.ka[b] != 0 {
			return fmt.Errorf("%w: bucket %d removed twice", ErrInvalidState, b)
		}
		t.anchor(b, n-1-int32(i))
	}
	*s = t
	return nil
}

// JumpBackAnchor places keys with a [JumpBackAnchorEngine]: node i of the
// order given to NewJumpBackAnchor is bucket i, and a key goes to the node
// of bucket Engine().Bucket(hash(key)), as hash4j's JumpBackAnchor places
// hash(key) among the same buckets.
//
// It has JumpBack's balance and lookups for as long as no node is removed
// (one hash and an expected constant number of integer steps), and unlike
// Jump and JumpBack it can lose any node: Remove moves only the removed
// node's keys, evenly over the rest, and Add moves about 1/(n+1) of the
// keys to the new node, all from the others. Nodes must have equal
// weights. Its placement depends on the order of removals, which the state
// records: every process of a fleet must hold the same members and the
// same state, for example by storing the state's MarshalBinary bytes
// beside the member list in the coordination service that publishes it,
// and rebuilding with NewJumpBackAnchorFrom; [Fingerprint] covers the
// state. Memory: the node list and 8 bytes per bucket up to the highest
// removed one.
//
// A JumpBackAnchor is immutable and safe for concurrent use. Nodes are
// reported in bucket order. The zero JumpBackAnchor, like a nil
// *JumpBackAnchor, is empty: lookups return the zero Node, Len is 0, and
// Add builds a placer with the default options.
type JumpBackAnchor struct {
	slots[JumpBackAnchorEngine, *JumpBackAnchorEngine] // the engine, the members by bucket, the options
}

var (
	_ Placer        = (*JumpBackAnchor)(nil)
	_ Fingerprinter = (*JumpBackAnchor)(nil)
)

// NewJumpBackAnchor builds a JumpBackAnchor placer whose bucket i is
// nodes[i], with no removed bucket. It uses WithHasher and ignores the
// other options. It fails as [NewJump] does: if nodes is empty, an ID is
// empty or repeated, a weight is negative, NaN or infinite, or the weights
// differ (ErrInvalidWeight); more than 2^24 nodes fail with ErrTooLarge.
// O(n log n).
func NewJumpBackAnchor(nodes []Node, opts ...Option) (*JumpBackAnchor, error) {
	e, err := NewJumpBackAnchorEngine(len(nodes))
	if err != nil {
		return nil, err
	}
	return NewJumpBackAnchorFrom(e, nodes, opts...)
}

// NewJumpBackAnchorFrom builds the JumpBackAnchor placer with engine e
// whose working buckets, in ascending order, are nodes: the placer another
// process built with the same nodes (its Nodes()) and the same state (its
// Engine(), sent as MarshalBinary's bytes), and so the same placement. It
// fails as NewJumpBackAnchor does, and with ErrInvalidState if len(nodes)
// is not e.Len(). e is copied. O(n log n + e.Range()).
func NewJumpBackAnchorFrom(e JumpBackAnchorEngine, nodes []Node, opts ...Option) (*JumpBackAnchor, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	s, err := newSlots[JumpBackAnchorEngine](e.Clone(), nodes, cfg)
	return wrap(&JumpBackAnchor{s}, err)
}

// Lookup returns the node of key's bucket. O(1) expected, no allocation.
func (p *JumpBackAnchor) Lookup(key []byte) Node {
	if p.empty() {
		return Node{}
	}
	return p.nodes[p.e.bucket(p.cfg.hasher.sum(key))]
}

// LookupString is Lookup for a string key.
func (p *JumpBackAnchor) LookupString(key string) Node {
	if p.empty() {
		return Node{}
	}
	return p.nodes[p.e.bucket(p.cfg.hasher.sumString(key))]
}

// anchorTopDraws is how many draws AppendTopK makes before it takes the
// remaining nodes in bucket order.
const anchorTopDraws = maxDrawn - 1

// AppendTopK appends up to k distinct nodes for key; the first is Lookup's.
// The others are the distinct buckets of keys mix64(h + i·φ), i = 1, 2, ...
// (h the key's hash), in the order drawn, for up to 32 draws; then the
// remaining nodes in bucket order from a hashed start. Each draw is a
// lookup of its own, so removing a node changes a list only where the
// node was in it, or by the draws that landed on it, and a shorter list is
// a prefix of a longer one. Cost: O(k²) for lists within the 32 draws,
// O(Range()) beyond; no allocation when dst has room.
func (p *JumpBackAnchor) AppendTopK(dst []Node, key []byte, k int) []Node {
	if p.empty() {
		return dst
	}
	return p.appendTopK(dst, p.cfg.hasher.sum(key), k)
}

// AppendTopKString is AppendTopK for a string key.
func (p *JumpBackAnchor) AppendTopKString(dst []Node, key string, k int) []Node {
	if p.empty() {
		return dst
	}
	return p.appendTopK(dst, p.cfg.hasher.sumString(key), k)
}

func (p *JumpBackAnchor) appendTopK(dst []Node, h uint64, k int) []Node {
	k = place.ClampK(k, p.e.Len())
	if k == 0 {
		return dst
	}
	var c drawnSet
	b := p.e.bucket(h)
	c.add(b)
	dst = place.Append(dst, &p.nodes[b])
	for i := uint64(1); i <= anchorTopDraws && c.m < k; i++ {
		if b := p.e.bucket(mix64(h + i*phi)); !c.has(b) {
			c.add(b)
			dst = place.Append(dst, &p.nodes[b])
		}
	}
	if c.m == k {
		return dst
	}
	r := int(p.e.n)
	return appendInOrder(dst, p.nodes, r, int(mix64(h)%uint64(r)), k-c.m, &c)
}

// Nodes returns the members in bucket order.
func (p *JumpBackAnchor) Nodes() []Node {
	if p.empty() {
		return nil
	}
	return p.members()
}

// Len returns the number of members.
func (p *JumpBackAnchor) Len() int {
	if p.empty() {
		return 0
	}
	return p.e.Len()
}

// Stateful reports true: members keep numbered slots, the order given to
// the constructor numbers them, and a membership change must be derived
// from the last placer, not rebuilt from a list (see [Algorithm.Stateful]
// and [IsStateful]).
func (p *JumpBackAnchor) Stateful() bool { return true }

// Engine returns a copy of p's engine, whose MarshalBinary is the state to
// share: with p.Nodes(), what NewJumpBackAnchorFrom needs to rebuild p in
// another process.
func (p *JumpBackAnchor) Engine() JumpBackAnchorEngine {
	if p.empty() {
		return JumpBackAnchorEngine{}
	}
	return p.e.Clone()
}

// Add returns a JumpBackAnchor with the given nodes added in order, each
// taking the last removed bucket if there is one, else the next bucket.
// Each takes about 1/(new n) of the keys, all from the others. The nodes
// must be new and of the members' weight. O(n); p is unchanged.
func (p *JumpBackAnchor) Add(nodes ...Node) (*JumpBackAnchor, error) {
	if p.empty() {
		return NewJumpBackAnchor(nodes)
	}
	s, err := p.added(nodes)
	return wrap(&JumpBackAnchor{s}, err)
}

// Remove returns a JumpBackAnchor without the given nodes, removed in the
// order given (which the state records): only their keys move, evenly over
// the nodes that stay. It fails with ErrUnknownNode if an ID is not a
// member, and with ErrNoNodes if no node would remain. O(n) plus the
// state's removals; p is unchanged.
func (p *JumpBackAnchor) Remove(ids ...string) (*JumpBackAnchor, error) {
	if p.empty() {
		return nil, removeFromEmpty(ids)
	}
	s, err := p.removed(ids)
	return wrap(&JumpBackAnchor{s}, err)
}

// Replace returns a JumpBackAnchor in which n takes the bucket of the node
// with ID id: only that node's keys move, to n. n must have the members'
// weight and an ID not otherwise in use; it may keep id. It fails with
// ErrUnknownNode if id is not a member. The state is unchanged. O(n); p
// is unchanged.
func (p *JumpBackAnchor) Replace(id string, n Node) (*JumpBackAnchor, error) {
	if p.empty() {
		return nil, replaceInEmpty(id)
	}
	s, err := p.replaced(id, n)
	return wrap(&JumpBackAnchor{s}, err)
}

// with is Derive for a JumpBackAnchor: see edit.derive.
func (p *JumpBackAnchor) with(nodes []Node) (Placer, error) {
	if p.empty() {
		return placer(NewJumpBackAnchor(nodes))
	}
	s, err := p.derived(nodes)
	return placer(&JumpBackAnchor{s}, err)
}

// Fingerprint returns the digest [Fingerprint] reports for p:
// "jumpbackanchor-" and 16 hex digits over the state, the members in
// bucket order and the Hasher, or FingerprintNone for an empty placer.
func (p *JumpBackAnchor) Fingerprint() string {
	if p.empty() {
		return FingerprintNone
	}
	st, _ := p.e.MarshalBinary()
	return fingerprintSlots("jumpbackanchor", st, p.Nodes(), p.cfg.hasher)
}

// empty reports whether p is nil or the zero JumpBackAnchor.
func (p *JumpBackAnchor) empty() bool { return p == nil || p.e.Len() <= 0 }
