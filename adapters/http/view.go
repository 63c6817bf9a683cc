package chashhttp

import (
	"reflect"
	"sync"
	"time"

	"github.com/keyplace/chash"
)

// view is the placement requests use now: all the backends, and live, the
// ones not cooling down after a dial error (all of them when none or
// every one is).
type view struct {
	all   chash.Placer
	live  chash.Placer
	until time.Time // when the first cooldown ends; zero if none
}

// view returns the current view, rebuilding it when a cooldown has ended
// or the Holder has swapped placers.
func (r *Router) view() *view {
	v := r.cur.Load()
	p := current(r.src)
	stale := !v.until.IsZero() && time.Now().After(v.until)
	if !stale && same(p, v.all) {
		return v
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if v = r.cur.Load(); !v.until.IsZero() && time.Now().After(v.until) || !same(p, v.all) {
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

func (r *Router) rebuildLocked(all chash.Placer, now time.Time) {
	v := &view{all: all, live: all}
	up := make(map[string]bool, all.Len())
	for _, n := range all.Nodes() {
		up[n.ID] = true
	}
	cooling := 0
	for id, t := range r.down {
		switch {
		case !now.Before(t) || !up[id]:
			delete(r.down, id)
		default:
			up[id] = false
			cooling++
			if v.until.IsZero() || t.Before(v.until) {
				v.until = t
			}
		}
	}
	if cooling > 0 && cooling < all.Len() {
		v.live = newLiveView(all, up)
	}
	if r.bal != nil {
		_ = r.bal.SetPlacer(v.live) // live is never empty
	}
	r.cur.Store(v)
}

// liveView is a placement restricted to some of its nodes: a key's order
// is the full order without the others, so leaving a backend out moves
// only its own keys, each to its next choice.
type liveView struct {
	all   chash.Placer
	up    map[string]bool
	nodes []chash.Node
}

var orderBufs = sync.Pool{New: func() any { return new([]chash.Node) }}

func newLiveView(all chash.Placer, up map[string]bool) *liveView {
	v := &liveView{all: all, up: up}
	for _, n := range all.Nodes() {
		if up[n.ID] {
			v.nodes = append(v.nodes, n)
		}
	}
	return v
}

func (v *liveView) Lookup(key []byte) chash.Node {
	if n := v.all.Lookup(key); v.up[n.ID] {
		return n
	}
	return v.first(key, "", true)
}

func (v *liveView) LookupString(key string) chash.Node {
	if n := v.all.LookupString(key); v.up[n.ID] {
		return n
	}
	return v.first(nil, key, false)
}

func (v *liveView) first(kb []byte, ks string, bytes bool) chash.Node {
	bp := v.order(kb, ks, bytes)
	defer orderBufs.Put(bp)
	for _, n := range *bp {
		if v.up[n.ID] {
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
		if v.up[n.ID] {
			dst = append(dst, n)
		}
	}
	return dst
}

func (v *liveView) Nodes() []chash.Node { return append([]chash.Node(nil), v.nodes...) }

func (v *liveView) Len() int { return len(v.nodes) }
