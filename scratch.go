package chash

import "sync"

// bigK is the list length above which top-k walks track the nodes they
// have appended in a bitmap instead of scanning the list, and rendezvous
// scoring sorts all candidates instead of selecting them in batches: below
// it a scan is cheaper, above it the scans would make k close to Len cost
// O(Len²).
const bigK = 32

// picked records which nodes, by index, a top-k walk has appended.
type picked struct {
	set *[]uint64 // nil: scan the appended nodes
}

var bitmaps = sync.Pool{New: func() any { return new([]uint64) }}

// newPicked returns a record for a walk appending k of n nodes. Past bigK
// it takes a bitmap from a pool, so that steady-state walks do not
// allocate; release returns it.
func newPicked(n, k int) picked {
	if k <= bigK {
		return picked{}
	}
	b := bitmaps.Get().(*[]uint64)
	words := (n + 63) / 64
	if cap(*b) < words {
		*b = make([]uint64, words)
	}
	*b = (*b)[:words]
	clear(*b)
	return picked{set: b}
}

// take reports whether node i (ID id) is not yet among chosen, the nodes
// appended so far, and records it.
func (p picked) take(i int, id string, chosen []Node) bool {
	if p.set == nil {
		return absent(chosen, id)
	}
	s := *p.set
	w, bit := i/64, uint64(1)<<(i%64)
	if s[w]&bit != 0 {
		return false
	}
	s[w] |= bit
	return true
}

func (p picked) release() {
	if p.set != nil {
		bitmaps.Put(p.set)
	}
}

// candidates is a pool of score buffers for rendezvous top-k past bigK.
var candidates = sync.Pool{New: func() any { return new([]candidate) }}
