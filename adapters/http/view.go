package chashhttp

import (
	"reflect"
	"sync"
	"time"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/balance"
)

// view is the placement requests use now: all the backends, and live, the
// ones not cooling down after a dial error (all of them when none or
// every one is).
type view struct {
	all   chash.Placer
	live  chash.Placer
	until time.Time // when the first cooldown ends; zero if none
	// draining are the backends that keep their share of the load bound
	// although requests do not choose them: cooling down while they still
	// run requests. When the last of those ends, the view is rebuilt
	// without the share (see release).
	draining map[string]bool
}

// view returns the current view, rebuilding it when a cooldown has ended,
// a draining backend has finished its requests or the Holder has swapped
// placers.
func (r *Router) view() *view {
	v := r.cur.Load()
	p := current(r.src)
	stale := r.dirty.Load() || !v.until.IsZero() && time.Now().After(v.until)
	if !stale && same(p, v.all) {
		return v
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if v = r.cur.Load(); r.dirty.Load() || !v.until.IsZero() && time.Now().After(v.until) || !same(p, v.all) {
		r.rebuildLocked(p, time.Now())
	}
	return r.cur.Load()
}

// same reports whether a and b are one placer. Placers of a type that is
// not comparable are taken to be unchanged.
func same(a, b chash.Placer) bool {
	ta := reflect.TypeOf(a)
	if ta != reflect.TypeOf(b) {
		return false
	}
	return ta == nil || !ta.Comparable() || a == b
}

// markDown leaves backend id out for the cooldown.
func (r *Router) markDown(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	r.down[id] = now.Add(r.cooldown)
	r.rebuildLocked(current(r.src), now)
}

// release ends a lease, and marks the view for a rebuild if it was the
// last one on a draining backend.
func (r *Router) release(l balance.Lease) {
	if !l.Release() {
		return
	}
	if v := r.cur.Load(); len(v.draining) > 0 && v.draining[l.Node().ID] && r.bal.Load(l.Node().ID) == 0 {
		r.dirty.Store(true)
	}
}

func (r *Router) rebuildLocked(all chash.Placer, now time.Time) {
	r.dirty.Store(false)
	v := &view{all: all, live: all}
	nodes := all.Nodes()
	members := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		members[n.ID] = true
	}
	var out map[string]bool
	for id, t := range r.down {
		switch {
		case !now.Before(t) || !members[id]:
			delete(r.down, id)
		default:
			if out == nil {
				out = make(map[string]bool)
			}
			out[id] = true
			if v.until.IsZero() || t.Before(v.until) {
				v.until = t
			}
		}
	}
	if len(out) == len(nodes) {
		out = nil // leaving every backend out would leave none
	}
	if out != nil {
		v.live = newLiveView(all, out, nil)
	}
	if r.bal != nil {
		v.draining = r.setBalancerLocked(all, out)
	}
	r.cur.Store(v)
}

// setBalancerLocked gives the balancer the membership of every backend,
// keyed by its ID, so that the leases a backend holds stay counted
// against it whatever happens to it: requests choose the backends not in
// out, in their preference order; a backend in out (cooling down) that
// still runs requests keeps its share of the bound (it is returned, as
// draining), and one that runs none has weight 0, which takes no request;
// a backend that has left the placer but still runs requests stays with
// weight 0 until they end, so that if it comes back its count is intact.
func (r *Router) setBalancerLocked(all chash.Placer, out map[string]bool) map[string]bool {
	var draining map[string]bool
	nodes := all.Nodes()
	plain := out == nil
	members := make(map[string]bool, len(nodes))
	for i, n := range nodes {
		members[n.ID] = true
		if !(n.Weight > 0) {
			nodes[i].Weight, plain = 1, false // a placer's weight 0 means 1
		}
		if out[n.ID] {
			plain = false
			if r.bal.Load(n.ID) > 0 {
				if draining == nil {
					draining = make(map[string]bool)
				}
				draining[n.ID] = true
			} else {
				nodes[i].Weight = 0
			}
		}
	}
	if prev := r.bal.Placer(); prev != nil {
		for _, n := range prev.Nodes() {
			if !members[n.ID] && r.bal.Load(n.ID) > 0 {
				members[n.ID] = true
				nodes = append(nodes, chash.Node{ID: n.ID})
				plain = false
			}
		}
	}
	if plain {
		_ = r.bal.SetPlacer(all) // all has nodes
	} else {
		_ = r.bal.SetPlacer(newLiveView(all, out, nodes)) // some node has weight > 0
	}
	return draining
}

// liveView is a placement restricted to some of its nodes: a key's order
// is the full order without the ones left out, so leaving a backend out
// moves only its own keys, each to its next choice. Its members (Nodes)
// are the nodes of the order, unless given: the balancer's view also
// lists backends that requests do not choose.
type liveView struct {
	all   chash.Placer
	out   map[string]bool // left out of the order
	nodes []chash.Node
}

var orderBufs = sync.Pool{New: func() any { return new([]chash.Node) }}

func newLiveView(all chash.Placer, out map[string]bool, nodes []chash.Node) *liveView {
	v := &liveView{all: all, out: out, nodes: nodes}
	if nodes == nil {
		for _, n := range all.Nodes() {
			if !out[n.ID] {
				v.nodes = append(v.nodes, n)
			}
		}
	}
	return v
}

func (v *liveView) Lookup(key []byte) chash.Node {
	if n := v.all.Lookup(key); !v.out[n.ID] {
		return n
	}
	return v.first(key, "", true)
}

func (v *liveView) LookupString(key string) chash.Node {
	if n := v.all.LookupString(key); !v.out[n.ID] {
		return n
	}
	return v.first(nil, key, false)
}

func (v *liveView) first(kb []byte, ks string, bytes bool) chash.Node {
	bp := v.order(kb, ks, bytes)
	defer orderBufs.Put(bp)
	for _, n := range *bp {
		if !v.out[n.ID] {
			return n
		}
	}
	return chash.Node{}
}

// order is the full placement's whole order for the key (a shorter top-k
// is not promised to be a prefix of a longer one), in a pooled buffer.
func (v *liveView) order(kb []byte, ks string, bytes bool) *[]chash.Node {
	bp := orderBufs.Get().(*[]chash.Node)
	if bytes {
		*bp = v.all.AppendTopK((*bp)[:0], kb, v.all.Len())
	} else {
		*bp = v.all.AppendTopKString((*bp)[:0], ks, v.all.Len())
	}
	return bp
}

func (v *liveView) AppendTopK(dst []chash.Node, key []byte, k int) []chash.Node {
	return v.appendTopK(dst, key, "", true, k)
}

func (v *liveView) AppendTopKString(dst []chash.Node, key string, k int) []chash.Node {
	return v.appendTopK(dst, nil, key, false, k)
}

func (v *liveView) appendTopK(dst []chash.Node, kb []byte, ks string, bytes bool, k int) []chash.Node {
	if k <= 0 {
		return dst
	}
	bp := v.order(kb, ks, bytes)
	defer orderBufs.Put(bp)
	start := len(dst)
	for _, n := range *bp {
		if len(dst)-start == k {
			break
		}
		if !v.out[n.ID] {
			dst = append(dst, n)
		}
	}
	return dst
}

func (v *liveView) Nodes() []chash.Node { return append([]chash.Node(nil), v.nodes...) }

func (v *liveView) Len() int { return len(v.nodes) }
