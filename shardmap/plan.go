package shardmap

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/keyplace/chash"
)

// StepKind is what a step of a move plan does.
type StepKind uint8

// The kinds of step.
const (
	// StepAdd copies partition Partition to node Node as a new replica,
	// listed last.
	StepAdd StepKind = iota + 1
	// StepRemove drops node Node's replica of the partition.
	StepRemove
	// StepPromote makes Node, which holds a replica, the partition's
	// primary in place of From, which takes Node's place in the list.
	// No data moves.
	StepPromote
	// StepOrder lists the partition's replicas in the order of Replicas,
	// the new map's: the order of secondaries, which a store may read as
	// the order of failover. No data moves.
	StepOrder
)

func (k StepKind) String() string {
	switch k {
	case StepAdd:
		return "add"
	case StepRemove:
		return "remove"
	case StepPromote:
		return "promote"
	case StepOrder:
		return "order"
	}
	return fmt.Sprintf("StepKind(%d)", uint8(k))
}

// MarshalText encodes the kind by its name, so that a plan encodes to JSON
// readably.
func (k StepKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText decodes a kind from its name.
func (k *StepKind) UnmarshalText(text []byte) error {
	for _, c := range []StepKind{StepAdd, StepRemove, StepPromote, StepOrder} {
		if c.String() == string(text) {
			*k = c
			return nil
		}
	}
	return fmt.Errorf("%w: step kind %q (want add, remove, promote or order)", chash.ErrInvalidOption, text)
}

// Step is one operation of a move plan.
type Step struct {
	Kind      StepKind `json:"kind"`
	Partition int      `json:"partition"`
	Node      string   `json:"node"`
	From      string   `json:"from,omitempty"`     // the previous primary, for StepPromote
	Replicas  []string `json:"replicas,omitempty"` // the replicas in order, for StepOrder
	// Batch is the index of the batch the step belongs to.
	Batch int `json:"batch"`
}

// PartitionSize is how much data a partition holds, for counting what a
// plan moves.
type PartitionSize struct {
	Bytes, Keys int64
}

// Limits bound what a batch of a plan does on each node. The zero value
// limits nothing: every step that may run runs in the first batch it can.
type Limits struct {
	// CopiesIn and CopiesOut bound the copies a node receives and sends
	// in one batch; a copy is sent by the partition's primary, as a Kafka
	// follower fetches from its leader. 0 means no limit.
	CopiesIn  int `json:"copies_in,omitempty"`
	CopiesOut int `json:"copies_out,omitempty"`
	// BytesInFlight bounds the bytes a node receives, and those it sends,
	// in one batch; a partition larger than it is the only copy its nodes
	// receive or send in its batch. 0 means no limit; it needs partition
	// sizes to count.
	BytesInFlight int64 `json:"bytes_in_flight,omitempty"`
	// Throttle is the rate, in bytes a second, at which a node receives
	// and sends the copies of a plan (Kafka's --throttle): it bounds no
	// batch but gives each its duration. 0 means none.
	Throttle int64 `json:"throttle,omitempty"`
}

// Batch is a summary of one batch of a plan.
type Batch struct {
	// Steps is how many of the plan's steps the batch holds: they are
	// the next Steps after those of the batches before it.
	Steps int `json:"steps"`
	// Copies and Bytes count the replicas it copies and their data.
	Copies int   `json:"copies"`
	Bytes  int64 `json:"bytes"`
	// PeakNodeBytes is the most bytes one node receives, or sends, in
	// the batch: with a throttle, what sets its duration.
	PeakNodeBytes int64 `json:"peak_node_bytes"`
	// Seconds is PeakNodeBytes over the plan's Throttle: the batch's
	// duration at that rate (0 without one).
	Seconds float64 `json:"seconds,omitempty"`
}

// Plan is the steps that turn one shard map into another, in batches.
// The steps of a batch may run at once, in any order, once every step of
// the batches before it is done; run one at a time, in order, the steps
// are a serial plan. Either way, at every moment:
//   - every partition keeps at least min(R, R') - 1 live replicas (a
//     replica is normally added before the one it replaces is removed,
//     and a batch removes only what the replicas live before it allow);
//   - no node holds more replicas than the larger of its bounds in the
//     two maps (a batch adds only what the room before it allows; for an
//     observed map, at least what it holds);
//   - a partition's primary changes last: its other moves come first,
//     then the new primary's copy, then, in a later batch, the
//     promotion, then, later still, the old primary's removal; then, if
//     the order of its replicas is not the new map's, a StepOrder;
//   - no batch exceeds the plan's Limits on any node.
//
// Replayed with these rules (StepAdd appends, StepRemove deletes,
// StepPromote swaps the two nodes' places, StepOrder sets the order),
// every partition ends with exactly the new map's replicas, in its order.
// The number of batches is the plan's critical path: with a throttle its
// duration is the sum of the batches' Seconds. The zero Plan has no steps:
// the plan between equal maps.
type Plan struct {
	Steps []Step `json:"steps"`
	// Moves counts the replicas copied (StepAdd steps), Bytes and Keys
	// the data they copy given the partition sizes.
	Moves   int     `json:"moves"`
	Bytes   int64   `json:"bytes"`
	Keys    int64   `json:"keys"`
	Batches []Batch `json:"batches"`
	Limits  Limits  `json:"limits"`
	// Nodes is every member of either map, in ascending ID order: its
	// load before and after, and the steps that touch it.
	Nodes []NodeChange `json:"nodes"`
	// Seconds is the plan's duration at the throttle: the sum of the
	// batches' (0 without one).
	Seconds float64 `json:"seconds,omitempty"`
}

// NodeChange is one node's part in a plan.
type NodeChange struct {
	ID string `json:"id"`
	// Before and After are its loads in the two maps (zero where it is
	// not a member), their bytes by the plan's partition sizes.
	Before NodeLoad `json:"before"`
	After  NodeLoad `json:"after"`
	// CopiesIn and CopiesOut count the replicas it receives and sends (as
	// its partitions' primary), Removes those it drops, Promotions the
	// partitions whose primary it becomes without a copy.
	CopiesIn   int `json:"copies_in"`
	CopiesOut  int `json:"copies_out"`
	Removes    int `json:"removes"`
	Promotions int `json:"promotions"`
}

// PlanMoves returns the plan from one map to the next with no limits: the
// fewest batches. See PlanBatches.
func PlanMoves(from, to *Map, sizes []PartitionSize) (Plan, error) {
	return PlanBatches(from, to, sizes, Limits{})
}

// PlanBatches returns the plan from one map to the next in batches within
// lim. sizes, if not nil, gives each partition's size (len(sizes) must be
// P, each size at least 0, and their sum within 2^63/16). It fails with
// ErrInvalidOption if the maps have different partition counts or a
// limit or size is out of range, and with ErrConstraint if no order keeps
// the guarantees (a cycle of full nodes that only a removal ahead of its
// copy would break, when that removal would leave too few replicas).
// O((P·R + S) log n + B·n) for S steps in B batches: each partition is
// looked at when it can progress, or is let out of a node's queue of
// waiters, never in every batch: about a second at 2^20 partitions
// (BenchmarkScale; chains of 32,000 partitions took 22 s before).
func PlanBatches(from, to *Map, sizes []PartitionSize, lim Limits) (Plan, error) {
	if from.empty() || to.empty() {
		return Plan{}, fmt.Errorf("%w: plan from or to an empty shard map", chash.ErrInvalidOption)
	}
	if from.spec.Partitions != to.spec.Partitions {
		return Plan{}, fmt.Errorf("%w: plan from %d partitions to %d", chash.ErrInvalidOption, from.spec.Partitions, to.spec.Partitions)
	}
	if err := checkSizes(sizes, from.spec.Partitions, lim); err != nil {
		return Plan{}, err
	}
	s := newScheduler(from, to, sizes, lim)
	if err := s.run(); err != nil {
		return Plan{}, err
	}
	pl := Plan{Steps: s.outSteps, Batches: s.batches, Limits: lim}
	for _, st := range s.outSteps {
		if st.Kind == StepAdd {
			pl.Moves++
			if sizes != nil {
				pl.Bytes += sizes[st.Partition].Bytes
				pl.Keys += sizes[st.Partition].Keys
			}
		}
	}
	pl.Nodes = s.nodeChanges()
	for i := range pl.Batches {
		if lim.Throttle > 0 {
			pl.Batches[i].Seconds = float64(pl.Batches[i].PeakNodeBytes) / float64(lim.Throttle)
			pl.Seconds += pl.Batches[i].Seconds
		}
	}
	return pl, nil
}

// nodeChanges summarises each node's part in the plan.
func (s *scheduler) nodeChanges() []NodeChange {
	out := make([]NodeChange, len(s.bound))
	for id, x := range s.ids {
		out[x].ID = id
		out[x].CopiesOut = s.sent[x]
	}
	for _, side := range []struct {
		m     *Map
		after bool
	}{{s.from, false}, {s.to, true}} {
		loads, _ := side.m.loads(s.sizes)
		for _, n := range loads {
			c := &out[s.ids[n.ID]]
			if side.after {
				c.After = n
			} else {
				c.Before = n
			}
		}
	}
	for _, st := range s.outSteps {
		switch c := &out[s.ids[st.Node]]; st.Kind {
		case StepAdd:
			c.CopiesIn++
		case StepRemove:
			c.Removes++
		case StepPromote:
			c.Promotions++
		}
	}
	slices.SortFunc(out, func(a, b NodeChange) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

func checkSizes(sizes []PartitionSize, p int, lim Limits) error {
	switch {
	case lim.CopiesIn < 0 || lim.CopiesOut < 0 || lim.BytesInFlight < 0 || lim.Throttle < 0:
		return fmt.Errorf("%w: plan limits %+v: want 0 (none) or more", chash.ErrInvalidOption, lim)
	case sizes != nil && len(sizes) != p:
		return fmt.Errorf("%w: %d partition sizes for %d partitions", chash.ErrInvalidOption, len(sizes), p)
	}
	const most = math.MaxInt64 / maxMapReplicas
	var bytes, keys int64
	for i, sz := range sizes {
		if sz.Bytes < 0 || sz.Keys < 0 || sz.Bytes > most-bytes || sz.Keys > most-keys {
			return fmt.Errorf("%w: partition %d size %+v: want sizes of 0 or more summing to at most %d", chash.ErrInvalidOption, i, sz, int64(most))
		}
		bytes += sz.Bytes
		keys += sz.Keys
	}
	return nil
}

// partitionSteps returns partition p's steps from replicas o to n:
// secondary copies and removals interleaved, then the primary's change,
// then an order step if the result's order is not n's.
func partitionSteps(p int, o, n []string) []Step {
	var adds, removes, tail []Step
	for _, id := range n[1:] {
		if !slices.Contains(o, id) {
			adds = append(adds, Step{Kind: StepAdd, Partition: p, Node: id})
		}
	}
	for _, id := range o[1:] {
		if !slices.Contains(n, id) {
			removes = append(removes, Step{Kind: StepRemove, Partition: p, Node: id})
		}
	}
	if o[0] != n[0] {
		if !slices.Contains(o, n[0]) {
			tail = append(tail, Step{Kind: StepAdd, Partition: p, Node: n[0]})
		}
		tail = append(tail, Step{Kind: StepPromote, Partition: p, Node: n[0], From: o[0]})
		if !slices.Contains(n, o[0]) {
			tail = append(tail, Step{Kind: StepRemove, Partition: p, Node: o[0]})
		}
	}
	var steps []Step
	for i := 0; i < max(len(adds), len(removes)); i++ {
		if i < len(adds) {
			steps = append(steps, adds[i])
		}
		if i < len(removes) {
			steps = append(steps, removes[i])
		}
	}
	steps = append(steps, tail...)
	reps := slices.Clone(o)
	for _, st := range steps {
		reps = applyStep(reps, st)
	}
	if !slices.Equal(reps, n) {
		steps = append(steps, Step{Kind: StepOrder, Partition: p, Replicas: slices.Clone(n)})
	}
	return steps
}

// applyStep returns a partition's replicas after st, by the plan's replay
// rules.
func applyStep(reps []string, st Step) []string {
	switch st.Kind {
	case StepAdd:
		return append(reps, st.Node)
	case StepRemove:
		if j := slices.Index(reps, st.Node); j >= 0 {
			return slices.Delete(reps, j, j+1)
		}
	case StepPromote:
		if j := slices.Index(reps, st.Node); j > 0 {
			reps[0], reps[j] = reps[j], reps[0]
		}
	case StepOrder:
		return append(reps[:0], st.Replicas...)
	}
	return reps
}
