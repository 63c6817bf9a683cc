package shardmap

import (
	"fmt"
	"slices"

	"github.com/keyplace/chash"
)

// StepKind is what a step of a move plan does.
type StepKind uint8

// The kinds of step.
const (
	// StepAdd copies partition Partition to node Node as a new replica.
	StepAdd StepKind = iota + 1
	// StepRemove drops node Node's replica of the partition.
	StepRemove
	// StepPromote makes Node, which holds a replica, the partition's
	// primary in place of From. No data moves.
	StepPromote
)

func (k StepKind) String() string {
	switch k {
	case StepAdd:
		return "add"
	case StepRemove:
		return "remove"
	case StepPromote:
		return "promote"
	}
	return fmt.Sprintf("StepKind(%d)", uint8(k))
}

// MarshalText encodes the kind by its name, so that a plan encodes to JSON
// readably.
func (k StepKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText decodes a kind from its name.
func (k *StepKind) UnmarshalText(text []byte) error {
	for _, c := range []StepKind{StepAdd, StepRemove, StepPromote} {
		if c.String() == string(text) {
			*k = c
			return nil
		}
	}
	return fmt.Errorf("%w: step kind %q (want add, remove or promote)", chash.ErrInvalidOption, text)
}

// Step is one operation of a move plan.
type Step struct {
	Kind      StepKind `json:"kind"`
	Partition int      `json:"partition"`
	Node      string   `json:"node"`
	From      string   `json:"from,omitempty"` // the previous primary, for StepPromote
}

// PartitionSize is how much data a partition holds, for counting what a
// plan moves.
type PartitionSize struct {
	Bytes, Keys int64
}

// Plan is an ordered list of steps that turns one shard map into another.
// Applied one at a time, in order:
//   - every partition keeps at least min(R, R') - 1 live replicas (a
//     replica is normally added before the one it replaces is removed);
//   - no node holds more replicas than the larger of its bounds in the two
//     maps;
//   - a partition's primary changes last: its other moves come first, then
//     the new primary's copy, then the promotion, then the old primary's
//     removal.
type Plan struct {
	Steps []Step `json:"steps"`
	// Moves counts the replicas copied (StepAdd steps), Bytes and Keys
	// the data they copy given the partition sizes.
	Moves int   `json:"moves"`
	Bytes int64 `json:"bytes"`
	Keys  int64 `json:"keys"`
}

// PlanMoves returns the plan from one map to the next. sizes, if not nil,
// gives each partition's size (len(sizes) must be P). It fails with
// ErrInvalidOption if the maps have different partition counts, and with
// ErrConstraint if no order keeps the guarantees (a cycle of full nodes
// that only a removal ahead of its copy would break, when that removal
// would leave too few replicas). O(steps × P) in the worst case.
func PlanMoves(from, to *Map, sizes []PartitionSize) (Plan, error) {
	if from.spec.Partitions != to.spec.Partitions {
		return Plan{}, fmt.Errorf("%w: plan from %d partitions to %d", chash.ErrInvalidOption, from.spec.Partitions, to.spec.Partitions)
	}
	if sizes != nil && len(sizes) != from.spec.Partitions {
		return Plan{}, fmt.Errorf("%w: %d partition sizes for %d partitions", chash.ErrInvalidOption, len(sizes), from.spec.Partitions)
	}
	s := newScheduler(from, to)
	if err := s.run(); err != nil {
		return Plan{}, err
	}
	pl := Plan{Steps: s.out}
	for _, st := range s.out {
		if st.Kind == StepAdd {
			pl.Moves++
			if sizes != nil {
				pl.Bytes += sizes[st.Partition].Bytes
				pl.Keys += sizes[st.Partition].Keys
			}
		}
	}
	return pl, nil
}

// scheduler orders each partition's steps under the plan's guarantees.
type scheduler struct {
	ops     [][]Step // pending steps of each partition, in order
	live    []int    // live replicas of each partition
	minLive int
	count   map[string]int
	bound   map[string]int
	out     []Step
}

func newScheduler(from, to *Map) *scheduler {
	s := &scheduler{ops: make([][]Step, from.spec.Partitions), live: make([]int, from.spec.Partitions),
		minLive: min(from.spec.Replicas, to.spec.Replicas) - 1, count: map[string]int{}, bound: map[string]int{}}
	for _, m := range []*Map{from, to} {
		for i, b := range mapBounds(m.spec, m.nodes) {
			s.bound[m.nodes[i].ID] = max(s.bound[m.nodes[i].ID], b)
		}
	}
	for _, i := range from.assign {
		s.count[from.nodes[i].ID]++
	}
	for p := range s.ops {
		o, n := replicaIDs(from.AppendReplicas(nil, p)), replicaIDs(to.AppendReplicas(nil, p))
		s.live[p] = len(o)
		s.ops[p] = partitionSteps(p, o, n)
	}
	return s
}

func replicaIDs(nodes []chash.Node) []string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = n.ID
	}
	return out
}

// partitionSteps returns partition p's steps from replicas o to n:
// secondary copies and removals interleaved, then the primary's change.
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
	return append(steps, tail...)
}

// run emits every partition's steps, sweeping over the partitions and
// taking each one's next steps while they keep the guarantees. When a sweep
// is stuck on full nodes, one removal is taken ahead of its copy.
func (s *scheduler) run() error {
	for pending := true; pending; {
		pending = false
		progress := false
		for p := range s.ops {
			for len(s.ops[p]) > 0 && s.ready(p, s.ops[p][0]) {
				s.emit(p, 0)
				progress = true
			}
			pending = pending || len(s.ops[p]) > 0
		}
		if pending && !progress && !s.unblock() {
			return fmt.Errorf("%w: move plan: no order keeps every node within its bound and %d live replicas per partition", ErrConstraint, s.minLive)
		}
	}
	return nil
}

func (s *scheduler) ready(p int, st Step) bool {
	switch st.Kind {
	case StepAdd:
		return s.count[st.Node] < s.bound[st.Node]
	case StepRemove:
		return s.live[p] > s.minLive
	}
	return true
}

func (s *scheduler) emit(p, j int) {
	st := s.ops[p][j]
	switch st.Kind {
	case StepAdd:
		s.count[st.Node]++
		s.live[p]++
	case StepRemove:
		s.count[st.Node]--
		s.live[p]--
	}
	s.out = append(s.out, st)
	s.ops[p] = slices.Delete(s.ops[p], j, j+1)
}

// unblock takes a secondary's removal ahead of the copy a partition waits
// on, where the partition's live replicas allow it.
func (s *scheduler) unblock() bool {
	for p, ops := range s.ops {
		if len(ops) == 0 || s.live[p]-1 < s.minLive {
			continue
		}
		for j, st := range ops {
			if st.Kind == StepPromote {
				break // the old primary's removal stays last
			}
			if st.Kind == StepRemove {
				s.emit(p, j)
				return true
			}
		}
	}
	return false
}
