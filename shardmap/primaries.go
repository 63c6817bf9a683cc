package shardmap

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
