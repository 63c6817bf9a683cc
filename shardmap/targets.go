package shardmap

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// targets are what a fresh build gives each node: its fair shares, real
// and rounded, of replicas and primaries.
type targets struct {
	replicas, primaries []int     // by node: a fresh build's counts
	fair, fairPrimaries []float64 // by node: the shares they round
	perClass            [][]int   // by class, by node: replicas of the class
	perClassPrimaries   [][]int   // by class, by node: primaries of the class
}

// targets computes each node's fair share, class by class (the resident
// ones first, the default last, each within the bounds the others left):
//   - zones: a class's P_k·R replicas are shared among its zones in
//     proportion to their weight, no zone above P_k·(R−need+1) (a zone
//     can hold only so many replicas of a partition that must span need
//     zones) nor the sum of its nodes' bounds, and every zone at least
//     P_k when each partition must span them all; with ZoneReplicas a
//     zone holds exactly P_k·r;
//   - nodes: a zone's replicas are shared among its nodes in proportion
//     to weight, none above its bound or P_k;
//   - primaries: P_k are shared among the class's nodes in proportion to
//     weight, none above its replicas, none below its pins.
//
// Each share is rounded to an integer, largest remainders first, so that
// the counts sum exactly. O(n log n) per class.
func (l *layout) targets() (*targets, error) {
	n := len(l.nodes)
	t := &targets{replicas: make([]int, n), primaries: make([]int, n), fair: make([]float64, n), fairPrimaries: make([]float64, n),
		perClass: make([][]int, len(l.classes)), perClassPrimaries: make([][]int, len(l.classes))}
	room := slices.Clone(l.bound)
	pins := make([][]int, len(l.classes))
	for _, pin := range l.spec.Pins {
		k := l.classOf(pin.Partition)
		if pins[k] == nil {
			pins[k] = make([]int, n)
		}
		pins[k][indexByID(l.nodes, pin.Node)]++
	}
	for step := range l.classes {
		k := (step + 1) % len(l.classes) // the resident classes first
		c := &l.classes[k]
		reps, prims, err := l.classTargets(c, room, pins[k], t)
		if err != nil {
			return nil, err
		}
		t.perClass[k], t.perClassPrimaries[k] = reps, prims
		for i := range reps {
			room[i] -= reps[i]
			t.replicas[i] += reps[i]
			t.primaries[i] += prims[i]
		}
	}
	return t, nil
}

// classTargets returns class c's replicas and primaries by node, within
// the bounds' room left.
func (l *layout) classTargets(c *class, room, pins []int, t *targets) (reps, prims []int, err error) {
	n := len(l.nodes)
	reps, prims = make([]int, n), make([]int, n)
	if c.size == 0 {
		return reps, prims, nil
	}
	zone, err := l.zoneTotals(c, room, pins)
	if err != nil {
		return nil, nil, err
	}
	var members []int32
	for j, d := range c.domains {
		nodes := l.domNodes[d]
		w, lo, hi := make([]float64, len(nodes)), make([]float64, len(nodes)), make([]float64, len(nodes))
		for x, i := range nodes {
			w[x], hi[x] = l.nodes[i].Weight, float64(min(room[i], c.size))
			if pins != nil {
				lo[x] = float64(pins[i])
			}
		}
		share := waterfill(w, lo, hi, float64(zone[j]))
		counts := apportion(share, lo, hi, zone[j], l.tiesOf(nodes))
		for x, i := range nodes {
			reps[i] = counts[x]
			t.fair[i] += share[x]
		}
		members = append(members, nodes...)
	}
	w, lo, hi := make([]float64, len(members)), make([]float64, len(members)), make([]float64, len(members))
	for x, i := range members {
		w[x], hi[x] = l.nodes[i].Weight, float64(reps[i])
		if pins != nil {
			lo[x] = float64(pins[i])
		}
	}
	share := waterfill(w, lo, hi, float64(c.size))
	counts := apportion(share, lo, hi, c.size, l.tiesOf(members))
	for x, i := range members {
		prims[i] = counts[x]
		t.fairPrimaries[i] += share[x]
	}
	return reps, prims, nil
}

// zoneTotals returns the replicas of class c each of its domains holds.
func (l *layout) zoneTotals(c *class, room, pins []int) ([]int, error) {
	s := l.spec
	R := s.Replicas
	nd := len(c.domains)
	w, lo, hi := make([]float64, nd), make([]float64, nd), make([]float64, nd)
	ties := make([]uint64, nd)
	capacity := 0
	for j, d := range c.domains {
		sum, pinned := 0, 0
		for _, i := range l.domNodes[d] {
			w[j] += l.nodes[i].Weight
			sum += min(room[i], c.size)
			if pins != nil {
				pinned += pins[i]
			}
		}
		ties[j] = l.seeds[l.domNodes[d][0]]
		if c.exact != nil {
			want := c.size * c.exact[d]
			if sum < want {
				return nil, fmt.Errorf("%w: load bound: zone %q must hold %d replicas (%d of each of %d partitions) and its nodes' bounds (c=%v) leave room for %d",
					ErrConstraint, l.domZone[d], want, c.exact[d], c.size, s.LoadFactor, sum)
			}
			lo[j], hi[j] = float64(want), float64(want)
			continue
		}
		hi[j] = float64(min(sum, c.size*c.maxPer[d]))
		if c.need == nd {
			lo[j] = float64(c.size) // each partition spans every zone
		}
		lo[j] = max(lo[j], float64(pinned))
		capacity += int(hi[j])
	}
	want := c.size * R
	if c.exact == nil && capacity < want {
		return nil, fmt.Errorf("%w: distinct zones: %d partitions × %d replicas over %d zones need room for %d replicas within the load bounds (c=%v), the zones have %d",
			ErrConstraint, c.size, R, nd, want, s.LoadFactor, capacity)
	}
	for j := range lo {
		if lo[j] > hi[j] {
			return nil, fmt.Errorf("%w: load bound: zone %q must hold %v replicas and its nodes' bounds (c=%v) leave room for %v",
				ErrConstraint, l.domZone[c.domains[j]], lo[j], s.LoadFactor, hi[j])
		}
	}
	return apportion(waterfill(w, lo, hi, float64(want)), lo, hi, want, ties), nil
}

// tiesOf returns the tie-breaking scores of nodes: their ID hashes.
func (l *layout) tiesOf(nodes []int32) []uint64 {
	out := make([]uint64, len(nodes))
	for x, i := range nodes {
		out[x] = l.seeds[i]
	}
	return out
}

// waterfill returns x with x_i = clamp(λ·w_i, lo_i, hi_i) and Σx = total,
// for the λ that makes it so (bisection, O(n) a step, 200 steps at most):
// shares in proportion to weight, capped and floored. It needs Σlo ≤
// total ≤ Σhi; outside that it returns lo or hi.
func waterfill(w, lo, hi []float64, total float64) []float64 {
	x := make([]float64, len(w))
	fill := func(lambda float64) float64 {
		sum := 0.0
		for i := range w {
			x[i] = min(max(lambda*w[i], lo[i]), hi[i])
			sum += x[i]
		}
		return sum
	}
	a, b := 0.0, 0.0
	for i := range w {
		if w[i] > 0 {
			b = max(b, hi[i]/w[i])
		}
	}
	if fill(b) <= total {
		return x
	}
	for range 200 {
		mid := a + (b-a)/2
		if mid <= a || mid >= b {
			break
		}
		if fill(mid) < total {
			a = mid
		} else {
			b = mid
		}
	}
	fill(b)
	return x
}

// apportion rounds shares x to integers summing to total, each within
// [lo_i, hi_i] and, where it can, floor or ceiling of x_i: the floors,
// then one more for the largest remainders (ties by tie, highest first).
// O(n log n).
func apportion(x, lo, hi []float64, total int, tie []uint64) []int {
	n := make([]int, len(x))
	sum := 0
	for i, v := range x {
		n[i] = min(max(int(math.Floor(v)), int(math.Ceil(lo[i]))), int(math.Floor(hi[i])))
		sum += n[i]
	}
	order := make([]int, len(x))
	for i := range order {
		order[i] = i
	}
	rem := func(i int) float64 { return x[i] - float64(n[i]) }
	slices.SortFunc(order, func(a, b int) int {
		if c := cmp.Compare(rem(b), rem(a)); c != 0 {
			return c
		}
		return cmp.Compare(tie[b], tie[a])
	})
	for sum < total {
		moved := false
		for _, i := range order {
			if sum < total && float64(n[i]) < hi[i] {
				n[i]++
				sum++
				moved = true
			}
		}
		if !moved {
			break
		}
	}
	for sum > total {
		moved := false
		for j := len(order) - 1; j >= 0; j-- {
			if i := order[j]; sum > total && float64(n[i]) > lo[i] {
				n[i]--
				sum--
				moved = true
			}
		}
		if !moved {
			break
		}
	}
	return n
}
