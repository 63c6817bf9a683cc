package shardmap

import (
	"fmt"
	"slices"
)

// Where a partition of the scheduler is.
const (
	waitNone  uint8 = iota // done, or in the next batch's queue
	waitRoom               // in capWait of a node at its bound
	waitLimit              // in limWait of a node at a batch limit
)

// scheduler groups each partition's steps into batches. A partition is
// looked at when it may progress: in the batch after it last took steps,
// when the node it waits on frees room (as many as the room freed), or
// when a batch starts for the node whose limit it waits on (as many as
// the node's limits could admit). A batch takes, for each partition
// looked at, the next steps the state before the batch allows.
type scheduler struct {
	from, to *Map
	sizes    []PartitionSize
	lim      Limits
	minLive  int

	ids   map[string]int32 // node index by ID, over both maps
	bound []int            // by node
	count []int            // by node: replicas held, before the batch

	ops  [][]Step
	next []int32 // by partition: its next step
	live []int   // by partition: live replicas, before the batch
	prim []int32 // by partition: its primary, before the batch

	state   []uint8
	capWait [][]int32 // by node: partitions waiting for room
	limWait [][]int32 // by node: partitions waiting for a batch
	limNode []int32   // the nodes with partitions in limWait
	stuck   []int32   // partitions that entered capWait able to remove a secondary ahead
	ready   []int32   // the next batch's partitions

	// The batch being built.
	batch             int
	took, removes     []int32 // by partition: steps and removals in the batch (valid when mark == batch+1)
	mark              []int32
	adds, in, out     []int   // by node
	bytesIn, bytesOut []int64 // by node
	freed             []int   // by node: removals in the batch
	touched           []int32
	steps             []Step
	outSteps          []Step
	batches           []Batch
	minSize           int64
	impossible        error
	waiting           int
	queued            []bool // by partition: in ready
	sent              []int  // by node: copies sent in all batches
}

func newScheduler(from, to *Map, sizes []PartitionSize, lim Limits) *scheduler {
	P := from.spec.Partitions
	s := &scheduler{from: from, to: to, sizes: sizes, lim: lim, minLive: min(from.spec.Replicas, to.spec.Replicas) - 1,
		ids: map[string]int32{}, ops: make([][]Step, P), next: make([]int32, P), live: make([]int, P), prim: make([]int32, P),
		state: make([]uint8, P), queued: make([]bool, P), took: make([]int32, P), removes: make([]int32, P), mark: make([]int32, P)}
	for _, m := range []*Map{from, to} {
		l := m.layout()
		for i, n := range m.nodes {
			x, ok := s.ids[n.ID]
			if !ok {
				x = int32(len(s.bound))
				s.ids[n.ID] = x
				s.bound = append(s.bound, 0)
			}
			s.bound[x] = max(s.bound[x], l.bound[i])
		}
	}
	n := len(s.bound)
	s.count, s.capWait, s.limWait = make([]int, n), make([][]int32, n), make([][]int32, n)
	s.adds, s.in, s.out, s.freed = make([]int, n), make([]int, n), make([]int, n), make([]int, n)
	s.bytesIn, s.bytesOut = make([]int64, n), make([]int64, n)
	s.sent = make([]int, n)
	for _, i := range from.assign {
		s.count[s.ids[from.nodes[i].ID]]++
	}
	for x := range s.bound {
		s.bound[x] = max(s.bound[x], s.count[x]) // an observed map may hold more
	}
	for _, sz := range sizes {
		if sz.Bytes > 0 && (s.minSize == 0 || sz.Bytes < s.minSize) {
			s.minSize = sz.Bytes
		}
	}
	rf, rt := from.spec.Replicas, to.spec.Replicas
	o, nw := make([]string, rf), make([]string, rt)
	for p := range P {
		for j, i := range from.assign[p*rf : p*rf+rf] {
			o[j] = from.nodes[i].ID
		}
		for j, i := range to.assign[p*rt : p*rt+rt] {
			nw[j] = to.nodes[i].ID
		}
		s.live[p], s.prim[p] = rf, s.ids[o[0]]
		if !slices.Equal(o, nw) {
			s.ops[p] = partitionSteps(p, o, nw)
			s.enqueue(int32(p))
		}
	}
	return s
}

// run builds the batches.
func (s *scheduler) run() error {
	for len(s.ready) > 0 || s.waiting > 0 {
		cur := s.release()
		for _, p := range s.ready {
			s.queued[p] = false
		}
		cur = append(cur, s.ready...)
		s.ready = nil
		for _, p := range cur {
			s.advance(p)
		}
		if s.impossible != nil {
			return s.impossible
		}
		if len(s.steps) == 0 {
			if !s.unblock() {
				return fmt.Errorf("%w: move plan: no order keeps every node within its bound and %d live replicas per partition", ErrConstraint, s.minLive)
			}
			continue
		}
		s.commit()
	}
	return nil
}

// release lets out of each limited node's queue as many partitions as its
// limits could admit in a batch.
func (s *scheduler) release() []int32 {
	var cur []int32
	nodes := s.limNode[:0]
	for _, x := range s.limNode {
		q := s.limWait[x]
		n := min(len(q), s.admits())
		for _, p := range q[:n] {
			if s.state[p] == waitLimit {
				s.state[p] = waitNone
				s.waiting--
				cur = append(cur, p)
			}
		}
		s.limWait[x] = q[n:]
		if len(s.limWait[x]) > 0 {
			nodes = append(nodes, x)
		} else {
			s.limWait[x] = nil
		}
	}
	s.limNode = nodes
	return cur
}

// admits is how many copies one node could take part in within a batch.
func (s *scheduler) admits() int {
	n := s.lim.CopiesIn + s.lim.CopiesOut
	if s.lim.BytesInFlight > 0 && s.minSize > 0 {
		n = max(n, int(min(s.lim.BytesInFlight/s.minSize, 1<<20)))
	}
	return max(n, 1)
}

// advance takes partition p's next steps that the state before the batch
// and the batch so far allow.
func (s *scheduler) advance(p int32) {
	if s.mark[p] != int32(s.batch+1) {
		s.mark[p], s.took[p], s.removes[p] = int32(s.batch+1), 0, 0
	}
	ops := s.ops[p]
	for int(s.next[p]) < len(ops) {
		st := ops[s.next[p]]
		switch st.Kind {
		case StepAdd:
			x, src := s.ids[st.Node], s.prim[p]
			if s.count[x]+s.adds[x] >= s.bound[x] {
				s.waitRoom(p, x)
				return
			}
			size := s.size(p)
			if at := s.limited(x, src, size); at >= 0 {
				s.waitLimit(p, at)
				return
			}
			s.touch(x)
			s.touch(src)
			s.adds[x]++
			s.in[x]++
			s.out[src]++
			s.bytesIn[x] += size
			s.bytesOut[src] += size
		case StepRemove:
			if s.live[p]-int(s.removes[p])-1 < s.minLive {
				if s.took[p] == 0 {
					s.impossible = fmt.Errorf("%w: move plan: partition %d would keep fewer than %d live replicas", ErrConstraint, p, s.minLive)
					return
				}
				s.enqueue(p)
				return
			}
			s.removes[p]++
		case StepPromote, StepOrder:
			if s.took[p] > 0 {
				s.enqueue(p)
				return
			}
		}
		st.Batch = s.batch
		s.steps = append(s.steps, st)
		s.took[p]++
		s.next[p]++
		if st.Kind == StepPromote || st.Kind == StepOrder {
			break // the steps after it wait for the next batch
		}
	}
	if int(s.next[p]) < len(ops) {
		s.enqueue(p)
	}
}

// enqueue puts partition p in the next batch's queue, once.
func (s *scheduler) enqueue(p int32) {
	if !s.queued[p] {
		s.queued[p] = true
		s.ready = append(s.ready, p)
	}
}

func (s *scheduler) size(p int32) int64 {
	if s.sizes == nil {
		return 0
	}
	return s.sizes[p].Bytes
}

// limited returns the node whose batch limit a copy of size bytes from src
// to x would break, or -1.
func (s *scheduler) limited(x, src int32, size int64) int32 {
	l := s.lim
	switch {
	case l.CopiesIn > 0 && s.in[x] >= l.CopiesIn:
		return x
	case l.CopiesOut > 0 && s.out[src] >= l.CopiesOut:
		return src
	case l.BytesInFlight > 0 && s.in[x] > 0 && s.bytesIn[x]+size > l.BytesInFlight:
		return x
	case l.BytesInFlight > 0 && s.out[src] > 0 && s.bytesOut[src]+size > l.BytesInFlight:
		return src
	}
	return -1
}

func (s *scheduler) touch(x int32) {
	if s.in[x] == 0 && s.out[x] == 0 && s.adds[x] == 0 && s.freed[x] == 0 {
		s.touched = append(s.touched, x)
	}
}

func (s *scheduler) waitRoom(p, x int32) {
	s.state[p] = waitRoom
	s.waiting++
	s.capWait[x] = append(s.capWait[x], p)
	if s.removable(p) >= 0 {
		s.stuck = append(s.stuck, p)
	}
}

func (s *scheduler) waitLimit(p, x int32) {
	s.state[p] = waitLimit
	s.waiting++
	if len(s.limWait[x]) == 0 {
		s.limNode = append(s.limNode, x)
	}
	s.limWait[x] = append(s.limWait[x], p)
}

// removable returns the index of a secondary's removal of partition p
// that may be taken ahead of its next step, or -1.
func (s *scheduler) removable(p int32) int {
	if s.live[p]-1 < s.minLive {
		return -1
	}
	ops := s.ops[p]
	for j := int(s.next[p]); j < len(ops); j++ {
		switch ops[j].Kind {
		case StepPromote:
			return -1 // the old primary's removal stays last
		case StepRemove:
			return j
		}
	}
	return -1
}

// unblock takes a secondary's removal ahead of the copy a partition waits
// on, where its live replicas allow it: a cycle of full nodes opens.
func (s *scheduler) unblock() bool {
	for len(s.stuck) > 0 {
		p := s.stuck[0]
		s.stuck = s.stuck[1:]
		j := -1
		if s.state[p] == waitRoom {
			j = s.removable(p)
		}
		if j < 0 {
			continue
		}
		ops := s.ops[p]
		st := ops[j]
		copy(ops[s.next[p]+1:j+1], ops[s.next[p]:j])
		ops[s.next[p]] = st
		s.state[p] = waitNone
		s.waiting--
		s.enqueue(p)
		return true
	}
	return false
}

// commit applies the batch's steps to the state and wakes the partitions
// waiting for the room its removals freed.
func (s *scheduler) commit() {
	slices.SortStableFunc(s.steps, func(a, b Step) int { return a.Partition - b.Partition })
	b := Batch{Steps: len(s.steps)}
	for _, st := range s.steps {
		p := st.Partition
		switch st.Kind {
		case StepAdd:
			x := s.ids[st.Node]
			s.sent[s.prim[p]]++
			s.count[x]++
			s.live[p]++
			b.Copies++
			b.Bytes += s.size(int32(p))
		case StepRemove:
			x := s.ids[st.Node]
			s.touch(x)
			s.count[x]--
			s.live[p]--
			s.freed[x]++
		case StepPromote:
			s.prim[p] = s.ids[st.Node]
		}
	}
	for _, x := range s.touched {
		b.PeakNodeBytes = max(b.PeakNodeBytes, s.bytesIn[x], s.bytesOut[x])
		if s.freed[x] > 0 {
			s.wake(x)
		}
		s.adds[x], s.in[x], s.out[x], s.freed[x], s.bytesIn[x], s.bytesOut[x] = 0, 0, 0, 0, 0, 0
	}
	s.touched = s.touched[:0]
	s.outSteps = append(s.outSteps, s.steps...)
	s.steps = s.steps[:0]
	s.batches = append(s.batches, b)
	s.batch++
}

// wake moves to the next batch as many of node x's waiters as it has room
// for.
func (s *scheduler) wake(x int32) {
	room := s.bound[x] - s.count[x]
	q := s.capWait[x]
	n := 0
	for n < len(q) && room > 0 {
		p := q[n]
		n++
		if s.state[p] == waitRoom {
			s.state[p] = waitNone
			s.waiting--
			s.enqueue(p)
			room--
		}
	}
	s.capWait[x] = q[n:]
}
