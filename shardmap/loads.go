package shardmap

import (
	"fmt"
	"slices"

	"github.com/keyplace/chash"
)

// NodeLoad is one member's part of a map, against its fair share.
type NodeLoad struct {
	ID     string  `json:"id"`
	Zone   string  `json:"zone,omitempty"`
	Weight float64 `json:"weight"`
	// Replicas and Primaries are what the node holds; Bytes their data,
	// given the partition sizes.
	Replicas  int   `json:"replicas"`
	Primaries int   `json:"primaries"`
	Bytes     int64 `json:"bytes"`
	// Target and TargetPrimaries are what a fresh build ([New]) of the
	// map's members and spec gives the node: Fair and FairPrimaries
	// rounded (see [Map]).
	Target          int     `json:"target"`
	TargetPrimaries int     `json:"target_primaries"`
	Fair            float64 `json:"fair"`
	FairPrimaries   float64 `json:"fair_primaries"`
	// Bound is the most replicas the node may hold.
	Bound int `json:"bound"`
}

// Loads returns every member's load, in ascending ID order, draining
// members included. sizes, if not nil, gives each partition's size
// (len(sizes) must be P). It fails with ErrInvalidOption for bad sizes,
// and with ErrConstraint if the spec has no fair shares for the members
// (an observed map whose spec they cannot meet). A nil or empty map has
// none. O(P·R + n log n).
func (m *Map) Loads(sizes []PartitionSize) ([]NodeLoad, error) {
	if m.empty() {
		return nil, nil
	}
	if err := checkSizes(sizes, m.spec.Partitions, Limits{}); err != nil {
		return nil, err
	}
	out, err := m.loads(sizes)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// loads is Loads of checked sizes; the loads come without targets, and
// with the error, when the spec has no fair shares for the members.
func (m *Map) loads(sizes []PartitionSize) ([]NodeLoad, error) {
	l := m.layout()
	t, err := l.targets()
	out := make([]NodeLoad, len(m.nodes))
	for i, n := range m.nodes {
		out[i] = NodeLoad{ID: n.ID, Zone: n.Zone, Weight: n.Weight, Bound: l.bound[i]}
		if err == nil {
			out[i].Target, out[i].TargetPrimaries = t.replicas[i], t.primaries[i]
			out[i].Fair, out[i].FairPrimaries = t.fair[i], t.fairPrimaries[i]
		}
	}
	r := m.spec.Replicas
	for p := 0; p < m.spec.Partitions; p++ {
		for j, i := range m.assign[p*r : p*r+r] {
			out[i].Replicas++
			if j == 0 {
				out[i].Primaries++
			}
			if sizes != nil {
				out[i].Bytes += sizes[p].Bytes
			}
		}
	}
	return out, err
}

// Moved returns how many replicas the move from one map to the other
// copies, and the least that any map within to's tolerance of to's fair
// shares would copy from from: max(D, L+E), for D the replicas the nodes
// below target−tolerance lack, E those the nodes above target+tolerance
// hold beyond it, and L the replicas to must place that from holds on no
// node of to within its bound (negative when R shrinks). A rebalance moves
// the minimum unless the zones make a replica move twice; moved ÷ minimum
// is how close it came. It fails with ErrInvalidOption if the maps have
// different partition counts, and with ErrConstraint if to's spec has no
// fair shares for its members. O(P·R + n log n).
func Moved(from, to *Map) (moved, minimum int, err error) {
	if from.empty() || to.empty() || from.spec.Partitions != to.spec.Partitions {
		return 0, 0, fmt.Errorf("%w: moves between shard maps of %d and %d partitions", chash.ErrInvalidOption, from.Partitions(), to.Partitions())
	}
	loads, err := to.Loads(nil)
	if err != nil {
		return 0, 0, err
	}
	before := map[string]int{}
	for _, i := range from.assign {
		before[from.nodes[i].ID]++
	}
	tol := to.spec.Tolerance
	kept, d, e := 0, 0, 0
	for _, n := range loads {
		if n.Weight == 0 {
			continue
		}
		c := min(before[n.ID], n.Bound)
		kept += c
		d += max(0, n.Target-tol-c)
		e += max(0, c-min(n.Target+tol, n.Bound))
	}
	rf, rt := from.spec.Replicas, to.spec.Replicas
	for p := 0; p < to.spec.Partitions; p++ {
		old := from.assign[p*rf : p*rf+rf]
		for _, i := range to.assign[p*rt : p*rt+rt] {
			id := to.nodes[i].ID
			if !slices.ContainsFunc(old, func(j int32) bool { return from.nodes[j].ID == id }) {
				moved++
			}
		}
	}
	return moved, max(d, to.spec.Partitions*rt-kept+e), nil
}

// Distance returns how far m is from a fresh build of its members and
// spec: the largest difference, over the members, between the replicas a
// member holds and its Target, and between its primaries and its
// TargetPrimaries. A map within its spec's Tolerance on both is balanced
// as asked; Rebalance leaves a map further only where the constraints
// (zones, bounds, pins, the replicas it may keep) allow no closer one. A
// nil or empty map, or one whose spec has no fair shares, is at 0, 0.
// O(P·R + n log n).
func (m *Map) Distance() (replicas, primaries int) {
	loads, err := m.Loads(nil)
	if err != nil {
		return 0, 0
	}
	for _, n := range loads {
		replicas = max(replicas, abs(n.Replicas-n.Target))
		primaries = max(primaries, abs(n.Primaries-n.TargetPrimaries))
	}
	return replicas, primaries
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// Check returns the first constraint m breaks, wrapping ErrConstraint, or
// nil: always nil for a map built by New or Rebalance; for an observed map
// ([Import]), what a rebalance must fix. O(P·R + n).
func (m *Map) Check() error {
	if m.empty() {
		return nil
	}
	return m.layout().checkMap(m.assign)
}

// Import records a placement observed in a running system (a Kafka
// topic's assignment, say) as a map of nodes under spec: version 1,
// observed. assignment lists each partition's replicas, primary first, by
// node ID. spec's Partitions and Replicas may be 0, then they are the
// assignment's; its other constraints (zones, bounds, pins) are not
// checked: an observed map is a starting point for Rebalance, which meets
// them, and PlanMoves, which plans the way there. It fails with
// ErrInvalid if a partition's replicas are not R distinct members of
// positive weight, and as New does for a bad spec or nodes. O(P·R +
// n log n).
func Import(nodes []chash.Node, spec Spec, assignment [][]string) (*Map, error) {
	if spec.Partitions == 0 {
		spec.Partitions = len(assignment)
	}
	if spec.Replicas == 0 && len(assignment) > 0 && len(spec.ZoneReplicas) == 0 {
		spec.Replicas = len(assignment[0])
	}
	ns, spec, err := checkMapInput(nodes, spec)
	if err != nil {
		return nil, err
	}
	if len(assignment) != spec.Partitions {
		return nil, fmt.Errorf("%w: %d partitions assigned, the spec has %d", ErrInvalid, len(assignment), spec.Partitions)
	}
	l, err := newLayout(ns, spec)
	if err != nil {
		return nil, err
	}
	assign := make([]int32, 0, spec.Partitions*spec.Replicas)
	for p, reps := range assignment {
		if len(reps) != spec.Replicas {
			return nil, fmt.Errorf("%w: partition %d has %d replicas, want %d", ErrInvalid, p, len(reps), spec.Replicas)
		}
		for _, id := range reps {
			i := indexByID(ns, id)
			if i < 0 {
				return nil, fmt.Errorf("%w: partition %d names %q, not a member: %w", ErrInvalid, p, id, chash.ErrUnknownNode)
			}
			assign = append(assign, int32(i))
		}
	}
	if err := l.checkStructure(assign); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return newMap(l, 1, assign, true), nil
}
