package shardmap

import (
	"math/bits"

	"github.com/keyplace/chash/internal/hashing"
)

// rng is SplitMix64 (Steele, Lea and Flood, OOPSLA 2014): the builder's
// deterministic source of tie-breaking choices, seeded from the spec.
type rng struct{ s uint64 }

func (r *rng) next() uint64 {
	r.s += hashing.Phi
	return hashing.Mix64(r.s)
}

// below returns a number in [0, n), n > 0, by Lemire's multiply-shift
// (the slight bias of a 64-bit draw is immaterial for tie-breaking).
func (r *rng) below(n int) int {
	hi, _ := bits.Mul64(r.next(), uint64(n))
	return int(hi)
}

// shuffle permutes s in place (Fisher–Yates).
func (r *rng) shuffle(s []int32) {
	for i := len(s) - 1; i > 0; i-- {
		j := r.below(i + 1)
		s[i], s[j] = s[j], s[i]
	}
}

// counts is a bucket queue of items by a count that only decreases: the
// items sorted ascending by count, start[c] the first position of count c
// or more. Taking the k items of largest count, ties at random, and
// decrementing each costs O(k) (after an O(n + max) setup), which is what
// lets a build pick R of many zones or nodes per partition in O(R).
type counts struct {
	order []int32 // items ascending by count
	pos   []int32 // each item's position in order
	cnt   []int   // each item's count
	start []int32 // start[c]: the first position whose count is >= c
}

func newCounts(cnt []int) *counts {
	q := &counts{cnt: cnt, pos: make([]int32, len(cnt)), order: make([]int32, len(cnt))}
	hi := 0
	for _, c := range cnt {
		hi = max(hi, c)
	}
	q.start = make([]int32, hi+2)
	for _, c := range cnt {
		q.start[c+1]++
	}
	for c := 1; c < len(q.start); c++ {
		q.start[c] += q.start[c-1]
	}
	next := append([]int32(nil), q.start...)
	for i, c := range cnt {
		q.order[next[c]] = int32(i)
		q.pos[i] = next[c]
		next[c]++
	}
	return q
}

func (q *counts) swap(a, b int32) {
	x, y := q.order[a], q.order[b]
	q.order[a], q.order[b] = y, x
	q.pos[x], q.pos[y] = b, a
}

// dec lowers item's count by one.
func (q *counts) dec(item int32) {
	c := q.cnt[item]
	s := q.start[c]
	q.swap(q.pos[item], s)
	q.start[c]++
	q.cnt[item]--
}

// top appends to dst the k items of largest positive count, other than
// skip (-1 for none), ties chosen at random, and decrements each. It
// returns dst short if fewer than k such items have a positive count.
func (q *counts) top(dst []int32, k int, skip int32, r *rng) []int32 {
	first := len(dst)
	hi := int32(len(q.order)) // positions [hi, n) are taken whole
	for k > 0 && hi > 0 {
		c := q.cnt[q.order[hi-1]]
		if c == 0 {
			break
		}
		lo := q.start[c] // the run of count c is [lo, hi)
		next := lo
		if skip >= 0 && q.pos[skip] >= lo && q.pos[skip] < hi {
			q.swap(q.pos[skip], lo) // park skip at the run's start
			lo++
		}
		if avail := int(hi - lo); avail <= k {
			for p := lo; p < hi; p++ {
				dst = append(dst, q.order[p])
			}
			k -= avail
			hi = next
			continue
		}
		for t := int32(0); t < int32(k); t++ { // k random items to the run's end
			j := lo + int32(r.below(int(hi-lo-t)))
			q.swap(j, hi-1-t)
			dst = append(dst, q.order[hi-1-t])
		}
		k = 0
	}
	for _, it := range dst[first:] {
		q.dec(it)
	}
	return dst
}

// heap is an indexed max-heap of items by key, ties by tie, each item at
// most once: pos[item] is its index in the heap or -1. Several heaps may
// share pos when each item is in at most one of them.
type heap struct {
	items []int32
	pos   []int32
	key   []int64
	tie   []uint64
}

func (h *heap) before(a, b int32) bool {
	ka, kb := h.key[a], h.key[b]
	return ka > kb || ka == kb && h.tie[a] > h.tie[b]
}

func (h *heap) push(it int32) {
	h.pos[it] = int32(len(h.items))
	h.items = append(h.items, it)
	h.up(len(h.items) - 1)
}

// top returns the first item, or -1.
func (h *heap) top() int32 {
	if len(h.items) == 0 {
		return -1
	}
	return h.items[0]
}

// fix restores the order after it's key changed.
func (h *heap) fix(it int32) {
	if i := int(h.pos[it]); i >= 0 {
		if !h.up(i) {
			h.down(i)
		}
	}
}

// remove takes it out; it reports whether it was in.
func (h *heap) remove(it int32) bool {
	i := int(h.pos[it])
	if i < 0 {
		return false
	}
	last := len(h.items) - 1
	h.place(i, h.items[last])
	h.items = h.items[:last]
	h.pos[it] = -1
	if i < last {
		h.fix(h.items[i])
	}
	return true
}

func (h *heap) place(i int, it int32) {
	h.items[i] = it
	h.pos[it] = int32(i)
}

func (h *heap) up(i int) bool {
	it, moved := h.items[i], false
	for i > 0 {
		p := (i - 1) / 2
		if !h.before(it, h.items[p]) {
			break
		}
		h.place(i, h.items[p])
		i, moved = p, true
	}
	h.place(i, it)
	return moved
}

func (h *heap) down(i int) {
	it, n := h.items[i], len(h.items)
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if c+1 < n && h.before(h.items[c+1], h.items[c]) {
			c++
		}
		if !h.before(h.items[c], it) {
			break
		}
		h.place(i, h.items[c])
		i = c
	}
	h.place(i, it)
}
