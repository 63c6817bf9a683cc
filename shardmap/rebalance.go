package shardmap

import (
	"slices"
)

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
