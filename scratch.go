package chash

import (
	"sync"

	"github.com/keyplace/chash/internal/place"
)

// bigK is place.BigK: past it, top-k walks record appended nodes in a
// bitmap and rendezvous scoring sorts all candidates.
const bigK = place.BigK

// take reports whether node i (ID id) is not yet among chosen, the nodes
// appended so far, and records it in p.
func take(p place.Picked, i int, id string, chosen []Node) bool {
	if p.Scans() {
		return absent(chosen, id)
	}
	return p.Take(i)
}

// candidates is a pool of score buffers for rendezvous top-k past bigK.
var candidates = sync.Pool{New: func() any { return new([]candidate) }}
