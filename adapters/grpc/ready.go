package chashgrpc

import (
	"sync"

	"github.com/keyplace/chash"
)

// readyView is the placement restricted to the endpoints that are READY:
// a key's preference order is the full placement's order with the others
// left out. The bounded-load balance.Balancer runs over it, so an
// endpoint that goes down hands its keys to their next choices without
// moving any other key. Its members (Nodes) are the balancer's: every
// endpoint of the placement, READY or not, with the weights that make the
// load bounds (see balancerViewLocked), so that each keeps its count.
type readyView struct {
	all   chash.Placer
	ready map[string]bool // node ID -> READY
	nodes []chash.Node    // the balancer's members
}

var viewBufs = sync.Pool{New: func() any { return new([]chash.Node) }}

func newReadyView(all chash.Placer, ready map[string]bool, nodes []chash.Node) *readyView {
	return &readyView{all: all, ready: ready, nodes: nodes}
}

func (v *readyView) Lookup(key []byte) chash.Node {
	if n := v.all.Lookup(key); v.ready[n.ID] {
		return n
	}
	return v.first(key, "", true)
}

func (v *readyView) LookupString(key string) chash.Node {
	if n := v.all.LookupString(key); v.ready[n.ID] {
		return n
	}
	return v.first(nil, key, false)
}

// first returns the first ready node in the full order, or the zero Node
// when none is ready.
func (v *readyView) first(kb []byte, ks string, bytes bool) chash.Node {
	bp := v.order(kb, ks, bytes)
	defer viewBufs.Put(bp)
	for _, n := range *bp {
		if v.ready[n.ID] {
			return n
		}
	}
	return chash.Node{}
}

// order returns the full placement's whole order for the key in a pooled
// buffer (a shorter top-k is not promised to be a prefix of a longer
// one), to be put back in viewBufs.
func (v *readyView) order(kb []byte, ks string, bytes bool) *[]chash.Node {
	bp := viewBufs.Get().(*[]chash.Node)
	if bytes {
		*bp = v.all.AppendTopK((*bp)[:0], kb, v.all.Len())
	} else {
		*bp = v.all.AppendTopKString((*bp)[:0], ks, v.all.Len())
	}
	return bp
}

func (v *readyView) AppendTopK(dst []chash.Node, key []byte, k int) []chash.Node {
	return v.appendTopK(dst, key, "", true, k)
}

func (v *readyView) AppendTopKString(dst []chash.Node, key string, k int) []chash.Node {
	return v.appendTopK(dst, nil, key, false, k)
}

// appendTopK keeps the ready nodes of the full order. It does not
// allocate when dst has room.
func (v *readyView) appendTopK(dst []chash.Node, kb []byte, ks string, bytes bool, k int) []chash.Node {
	if k <= 0 || len(v.ready) == 0 {
		return dst
	}
	bp := v.order(kb, ks, bytes)
	start := len(dst)
	for _, n := range *bp {
		if len(dst)-start == k {
			break
		}
		if v.ready[n.ID] {
			dst = append(dst, n)
		}
	}
	viewBufs.Put(bp)
	return dst
}

func (v *readyView) Nodes() []chash.Node { return append([]chash.Node(nil), v.nodes...) }

func (v *readyView) Len() int { return len(v.nodes) }
