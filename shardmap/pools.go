package shardmap

import (
	"math"
	"slices"
)

// noRoom is the fill key of a node at its bound.
const noRoom = math.MinInt64

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
