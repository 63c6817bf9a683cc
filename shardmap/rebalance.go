package shardmap

import (
	"math"
	"slices"
)

// noRoom is the fill key of a node at its bound.
const noRoom = math.MinInt64

// rebalancer moves a previous map to a new fleet and spec, replica by
// replica:
//
//  1. keep every previous replica on a node of positive weight (slot 0,
//     the primary, stays slot 0; a lost primary leaves a hole there);
//  2. apply the pins, then drop what breaks a rule of the partition's
//     class (a zone it may not use, too many replicas in a zone, too few
//     zones left to span), then replicas above a node's bound;
//  3. fill every hole on the eligible node furthest below its target, and
//     give each partition that lost its primary the replica furthest
//     below its share of primaries;
//  4. raise every node below target−tolerance with replicas of the nodes
//     furthest above their targets, in its zone first (a move within a
//     zone keeps every zone rule), across zones while its zone is short;
//     primaries first while it lacks them and the donor has too many;
//  5. lower every node still above target+tolerance onto the eligible
//     nodes furthest below their targets;
//  6. promote replicas (no data moves) until every node is within the
//     tolerance of its share of primaries, where a promotion, or two in a
//     chain, can do it.
//
// Steps 3 to 5 move max(D, L+E) replicas when the zones let every move
// go where it is needed, the least any placement within the tolerance
// moves: D the replicas the nodes below target−tolerance lack, L those
// lost, E those above target+tolerance (the holes go to the nodes that
// lack most; each raise takes first from a node above the tolerance).
// Nodes are chosen from indexed heaps (per zone, and of zones), replicas
// from per-node lists scanned from a cursor: O(log n) a move.
type rebalancer struct {
	l    *layout
	t    *targets
	R, P int
	tol  int

	slot []int32 // P·R; -1 for a hole
	cnt  []int
	prim []int
	lost []bool // partitions whose primary was lost

	low, high []int // each node's window of replicas

	hold   [][]int32 // each node's slots
	hpos   []int32   // each slot's index in its node's hold
	cursor []int     // each node's scan position in its hold

	heaps bool // whether the pools below are kept up to date
	// fill: per domain a heap of its nodes by target−held (noRoom at the
	// bound); per class a heap of its domains by their best node's key.
	fillKey, fillDomKey []int64
	fillNodes           []heap
	fillDoms            []heap
	// over: per domain a heap of its nodes by held−target; a heap of
	// domains by their total held−target.
	overKey, overDomKey []int64
	overNodes           []heap
	overDoms            heap
	domClasses          [][]int // the classes that may use each domain
}

func newRebalancer(l *layout, t *targets) *rebalancer {
	s := l.spec
	n := len(l.nodes)
	rb := &rebalancer{l: l, t: t, R: s.Replicas, P: s.Partitions, tol: s.Tolerance,
		slot: make([]int32, s.Partitions*s.Replicas), cnt: make([]int, n), prim: make([]int, n),
		lost: make([]bool, s.Partitions), low: make([]int, n), high: make([]int, n),
		hold: make([][]int32, n), hpos: make([]int32, s.Partitions*s.Replicas), cursor: make([]int, n)}
	for i := range rb.slot {
		rb.slot[i] = -1
	}
	for i := range n {
		rb.low[i] = t.replicas[i] - rb.tol
		rb.high[i] = min(t.replicas[i]+rb.tol, l.bound[i])
		rb.hold[i] = make([]int32, 0, min(t.replicas[i]+rb.tol, s.Partitions))
	}
	return rb
}

// rebalance returns the next assignment from prev, or ok false if the
// holes cannot all be filled within the bounds (the caller then builds
// afresh).
func rebalance(l *layout, t *targets, prev *Map) (assign []int32, ok bool) {
	rb := newRebalancer(l, t)
	rb.keep(prev)
	for p := 0; p < rb.P; p++ {
		rb.applyPin(p)
		rb.fixRules(p)
	}
	rb.buildHeaps()
	for v := range rb.cnt {
		rb.lower(int32(v), rb.l.bound[v], true) // straight to nodes with room
	}
	rb.shed()
	if !rb.fillAll() {
		return nil, false
	}
	for p := 0; p < rb.P; p++ {
		if rb.lost[p] {
			rb.choosePrimary(p)
		}
	}
	for range 4 {
		moved := false
		for u := range rb.cnt {
			moved = rb.raise(int32(u)) || moved
		}
		if !moved {
			break
		}
	}
	for v := range rb.cnt {
		rb.lower(int32(v), rb.high[v], false)
	}
	rb.balancePrimaries()
	return rb.slot, true
}

// polishPrimaries brings a fresh build's primaries to their targets
// exactly, where chains of promotions can: the zone-level greedy of a
// build may leave a few off.
func polishPrimaries(l *layout, t *targets, assign []int32) {
	rb := newRebalancer(l, t)
	rb.tol = 0
	off := false
	for sl, i := range assign {
		rb.set(sl, i)
	}
	for i := range rb.prim {
		off = off || rb.prim[i] != t.primaries[i]
	}
	if off {
		rb.balancePrimaries()
		copy(assign, rb.slot)
	}
}

// set puts node i in slot sl.
func (rb *rebalancer) set(sl int, i int32) {
	rb.slot[sl] = i
	rb.hpos[sl] = int32(len(rb.hold[i]))
	rb.hold[i] = append(rb.hold[i], int32(sl))
	rb.cnt[i]++
	if sl%rb.R == 0 {
		rb.prim[i]++
	}
	rb.update(i)
}

// clear empties slot sl.
func (rb *rebalancer) clear(sl int) {
	i := rb.slot[sl]
	h := rb.hold[i]
	at, last := rb.hpos[sl], len(h)-1
	h[at] = h[last]
	rb.hpos[h[at]] = at
	rb.hold[i] = h[:last]
	rb.cnt[i]--
	if sl%rb.R == 0 {
		rb.prim[i]--
		rb.lost[sl/rb.R] = true
	}
	rb.slot[sl] = -1
	rb.update(i)
}

// swap exchanges the nodes of two slots of one partition (a promotion
// when one is slot 0): no replica moves.
func (rb *rebalancer) swap(a, b int) {
	x, y := rb.slot[a], rb.slot[b]
	rb.slot[a], rb.slot[b] = y, x
	rb.hpos[a], rb.hpos[b] = rb.hpos[b], rb.hpos[a]
	if x >= 0 {
		rb.hold[x][rb.hpos[b]] = int32(b)
	}
	if y >= 0 {
		rb.hold[y][rb.hpos[a]] = int32(a)
	}
	if a%rb.R == 0 {
		rb.promoted(y, x)
	}
	if b%rb.R == 0 {
		rb.promoted(x, y)
	}
}

// promoted moves a primary's count from node from to node to.
func (rb *rebalancer) promoted(to, from int32) {
	if from >= 0 {
		rb.prim[from]--
	}
	if to >= 0 {
		rb.prim[to]++
	}
}

// reps returns partition p's slots.
func (rb *rebalancer) reps(p int) []int32 { return rb.slot[p*rb.R : p*rb.R+rb.R] }

// keep starts from prev's replicas on nodes of positive weight: the
// primary in slot 0, the secondaries after it in their order.
func (rb *rebalancer) keep(prev *Map) {
	r := prev.spec.Replicas
	to := make([]int32, len(prev.nodes))
	for x, n := range prev.nodes {
		to[x] = int32(indexByID(rb.l.nodes, n.ID))
		if to[x] >= 0 && rb.l.nodes[to[x]].Weight == 0 {
			to[x] = -1
		}
	}
	for p := 0; p < rb.P; p++ {
		next := 1
		for j, old := range prev.assign[p*r : p*r+r] {
			i := to[old]
			if i < 0 {
				continue
			}
			switch {
			case j == 0:
				rb.set(p*rb.R, i)
			case next < rb.R:
				rb.set(p*rb.R+next, i)
				next++
			}
		}
		if rb.slot[p*rb.R] < 0 {
			rb.lost[p] = true
		}
	}
}

// applyPin makes partition p's pinned node its primary: a promotion if it
// holds a replica, otherwise a new replica in slot 0, the previous primary
// moved to a free slot or dropped.
func (rb *rebalancer) applyPin(p int) {
	x := rb.l.pin(p)
	if x < 0 {
		return
	}
	reps := rb.reps(p)
	if reps[0] == x {
		return
	}
	if j := slices.Index(reps, x); j > 0 {
		rb.swap(p*rb.R, p*rb.R+j)
		return
	}
	if old := reps[0]; old >= 0 {
		rb.clear(p * rb.R)
		if j := slices.Index(reps, -1); j > 0 {
			rb.set(p*rb.R+j, old)
		}
	}
	rb.set(p*rb.R, x)
	rb.lost[p] = false
}

// fixRules drops partition p's replicas that break its class's rules,
// keeping the earliest slots.
func (rb *rebalancer) fixRules(p int) {
	c := &rb.l.classes[rb.l.classOf(p)]
	reps := rb.reps(p)
	var kept [maxMapReplicas]int32
	n := 0
	for j, i := range reps {
		if i < 0 {
			continue
		}
		if rb.fits(c, kept[:n], i) {
			kept[n] = i
			n++
		} else {
			rb.clear(p*rb.R + j)
		}
	}
}

// fits reports whether node i may join partial replicas reps of a
// partition of class c: its zone allowed, room for it in the zone, and
// the partition still able to span the zones it must.
func (rb *rebalancer) fits(c *class, reps []int32, i int32) bool {
	d := rb.l.dom[i]
	if !c.allowed[d] {
		return false
	}
	same, spanned := 0, 0
	for x, j := range reps {
		if j == i {
			return false
		}
		if rb.l.dom[j] == d {
			same++
		}
		first := true
		for _, k := range reps[:x] {
			if rb.l.dom[k] == rb.l.dom[j] {
				first = false
				break
			}
		}
		if first {
			spanned++
		}
	}
	if same >= c.maxPer[d] {
		return false
	}
	if same == 0 {
		spanned++
	}
	return spanned+rb.R-len(reps)-1 >= c.need
}

// held returns partition p's replicas without its holes.
func (rb *rebalancer) held(p int, buf []int32) []int32 {
	buf = buf[:0]
	for _, i := range rb.reps(p) {
		if i >= 0 {
			buf = append(buf, i)
		}
	}
	return buf
}

// shed drops replicas from every node above its bound: secondaries
// first, never a pinned primary.
func (rb *rebalancer) shed() {
	for v := range rb.cnt {
		for rb.cnt[v] > rb.l.bound[v] {
			sl := rb.pickSlot(int32(v), false, func(sl int) bool {
				return !(sl%rb.R == 0 && rb.l.pin(sl/rb.R) == int32(v))
			})
			if sl < 0 {
				break
			}
			rb.clear(sl)
		}
	}
}

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

// pickSlot scans node v's slots from its cursor for one that ok accepts,
// a primary one (slot 0) if primary is set, otherwise a secondary one,
// taking the other kind if the first 64 acceptable candidates are all of
// it or the whole list was scanned. It returns -1 if none is acceptable.
func (rb *rebalancer) pickSlot(v int32, primary bool, ok func(sl int) bool) int {
	h := rb.hold[v]
	fallback, seen := -1, 0
	for range len(h) {
		if rb.cursor[v] >= len(h) {
			rb.cursor[v] = 0
		}
		sl := int(h[rb.cursor[v]])
		rb.cursor[v]++
		if !ok(sl) {
			continue
		}
		if (sl%rb.R == 0) == primary {
			return sl
		}
		if fallback < 0 {
			fallback = sl
		}
		if seen++; seen >= 64 {
			break
		}
	}
	return fallback
}

// buildHeaps sets up the pools of nodes and zones by key.
func (rb *rebalancer) buildHeaps() {
	l := rb.l
	n, nd := len(l.nodes), len(l.domNodes)
	rb.fillKey, rb.overKey = make([]int64, n), make([]int64, n)
	rb.fillDomKey, rb.overDomKey = make([]int64, nd), make([]int64, nd)
	fillPos, overPos := make([]int32, n), make([]int32, n)
	rb.fillNodes, rb.overNodes = make([]heap, nd), make([]heap, nd)
	domTie := make([]uint64, nd)
	for d, nodes := range l.domNodes {
		domTie[d] = l.seeds[nodes[0]]
		rb.fillNodes[d] = heap{pos: fillPos, key: rb.fillKey, tie: l.seeds}
		rb.overNodes[d] = heap{pos: overPos, key: rb.overKey, tie: l.seeds}
		for _, i := range nodes {
			rb.nodeKeys(i)
			rb.fillNodes[d].push(i)
			rb.overNodes[d].push(i)
		}
		rb.fillDomKey[d] = rb.fillKey[rb.fillNodes[d].top()]
	}
	rb.domClasses = make([][]int, nd)
	rb.fillDoms = make([]heap, len(l.classes))
	for k := range l.classes {
		c := &l.classes[k]
		rb.fillDoms[k] = heap{pos: make([]int32, nd), key: rb.fillDomKey, tie: domTie}
		for _, d := range c.domains {
			rb.fillDoms[k].push(d)
			rb.domClasses[d] = append(rb.domClasses[d], k)
		}
	}
	rb.overDoms = heap{pos: make([]int32, nd), key: rb.overDomKey, tie: domTie}
	for d, nodes := range l.domNodes {
		for _, i := range nodes {
			rb.overDomKey[d] += rb.overKey[i]
		}
		rb.overDoms.push(int32(d))
	}
	rb.heaps = true
}

// nodeKeys sets node i's keys from its count.
func (rb *rebalancer) nodeKeys(i int32) {
	target := int64(rb.t.replicas[i])
	rb.fillKey[i] = target - int64(rb.cnt[i])
	if rb.cnt[i] >= rb.l.bound[i] {
		rb.fillKey[i] = noRoom
	}
	rb.overKey[i] = int64(rb.cnt[i]) - target
}

// update brings the pools up to date after node i's count changed.
func (rb *rebalancer) update(i int32) {
	if !rb.heaps {
		return
	}
	d := rb.l.dom[i]
	oldOver := rb.overKey[i]
	rb.nodeKeys(i)
	rb.fillNodes[d].fix(i)
	rb.overNodes[d].fix(i)
	if k := rb.fillKey[rb.fillNodes[d].top()]; k != rb.fillDomKey[d] {
		rb.fillDomKey[d] = k
		for _, c := range rb.domClasses[d] {
			rb.fillDoms[c].fix(d)
		}
	}
	rb.overDomKey[d] += rb.overKey[i] - oldOver
	rb.overDoms.fix(d)
}

// fillAll fills every hole; false if one cannot be filled within the
// bounds.
func (rb *rebalancer) fillAll() bool {
	var buf []int32
	for p := 0; p < rb.P; p++ {
		for j := range rb.R {
			if rb.slot[p*rb.R+j] >= 0 {
				continue
			}
			buf = rb.held(p, buf)
			i := rb.bestFor(p, buf)
			if i < 0 && !rb.repair(p, j, buf) {
				return false
			}
			if i >= 0 {
				rb.set(p*rb.R+j, i)
			}
		}
	}
	return true
}

// repair fills hole j of partition p, held by reps, when every node that
// may take it is at its bound: one such node x hands a replica of another
// partition to a node with room, then takes the hole. It reports whether
// it found such an x. O(n + the slots scanned).
func (rb *rebalancer) repair(p, j int, reps []int32) bool {
	c := &rb.l.classes[rb.l.classOf(p)]
	var buf [maxMapReplicas]int32
	for _, d := range c.domains {
		for _, x := range rb.l.domNodes[d] {
			if rb.cnt[x] == 0 || slices.Contains(reps, x) || !rb.fits(c, reps, x) {
				continue
			}
			receiver := func(sl int) int32 {
				q := sl / rb.R
				if q == p || sl%rb.R == 0 && rb.l.pin(q) == x {
					return -1
				}
				others := buf[:0]
				for _, i := range rb.reps(q) {
					if i != x && i >= 0 {
						others = append(others, i)
					}
				}
				return rb.bestFor(q, others)
			}
			sl := rb.pickSlot(x, false, func(sl int) bool { return receiver(sl) >= 0 })
			if sl < 0 {
				continue
			}
			y := receiver(sl)
			rb.clear(sl)
			rb.set(sl, y)
			rb.lost[sl/rb.R] = false
			rb.set(p*rb.R+j, x)
			return true
		}
	}
	return false
}

// bestFor returns the node furthest below its target, with room, that may
// join partial replicas reps of partition p, or -1.
func (rb *rebalancer) bestFor(p int, reps []int32) int32 {
	k := rb.l.classOf(p)
	c := &rb.l.classes[k]
	doms := &rb.fillDoms[k]
	var parked []int32
	found := int32(-1)
	for found < 0 {
		d := doms.top()
		if d < 0 || rb.fillDomKey[d] == noRoom {
			break
		}
		found = rb.bestIn(c, d, reps)
		if found < 0 {
			doms.remove(d)
			parked = append(parked, d)
		}
	}
	for _, d := range parked {
		doms.push(d)
	}
	return found
}

// bestIn returns the node of domain d furthest below its target, with
// room, that may join reps in class c, or -1.
func (rb *rebalancer) bestIn(c *class, d int32, reps []int32) int32 {
	nodes := &rb.fillNodes[d]
	var parked []int32
	found := int32(-1)
	for {
		i := nodes.top()
		if i < 0 || rb.fillKey[i] == noRoom {
			break
		}
		if slices.Contains(reps, i) {
			nodes.remove(i)
			parked = append(parked, i)
			continue
		}
		if rb.fits(c, reps, i) {
			found = i
		}
		break
	}
	for _, i := range parked {
		nodes.push(i)
	}
	return found
}

// choosePrimary gives partition p, which lost its primary, the replica
// furthest below its share of primaries (the one in slot 0 on a tie).
func (rb *rebalancer) choosePrimary(p int) {
	if rb.l.pin(p) >= 0 {
		return
	}
	reps := rb.reps(p)
	best, bestGap := 0, rb.t.primaries[reps[0]]-(rb.prim[reps[0]]-1)
	for j := 1; j < rb.R; j++ {
		if gap := rb.t.primaries[reps[j]] - rb.prim[reps[j]]; gap > bestGap {
			best, bestGap = j, gap
		}
	}
	if best > 0 {
		rb.swap(p*rb.R, p*rb.R+best)
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

// balancePrimaries promotes replicas until every node is within the
// tolerance of its share of primaries, or no promotion helps: a node u
// with too few takes a primary from a node with too many along the
// shortest chain of promotions (u takes the primary of a partition whose
// primary v takes in turn another's, ...: each node of the chain but the
// ends keeps its count), found by a breadth-first search over the nodes;
// a node with too many hands one over the same way. Each search is
// O(P·R), and the searches stop after a budget of max(64·P·R, 2^22)
// slots scanned.
func (rb *rebalancer) balancePrimaries() {
	q := rb.t.primaries
	over := func(v int32) bool { return rb.prim[v] > q[v] }
	under := func(v int32) bool { return rb.prim[v] < q[v] }
	for range 4 {
		if !rb.directPrimaries() {
			break
		}
	}
	budget := max(64*len(rb.slot), 1<<22)
	for range 4 {
		moved := false
		for u := range rb.prim {
			for budget > 0 && rb.prim[u] < q[u]-rb.tol && rb.promoteChain(int32(u), over, true, &budget) {
				moved = true
			}
			for budget > 0 && rb.prim[u] > q[u]+rb.tol && rb.promoteChain(int32(u), under, false, &budget) {
				moved = true
			}
		}
		if !moved {
			return
		}
	}
}

// directPrimaries makes, in one pass over each node's slots, every
// promotion that moves a primary from a node above the tolerance to one
// below its share, or to a node below the tolerance from one above its
// share. It reports whether it made any. O(P·R).
func (rb *rebalancer) directPrimaries() bool {
	q, moved := rb.t.primaries, false
	for v := range rb.prim {
		if rb.prim[v] <= q[v]+rb.tol {
			continue
		}
		for x := 0; x < len(rb.hold[v]) && rb.prim[v] > q[v]+rb.tol; x++ {
			sl := int(rb.hold[v][x])
			p := sl / rb.R
			if sl%rb.R != 0 || rb.l.pin(p) >= 0 {
				continue
			}
			best := -1
			for j := 1; j < rb.R; j++ {
				if w := rb.slot[sl+j]; rb.prim[w] < q[w] && (best < 0 || q[w]-rb.prim[w] > q[rb.slot[sl+best]]-rb.prim[rb.slot[sl+best]]) {
					best = j
				}
			}
			if best > 0 {
				rb.swap(sl, sl+best)
				moved = true
			}
		}
	}
	for u := range rb.prim {
		for x := 0; x < len(rb.hold[u]) && rb.prim[u] < q[u]-rb.tol; x++ {
			sl := int(rb.hold[u][x])
			p := sl / rb.R
			if v := rb.slot[p*rb.R]; sl%rb.R != 0 && rb.l.pin(p) < 0 && rb.prim[v] > q[v] {
				rb.swap(p*rb.R, sl)
				moved = true
			}
		}
	}
	return moved
}

// promoteChain finds the shortest chain of promotions that gives node u
// one more primary (into) or one fewer (!into) and takes one from, or
// gives one to, a node that end accepts, and applies it. It reports
// whether it found one. Pinned primaries never move.
func (rb *rebalancer) promoteChain(u int32, end func(int32) bool, into bool, budget *int) bool {
	n := len(rb.cnt)
	via := make([]int32, n) // the slot that links each node reached to its parent
	for i := range via {
		via[i] = -1
	}
	parent := make([]int32, n)
	queue := []int32{u}
	via[u] = -2
	for len(queue) > 0 {
		x := queue[0]
		queue = queue[1:]
		for _, sl := range rb.hold[x] {
			*budget--
			p := int(sl) / rb.R
			if rb.l.pin(p) >= 0 || (int(sl)%rb.R == 0) == into {
				continue // into: x must be a secondary; out: x the primary
			}
			var y int32
			var link int32
			if into {
				y, link = rb.slot[p*rb.R], sl // y, the primary, would hand it to x
				if via[y] != -1 {
					continue
				}
				via[y], parent[y] = link, x
				if end(y) {
					rb.applyChain(y, u, via, parent)
					return true
				}
				queue = append(queue, y)
				continue
			}
			for j := 1; j < rb.R; j++ {
				y, link = rb.slot[p*rb.R+j], int32(p*rb.R+j) // x would hand it to y
				if via[y] != -1 {
					continue
				}
				via[y], parent[y] = link, x
				if end(y) {
					rb.applyChain(y, u, via, parent)
					return true
				}
				queue = append(queue, y)
			}
		}
		if *budget <= 0 {
			return false
		}
	}
	return false
}

// applyChain promotes along the chain from y back to u: each link is the
// slot of a secondary that becomes its partition's primary.
func (rb *rebalancer) applyChain(y, u int32, via, parent []int32) {
	for y != u {
		sl := int(via[y])
		rb.swap(sl-sl%rb.R, sl)
		y = parent[y]
	}
}
