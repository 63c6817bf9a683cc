package shardmap

import "slices"

// lower moves replicas from node v until it holds at most top, each to
// the eligible node furthest below its target that has room (below its
// window's top unless anyRoom): primaries first while v has more than its
// share of them. When no node below its window's top can take one, a node
// at the top takes it and is lowered at once in turn, up to three links
// down: a chain through nodes that share no partition.
func (rb *rebalancer) lower(v int32, top int, anyRoom bool) { rb.lowerChain(v, top, anyRoom, 0) }

func (rb *rebalancer) lowerChain(v int32, top int, anyRoom bool, depth int) {
	var buf [maxMapReplicas]int32
	receiver := func(sl int, slack int) int32 {
		p := sl / rb.R
		if sl%rb.R == 0 && rb.l.pin(p) == v {
			return -1
		}
		reps := buf[:0]
		for _, i := range rb.reps(p) {
			if i != v && i >= 0 {
				reps = append(reps, i)
			}
		}
		if to := rb.bestFor(p, reps); to >= 0 && (anyRoom || rb.cnt[to] < rb.high[to]+slack) {
			return to
		}
		return -1
	}
	for rb.cnt[v] > top {
		slack := 0
		sl := rb.pickSlot(v, rb.prim[v] > rb.t.primaries[v], func(sl int) bool { return receiver(sl, 0) >= 0 })
		if sl < 0 && !anyRoom && depth < 3 {
			slack = 1
			sl = rb.pickSlot(v, rb.prim[v] > rb.t.primaries[v], func(sl int) bool { return receiver(sl, 1) >= 0 })
		}
		if sl < 0 {
			return
		}
		to := receiver(sl, slack)
		rb.clear(sl)
		rb.set(sl, to)
		rb.lost[sl/rb.R] = false
		if rb.cnt[to] > rb.high[to] {
			rb.lowerChain(to, rb.high[to], false, depth+1)
		}
	}
}

// raise moves replicas to node u until it holds target−tolerance: from
// the nodes of its zone furthest above their targets, then, while its
// zone holds less than the zone's targets, from other zones' (a donor in
// a zone above its targets may then drop one below its window; a later
// pass raises it from its zone-mates). A donor left below its window is
// raised at once, from elsewhere, up to three links down: a chain of
// moves through nodes that share no partition. It reports whether it
// moved any.
func (rb *rebalancer) raise(u int32) bool { return rb.raiseChain(u, 0) }

func (rb *rebalancer) raiseChain(u int32, depth int) bool {
	d := rb.l.dom[u]
	if d < 0 || rb.cnt[u] >= rb.low[u] {
		return false
	}
	var tried []int32
	moved := false
	for rb.cnt[u] < rb.low[u] {
		v := rb.donor(&rb.overNodes[d], u, tried, 0)
		if short := rb.overDomKey[d] < 0; v < 0 && short {
			// Other zones: those above their targets first, then any
			// donor above its window, then donors at its bottom (a later
			// pass raises them from their zone-mates); at last a
			// zone-mate at its bottom, to be raised across zones.
			for _, try := range []struct {
				cross, anyZone bool
				slack          int
			}{{true, false, 0}, {true, true, 0}, {true, true, 1}, {false, false, 1}} {
				if try.cross {
					v = rb.crossDonor(d, u, tried, try.anyZone, try.slack)
				} else {
					v = rb.donor(&rb.overNodes[d], u, tried, try.slack)
				}
				if v >= 0 {
					break
				}
			}
		}
		if v < 0 {
			return moved
		}
		if rb.donate(v, u) {
			moved = true
			if rb.cnt[v] < rb.low[v] && depth < 3 {
				rb.raiseChain(v, depth+1)
			}
		} else {
			tried = append(tried, v)
		}
	}
	return moved
}

// donor returns the node of heap h furthest above its target that can
// spare a replica (it stays at or above target−tolerance−slack), other
// than u and tried, or -1.
func (rb *rebalancer) donor(h *heap, u int32, tried []int32, slack int) int32 {
	var parked []int32
	found := int32(-1)
	for {
		v := h.top()
		if v < 0 || rb.cnt[v] <= rb.low[v]-slack {
			break
		}
		if v == u || slices.Contains(tried, v) {
			h.remove(v)
			parked = append(parked, v)
			continue
		}
		found = v
		break
	}
	for _, v := range parked {
		h.push(v)
	}
	return found
}

// crossDonor returns a donor in another zone, one whose total is above
// its targets' unless anyZone, or -1.
func (rb *rebalancer) crossDonor(d, u int32, tried []int32, anyZone bool, slack int) int32 {
	var parked []int32
	found := int32(-1)
	for {
		e := rb.overDoms.top()
		if e < 0 || !anyZone && rb.overDomKey[e] <= 0 {
			break
		}
		if e != d {
			if found = rb.donor(&rb.overNodes[e], u, tried, slack); found >= 0 {
				break
			}
		}
		rb.overDoms.remove(e)
		parked = append(parked, e)
	}
	for _, e := range parked {
		rb.overDoms.push(e)
	}
	return found
}

// donate moves one of v's replicas to u: a primary if u lacks primaries
// and v has more than its share, otherwise a secondary. It reports
// whether v had one that u may take.
func (rb *rebalancer) donate(v, u int32) bool {
	var buf [maxMapReplicas]int32
	wantPrimary := rb.prim[u] < rb.t.primaries[u] && rb.prim[v] > rb.t.primaries[v]
	sl := rb.pickSlot(v, wantPrimary, func(sl int) bool { return rb.canReplace(sl, u, buf[:0]) })
	if sl < 0 {
		return false
	}
	rb.clear(sl)
	rb.set(sl, u)
	rb.lost[sl/rb.R] = false
	return true
}

// canReplace reports whether node u may take slot sl's replica.
func (rb *rebalancer) canReplace(sl int, u int32, buf []int32) bool {
	p := sl / rb.R
	v := rb.slot[sl]
	if sl%rb.R == 0 && rb.l.pin(p) == v {
		return false
	}
	reps := rb.reps(p)
	if slices.Contains(reps, u) {
		return false
	}
	for _, i := range reps {
		if i != v {
			buf = append(buf, i)
		}
	}
	c := &rb.l.classes[rb.l.classOf(p)]
	if rb.l.dom[u] == rb.l.dom[v] {
		return true
	}
	return c.exact == nil && rb.fits(c, buf, u)
}
