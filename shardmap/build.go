package shardmap

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/keyplace/chash/internal/hashing"
)

// builder computes a fresh map that meets its targets exactly, class by
// class, in two levels:
//
//  1. zones: each partition takes its R slots in the class's zones, the
//     zones of largest remaining count first (ties at random), which
//     realises every zone's total exactly whenever the totals can be
//     realised at all (the greedy of the Gale–Ryser theorem: a zone left
//     with as many slots as partitions must appear in each); and picks
//     its primary's zone, the zone furthest behind its primary total;
//  2. nodes: within a zone, the partitions' slots are dealt the nodes'
//     tokens (a node's replicas of the class, its primaries apart),
//     shuffled, so each node gets exactly its count and partitions get
//     random co-replicas; where a partition keeps several replicas in one
//     zone, the zone's nodes of largest remaining count are taken, ties
//     at random.
//
// Every step is O(R) or O(R log R) a partition (O(R·z) where R exceeds
// the z zones, z < 16), so a build is O(P·R·log R + n log n).
type builder struct {
	l      *layout
	t      *targets
	R      int
	assign []int32 // P·R slots, primary first
	fill   []uint8 // the next free secondary slot of each partition
	rnd    rng
}

func build(l *layout, t *targets) ([]int32, error) {
	s := l.spec
	b := &builder{l: l, t: t, R: s.Replicas, assign: make([]int32, s.Partitions*s.Replicas), fill: make([]uint8, s.Partitions)}
	for i := range b.assign {
		b.assign[i] = -1
	}
	for p := range b.fill {
		b.fill[p] = 1
	}
	for k := range l.classes {
		b.rnd = rng{s: hashing.Mix64(s.Seed ^ uint64(k+1)*hashing.Phi)}
		if err := b.buildClass(k); err != nil {
			return nil, err
		}
	}
	for p := 0; p < s.Partitions; p++ {
		b.orderSecondaries(p)
	}
	return b.assign, nil
}

// classPlan is level 1's result for a class: each partition's zones.
type classPlan struct {
	parts []int32 // the class's partitions, pinned ones first
	picks []int32 // R local zone indexes per partition, with repeats
	pd    []int32 // each partition's primary zone (local index)
	qrem  []int   // primaries each zone still owes (negative: over)
}

func (b *builder) buildClass(k int) error {
	l := b.l
	c := &l.classes[k]
	if c.size == 0 {
		return nil
	}
	cp := &classPlan{}
	for _, r := range c.ranges {
		for p := r[0]; p < r[1]; p++ {
			if l.pin(p) >= 0 {
				cp.parts = append(cp.parts, int32(p))
			}
		}
	}
	for _, r := range c.ranges {
		for p := r[0]; p < r[1]; p++ {
			if l.pin(p) < 0 {
				cp.parts = append(cp.parts, int32(p))
			}
		}
	}
	nd := len(c.domains)
	total, prim := make([]int, nd), make([]int, nd)
	for j, d := range c.domains {
		for _, i := range l.domNodes[d] {
			total[j] += b.t.perClass[k][i]
			prim[j] += b.t.perClassPrimaries[k][i]
		}
	}
	cp.picks, cp.pd, cp.qrem = make([]int32, len(cp.parts)*b.R), make([]int32, len(cp.parts)), prim
	var err error
	switch {
	case c.exact != nil:
		err = b.zonesExact(c, cp)
	case c.need == b.R:
		err = b.zonesDistinct(c, cp, total)
	default:
		err = b.zonesAll(c, cp, total)
	}
	if err != nil {
		return err
	}
	b.fixPrimaryZones(c, cp)
	// One pass sorts the slots by zone: primaries, and secondaries with a
	// partition's slots in a zone next to each other.
	prims := make([][]int32, nd)
	secs := make([][]int32, nd)
	for x := range cp.parts {
		picks := cp.picks[x*b.R : x*b.R+b.R]
		primaryLeft := true
		for _, j := range picks {
			if j == cp.pd[x] && primaryLeft {
				prims[j] = append(prims[j], int32(x))
				primaryLeft = false
			} else {
				secs[j] = append(secs[j], int32(x))
			}
		}
	}
	for j := range c.domains {
		if err := b.dealZone(k, c, cp, int32(j), prims[j], secs[j]); err != nil {
			return err
		}
	}
	return nil
}

// localZone returns the local index of node i's domain in class c.
func localZone(c *class, d int32) int32 {
	j, _ := slices.BinarySearch(c.domains, d)
	return int32(j)
}

// choosePrimary returns the zone among picks (local indexes) furthest
// behind its primaries: the largest share of its remaining appearances
// still owed, ties at random. left(j) is zone j's remaining appearances,
// this partition's included.
func (b *builder) choosePrimary(cp *classPlan, picks []int32, left func(j int32) int) int32 {
	best, ties := int32(-1), 0
	for x, j := range picks {
		if slices.Contains(picks[:x], j) {
			continue
		}
		if best < 0 {
			best, ties = j, 1
			continue
		}
		// qrem[j]/left(j) against qrem[best]/left(best)
		a, bb := cp.qrem[j]*left(best), cp.qrem[best]*left(j)
		switch {
		case a > bb:
			best, ties = j, 1
		case a == bb:
			if ties++; b.rnd.below(ties) == 0 {
				best = j
			}
		}
	}
	return best
}

// zonesDistinct is level 1 where each partition spans R distinct zones.
func (b *builder) zonesDistinct(c *class, cp *classPlan, total []int) error {
	q := newCounts(slices.Clone(total))
	buf := make([]int32, 0, b.R)
	for x, p := range cp.parts {
		buf = buf[:0]
		skip := int32(-1)
		if pin := b.l.pin(int(p)); pin >= 0 {
			skip = localZone(c, b.l.dom[pin])
			if q.cnt[skip] == 0 {
				return b.stuck(c, int(p))
			}
			q.dec(skip)
			buf = append(buf, skip)
		}
		buf = q.top(buf, b.R-len(buf), skip, &b.rnd)
		if len(buf) < b.R {
			return b.stuck(c, int(p))
		}
		copy(cp.picks[x*b.R:], buf)
		if skip >= 0 {
			cp.pd[x] = skip
		} else {
			cp.pd[x] = b.choosePrimary(cp, buf, func(j int32) int { return q.cnt[j] + 1 })
		}
		cp.qrem[cp.pd[x]]--
	}
	return nil
}

// zonesAll is level 1 where each partition spans every zone of the class
// (fewer zones than replicas): one slot in each, and the R−z others in the
// zones of largest remaining count that still have room in the partition.
func (b *builder) zonesAll(c *class, cp *classPlan, total []int) error {
	nd := len(c.domains)
	extra := make([]int, nd)
	for j := range extra {
		extra[j] = total[j] - c.size
	}
	used := make([]int, nd)
	all := func(int32) int { return 0 }
	left := len(cp.parts)
	for x, p := range cp.parts {
		picks := cp.picks[x*b.R : x*b.R+b.R]
		for j := range nd {
			picks[j] = int32(j)
			used[j] = 1
		}
		for e := nd; e < b.R; e++ {
			best, ties := -1, 0
			for j := range nd {
				if extra[j] == 0 || used[j] >= c.maxPer[c.domains[j]] {
					continue
				}
				switch {
				case best < 0 || extra[j] > extra[best]:
					best, ties = j, 1
				case extra[j] == extra[best]:
					if ties++; b.rnd.below(ties) == 0 {
						best = j
					}
				}
			}
			if best < 0 {
				return b.stuck(c, int(p))
			}
			picks[e] = int32(best)
			used[best]++
			extra[best]--
		}
		if pin := b.l.pin(int(p)); pin >= 0 {
			cp.pd[x] = localZone(c, b.l.dom[pin])
		} else {
			cp.pd[x] = b.choosePrimary(cp, picks[:nd], func(int32) int { return left })
		}
		_ = all
		cp.qrem[cp.pd[x]]--
		left--
	}
	return nil
}

// zonesExact is level 1 under ZoneReplicas: every partition keeps the
// same replicas in each zone; only its primary's zone is chosen.
func (b *builder) zonesExact(c *class, cp *classPlan) error {
	var layoutPicks []int32
	for j, d := range c.domains {
		for range c.exact[d] {
			layoutPicks = append(layoutPicks, int32(j))
		}
	}
	left := len(cp.parts)
	for x, p := range cp.parts {
		copy(cp.picks[x*b.R:], layoutPicks)
		if pin := b.l.pin(int(p)); pin >= 0 {
			cp.pd[x] = localZone(c, b.l.dom[pin])
		} else {
			cp.pd[x] = b.choosePrimary(cp, layoutPicks, func(int32) int { return left })
		}
		cp.qrem[cp.pd[x]]--
		left--
	}
	return nil
}

// fixPrimaryZones moves primaries from zones that took more than their
// total to zones that took fewer, where a partition holds both: the
// greedy's rare misses.
func (b *builder) fixPrimaryZones(c *class, cp *classPlan) {
	off := false
	for _, q := range cp.qrem {
		off = off || q != 0
	}
	if !off {
		return
	}
	for x, p := range cp.parts {
		jp := cp.pd[x]
		if cp.qrem[jp] >= 0 || b.l.pin(int(p)) >= 0 {
			continue
		}
		for _, j := range cp.picks[x*b.R : x*b.R+b.R] {
			if cp.qrem[j] > 0 {
				cp.pd[x] = j
				cp.qrem[j]--
				cp.qrem[jp]++
				break
			}
		}
	}
}

// dealZone is level 2 for local zone j of class k: its primary slots
// (class positions of the partitions whose primary it holds) and its
// secondary slots (a class position for each, a partition's together) get
// its nodes.
func (b *builder) dealZone(k int, c *class, cp *classPlan, j int32, primSlots, secSlots []int32) error {
	l := b.l
	d := c.domains[j]
	nodes := l.domNodes[d]
	primTok, secTok := make([]int, len(nodes)), make([]int, len(nodes))
	for x, i := range nodes {
		primTok[x] = b.t.perClassPrimaries[k][i]
		secTok[x] = b.t.perClass[k][i] - primTok[x]
	}
	if c.maxPer[d] > 1 {
		return b.dealShared(k, cp, j, nodes, primTok, primSlots, secSlots)
	}
	balanceTokens(primTok, secTok, len(primSlots))
	prims := primSlots[:0:0]
	for _, x := range primSlots {
		p := int(cp.parts[x])
		pin := l.pin(p)
		if pin < 0 {
			prims = append(prims, x)
			continue
		}
		at := slices.Index(nodes, pin)
		switch {
		case primTok[at] > 0:
			primTok[at]--
		case secTok[at] > 0:
			secTok[at]--
			takeToken(secTok, primTok) // one primary token fewer for the others
		default:
			return fmt.Errorf("%w: pins: node %q is pinned to more partitions than its share allows", ErrConstraint, l.nodes[pin].ID)
		}
		b.assign[p*b.R] = pin
	}
	deck := tokens(nodes, primTok)
	if len(deck) != len(prims) {
		return b.tokensOff(d)
	}
	b.rnd.shuffle(deck)
	for y, x := range prims {
		b.assign[int(cp.parts[x])*b.R] = deck[y]
	}
	deck = tokens(nodes, secTok)
	if len(deck) != len(secSlots) {
		return b.tokensOff(d)
	}
	b.rnd.shuffle(deck)
	for y, x := range secSlots {
		b.put(int(cp.parts[x]), deck[y])
	}
	return nil
}

// dealShared is level 2 for a zone that keeps several replicas of a
// partition: each partition takes its slots' distinct nodes among those
// of largest remaining count (ties at random), the partitions of most
// slots first (Gale–Ryser's greedy again), then, if its primary is in the
// zone, the one of its nodes with the most primaries left to take.
func (b *builder) dealShared(k int, cp *classPlan, j int32, nodes []int32, primTok []int, primSlots, secSlots []int32) error {
	l := b.l
	total := make([]int, len(nodes))
	for x, i := range nodes {
		total[x] = b.t.perClass[k][i]
	}
	type run struct{ x, n int32 }
	var runs []run
	add := func(x int32) {
		if len(runs) > 0 && runs[len(runs)-1].x == x {
			runs[len(runs)-1].n++
		} else {
			runs = append(runs, run{x, 1})
		}
	}
	pi, si := 0, 0 // merge the two lists, both in class order
	for pi < len(primSlots) || si < len(secSlots) {
		if si == len(secSlots) || pi < len(primSlots) && primSlots[pi] <= secSlots[si] {
			add(primSlots[pi])
			pi++
		} else {
			add(secSlots[si])
			si++
		}
	}
	slices.SortStableFunc(runs, func(a, bb run) int { return cmp.Compare(bb.n, a.n) })
	q := newCounts(total)
	buf := make([]int32, 0, b.R)
	for _, r := range runs {
		p := int(cp.parts[r.x])
		buf = buf[:0]
		pin, skip := l.pin(p), int32(-1)
		if pin >= 0 && cp.pd[r.x] == j {
			skip = int32(slices.Index(nodes, pin))
			if q.cnt[skip] == 0 {
				return fmt.Errorf("%w: pins: node %q is pinned to more partitions than its share allows", ErrConstraint, l.nodes[pin].ID)
			}
			q.dec(skip)
			buf = append(buf, skip)
		}
		buf = q.top(buf, int(r.n)-len(buf), skip, &b.rnd)
		if len(buf) < int(r.n) {
			return fmt.Errorf("%w: distinct nodes: zone %q cannot hold %d replicas of partition %d on distinct nodes within the targets", ErrConstraint, l.domZone[l.dom[nodes[0]]], r.n, p)
		}
		if cp.pd[r.x] == j {
			best := 0
			if skip < 0 {
				for y := range buf {
					if primTok[buf[y]] > primTok[buf[best]] {
						best = y
					}
				}
			}
			primTok[buf[best]]--
			b.assign[p*b.R] = nodes[buf[best]]
			buf = slices.Delete(buf, best, best+1)
		}
		for _, y := range buf {
			b.put(p, nodes[y])
		}
	}
	return nil
}

// put adds node i as the next secondary of partition p.
func (b *builder) put(p int, i int32) {
	b.assign[p*b.R+int(b.fill[p])] = i
	b.fill[p]++
}

// balanceTokens turns secondary tokens into primary ones, or back, until
// there are want primary tokens: for a zone whose primaries the level-1
// greedy left off its total. It takes from the nodes with the most.
func balanceTokens(primTok, secTok []int, want int) {
	have := 0
	for _, n := range primTok {
		have += n
	}
	for ; have < want; have++ {
		takeToken(primTok, secTok)
	}
	for ; have > want; have-- {
		takeToken(secTok, primTok)
	}
}

// takeToken moves one token to dst from the node with the most in src.
func takeToken(dst, src []int) {
	best := 0
	for x := range src {
		if src[x] > src[best] {
			best = x
		}
	}
	if src[best] > 0 {
		src[best]--
		dst[best]++
	}
}

// tokens lists nodes[x] count[x] times.
func tokens(nodes []int32, count []int) []int32 {
	var out []int32
	for x, n := range count {
		for range n {
			out = append(out, nodes[x])
		}
	}
	return out
}

// orderSecondaries sorts partition p's secondaries by their rendezvous
// score for p, highest first: an order that depends on nothing but the
// partition and the nodes.
func (b *builder) orderSecondaries(p int) {
	reps := b.assign[p*b.R+1 : p*b.R+b.R]
	ph := shardHash(p)
	slices.SortFunc(reps, func(x, y int32) int {
		return cmp.Compare(hashing.Mix64(ph^b.l.seeds[y]), hashing.Mix64(ph^b.l.seeds[x]))
	})
}

// tokensOff reports a zone whose nodes' counts do not add up to its slots:
// a bug, reported rather than a panic.
func (b *builder) tokensOff(d int32) error {
	return fmt.Errorf("%w: zone %q: its nodes' shares do not add up to its replicas", ErrConstraint, b.l.domZone[d])
}

// stuck explains why partition p of class c found no zones.
func (b *builder) stuck(c *class, p int) error {
	return fmt.Errorf("%w: distinct zones: partition %d finds no zone with room among the %d it may use", ErrConstraint, p, len(c.domains))
}
