package shardmap

import (
	"fmt"
	"math"
	"slices"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/internal/hashing"
)

// mapBuilder holds a shard map under construction.
type mapBuilder struct {
	spec   Spec
	nodes  []chash.Node
	dom    []int // failure domain of each node
	bound  []int
	fair   []float64
	count  []int
	seeds  []uint64
	parts  [][]int32 // replicas of each partition, primary first
	pinned []int32   // pinned primary of each partition, or -1
	prim   []int     // primaries of each node, while levelling
	need   int       // distinct domains each partition must span
}

func buildShardMap(prev *Map, nodes []chash.Node, spec Spec) (*Map, error) {
	ns, spec, err := checkMapInput(nodes, spec)
	if err != nil {
		return nil, err
	}
	if prev != nil && prev.spec.Partitions != spec.Partitions {
		return nil, fmt.Errorf("%w: rebalancing %d partitions into %d: the partition count cannot change", chash.ErrInvalidOption, prev.spec.Partitions, spec.Partitions)
	}
	b, err := newMapBuilder(ns, spec)
	if err != nil {
		return nil, err
	}
	b.keep(prev)
	b.applyPins()
	b.fixDomains()
	b.fixBounds()
	if err := b.fill(); err != nil {
		return nil, err
	}
	b.level()
	assign := make([]int32, 0, spec.Partitions*spec.Replicas)
	for _, reps := range b.parts {
		assign = append(assign, reps...)
	}
	version := uint64(1)
	if prev != nil {
		version = prev.version + 1
	}
	if err := checkMap(spec, ns, assign); err != nil {
		return nil, err // a safety net: the steps above should never fail it
	}
	return newMap(spec, version, ns, assign), nil
}

func newMapBuilder(ns []chash.Node, spec Spec) (*mapBuilder, error) {
	b := &mapBuilder{spec: spec, nodes: ns, bound: mapBounds(spec, ns),
		dom: make([]int, len(ns)), fair: make([]float64, len(ns)), count: make([]int, len(ns)),
		seeds: make([]uint64, len(ns)), parts: make([][]int32, spec.Partitions), pinned: make([]int32, spec.Partitions)}
	live, domains := mapDomains(ns, b.dom)
	if live < spec.Replicas {
		return nil, fmt.Errorf("%w: distinct nodes: %d replicas need %d nodes of positive weight, have %d (in a shard map weight 0 drains a node)", ErrConstraint, spec.Replicas, spec.Replicas, live)
	}
	b.need = min(spec.Replicas, domains)
	total := 0.0
	for _, n := range ns {
		total += n.Weight
	}
	for i, n := range ns {
		b.fair[i] = float64(spec.Partitions*spec.Replicas) * n.Weight / total
		b.seeds[i] = hashing.XX{}.Sum64String(n.ID)
	}
	for p := range b.pinned {
		b.pinned[p] = -1
	}
	for _, pin := range spec.Pins {
		b.pinned[pin.Partition] = int32(indexByID(ns, pin.Node))
	}
	return b, b.checkCapacity()
}

// mapDomains numbers the failure domains of the nodes of positive weight
// into dom and returns how many such nodes and domains there are.
func mapDomains(ns []chash.Node, dom []int) (live, domains int) {
	ids := map[string]int{}
	for i, n := range ns {
		dom[i] = -1
		if n.Weight == 0 {
			continue
		}
		live++
		key := "zone:" + n.Zone
		if n.Zone == "" {
			key = "node:" + n.ID
		}
		d, ok := ids[key]
		if !ok {
			d = len(ids)
			ids[key] = d
		}
		dom[i] = d
	}
	return live, len(ids)
}

// checkCapacity refuses specs that no placement can meet: pins above a
// bound, or too little room in the zones a partition must spread over.
func (b *mapBuilder) checkCapacity() error {
	pins := make([]int, len(b.nodes))
	for _, x := range b.pinned {
		if x >= 0 {
			if pins[x]++; pins[x] > b.bound[x] {
				return fmt.Errorf("%w: pins: node %q is pinned more than its bound of %d replicas", ErrConstraint, b.nodes[x].ID, b.bound[x])
			}
		}
	}
	// A partition holds at most R-need+1 replicas in one domain.
	perDom := map[int]int{}
	for i, d := range b.dom {
		if d >= 0 {
			perDom[d] += b.bound[i]
		}
	}
	room, most := 0, b.spec.Partitions*(b.spec.Replicas-b.need+1)
	for _, c := range perDom {
		room += min(c, most)
	}
	if want := b.spec.Partitions * b.spec.Replicas; room < want {
		return fmt.Errorf("%w: distinct zones: %d partitions × %d replicas over %d zones need room for %d replicas within the load bounds (c=%v), the zones have %d",
			ErrConstraint, b.spec.Partitions, b.spec.Replicas, len(perDom), want, b.spec.LoadFactor, room)
	}
	return nil
}

// keep starts from the previous map's replicas on nodes that remain and
// have positive weight.
func (b *mapBuilder) keep(prev *Map) {
	if prev == nil {
		return
	}
	r := prev.spec.Replicas
	for p := range b.parts {
		for _, old := range prev.assign[p*r : p*r+r] {
			i := int32(indexByID(b.nodes, prev.nodes[old].ID))
			if i >= 0 && b.nodes[i].Weight > 0 && len(b.parts[p]) < b.spec.Replicas {
				b.parts[p] = append(b.parts[p], i)
				b.count[i]++
			}
		}
	}
}

// applyPins makes each pinned node its partition's primary: a role change
// if it holds a replica, otherwise a new replica in front.
func (b *mapBuilder) applyPins() {
	for p, x := range b.pinned {
		if x < 0 {
			continue
		}
		reps := b.parts[p]
		if j := slices.Index(reps, x); j >= 0 {
			copy(reps[1:j+1], reps[:j])
			reps[0] = x
			continue
		}
		reps = slices.Insert(reps, 0, x)
		b.count[x]++
		if len(reps) > b.spec.Replicas {
			b.count[reps[len(reps)-1]]--
			reps = reps[:len(reps)-1]
		}
		b.parts[p] = reps
	}
}

// fixDomains drops the replicas that keep a partition from spanning the
// zones it must, latest first.
func (b *mapBuilder) fixDomains() {
	for p, reps := range b.parts {
		var kept []int32
		for _, i := range reps {
			if b.domainOK(kept, i) {
				kept = append(kept, i)
			} else {
				b.count[i]--
			}
		}
		b.parts[p] = kept
	}
}

// domainOK reports whether node i may join replicas reps and still leave
// room for the partition to span b.need domains.
func (b *mapBuilder) domainOK(reps []int32, i int32) bool {
	spanned, fresh := 0, true
	for j, x := range reps {
		if b.dom[x] == b.dom[i] {
			fresh = false
		}
		if !slices.ContainsFunc(reps[:j], func(y int32) bool { return b.dom[y] == b.dom[x] }) {
			spanned++
		}
	}
	if fresh {
		spanned++
	}
	return spanned+b.spec.Replicas-len(reps)-1 >= b.need
}

// fixBounds drops replicas from nodes above their bound: the last
// replicas of partitions first, never a pinned primary.
func (b *mapBuilder) fixBounds() {
	for i := range b.nodes {
		for pos := b.spec.Replicas - 1; pos >= 0 && b.count[i] > b.bound[i]; pos-- {
			for p, reps := range b.parts {
				if b.count[i] <= b.bound[i] {
					break
				}
				if pos < len(reps) && reps[pos] == int32(i) && !(pos == 0 && b.pinned[p] == int32(i)) {
					b.parts[p] = slices.Delete(reps, pos, pos+1)
					b.count[i]--
				}
			}
		}
	}
}

// fill adds the missing replicas round by round, so that primaries are
// placed (and balanced) before secondaries.
func (b *mapBuilder) fill() error {
	for round := 1; round <= b.spec.Replicas; round++ {
		for p := range b.parts {
			if len(b.parts[p]) >= round {
				continue
			}
			i := b.choose(p, b.parts[p])
			if i < 0 && !b.repair(p) {
				return b.explain(p)
			}
			if i >= 0 {
				b.parts[p] = append(b.parts[p], i)
				b.count[i]++
			}
		}
	}
	return nil
}

// choose returns the eligible node with the most room relative to its fair
// share for a new replica of partition p, or -1.
func (b *mapBuilder) choose(p int, reps []int32) int32 {
	ph := shardHash(p)
	best, bestLoad, bestScore := int32(-1), math.Inf(1), uint64(0)
	for i := range b.nodes {
		x := int32(i)
		if b.count[i] >= b.bound[i] || slices.Contains(reps, x) || !b.domainOK(reps, x) {
			continue
		}
		load, score := float64(b.count[i]+1)/b.fair[i], hashing.Mix64(ph^b.seeds[i])
		if load < bestLoad || load == bestLoad && score > bestScore {
			best, bestLoad, bestScore = x, load, score
		}
	}
	return best
}

// repair makes room for one more replica of p on a full node a by moving
// another partition's replica from a to a node with room.
func (b *mapBuilder) repair(p int) bool {
	reps := b.parts[p]
	for a := range b.nodes {
		x := int32(a)
		if b.bound[a] == 0 || slices.Contains(reps, x) || !b.domainOK(reps, x) {
			continue
		}
		for q, other := range b.parts {
			j := slices.Index(other, x)
			if q == p || j < 0 || j == 0 && b.pinned[q] == x {
				continue
			}
			rest := slices.Delete(slices.Clone(other), j, j+1)
			y := b.choose(q, rest)
			if y < 0 {
				continue
			}
			b.parts[q][j] = y
			b.count[y]++
			b.parts[p] = append(reps, x)
			return true
		}
	}
	return false
}

// explain names the constraint that left partition p short of a replica.
func (b *mapBuilder) explain(p int) error {
	reps, spare := b.parts[p], 0
	for i := range b.nodes {
		if b.bound[i] > 0 && !slices.Contains(reps, int32(i)) && b.domainOK(reps, int32(i)) {
			spare++
		}
	}
	if spare == 0 {
		return fmt.Errorf("%w: distinct zones: partition %d has %d of %d replicas and no node in a zone it may still use", ErrConstraint, p, len(reps), b.spec.Replicas)
	}
	return fmt.Errorf("%w: load bound: partition %d has %d of %d replicas and every eligible node is at its bound ceil(c·P·R·w/W) with c=%v", ErrConstraint, p, len(reps), b.spec.Replicas, b.spec.LoadFactor)
}

// level moves replicas to nodes below the floor of their fair share from
// nodes above their share, where zones allow.
func (b *mapBuilder) level() {
	b.prim = make([]int, len(b.nodes))
	for _, reps := range b.parts {
		b.prim[reps[0]]++
	}
	for u := range b.nodes {
		target := min(int(math.Floor(b.fair[u]+1e-9)), b.bound[u])
		if b.count[u] >= target {
			continue
		}
		start := int(b.seeds[u] % uint64(len(b.parts)))
		for n := 0; n < len(b.parts) && b.count[u] < target; n++ {
			p := (start + n) % len(b.parts)
			if j := b.donor(p, int32(u)); j >= 0 {
				if j == 0 {
					b.prim[b.parts[p][0]]--
					b.prim[u]++
				}
				b.count[b.parts[p][j]]--
				b.parts[p][j] = int32(u)
				b.count[u]++
			}
		}
	}
}

// donor returns the position in partition p of the most loaded replica
// above its fair share that node u may replace, or -1. It takes a primary
// only while u has fewer than its share of primaries, and then prefers
// one, so that a node added takes primaries in proportion too.
func (b *mapBuilder) donor(p int, u int32) int {
	reps := b.parts[p]
	if slices.Contains(reps, u) {
		return -1
	}
	wantPrimary := float64(b.prim[u]) < b.fair[u]/float64(b.spec.Replicas)
	best, bestLoad := -1, 1.0
	for j, v := range reps {
		if j == 0 && (b.pinned[p] == v || !wantPrimary) || best == 0 {
			continue
		}
		load := float64(b.count[v]) / b.fair[v]
		if float64(b.count[v]) <= b.fair[v] || load <= bestLoad {
			continue
		}
		rest := slices.Delete(slices.Clone(reps), j, j+1)
		if b.domainOK(rest, u) {
			best, bestLoad = j, load
		}
	}
	return best
}

// checkMap verifies every constraint of an assignment, naming the first
// one broken. Loading and building both end with it.
func checkMap(spec Spec, ns []chash.Node, assign []int32) error {
	r := spec.Replicas
	if len(assign) != spec.Partitions*r {
		return fmt.Errorf("%w: %d replicas for %d partitions × %d", ErrInvalid, len(assign), spec.Partitions, r)
	}
	dom := make([]int, len(ns))
	_, domains := mapDomains(ns, dom)
	need, bound, count := min(r, domains), mapBounds(spec, ns), make([]int, len(ns))
	for p := 0; p < spec.Partitions; p++ {
		reps := assign[p*r : p*r+r]
		seen := map[int]bool{}
		for j, i := range reps {
			switch {
			case i < 0 || int(i) >= len(ns):
				return fmt.Errorf("%w: partition %d names node %d of %d", ErrInvalid, p, i, len(ns))
			case ns[i].Weight == 0:
				return fmt.Errorf("%w: drain: partition %d has a replica on %q, which is draining", ErrConstraint, p, ns[i].ID)
			case slices.Contains(reps[:j], i):
				return fmt.Errorf("%w: distinct nodes: partition %d has two replicas on %q", ErrConstraint, p, ns[i].ID)
			}
			seen[dom[i]] = true
			count[i]++
		}
		if len(seen) < need {
			return fmt.Errorf("%w: distinct zones: partition %d spans %d zones, want %d", ErrConstraint, p, len(seen), need)
		}
	}
	for i, c := range count {
		if c > bound[i] {
			return fmt.Errorf("%w: load bound: node %q holds %d replicas, above its bound of %d", ErrConstraint, ns[i].ID, c, bound[i])
		}
	}
	for _, pin := range spec.Pins {
		if got := ns[assign[pin.Partition*r]].ID; got != pin.Node {
			return fmt.Errorf("%w: pin: partition %d's primary is %q, pinned to %q", ErrConstraint, pin.Partition, got, pin.Node)
		}
	}
	return nil
}
