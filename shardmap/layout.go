package shardmap

import (
	"fmt"
	"math"
	"slices"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/internal/hashing"
)

// layout is what a spec makes of a fleet, shared by building, rebalancing,
// checking and summarising a map: failure domains, the classes of
// partitions with their placement rules, and each node's bound.
type layout struct {
	spec     Spec
	nodes    []chash.Node // every member, ascending by ID
	seeds    []uint64     // each node's ID hash under the spec's seed
	dom      []int32      // each node's failure domain; -1 when draining
	domNodes [][]int32    // the live nodes of each domain, ascending
	domZone  []string     // each domain's zone ("" for a node without one)
	classes  []class      // classes[0] is the default; classes[i] the Residency[i-1]
	bound    []int        // each node's bound, at most P
	pinned   []int32      // each partition's pinned primary, or -1; nil without pins
}

// class is a set of partitions under one placement rule.
type class struct {
	ranges  [][2]int // the partitions [lo, hi)
	size    int
	domains []int32 // the live domains it may use, ascending
	allowed []bool  // by domain
	exact   []int   // by domain: the replicas each partition keeps there (ZoneReplicas), or nil
	need    int     // distinct domains each partition spans
	maxPer  []int   // by domain: the most replicas a partition keeps there
	weight  float64 // total weight of its live nodes
}

// newLayout derives the layout of checked nodes (ascending by ID) under a
// checked spec. It fails with ErrConstraint when a class cannot hold R
// replicas on distinct nodes, or pins break a bound or a residency.
func newLayout(ns []chash.Node, spec Spec) (*layout, error) {
	l := &layout{spec: spec, nodes: ns, seeds: make([]uint64, len(ns)), dom: make([]int32, len(ns))}
	h := hashing.XX{Seed: spec.Seed}
	zones := map[string]int32{}
	for i, n := range ns {
		l.seeds[i] = h.Sum64String(n.ID)
		l.dom[i] = -1
		if n.Weight == 0 {
			continue
		}
		d, ok := zones[n.Zone]
		if !ok || n.Zone == "" {
			d = int32(len(l.domNodes))
			l.domNodes = append(l.domNodes, nil)
			l.domZone = append(l.domZone, n.Zone)
			if n.Zone != "" {
				zones[n.Zone] = d
			}
		}
		l.dom[i] = d
		l.domNodes[d] = append(l.domNodes[d], int32(i))
	}
	if err := l.makeClasses(zones); err != nil {
		return nil, err
	}
	l.bounds()
	return l, l.checkPins()
}

// classOf returns the index of partition p's class.
func (l *layout) classOf(p int) int {
	rs := l.spec.Residency
	if len(rs) == 0 {
		return 0
	}
	i, _ := slices.BinarySearchFunc(rs, p, func(r Residency, p int) int {
		switch {
		case r.To <= p:
			return -1
		case r.From > p:
			return 1
		}
		return 0
	})
	if i < len(rs) && rs[i].From <= p && p < rs[i].To {
		return i + 1
	}
	return 0
}

func (l *layout) makeClasses(zones map[string]int32) error {
	s := l.spec
	def := class{}
	at := 0
	for _, r := range s.Residency {
		if at < r.From {
			def.ranges = append(def.ranges, [2]int{at, r.From})
		}
		at = r.To
	}
	if at < s.Partitions {
		def.ranges = append(def.ranges, [2]int{at, s.Partitions})
	}
	all := make([]int32, len(l.domNodes))
	for d := range all {
		all[d] = int32(d)
	}
	if len(s.ZoneReplicas) > 0 {
		exact := make([]int, len(l.domNodes))
		var doms []int32
		for _, z := range s.ZoneReplicas {
			d, ok := zones[z.Zone]
			if !ok || len(l.domNodes[d]) < z.Replicas {
				have := 0
				if ok {
					have = len(l.domNodes[d])
				}
				return fmt.Errorf("%w: zone replicas: zone %q has %d nodes of positive weight for %d replicas of each partition on distinct nodes", ErrConstraint, z.Zone, have, z.Replicas)
			}
			exact[d] = z.Replicas
			doms = append(doms, d)
		}
		slices.Sort(doms)
		def.exact = exact
		if err := l.addClass(def, doms, "the zone replicas"); err != nil {
			return err
		}
	} else if err := l.addClass(def, all, ""); err != nil {
		return err
	}
	for _, r := range s.Residency {
		var doms []int32
		for _, z := range r.Zones {
			if d, ok := zones[z]; ok {
				doms = append(doms, d)
			}
		}
		slices.Sort(doms)
		what := fmt.Sprintf("the residency of partitions [%d, %d) in %v", r.From, r.To, r.Zones)
		if err := l.addClass(class{ranges: [][2]int{{r.From, r.To}}}, doms, what); err != nil {
			return err
		}
	}
	return nil
}

// addClass completes class c over domains doms and appends it. what names
// the class's rule in errors ("" for the default).
func (l *layout) addClass(c class, doms []int32, what string) error {
	R := l.spec.Replicas
	for _, r := range c.ranges {
		c.size += r[1] - r[0]
	}
	c.domains = doms
	c.allowed = make([]bool, len(l.domNodes))
	c.maxPer = make([]int, len(l.domNodes))
	live := 0
	for _, d := range doms {
		c.allowed[d] = true
		live += len(l.domNodes[d])
		for _, i := range l.domNodes[d] {
			c.weight += l.nodes[i].Weight
		}
	}
	if c.exact != nil {
		c.need = len(doms)
		for _, d := range doms {
			c.maxPer[d] = c.exact[d]
		}
		l.classes = append(l.classes, c)
		return nil
	}
	c.need = min(R, len(doms))
	room := 0
	for _, d := range doms {
		c.maxPer[d] = min(R-c.need+1, len(l.domNodes[d]))
		room += c.maxPer[d]
	}
	if live < R || room < R {
		in := ""
		if what != "" {
			in = " in " + what
		}
		return fmt.Errorf("%w: distinct nodes: %d replicas need %d nodes of positive weight%s spread over %d zones, have %d nodes in %d zones (in a shard map weight 0 drains a node)",
			ErrConstraint, R, R, in, min(R, len(doms)), live, len(doms))
	}
	l.classes = append(l.classes, c)
	return nil
}

// bounds sets each node's bound ceil(c·S) for its share S, at most P: for
// a map of one class, S = P·R·w/W; otherwise the sum over the classes
// that may use the node of the class's partitions × the replicas it keeps
// in the node's zone class (R, or the zone's ZoneReplicas) × w over the
// weight of the nodes it may use (the zone's, for ZoneReplicas).
func (l *layout) bounds() {
	s := l.spec
	l.bound = make([]int, len(l.nodes))
	total := 0.0
	for _, n := range l.nodes {
		total += n.Weight
	}
	for i, n := range l.nodes {
		if n.Weight == 0 {
			continue
		}
		var x float64
		if len(l.classes) == 1 && l.classes[0].exact == nil {
			// The tiny margin keeps an exact product from rounding up.
			x = s.LoadFactor*float64(s.Partitions*s.Replicas)*n.Weight/total - 1e-9
		} else {
			share := 0.0
			for _, c := range l.classes {
				d := l.dom[i]
				switch {
				case !c.allowed[d]:
				case c.exact != nil:
					zw := 0.0
					for _, j := range l.domNodes[d] {
						zw += l.nodes[j].Weight
					}
					share += float64(c.size*c.exact[d]) * n.Weight / zw
				default:
					share += float64(c.size*s.Replicas) * n.Weight / c.weight
				}
			}
			x = s.LoadFactor*share - 1e-9
		}
		l.bound[i] = clampInt(math.Ceil(x), s.Partitions)
	}
}

// clampInt converts x to an int in [0, hi], without overflow for any x.
func clampInt(x float64, hi int) int {
	switch {
	case !(x > 0):
		return 0
	case x >= float64(hi):
		return hi
	}
	return int(x)
}

// checkPins records the pins and refuses those above a bound or outside
// their partition's zones.
func (l *layout) checkPins() error {
	if len(l.spec.Pins) == 0 {
		return nil
	}
	l.pinned = make([]int32, l.spec.Partitions)
	for p := range l.pinned {
		l.pinned[p] = -1
	}
	held := make([]int, len(l.nodes))
	for _, pin := range l.spec.Pins {
		x := int32(indexByID(l.nodes, pin.Node))
		l.pinned[pin.Partition] = x
		if !l.classes[l.classOf(pin.Partition)].allowed[l.dom[x]] {
			return fmt.Errorf("%w: pin: partition %d is pinned to %q, outside the zones it may use", ErrConstraint, pin.Partition, pin.Node)
		}
		if held[x]++; held[x] > l.bound[x] {
			return fmt.Errorf("%w: pins: node %q is pinned more than its bound of %d replicas", ErrConstraint, pin.Node, l.bound[x])
		}
	}
	return nil
}

// pin returns partition p's pinned primary, or -1.
func (l *layout) pin(p int) int32 {
	if l.pinned == nil {
		return -1
	}
	return l.pinned[p]
}

// checkMap verifies every constraint of an assignment, naming the first
// one broken: R distinct nodes of positive weight per partition, the
// zones of its class, the bounds, the pins. O(P·R + n).
func (l *layout) checkMap(assign []int32) error {
	s := l.spec
	r := s.Replicas
	if len(assign) != s.Partitions*r {
		return fmt.Errorf("%w: %d replicas for %d partitions × %d", ErrInvalid, len(assign), s.Partitions, r)
	}
	if err := l.checkStructure(assign); err != nil {
		return err
	}
	count := make([]int, len(l.nodes))
	perDom := make([]int, len(l.domNodes))
	for p := 0; p < s.Partitions; p++ {
		reps := assign[p*r : p*r+r]
		c := &l.classes[l.classOf(p)]
		spanned := 0
		for _, i := range reps {
			d := l.dom[i]
			if !c.allowed[d] {
				return fmt.Errorf("%w: zones: partition %d has a replica on %q, in a zone it may not use", ErrConstraint, p, l.nodes[i].ID)
			}
			if perDom[d] == 0 {
				spanned++
			}
			perDom[d]++
			count[i]++
		}
		for _, i := range reps {
			d := l.dom[i]
			if n := perDom[d]; n > c.maxPer[d] || c.exact != nil && n != c.exact[d] {
				return fmt.Errorf("%w: zone replicas: partition %d keeps %d replicas in zone %q, want %s", ErrConstraint, p, n, l.domZone[d], l.perZoneWant(c, d))
			}
		}
		for _, i := range reps {
			perDom[l.dom[i]] = 0
		}
		if spanned < c.need {
			return fmt.Errorf("%w: distinct zones: partition %d spans %d zones, want %d", ErrConstraint, p, spanned, c.need)
		}
	}
	for i, n := range count {
		if n > l.bound[i] {
			return fmt.Errorf("%w: load bound: node %q holds %d replicas, above its bound of %d", ErrConstraint, l.nodes[i].ID, n, l.bound[i])
		}
	}
	for _, pin := range s.Pins {
		if got := l.nodes[assign[pin.Partition*r]].ID; got != pin.Node {
			return fmt.Errorf("%w: pin: partition %d's primary is %q, pinned to %q", ErrConstraint, pin.Partition, got, pin.Node)
		}
	}
	return nil
}

func (l *layout) perZoneWant(c *class, d int32) string {
	if c.exact != nil {
		return fmt.Sprint(c.exact[d])
	}
	return fmt.Sprintf("at most %d", c.maxPer[d])
}

// checkStructure verifies what even an observed map keeps: each partition
// names R distinct members of positive weight.
func (l *layout) checkStructure(assign []int32) error {
	r := l.spec.Replicas
	for p := 0; p < l.spec.Partitions; p++ {
		reps := assign[p*r : p*r+r]
		for j, i := range reps {
			switch {
			case i < 0 || int(i) >= len(l.nodes):
				return fmt.Errorf("%w: partition %d names node %d of %d", ErrInvalid, p, i, len(l.nodes))
			case l.nodes[i].Weight == 0:
				return fmt.Errorf("%w: drain: partition %d has a replica on %q, which is draining", ErrConstraint, p, l.nodes[i].ID)
			case slices.Contains(reps[:j], i):
				return fmt.Errorf("%w: distinct nodes: partition %d has two replicas on %q", ErrConstraint, p, l.nodes[i].ID)
			}
		}
	}
	return nil
}
