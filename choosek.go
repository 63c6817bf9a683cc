package chash

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"slices"
	"sync"
)

// The engine of ConsistentChooseK, after github/rust-gems' crate
// consistent-choose-k (formerly consistent-hashing, by Alexander Neubeck):
// ConsistentHasher, ConsistentChooseKHasher and ConsistentNodeMap. The
// crate draws every random number from a std::hash::Hasher seeded with the
// key; chash's results equal the crate's with Rust's DefaultHasher
// (SipHash-1-3 with zero keys) seeded by writing the 64-bit key, which is
// what testdata/choosek/vectors.tsv was printed with.

// sip13 is the state of a SipHash-1-3 hasher (Aumasson and Bernstein,
// 2012) with zero keys, as Rust's DefaultHasher, after whole 8-byte words:
// every value the crate hashes is a u64 or usize, written little-endian.
type sip13 struct{ v0, v1, v2, v3, n uint64 }

// sipKey is DefaultHasher::default() after key.hash(): the crate's
// builder for key.
func sipKey(key uint64) sip13 {
	s := sip13{v0: 0x736f6d6570736575, v1: 0x646f72616e646f6d, v2: 0x6c7967656e657261, v3: 0x7465646279746573}
	s.write(key)
	return s
}

func (s *sip13) round() {
	s.v0 += s.v1
	s.v1 = bits.RotateLeft64(s.v1, 13) ^ s.v0
	s.v0 = bits.RotateLeft64(s.v0, 32)
	s.v2 += s.v3
	s.v3 = bits.RotateLeft64(s.v3, 16) ^ s.v2
	s.v0 += s.v3
	s.v3 = bits.RotateLeft64(s.v3, 21) ^ s.v0
	s.v2 += s.v1
	s.v1 = bits.RotateLeft64(s.v1, 17) ^ s.v2
	s.v2 = bits.RotateLeft64(s.v2, 32)
}

// write hashes the 8 bytes of m.
func (s *sip13) write(m uint64) {
	s.v3 ^= m
	s.round()
	s.v0 ^= m
	s.n += 8
}

// finish is Hasher::finish: the hash of what was written, leaving s as it
// was.
func (s sip13) finish() uint64 {
	b := s.n << 56
	s.v3 ^= b
	s.round()
	s.v0 ^= b
	s.v2 ^= 0xff
	s.round()
	s.round()
	s.round()
	return s.v0 ^ s.v1 ^ s.v2 ^ s.v3
}

// chooseKSeqConst is what the crate's HashSequence writes before each draw.
const chooseKSeqConst = 54387634019

// chooseKPrev is the crate's ConsistentHasher::new(b).prev(n) for n >= 1:
// the largest of the builder's consistent hashes below n. Consistent
// hashes are drawn per range [bit, 2·bit) of the bits set in the builder's
// hash, from the highest down; each range's draws descend until one falls
// below n or out of the range.
func chooseKPrev(b sip13, n uint64) uint64 {
	mask := b.finish()
	if n > 1 {
		mask &= 1<<bits.Len64(n-1) - 1 // below n.next_power_of_two()
	} else {
		mask = 0
	}
	for mask != 0 {
		bit := uint64(1) << (bits.Len64(mask) - 1)
		mask ^= bit
		seq := b
		seq.write(bit)
		seq.write(chooseKSeqConst)
		if r := seq.finish()&(bit-1) + bit; r < n {
			return r
		}
		for {
			seq.write(chooseKSeqConst)
			r := seq.finish() & (2*bit - 1)
			if r&bit == 0 {
				break
			}
			if r < n {
				return r
			}
		}
	}
	return 0
}

// chooseKSample is the crate's get_sample(i, n) for the key whose builder
// is key: sequence i's consistent hash below n-i, plus i, in [i, n).
func chooseKSample(key sip13, i, n uint64) uint64 {
	key.write(i)
	return chooseKPrev(key, n-i) + i
}

// chooseKIter enumerates a key's consistent ranking of 0..n-1 as the
// crate's ConsistentChooseKHasher iterator does: samples holds the sorted
// set of the first k, each step costs O(k) samples on average.
type chooseKIter struct {
	key     sip13
	n       uint64
	samples []uint64
}

// next returns the next slot of the ranking and the samples after it;
// the caller stops at n. (Returning the samples rather than storing them
// through a pointer keeps a caller's stack buffer on the stack.)
func (it chooseKIter) next() (uint64, []uint64) {
	k := uint64(len(it.samples))
	sk := chooseKSample(it.key, k, it.n)
	if k == 0 || it.samples[k-1] < sk {
		return sk, append(it.samples, sk)
	}
	last := it.samples[k-1]
	i := it.shrink(last)
	samples := append(it.samples, last)
	return samples[i], samples
}

// shrink is the crate's shrink_n_inner: it recomputes the samples from the
// top for the bound n and returns the index of the new one.
func (it chooseKIter) shrink(n uint64) int {
	for i := len(it.samples) - 1; i >= 0; i-- {
		if it.samples[i] < n {
			return i + 1
		}
		si := chooseKSample(it.key, uint64(i), n)
		if i > 0 && it.samples[i-1] > si {
			it.samples[i] = it.samples[i-1]
		} else {
			it.samples[i] = si
		}
		n = it.samples[i]
	}
	return 0
}

// AppendChooseK appends to dst the first k slots of key's consistent
// ranking of the slots 0 to n-1 and returns the extended slice: the
// ranking of github/rust-gems' ConsistentChooseKHasher::new(hk(key), n),
// with hk(key) Rust's DefaultHasher after key.hash(), so that its results
// equal the crate's. The key should already be a hash.
//
// The ranking is a uniformly random permutation for each key, consistent
// in both its arguments: its first k slots, as a set, are a uniform choice
// among the n-choose-k sets; the list for k is a prefix of the list for
// k+1; and with n+1 slots the first k change in at most one slot, to slot
// n (the ranking of n+1 slots without slot n is the ranking of n).
//
// It costs O(k²) SipHash-1-3 evaluations on average (the first slot, one),
// or O(n log n) when that is less (k beyond about √(4n log₂ n): 310 of
// 4,000 slots), and allocates nothing when k <= 16 and dst has room, nor
// in steady state beyond (its scratch is pooled). k is clamped to
// [0, n]; n <= 0 appends nothing.
func AppendChooseK(dst []int, key uint64, n, k int) []int {
	if n <= 0 || k <= 0 {
		return dst
	}
	if n <= maxBuckets && wholeRanking(k, uint32(n)) {
		e := ChooseKEngine{n: uint32(n)} // every slot works
		return appendWhole(&e, dst, key, min(k, n), slotOf)
	}
	var buf [chooseKStack]uint64
	it := chooseKIter{key: sipKey(key), n: uint64(n), samples: buf[:0]}
	for range min(k, n) {
		var s uint64
		s, it.samples = it.next()
		dst = append(dst, int(s))
	}
	return dst
}

// chooseKStack is how many samples a lookup keeps on the stack: the ranking
// positions it walks before it searches instead (see chooseKFind).
const chooseKStack = 16

// ChooseKEngine is the slot set of ConsistentChooseK's node map
// (github/rust-gems' ConsistentNodeMap): slots numbered from 0, any of
// which can be removed, and a key's slot is the first working slot of its
// consistent ranking of all slots ([AppendChooseK]). Its lookups equal the
// crate's ConsistentNodeMap::get for the same working slots.
//
// Unlike the other placements that can lose any member, its placement
// depends only on which slots work, not on the order of the changes that
// led there: removing the same slots in any order gives the same
// placement, and the same state. The state is canonical: the last slot
// always works (removing it drops every vacant slot below it as well,
// which places every key as keeping them would; the crate keeps them), so
// equal working sets have equal states and MarshalBinary bytes. Add
// reuses the lowest vacant slot (the crate reuses an arbitrary one), else
// appends a slot.
//
// A lookup walks the ranking until it meets a working slot: with n slots
// of which w work, (n+1)/(w+1) positions on average. The first 16 cost
// O(position) SipHash evaluations each; past them the walk becomes a
// search over ranking prefixes, O(K log K) evaluations to reach position
// K, so that a placement with most slots vacant costs O((n/w) log(n/w))
// per lookup, not O((n/w)²). Memory: the vacant slots, 4 bytes each, and a
// bitmap of n bits.
//
// The zero value has no slots. A ChooseKEngine is safe for concurrent
// lookups; Add, Remove and UnmarshalBinary must not run concurrently with
// any other method. A plain copy shares storage with the original: copy
// with Clone before changing either.
type ChooseKEngine struct {
	n      uint32   // slots; slot n-1 works
	vacant []uint32 // ascending
	bitmap []uint64 // bit s set for a vacant slot s; nil with none vacant
}

// NewChooseKEngine returns an engine of n working slots, 0 to n-1, or an
// error wrapping ErrInvalidOption if n is negative or ErrTooLarge if it is
// above 2^24.
func NewChooseKEngine(n int) (ChooseKEngine, error) {
	switch {
	case n < 0:
		return ChooseKEngine{}, fmt.Errorf("%w: NewChooseKEngine(%d): want 0 to %d", ErrInvalidOption, n, maxBuckets)
	case n > maxBuckets:
		return ChooseKEngine{}, fmt.Errorf("%w: NewChooseKEngine(%d): want 0 to %d", ErrTooLarge, n, maxBuckets)
	}
	return ChooseKEngine{n: uint32(n)}, nil
}

// Len returns the number of working slots.
func (e *ChooseKEngine) Len() int { return int(e.n) - len(e.vacant) }

// Size returns the number of slots, working or vacant.
func (e *ChooseKEngine) Size() int { return int(e.n) }

// Working reports whether slot s works.
func (e *ChooseKEngine) Working(s int) bool {
	return s >= 0 && s < int(e.n) && !e.isVacant(uint64(s))
}

func (e *ChooseKEngine) isVacant(s uint64) bool {
	return s>>6 < uint64(len(e.bitmap)) && e.bitmap[s>>6]>>(s&63)&1 != 0
}

// Add brings a slot into work and returns it: the lowest vacant slot, or
// a new last slot. About 1/(w+1) of keys move to it (w the working slots
// before), all from other slots. It fails with ErrTooLarge at 2^24 slots.
// O(vacant).
func (e *ChooseKEngine) Add() (int, error) { return e.add() }

func (e *ChooseKEngine) add() (int, error) {
	if len(e.vacant) == 0 {
		if e.n >= maxBuckets {
			return 0, fmt.Errorf("%w: a ChooseK engine of %d slots", ErrTooLarge, maxBuckets)
		}
		e.n++
		return int(e.n - 1), nil
	}
	s := e.vacant[0]
	e.vacant = e.vacant[1:] // O(1): adding many slots stays linear
	e.bitmap[s>>6] &^= 1 << (s & 63)
	return int(s), nil
}

// Remove takes working slot s out of work: its keys move to the other
// working slots evenly and no other key moves. It fails with
// ErrUnknownNode if s is not a working slot. O(vacant), and O(n/64) for
// the first vacant slot.
func (e *ChooseKEngine) Remove(s int) error {
	if !e.Working(s) {
		return fmt.Errorf("%w: slot %d is not a working slot of the ChooseK engine", ErrUnknownNode, s)
	}
	e.remove(s)
	return nil
}

// remove is Remove for a working slot.
func (e *ChooseKEngine) remove(s int) {
	if e.bitmap == nil {
		e.bitmap = make([]uint64, (e.n+63)/64)
	}
	e.bitmap[s>>6] |= 1 << (s & 63)
	i, _ := slices.BinarySearch(e.vacant, uint32(s))
	e.vacant = slices.Insert(e.vacant, i, uint32(s))
	e.dropVacantTail()
}

// removeAll is remove for several distinct working slots, leaving one
// working: the placers' Remove of many members at once. The state depends
// only on the slots that work, so they can go together, in
// O((vacant + len(ss)) log) rather than remove's O(vacant) each.
func (e *ChooseKEngine) removeAll(ss []int) {
	if e.bitmap == nil {
		e.bitmap = make([]uint64, (e.n+63)/64)
	}
	for _, s := range ss {
		e.bitmap[s>>6] |= 1 << (s & 63)
		e.vacant = append(e.vacant, uint32(s))
	}
	slices.Sort(e.vacant)
	e.dropVacantTail()
}

// dropVacantTail keeps the state canonical: vacant last slots are dropped,
// the last working slot becoming the last slot.
func (e *ChooseKEngine) dropVacantTail() {
	for len(e.vacant) > 0 && e.vacant[len(e.vacant)-1] == e.n-1 {
		e.n--
		v := e.vacant[len(e.vacant)-1]
		e.bitmap[v>>6] &^= 1 << (v & 63)
		e.vacant = e.vacant[:len(e.vacant)-1]
	}
	if len(e.vacant) == 0 {
		e.bitmap = nil
	}
}

// Clone returns a copy of e that shares no memory with it.
func (e *ChooseKEngine) Clone() ChooseKEngine {
	return ChooseKEngine{n: e.n, vacant: slices.Clone(e.vacant), bitmap: slices.Clone(e.bitmap)}
}

// Bucket returns the working slot of a 64-bit key (already a hash), as the
// crate's ConsistentNodeMap::get does, or -1 if no slot works. It
// allocates nothing when fewer than 16 ranking positions are vacant slots
// (nearly always unless most slots are vacant), and is safe for concurrent
// use with other lookups.
func (e *ChooseKEngine) Bucket(key uint64) int {
	if e.Len() <= 0 {
		return -1
	}
	var one [1]int
	return appendRanked(e, one[:0], key, 1, slotOf)[0]
}

// AppendBuckets appends to dst the first k working slots of key's ranking
// (k clamped to [0, Len()]): Bucket's slot first, each list a prefix of
// the longer ones. Cost: O((k + h)²) SipHash evaluations for h vacant
// slots met, while k + h <= 16, and O(K log K) to reach ranking position
// K beyond; a long list (k beyond about √(4n log₂ n) of n slots) comes
// from the whole ranking, O(n log n), so that a list of every slot is not
// O(n²). No allocation in the first case when dst has room, nor in steady
// state in the others (their scratch is pooled).
func (e *ChooseKEngine) AppendBuckets(dst []int, key uint64, k int) []int {
	return appendRanked(e, dst, key, min(max(k, 0), e.Len()), slotOf)
}

func slotOf(s int) int { return s }

// appendRanked appends at(s) for each of the first k working slots s of
// key's ranking: the slots themselves, or a placer's nodes.
func appendRanked[T any](e *ChooseKEngine, dst []T, key uint64, k int, at func(int) T) []T {
	if k <= 0 {
		return dst
	}
	if wholeRanking(k, e.n) {
		return appendWhole(e, dst, key, k, at)
	}
	var buf [chooseKStack]uint64
	it := chooseKIter{key: sipKey(key), n: uint64(e.n), samples: buf[:0]}
	var sc *chooseKBuf
	found, vacant, walked := 0, 0, false
	for found < k {
		if len(it.samples) == cap(it.samples) {
			if vacant > found+chooseKStack {
				break // mostly vacant slots: search instead
			}
			if sc == nil {
				// Off the stack: the pool's buffer (a copy, so that buf
				// does not escape).
				sc = chooseKScratch.Get().(*chooseKBuf)
				sc.walk = slices.Grow(sc.walk[:0], 4*chooseKStack)
				it.samples = append(sc.walk, it.samples...)
				walked = true
			}
		}
		var s uint64
		if s, it.samples = it.next(); e.isVacant(s) {
			vacant++
		} else {
			dst = append(dst, at(int(s)))
			found++
		}
	}
	if found < k {
		if sc == nil {
			sc = chooseKScratch.Get().(*chooseKBuf)
		}
		dst = find(e, dst, sc, it.key, found, k, len(it.samples), at)
	}
	if sc != nil {
		if walked && cap(it.samples) > cap(sc.walk) {
			// The walk outgrew the pool's buffer: keep room for as long
			// a walk next time. (Keeping it.samples itself would let buf
			// escape, as the compiler cannot tell it is not buf.)
			sc.walk = make([]uint64, 0, cap(it.samples))
		}
		chooseKScratch.Put(sc)
	}
	return dst
}

// appendWhole is appendRanked from the whole ranking (chooseKBuf.ranking):
// for lists long enough that it costs less than the walk.
func appendWhole[T any](e *ChooseKEngine, dst []T, key uint64, k int, at func(int) T) []T {
	sc := chooseKScratch.Get().(*chooseKBuf)
	for _, s := range sc.ranking(sipKey(key), e.n) {
		if !e.isVacant(uint64(s)) {
			dst = append(dst, at(int(s)))
			if k--; k == 0 {
				break
			}
		}
	}
	chooseKScratch.Put(sc)
	return dst
}

// MarshalBinary returns the state: the slot count, the number of vacant
// slots and each vacant slot's distance from the previous one (the first
// from -1), as unsigned varints. Equal working sets give equal bytes. It
// never fails.
func (e *ChooseKEngine) MarshalBinary() ([]byte, error) {
	return e.AppendBinary(make([]byte, 0, 4+2*len(e.vacant)))
}

// AppendBinary appends MarshalBinary's bytes to b.
func (e *ChooseKEngine) AppendBinary(b []byte) ([]byte, error) {
	b = binary.AppendUvarint(b, uint64(e.n))
	b = binary.AppendUvarint(b, uint64(len(e.vacant)))
	prev := int64(-1)
	for _, v := range e.vacant {
		b = binary.AppendUvarint(b, uint64(int64(v)-prev))
		prev = int64(v)
	}
	return b, nil
}

// UnmarshalBinary sets e to the state data holds, or fails with
// ErrInvalidState, leaving e unchanged, if data is not one MarshalBinary
// writes: truncated or trailing bytes, a vacant slot out of range, given
// twice or out of order, or the last slot vacant. More than 2^24 slots
// fail with ErrTooLarge. O(len(data) + n/64).
func (e *ChooseKEngine) UnmarshalBinary(data []byte) error {
	n, k := binary.Uvarint(data)
	if k <= 0 {
		return fmt.Errorf("%w: a ChooseK state of %d bytes has no slot count", ErrInvalidState, len(data))
	}
	if n > maxBuckets {
		return fmt.Errorf("%w: %d slots, above %d", ErrTooLarge, n, maxBuckets)
	}
	data = data[k:]
	count, k := binary.Uvarint(data)
	if k <= 0 || (n > 0 && count >= n) || (n == 0 && count > 0) || count > uint64(len(data)) {
		return fmt.Errorf("%w: a ChooseK state of %d slots with a bad vacant count", ErrInvalidState, n)
	}
	data = data[k:]
	t := ChooseKEngine{n: uint32(n)}
	if count > 0 {
		t.vacant = make([]uint32, 0, count)
		t.bitmap = make([]uint64, (n+63)/64)
	}
	prev := int64(-1)
	for range count {
		d, k := binary.Uvarint(data)
		if k <= 0 || d == 0 || d > n {
			return fmt.Errorf("%w: a ChooseK state with a bad vacant slot", ErrInvalidState)
		}
		data = data[k:]
		v := prev + int64(d)
		if v >= int64(n)-1 {
			return fmt.Errorf("%w: vacant slot %d of %d slots (the last slot works)", ErrInvalidState, v, n)
		}
		t.vacant = append(t.vacant, uint32(v))
		t.bitmap[v>>6] |= 1 << (v & 63)
		prev = v
	}
	if len(data) != 0 {
		return fmt.Errorf("%w: %d bytes after a ChooseK state", ErrInvalidState, len(data))
	}
	*e = t
	return nil
}

// find continues appendRanked past its stack: it appends to dst the
// working slots of the ranking from position from+1 on, up to k found in
// all (found so far). Since the first K slots of the ranking, as a set,
// are computable in O(K log K) (see chooseKSet), the position of the j-th
// working slot is the least K whose set holds j working slots: found by
// doubling K, then bisecting.
func find[T any](e *ChooseKEngine, dst []T, sc *chooseKBuf, key sip13, found, k, from int, at func(int) T) []T {
	lo := from // the first lo positions hold found working slots
	for j := found + 1; j <= k; j++ {
		hi := max(lo+1, 2*lo)
		for e.workingIn(sc.set(key, e.n, hi)) < j {
			lo, hi = hi, min(2*hi, int(e.n))
		}
		for hi-lo > 1 {
			if mid := (lo + hi) / 2; e.workingIn(sc.set(key, e.n, mid)) < j {
				lo = mid
			} else {
				hi = mid
			}
		}
		// Position hi holds the j-th working slot: the slot of the first
		// hi that the first hi-1 lack.
		dst = append(dst, at(int(newIn(sc.set(key, e.n, hi), sc.prev(key, e.n, hi-1)))))
		lo = hi
	}
	return dst
}

// workingIn counts the working slots of set.
func (e *ChooseKEngine) workingIn(set []uint64) int {
	w := 0
	for _, s := range set {
		if !e.isVacant(s) {
			w++
		}
	}
	return w
}

// newIn returns the slot of a that b, sorted and one shorter, lacks.
func newIn(a, b []uint64) uint64 {
	for i := range b {
		if a[i] != b[i] {
			return a[i]
		}
	}
	return a[len(a)-1]
}

// chooseKBuf holds the scratch of appendRanked past its stack: the walk's
// samples, find's two sets and the heap that computes them, and the whole
// ranking with what computes it.
type chooseKBuf struct {
	walk []uint64
	a, b []uint64
	h    sampleHeap
	rank []uint32 // the ranking of all slots
	pos  []uint32 // each slot's position when it was added
	free []uint32 // a Fenwick tree counting the positions not yet taken
}

// wholeRanking reports whether a list of k of n slots is cheaper from the
// whole ranking, O(n log n) SipHash evaluations, than from the walk,
// about k²/2 samples of a few evaluations each: past a list of about
// 300 of 4,000 slots, and only past the walk's stack.
func wholeRanking(k int, n uint32) bool {
	return k > chooseKStack && uint64(k)*uint64(k) > 4*uint64(n)*uint64(bits.Len32(n))
}

// ranking returns key's whole ranking of the slots 0 to n-1, the one
// chooseKIter enumerates, in O(n log n) SipHash evaluations instead of the
// walk's O(n²) samples.
//
// It builds the ranking of n slots from that of none, adding slot m to the
// ranking of m slots: the ranking of m+1 slots without slot m is the
// ranking of m (the crate's consistency in n), so slot m goes in at the
// position it holds among m+1 slots. That position is the least j for
// which slot m is in the first j+1 (prefixes are sets: see chooseKSet),
// and the first j+1 slots' largest is sequence i's sample below m+1 for
// some i <= j, so the position is the least i whose sample below m+1 is
// m: whose consistent hash below m+1-i is m-i. Those are the points x of
// sequence i's consistent hash with x+1 = the bound: x = 0 (below 1 there
// is nothing else) and, in each range [bit, 2·bit) of a bit set in the
// sequence's mask, each draw lower than every draw before it (chooseKPrev
// returns the first draw below its bound). A sequence has about log₂ n of
// them, each found once, so every slot's position costs O(n log n) in
// all. The slots are then placed by their positions, last added first,
// each at the position-th place not yet taken (a Fenwick tree): O(n log n).
func (c *chooseKBuf) ranking(key sip13, n uint32) []uint32 {
	c.pos = slices.Grow(c.pos[:0], int(n))[:n]
	const unset = ^uint32(0)
	for i := range c.pos {
		c.pos[i] = unset
	}
	set := func(m uint64, i uint32) {
		if c.pos[m] == unset {
			c.pos[m] = i
		}
	}
	for i := uint32(0); i < n; i++ {
		b := key
		b.write(uint64(i))
		lim := uint64(n - i) // points x of sequence i with x + i < n
		set(uint64(i), i)    // x = 0
		mask := b.finish() & (1<<bits.Len64(lim-1) - 1)
		for mask != 0 {
			bit := mask & -mask
			mask ^= bit
			if bit >= lim {
				break
			}
			seq := b
			seq.write(bit)
			seq.write(chooseKSeqConst)
			low := seq.finish()&(bit-1) + bit
			if low < lim {
				set(low+uint64(i), i)
			}
			for {
				seq.write(chooseKSeqConst)
				r := seq.finish() & (2*bit - 1)
				if r&bit == 0 {
					break
				}
				if r < low {
					if low = r; r < lim {
						set(r+uint64(i), i)
					}
				}
			}
		}
	}
	// Place the slots, last added first: slot m takes the pos[m]-th
	// place (from 0) of those the slots added after it left.
	c.free = slices.Grow(c.free[:0], int(n)+1)[:n+1]
	for i := range c.free {
		c.free[i] = uint32(i & -i) // every place free
	}
	c.rank = slices.Grow(c.rank[:0], int(n))[:n]
	top := uint32(1) << (bits.Len32(n) - 1)
	for m := int(n) - 1; m >= 0; m-- {
		want, at := c.pos[m]+1, uint32(0) // the want-th free place, 1-based
		for step := top; step > 0; step >>= 1 {
			if next := at + step; next <= n && c.free[next] < want {
				at = next
				want -= c.free[next]
			}
		}
		c.rank[at] = uint32(m) // place at+1, 1-based
		for j := at + 1; j <= n; j += j & -j {
			c.free[j]--
		}
	}
	return c.rank
}

var chooseKScratch = sync.Pool{New: func() any { return new(chooseKBuf) }}

func (c *chooseKBuf) set(key sip13, n uint32, k int) []uint64 {
	c.a = chooseKSet(c.a[:0], &c.h, key, uint64(n), k)
	return c.a
}

func (c *chooseKBuf) prev(key sip13, n uint32, k int) []uint64 {
	c.b = chooseKSet(c.b[:0], &c.h, key, uint64(n), k)
	return c.b
}

// chooseKSet returns the first k slots of key's ranking of n slots, as a
// sorted set, as the crate's new_with_k computes it: the largest is the
// highest of sequences 0..k-1's samples below n, s; the rest are the first
// k-1 for the bound s, for which only the sequences whose sample was s
// change. A heap keeps the sequences' samples, so the whole set costs
// about 2k samples and O(k log k) steps.
func chooseKSet(dst []uint64, h *sampleHeap, key sip13, n uint64, k int) []uint64 {
	h.s = h.s[:0]
	for i := range k {
		h.s = append(h.s, sample{chooseKSample(key, uint64(i), n), uint32(i)})
	}
	for i := len(h.s)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
	out := slices.Grow(dst, k)[:k]
	for c := k; c >= 1; c-- {
		// The top among sequences below c; those at c or above are stale.
		for h.s[0].seq >= uint32(c) {
			h.pop()
		}
		s := h.s[0].v
		out[c-1] = s
		for len(h.s) > 0 && h.s[0].v == s {
			x := h.pop()
			if x.seq < uint32(c-1) {
				h.push(sample{chooseKSample(key, uint64(x.seq), s), x.seq})
			}
		}
	}
	return out
}

// sample is one sequence's current sample; sampleHeap is a max-heap of
// them by value.
type sample struct {
	v   uint64
	seq uint32
}

type sampleHeap struct{ s []sample }

func (h *sampleHeap) push(x sample) {
	h.s = append(h.s, x)
	for i := len(h.s) - 1; i > 0; {
		p := (i - 1) / 2
		if h.s[p].v >= h.s[i].v {
			break
		}
		h.s[p], h.s[i] = h.s[i], h.s[p]
		i = p
	}
}

func (h *sampleHeap) pop() sample {
	x := h.s[0]
	last := len(h.s) - 1
	h.s[0] = h.s[last]
	h.s = h.s[:last]
	h.down(0)
	return x
}

func (h *sampleHeap) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(h.s) {
			return
		}
		if r := l + 1; r < len(h.s) && h.s[r].v > h.s[l].v {
			l = r
		}
		if h.s[i].v >= h.s[l].v {
			return
		}
		h.s[i], h.s[l] = h.s[l], h.s[i]
		i = l
	}
}

// ChooseK places keys with a [ChooseKEngine]: node i of the order given to
// NewChooseK is slot i, and a key goes to the node of the first working
// slot of its consistent ranking ([AppendChooseK] of hash(key)); its top-k
// is the first k working slots of that ranking.
//
// Any node can leave: Remove moves only the removed node's keys, evenly
// over the rest, and Add moves about 1/(n+1) of the keys to the new node,
// all from the others. Unlike JumpBackAnchor's, Memento's and Anchor's,
// its placement does not depend on the order of removals: the same
// working slots give the same placement and the same engine state, so
// removals applied in different orders by different processes agree.
// Which node holds which slot is still the shared state: every process
// must hold the same members in the same slots, for example by storing the
// engine's MarshalBinary bytes beside the member list (Nodes, in slot
// order) and rebuilding with NewChooseKFrom; [Fingerprint] covers both.
// Nodes must have equal weights.
//
// Its top-k lists are its strength: AppendTopK is prefix-stable, led by
// Lookup, and each list as a set is a uniform choice of k members, at
// O(k²) cost without looking at every node. Its lookups cost one hash and
// a few SipHash-1-3 evaluations, more than JumpBackAnchor's; with most
// slots vacant they grow as (n/w) log(n/w) for w working of n slots (see
// ChooseKEngine). Memory: the node list by slot, and the engine.
//
// A ChooseK is immutable and safe for concurrent use. Nodes are reported
// in slot order. The zero ChooseK, like a nil *ChooseK, is empty: lookups
// return the zero Node, Len is 0, and Add builds a placer with the default
// options.
type ChooseK struct {
	slots[ChooseKEngine, *ChooseKEngine] // the engine, the members by slot, the options
}

var (
	_ Placer        = (*ChooseK)(nil)
	_ Fingerprinter = (*ChooseK)(nil)
)

// NewChooseK builds a ChooseK placer whose slot i is nodes[i], none
// vacant. It uses WithHasher and ignores the other options. It fails as
// [NewJump] does: if nodes is empty, an ID is empty or repeated, a weight
// is negative, NaN or infinite, or the weights differ (ErrInvalidWeight);
// more than 2^24 nodes fail with ErrTooLarge. O(n log n).
func NewChooseK(nodes []Node, opts ...Option) (*ChooseK, error) {
	e, err := NewChooseKEngine(len(nodes))
	if err != nil {
		return nil, err
	}
	return NewChooseKFrom(e, nodes, opts...)
}

// NewChooseKFrom builds the ChooseK placer with engine e whose working
// slots, in ascending order, are nodes: the placer another process built
// with the same nodes (its Nodes()) and the same engine (its Engine(),
// sent as MarshalBinary's bytes). It fails as NewChooseK does, and with
// ErrInvalidState if len(nodes) is not e.Len(). e is copied. O(n log n).
func NewChooseKFrom(e ChooseKEngine, nodes []Node, opts ...Option) (*ChooseK, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	s, err := newSlots[ChooseKEngine](e.Clone(), nodes, cfg)
	return wrap(&ChooseK{s}, err)
}

// Lookup returns the node of key's first working slot. No allocation.
func (p *ChooseK) Lookup(key []byte) Node {
	if p.empty() {
		return Node{}
	}
	return p.nodes[p.e.Bucket(p.cfg.hasher.sum(key))]
}

// LookupString is Lookup for a string key.
func (p *ChooseK) LookupString(key string) Node {
	if p.empty() {
		return Node{}
	}
	return p.nodes[p.e.Bucket(p.cfg.hasher.sumString(key))]
}

// AppendTopK appends up to k distinct nodes for key: the nodes of the
// first k working slots of its ranking, Lookup's first. A shorter list is
// a prefix of a longer one, and each list as a set is a uniform choice of
// k members. Cost: O(k²) SipHash evaluations while few vacant slots are
// met (see ChooseKEngine.AppendBuckets); no allocation for k <= 16 when
// dst has room.
func (p *ChooseK) AppendTopK(dst []Node, key []byte, k int) []Node {
	if p.empty() {
		return dst
	}
	return p.appendTopK(dst, p.cfg.hasher.sum(key), k)
}

// AppendTopKString is AppendTopK for a string key.
func (p *ChooseK) AppendTopKString(dst []Node, key string, k int) []Node {
	if p.empty() {
		return dst
	}
	return p.appendTopK(dst, p.cfg.hasher.sumString(key), k)
}

func (p *ChooseK) appendTopK(dst []Node, h uint64, k int) []Node {
	return appendRanked(&p.e, dst, h, min(max(k, 0), p.e.Len()), func(s int) Node { return p.nodes[s] })
}

// Nodes returns the members in slot order.
func (p *ChooseK) Nodes() []Node {
	if p.empty() {
		return nil
	}
	return p.members()
}

// Len returns the number of members.
func (p *ChooseK) Len() int {
	if p.empty() {
		return 0
	}
	return p.e.Len()
}

// Stateful reports true: members keep numbered slots, the order given to
// the constructor numbers them, and a membership change must be derived
// from the last placer, not rebuilt from a list (see [Algorithm.Stateful]
// and [IsStateful]).
func (p *ChooseK) Stateful() bool { return true }

// Engine returns a copy of p's engine, whose MarshalBinary is the state to
// share: with p.Nodes(), what NewChooseKFrom needs to rebuild p.
func (p *ChooseK) Engine() ChooseKEngine {
	if p.empty() {
		return ChooseKEngine{}
	}
	return p.e.Clone()
}

// Add returns a ChooseK with the given nodes added in order, each in the
// lowest vacant slot, else in a new last slot. Each takes about 1/(new n)
// of the keys, all from the others. The nodes must be new and of the
// members' weight. O(n); p is unchanged.
func (p *ChooseK) Add(nodes ...Node) (*ChooseK, error) {
	if p.empty() {
		return NewChooseK(nodes)
	}
	s, err := p.added(nodes)
	return wrap(&ChooseK{s}, err)
}

// Remove returns a ChooseK without the given nodes: only their keys move,
// evenly over the nodes that stay, and the result does not depend on the
// order of ids. It fails with ErrUnknownNode if an ID is not a member, and
// with ErrNoNodes if no node would remain. O(n); p is unchanged.
func (p *ChooseK) Remove(ids ...string) (*ChooseK, error) {
	if p.empty() {
		return nil, removeFromEmpty(ids)
	}
	s, err := p.removed(ids)
	return wrap(&ChooseK{s}, err)
}

// Replace returns a ChooseK in which n takes the slot of the node with ID
// id: only that node's keys move, to n. n must have the members' weight
// and an ID not otherwise in use; it may keep id. It fails with
// ErrUnknownNode if id is not a member. O(n); p is unchanged.
func (p *ChooseK) Replace(id string, n Node) (*ChooseK, error) {
	if p.empty() {
		return nil, replaceInEmpty(id)
	}
	s, err := p.replaced(id, n)
	return wrap(&ChooseK{s}, err)
}

// with is Derive for a ChooseK: see edit.derive.
func (p *ChooseK) with(nodes []Node) (Placer, error) {
	if p.empty() {
		return placer(NewChooseK(nodes))
	}
	s, err := p.derived(nodes)
	return placer(&ChooseK{s}, err)
}

// Fingerprint returns the digest [Fingerprint] reports for p: "choosek-"
// and 16 hex digits over the engine's state, the members in slot order
// and the Hasher, or FingerprintNone for an empty placer.
func (p *ChooseK) Fingerprint() string {
	if p.empty() {
		return FingerprintNone
	}
	st, _ := p.e.MarshalBinary()
	return fingerprintSlots("choosek", st, p.Nodes(), p.cfg.hasher)
}

// empty reports whether p is nil or the zero ChooseK.
func (p *ChooseK) empty() bool { return p == nil || p.e.Len() <= 0 }
