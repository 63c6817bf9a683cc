// Package place holds the machinery that chash's placers share across
// packages and that is not API: appending to a top-k list, recording what
// a walk has appended, size limits and a nil test.
package place

import (
	"reflect"
	"slices"
	"sync"
)

// MaxPoints bounds any structure sized from weights (a ring's points, a
// lookup table, a server list): 1<<24 entries.
const MaxPoints = 1 << 24

// BigK is the list length above which top-k walks track the nodes they
// have appended in a bitmap instead of scanning the list, and rendezvous
// scoring sorts all candidates instead of selecting them in batches: below
// it a scan is cheaper, above it the scans would make k close to Len cost
// O(Len²).
const BigK = 32

// ClampK returns how many nodes AppendTopK should append for k and n members.
func ClampK(k, n int) int {
	if k <= 0 {
		return 0
	}
	return min(k, n)
}

// Append is append(dst, *n), for every list of nodes a lookup returns.
// Go's append of a Node, five words, copies it through a stack temporary
// written as overlapping 16-byte stores, and the 16-byte load that reads it
// back spans two of them, which the CPU cannot forward from its store
// buffer: it waits for both to reach the cache (the compiler's extra copy
// is golang/go#54613). Here the Node goes straight into dst's array. In
// ten interleaved rounds of the comparison harness's BenchmarkTopK3 this
// made bounded's top-3 16–29% faster and rendezvous's 9–18%. Growth, when
// dst is full, is append's.
func Append[T any](dst []T, n *T) []T {
	if len(dst) == cap(dst) {
		dst = slices.Grow(dst, 1)
	}
	dst = dst[:len(dst)+1]
	dst[len(dst)-1] = *n
	return dst
}

// Picked records which nodes, by index, a top-k walk has appended.
type Picked struct {
	set *[]uint64 // nil: the caller scans the appended nodes
}

var bitmaps = sync.Pool{New: func() any { return new([]uint64) }}

// NewPicked returns a record for a walk appending k of n nodes. Past BigK
// it takes a bitmap from a pool, so that steady-state walks do not
// allocate; Release returns it.
func NewPicked(n, k int) Picked {
	if k <= BigK {
		return Picked{}
	}
	b := bitmaps.Get().(*[]uint64)
	words := (n + 63) / 64
	if cap(*b) < words {
		*b = make([]uint64, words)
	}
	*b = (*b)[:words]
	clear(*b)
	return Picked{set: b}
}

// Scans reports whether the caller must scan the nodes appended so far to
// tell whether a node is new (short lists); otherwise Take answers.
func (p Picked) Scans() bool { return p.set == nil }

// Take reports whether node i is not yet recorded, and records it. It
// must not be called when Scans is true.
func (p Picked) Take(i int) bool {
	s := *p.set
	w, bit := i/64, uint64(1)<<(i%64)
	if s[w]&bit != 0 {
		return false
	}
	s[w] |= bit
	return true
}

// Release returns the bitmap, if any, to the pool.
func (p Picked) Release() {
	if p.set != nil {
		bitmaps.Put(p.set)
	}
}

// IsPrime reports whether n is prime, by trial division (n <= 1<<24 here).
func IsPrime(n int) bool {
	if n < 2 {
		return false
	}
	for d := 2; d*d <= n; d++ {
		if n%d == 0 {
			return false
		}
	}
	return true
}

// IsNil reports whether v is nil or holds a nil pointer (or other nil
// value), such as the *Ring of a failed NewRing stored without checking
// its error. It costs a reflection call and is kept off lookup paths.
func IsNil(v any) bool {
	if v == nil {
		return true
	}
	switch r := reflect.ValueOf(v); r.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan, reflect.Interface:
		return r.IsNil()
	}
	return false
}
