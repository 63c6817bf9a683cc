package chash

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/keyplace/chash/internal/digest"
)

// maxAnchorBuckets bounds a JumpBackAnchorEngine's bucket range, so that no
// state, however corrupted, makes it allocate more than 128 MiB.
const maxAnchorBuckets = 1 << 24

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
		return JumpBackAnchorEngine{}, fmt.Errorf("%w: NewJumpBackAnchorEngine(%d): want 0 to %d", ErrInvalidOption, n, maxAnchorBuckets)
	case n > maxAnchorBuckets:
		return JumpBackAnchorEngine{}, fmt.Errorf("%w: NewJumpBackAnchorEngine(%d): want 0 to %d", ErrTooLarge, n, maxAnchorBuckets)
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

// Removed reports whether bucket b is a removed bucket of the range.
func (s *JumpBackAnchorEngine) isRemoved(b int32) bool {
	return int(b) < len(s.ka) && s.ka[b] != 0
}

// Add adds a bucket and returns its number: the last removed bucket if
// any, else Range() (which grows by one), as hash4j's addBucket does.
// About 1/(n+1) of keys move to it, all from other buckets. It fails with
// ErrTooLarge, adding nothing, when the range is full (2^24 buckets).
// O(1).
func (s *JumpBackAnchorEngine) Add() (int, error) {
	if len(s.removed) == 0 {
		if s.n >= maxAnchorBuckets {
			return 0, fmt.Errorf("%w: a JumpBackAnchor engine of %d buckets", ErrTooLarge, maxAnchorBuckets)
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
	if b < 0 || b >= int(s.n) || s.isRemoved(int32(b)) {
		return fmt.Errorf("%w: bucket %d is not a working bucket of the JumpBackAnchor engine", ErrUnknownNode, b)
	}
	switch {
	case int(s.n)-1 == len(s.removed):
		*s = JumpBackAnchorEngine{}
	case b == int(s.n)-1 && len(s.removed) == 0:
		s.n--
	default:
		s.removed = append(s.removed, int32(b))
		if b >= len(s.ka) {
			s.ka = slices.Grow(s.ka, b+1-len(s.ka))[:b+1]
		}
		s.anchor(int32(b), s.n-int32(len(s.removed)))
	}
	return nil
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
	case n > maxAnchorBuckets:
		return fmt.Errorf("%w: bucket range %d above %d", ErrTooLarge, n, maxAnchorBuckets)
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
	nodes []Node // by bucket, the zero Node at a removed bucket
	state JumpBackAnchorEngine
	cfg   config
}

var _ Placer = (*JumpBackAnchor)(nil)

// NewJumpBackAnchor builds a JumpBackAnchor placer whose bucket i is
// nodes[i], with no removed bucket. It uses WithHasher and ignores the
// other options. It fails as [NewJump] does: if nodes is empty, an ID is
// empty or repeated, a weight is negative, NaN or infinite, or the weights
// differ (ErrInvalidWeight); more than 2^24 nodes fail with ErrTooLarge.
// O(n log n).
func NewJumpBackAnchor(nodes []Node, opts ...Option) (*JumpBackAnchor, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	ns, err := checkNodes(nodes, false)
	if err != nil {
		return nil, err
	}
	return newJumpBackAnchor(cfg, ns, nil)
}

// NewJumpBackAnchorFrom builds the JumpBackAnchor placer with state s whose
// working buckets, in ascending order, are nodes: the placer another
// process built with the same nodes (its Nodes()) and the same state (its
// Engine(), sent as MarshalBinary's bytes), and so the same placement. It
// fails as NewJumpBackAnchor does, and with ErrInvalidState if len(nodes)
// is not s.Len(). s is copied. O(n log n + s.Range()).
func NewJumpBackAnchorFrom(e JumpBackAnchorEngine, nodes []Node, opts ...Option) (*JumpBackAnchor, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	ns, err := checkNodes(nodes, false)
	if err != nil {
		return nil, err
	}
	return newJumpBackAnchor(cfg, ns, &e)
}

// newJumpBackAnchor is NewJumpBackAnchorFrom for checked nodes, and
// NewJumpBackAnchor for a nil s.
func newJumpBackAnchor(cfg config, ns []Node, s *JumpBackAnchorEngine) (*JumpBackAnchor, error) {
	if err := equalWeights(ns); err != nil {
		return nil, err
	}
	switch {
	case len(ns) > maxAnchorBuckets:
		return nil, fmt.Errorf("%w: %d nodes, above %d", ErrTooLarge, len(ns), maxAnchorBuckets)
	case s == nil:
		s = &JumpBackAnchorEngine{n: int32(len(ns))}
	case s.Len() != len(ns):
		return nil, fmt.Errorf("%w: %d nodes for a state of %d working buckets", ErrInvalidState, len(ns), s.Len())
	default:
		c := s.Clone()
		s = &c
	}
	byBucket := make([]Node, s.n)
	i := 0
	for b := range byBucket {
		if !s.isRemoved(int32(b)) {
			byBucket[b] = ns[i]
			i++
		}
	}
	return &JumpBackAnchor{nodes: byBucket, state: *s, cfg: cfg}, nil
}

// Lookup returns the node of key's bucket. O(1) expected, no allocation.
func (p *JumpBackAnchor) Lookup(key []byte) Node {
	if p.empty() {
		return Node{}
	}
	return p.nodes[p.state.bucket(p.cfg.hasher.sum(key))]
}

// LookupString is Lookup for a string key.
func (p *JumpBackAnchor) LookupString(key string) Node {
	if p.empty() {
		return Node{}
	}
	return p.nodes[p.state.bucket(p.cfg.hasher.sumString(key))]
}

// anchorTopDraws is how many draws AppendTopK makes before it takes the
// remaining nodes in bucket order.
const anchorTopDraws = 32

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
	n := p.state.Len()
	k = min(max(k, 0), n)
	if k == 0 {
		return dst
	}
	var chosen [anchorTopDraws + 1]int32
	m := 0
	b := p.state.bucket(h)
	chosen[m], m = int32(b), 1
	dst = append(dst, p.nodes[b])
	for i := uint64(1); i <= anchorTopDraws && m < k; i++ {
		b := int32(p.state.bucket(mix64(h + i*phi)))
		if !slices.Contains(chosen[:m], b) {
			chosen[m], m = b, m+1
			dst = append(dst, p.nodes[b])
		}
	}
	if m == k {
		return dst
	}
	// The rest in bucket order from a hashed start, skipping removed
	// buckets and those already drawn.
	r := int(p.state.n)
	for i, b := 0, int(mix64(h)%uint64(r)); m < k && i < r; i, b = i+1, b+1 {
		if b == r {
			b = 0
		}
		if !p.state.isRemoved(int32(b)) && !slices.Contains(chosen[:min(m, len(chosen))], int32(b)) {
			dst = append(dst, p.nodes[b])
			m++
		}
	}
	return dst
}

// Nodes returns the members in bucket order.
func (p *JumpBackAnchor) Nodes() []Node {
	if p.empty() {
		return nil
	}
	out := make([]Node, 0, p.state.Len())
	for _, n := range p.nodes {
		if n.ID != "" {
			out = append(out, n)
		}
	}
	return out
}

// Len returns the number of members.
func (p *JumpBackAnchor) Len() int {
	if p.empty() {
		return 0
	}
	return p.state.Len()
}

// Engine returns a copy of p's engine, whose MarshalBinary is the state to
// share: with p.Nodes(), what NewJumpBackAnchorFrom needs to rebuild p in
// another process.
func (p *JumpBackAnchor) Engine() JumpBackAnchorEngine {
	if p.empty() {
		return JumpBackAnchorEngine{}
	}
	return p.state.Clone()
}

// Add returns a JumpBackAnchor with the given nodes added in order, each
// taking the last removed bucket if there is one, else the next bucket.
// Each takes about 1/(new n) of the keys, all from the others. The nodes
// must be new and of the members' weight. O(n); p is unchanged.
func (p *JumpBackAnchor) Add(nodes ...Node) (*JumpBackAnchor, error) {
	if p.empty() {
		return NewJumpBackAnchor(nodes)
	}
	members := p.Nodes()
	all, err := checkNodes(append(members, nodes...), false)
	if err != nil {
		return nil, err
	}
	if err := equalWeights(all); err != nil {
		return nil, err
	}
	q := p.clone()
	for _, n := range all[len(members):] {
		b, err := q.state.Add()
		if err != nil {
			return nil, err
		}
		if b == len(q.nodes) {
			q.nodes = append(q.nodes, n)
		} else {
			q.nodes[b] = n
		}
	}
	return q, nil
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
	index := p.buckets()
	q := p.clone()
	for _, id := range ids {
		b, ok := index[id]
		if !ok {
			return nil, fmt.Errorf("%w: %q", ErrUnknownNode, id)
		}
		delete(index, id)
		if len(index) == 0 {
			return nil, fmt.Errorf("%w: removing %d of %d nodes", ErrNoNodes, len(ids), p.Len())
		}
		_ = q.state.Remove(b) // b is a member's working bucket
		q.nodes[b] = Node{}
	}
	q.nodes = q.nodes[:q.state.n] // the range shrinks when the last bucket goes
	return q, nil
}

// Replace returns a JumpBackAnchor in which n takes the bucket of the node
// with ID id: only that node's keys move, to n. n must have the members'
// weight and an ID not otherwise in use; it may keep id. It fails with
// ErrUnknownNode if id is not a member. O(n); p is unchanged.
func (p *JumpBackAnchor) Replace(id string, n Node) (*JumpBackAnchor, error) {
	if p.empty() {
		return nil, fmt.Errorf("%w: %q: the placer is empty", ErrUnknownNode, id)
	}
	b, ok := p.buckets()[id]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownNode, id)
	}
	all := p.Nodes()
	for i := range all {
		if all[i].ID == id {
			all[i] = n
		}
	}
	all, err := checkNodes(all, false)
	if err != nil {
		return nil, err
	}
	if err := equalWeights(all); err != nil {
		return nil, err
	}
	q := p.clone()
	if n.Weight == 0 {
		n.Weight = 1
	}
	q.nodes[b] = n
	return q, nil
}

// with is Derive's: nodes is a set. Members keep their buckets, departed
// members are removed in ascending bucket order, then new nodes are added
// in the order given (into the removed buckets, last removed first). When
// no member stays, the state starts afresh, as hash4j's does once its last
// bucket is removed, and the result is NewJumpBackAnchor(nodes).
func (p *JumpBackAnchor) with(nodes []Node) (Placer, error) {
	ns, err := checkNodes(nodes, false)
	if err != nil {
		return nil, err
	}
	if p.empty() {
		return NewJumpBackAnchor(nodes)
	}
	in := make(map[string]bool, len(ns))
	for _, n := range ns {
		in[n.ID] = true
	}
	var gone []string
	stay := make(map[string]bool, len(ns))
	for _, n := range p.Nodes() {
		if in[n.ID] {
			stay[n.ID] = true
		} else {
			gone = append(gone, n.ID)
		}
	}
	if len(stay) == 0 {
		return newJumpBackAnchor(p.cfg, ns, nil)
	}
	if err := equalWeights(append(ns, p.Nodes()[0])); err != nil {
		return nil, err
	}
	var added []Node
	for _, n := range ns {
		if !stay[n.ID] {
			added = append(added, n)
		}
	}
	q := p
	if len(gone) > 0 {
		if q, err = q.Remove(gone...); err != nil {
			return nil, err
		}
	}
	if len(added) > 0 {
		return q.Add(added...)
	}
	return q, nil
}

// buckets returns each member's bucket by ID.
func (p *JumpBackAnchor) buckets() map[string]int {
	index := make(map[string]int, p.state.Len())
	for b, n := range p.nodes {
		if n.ID != "" {
			index[n.ID] = b
		}
	}
	return index
}

// clone returns a copy of p that shares no mutable memory with it.
func (p *JumpBackAnchor) clone() *JumpBackAnchor {
	return &JumpBackAnchor{nodes: slices.Clone(p.nodes), state: p.state.Clone(), cfg: p.cfg}
}

// Fingerprint returns the digest [Fingerprint] reports for p:
// "jumpbackanchor-" and 16 hex digits over the state, the members in
// bucket order and the Hasher, or FingerprintNone for an empty placer.
func (p *JumpBackAnchor) Fingerprint() string {
	if p.empty() {
		return FingerprintNone
	}
	st, _ := p.state.MarshalBinary()
	d := digest.New().Str("jumpbackanchor").Str(string(st))
	return digestAll(d, p.Nodes(), p.cfg.hasher).Sum("jumpbackanchor")
}

// empty reports whether p is nil or the zero JumpBackAnchor.
func (p *JumpBackAnchor) empty() bool { return p == nil || p.state.Len() <= 0 }
