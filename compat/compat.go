package compat

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sync"
	"unsafe"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/internal/place"
)

// This file holds what the compatibility placers (compat_*.go) share: node
// checks that keep the caller's order, a sorted ring of points with its
// search and walk, a score-ordered top-k, and a no-copy view of strings.

// compatNodes validates nodes for a compatibility placer named system and
// returns a copy in the given order with zero weights replaced by 1. If
// maxWeight is positive, weights must be whole numbers up to it; if it is
// 1, every weight must be 1 (the system has no weights).
func compatNodes(system string, nodes []chash.Node, maxWeight float64) ([]chash.Node, error) {
	ns, err := chash.CheckNodes(nodes)
	if err != nil {
		return nil, fmt.Errorf("%w (%s)", err, system)
	}
	for _, n := range ns {
		switch {
		case maxWeight == 1 && n.Weight != 1:
			return nil, fmt.Errorf("%w: node %q has weight %v: %s has no weights", chash.ErrInvalidWeight, n.ID, n.Weight, system)
		case maxWeight > 0 && (n.Weight != math.Trunc(n.Weight) || n.Weight > maxWeight):
			return nil, fmt.Errorf("%w: node %q has weight %v: %s needs a whole number from 1 to %v", chash.ErrInvalidWeight, n.ID, n.Weight, system, maxWeight)
		}
	}
	return ns, nil
}

// dupRule says which of several points at one position a ring keeps.
type dupRule uint8

const (
	keepAll   dupRule = iota // keep every point; a search finds the earliest node's
	keepFirst                // keep the point of the node listed first
	keepLast                 // keep the point of the node listed last
)

// pointRing is a sorted ring of points: pos ascending, and owner[i] the
// index of the node that owns pos[i]. A key belongs to the first point at
// or after its hash, wrapping to point 0.
type pointRing struct {
	pos   []uint64
	owner []uint32
}

// newPointRing sorts points by position, then by node index, and applies
// rule to points that share a position.
func newPointRing(points []point, rule dupRule) pointRing {
	slices.SortFunc(points, comparePoints)
	if rule != keepAll {
		out := points[:0]
		for i, p := range points {
			if i > 0 && p.pos == points[i-1].pos {
				if rule == keepLast {
					out[len(out)-1] = p
				}
				continue
			}
			out = append(out, p)
		}
		points = out
	}
	r := pointRing{pos: make([]uint64, len(points)), owner: make([]uint32, len(points))}
	for i, p := range points {
		r.pos[i], r.owner[i] = p.pos, p.node
	}
	return r
}

// search returns the index of the first point at or after h, or 0 when h
// is past the last point. O(log points).
func (r *pointRing) search(h uint64) int {
	lo, hi := 0, len(r.pos)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if r.pos[mid] < h {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo == len(r.pos) {
		return 0
	}
	return lo
}

// appendWalk appends up to k distinct nodes met walking clockwise from
// point i: the ring's failover order. Nodes that own no point (weights too
// small for the ring's size) follow in list order, so that k >= Len
// appends every node.
func (r *pointRing) appendWalk(dst []chash.Node, nodes []chash.Node, i, k int) []chash.Node {
	k = place.ClampK(k, len(nodes))
	start := len(dst)
	seen := place.NewPicked(len(nodes), k)
	for step := 0; step < len(r.pos) && len(dst)-start < k; step++ {
		j := int(r.owner[i])
		if take(seen, j, nodes[j].ID, dst[start:]) {
			dst = place.Append(dst, &nodes[j])
		}
		if i++; i == len(r.pos) {
			i = 0
		}
	}
	for j := 0; j < len(nodes) && len(dst)-start < k; j++ {
		if take(seen, j, nodes[j].ID, dst[start:]) {
			dst = place.Append(dst, &nodes[j])
		}
	}
	seen.Release()
	return dst
}

// appendByScore appends up to k nodes in descending order of score, ties
// to the node listed first: the order of a highest-random-weight choice
// that keeps the first of equal scores. O(n × k) for short lists, and past
// place.BigK O(n log n): every node scored once and sorted (Caddy's
// top-4,000 of 4,000 took 418 ms by selection). Neither allocates in the
// steady state.
func appendByScore(dst []chash.Node, nodes []chash.Node, k int, score func(i int) uint64) []chash.Node {
	k = place.ClampK(k, len(nodes))
	if k > place.BigK {
		return appendSorted(dst, nodes, k, score)
	}
	var prevScore uint64
	prev := -1
	for ; k > 0; k-- {
		best := -1
		var bestScore uint64
		for i := range nodes {
			s := score(i)
			// Candidates rank strictly after the previous pick.
			if prev >= 0 && (s > prevScore || (s == prevScore && i <= prev)) {
				continue
			}
			if best < 0 || s > bestScore {
				best, bestScore = i, s
			}
		}
		dst = place.Append(dst, &nodes[best])
		prev, prevScore = best, bestScore
	}
	return dst
}

// scored is a node's index and score, for appendSorted.
type scored struct {
	score uint64
	i     int
}

var scoredBufs = sync.Pool{New: func() any { return new([]scored) }}

// appendSorted is appendByScore for long lists: it scores every node once
// and sorts by score, descending, then by index.
func appendSorted(dst []chash.Node, nodes []chash.Node, k int, score func(i int) uint64) []chash.Node {
	buf := scoredBufs.Get().(*[]scored)
	all := (*buf)[:0]
	for i := range nodes {
		all = append(all, scored{score(i), i})
	}
	slices.SortFunc(all, func(a, b scored) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return cmp.Compare(a.i, b.i)
	})
	for _, s := range all[:k] {
		dst = place.Append(dst, &nodes[s.i])
	}
	*buf = all
	scoredBufs.Put(buf)
	return dst
}

// point is a ring point: a position and the index of its node.
type point struct {
	pos  uint64
	node uint32
}

// comparePoints orders points by position, then node index.
func comparePoints(a, b point) int {
	if c := cmp.Compare(a.pos, b.pos); c != 0 {
		return c
	}
	return cmp.Compare(a.node, b.node)
}

// take reports whether node i (ID id) is not yet among chosen, the nodes
// appended so far, and records it in p.
func take(p place.Picked, i int, id string, chosen []chash.Node) bool {
	if p.Scans() {
		return absent(chosen, id)
	}
	return p.Take(i)
}

// absent reports whether no node in chosen has the given ID.
func absent(chosen []chash.Node, id string) bool {
	return !slices.ContainsFunc(chosen, func(n chash.Node) bool { return n.ID == id })
}

// byID orders nodes by ID.
func byID(a, b chash.Node) int { return cmp.Compare(a.ID, b.ID) }

// stringBytes views s as bytes, without copying it, for a function that
// only reads them (crc32.ChecksumIEEE, the placers' Lookup).
func stringBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }
