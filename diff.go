package chash

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"slices"
	"sync"
)

// SampleKeys is how many keys Diff and Shares place when they cannot
// compute a result exactly. At this size the moved fraction's standard
// error is below 0.05 percentage points.
const SampleKeys = 1 << 20

// Flow is the fraction of the key space owned by From in the old placement
// and by To in the new one. From == To means keys that stay. The zero
// Flow carries no keys.
type Flow struct {
	From, To string
	Fraction float64
}

// Movement is what changing from one placement to another does to the
// keys: the from -> to matrix as a sparse list of flows, and the fraction
// of the key space that changes owner. The zero Movement moves nothing and
// has no flows.
type Movement struct {
	// Moved is the fraction of keys whose owner changes: the sum of the
	// flows with From != To.
	Moved float64
	// Flows lists every (From, To) pair that holds keys, including keys
	// that stay (From == To), largest first, ties by From then To. The
	// fractions sum to 1; summing them by From gives the old shares and
	// by To the new ones.
	Flows []Flow
	// Exact is set when the fractions were computed over the whole hash
	// space rather than estimated from sampled keys.
	Exact bool
	// Samples is the number of keys placed when Exact is false, else 0.
	Samples int
}

// Share is one node's ownership of the key space. The zero Share is an
// unnamed node owning nothing.
type Share struct {
	Node     Node
	Fraction float64
}

// Ownership is how a placer divides the key space among its nodes. The
// zero Ownership has no shares; its Loads is empty and CV and Peak are 0.
type Ownership struct {
	// Shares has one entry per member, in the order of the placer's
	// Nodes. The fractions sum to 1.
	Shares []Share
	// Exact and Samples are as in Movement.
	Exact   bool
	Samples int
}

// How Diff and Shares compute exactly: the hooks an algorithm implements.
//
// A placer whose owner is a step function of one coordinate derived from
// the key implements spanner. Ring does (the coordinate is the key's
// 64-bit hash and its points are the steps). A Maglev table is a step
// function of its entry, the high 64 bits of hash(key) × M (a
// multiply-shift, not a modulo), and bounded-load partitions of the
// partition index, computed the same way: each can return its table as
// points at entry positions,
// in a space of M (or P) units that names its slot function. Two spanners
// in the same space are merged step by step in O(P1+P2).
//
// A placer whose movement is known in closed form implements analytic
// instead: jump hash moves exactly 1/m of the keys from each of n buckets
// to each new one when growing from n to m buckets (Lamping and Veach,
// "A Fast, Minimal Memory, Consistent Hash Algorithm", 2014). It returns
// ok=false for pairs it cannot answer, and Diff falls back to sampling.
type (
	spanner interface {
		// keySpans returns the coordinate space, the points sorted by
		// position (ties: only the first counts) and the nodes the
		// points index. A key with coordinate c belongs to the node of
		// the first point at or after c, or of the first point if none
		// is. The slices are read, never changed.
		keySpans() (keySpace, []point, []Node)
	}
	analytic interface {
		analyticMove(to Placer) (m Movement, ok bool)
		analyticShares() (o Ownership, ok bool)
	}
)

// keySpace names a coordinate for the keys. Placers compare exactly only
// when their spaces are equal.
type keySpace struct {
	kind   string // how the coordinate derives from the hash: "hash" for the hash itself
	size   uint64 // coordinates are 0 to size-1; 0 means 1<<64
	hasher hasher
}

func (a keySpace) same(b keySpace) bool {
	return a.kind == b.kind && a.size == b.size && a.hasher.equal(b.hasher)
}

func (r *Ring) keySpans() (keySpace, []point, []Node) {
	return keySpace{kind: "hash", hasher: r.cfg.hasher}, r.points, r.nodes
}

// keySpans: entry e of a Maglev table holds the hashes h with
// ⌊h·M/2⁶⁴⌋ = e, so the table is a step function of the hash itself and
// compares exactly with rings and other tables of the same hasher.
func (g *Maglev) keySpans() (keySpace, []point, []Node) {
	pts := slotPoints(g.size, func(e uint64) int { return g.at(e) })
	return keySpace{kind: "hash", hasher: g.cfg.hasher}, pts, g.nodes
}

// keySpans: bounded-load partitions are slots of the hash as Maglev's are.
func (b *Bounded) keySpans() (keySpace, []point, []Node) {
	pts := slotPoints(uint64(len(b.owner)), func(p uint64) int { return int(b.owner[p]) })
	return keySpace{kind: "hash", hasher: b.cfg.hasher}, pts, b.nodes
}

// slotPoints lists a table of size slots, slot e holding the hashes h with
// ⌊h·size/2⁶⁴⌋ = e, as points: slot e's range ends at
// ⌊((e+1)·2⁶⁴ - 1)/size⌋. O(size).
func slotPoints(size uint64, owner func(e uint64) int) []point {
	pts := make([]point, size)
	for e := range pts {
		last, _ := bits.Div64(uint64(e), math.MaxUint64, size)
		pts[e] = point{pos: last, node: uint32(owner(uint64(e)))}
	}
	return pts
}

// Diff reports how keys move when placement changes from old to new: any
// algorithms, any memberships. It is exact for two rings, Maglev tables or
// bounded-load placers with the same Hasher (a merge of their steps,
// O(P1+P2)), and for two rendezvous or two jump placers with the same
// Hasher (closed forms from the weights, exact up to float64 rounding);
// otherwise it places SampleKeys fixed keys with both placers (2·SampleKeys
// lookups, spread over GOMAXPROCS goroutines, with the same result every
// time) and reports Exact false.
// A view (a Holder, a watcher: any Load() Placer) is read once, and a view
// or a Zoned is measured as the placer it serves, exactly where that one
// is. It fails with ErrNoNodes if either placer is nil
// or empty, and with ErrUnknownNode if a placer returns a non-member.
// Diff is safe for concurrent use.
func Diff(old, new Placer) (Movement, error) {
	return moveVia[Movement]{
		name: "Diff",
		closed: func(old, new Placer) (Movement, bool) {
			if a, ok := old.(analytic); ok {
				return a.analyticMove(new)
			}
			return Movement{}, false
		},
		merge:  mergeMove,
		sample: sampleMove,
	}.diff(old, new)
}

// moveVia is the dispatch Diff and DiffSummary share: a closed form if
// the old placer has one for the pair, else a merge of two spanners in the
// same space, else sampling. Each result type supplies the three ways.
type moveVia[T any] struct {
	name   string // for errors
	closed func(old, new Placer) (T, bool)
	merge  func(size uint64, a, b []point, na, nb []Node) T
	// sample gets sampleOwners' counts of (old index)<<32 | new index,
	// over SampleKeys keys.
	sample func(na, nb []Node, counts map[uint64]int) T
}

func (v moveVia[T]) diff(old, new Placer) (T, error) {
	var zero T
	old, new = unwrapView(old), unwrapView(new)
	if old == nil || new == nil || old.Len() == 0 || new.Len() == 0 {
		return zero, fmt.Errorf("%w: %s of an empty placer", ErrNoNodes, v.name)
	}
	if t, ok := v.closed(old, new); ok {
		return t, nil
	}
	sa, okA := old.(spanner)
	sb, okB := new.(spanner)
	if okA && okB {
		spA, pa, na := sa.keySpans()
		spB, pb, nb := sb.keySpans()
		if spA.same(spB) && len(pa) > 0 && len(pb) > 0 {
			return v.merge(spA.size, pa, pb, na, nb), nil
		}
	}
	na, nb := old.Nodes(), new.Nodes()
	counts, err := sampleOwners([]Placer{old, new}, [][]Node{na, nb})
	if err != nil {
		return zero, err
	}
	return v.sample(na, nb, counts), nil
}

// Shares reports the fraction of the key space each node of p owns: exact
// for a ring (O(P)) and for placers that expose their structure, also
// through a view or a Zoned of one, otherwise estimated from SampleKeys
// fixed keys. The errors are Diff's. Shares is
// safe for concurrent use.
func Shares(p Placer) (Ownership, error) {
	p = unwrapView(p)
	if p == nil || p.Len() == 0 {
		return Ownership{}, fmt.Errorf("%w: Shares of an empty placer", ErrNoNodes)
	}
	if a, ok := p.(analytic); ok {
		if o, ok := a.analyticShares(); ok {
			return o, nil
		}
	}
	if s, ok := p.(spanner); ok {
		sp, pts, nodes := s.keySpans()
		if len(pts) > 0 {
			return spanShares(sp.size, pts, nodes, p.Nodes()), nil
		}
	}
	return sampleShares(p)
}

// unwrapView returns the placer whose lookups p's are, so that Diff and
// Shares can be exact through views and wrappers: the current placer of a
// view (a Holder, a membership watcher, a status tracker: any Load()
// Placer, read once), the placer a Zoned wraps (its Lookup is that
// placer's), or p itself; nil for a nil or typed-nil placer, or a view
// whose Load panics.
func unwrapView(p Placer) Placer {
	for range maxHolderDepth {
		if isNil(p) {
			return nil
		}
		var wraps bool
		if p, wraps = served(p, false); !wraps {
			return p
		}
	}
	return p
}

// walkSpans calls fn for the consecutive pieces of the space [0, size) on
// which neither list changes owner, with each list's owner and the piece's
// length. Each list's owner at c is the node of its first point at or
// after c, wrapping to its first point.
func walkSpans(size uint64, a, b []point, fn func(na, nb uint32, n float64)) {
	last := size - 1 // size 0 means 1<<64: last is MaxUint64
	var c uint64
	i, j := 0, 0
	for {
		for i < len(a) && a[i].pos < c {
			i++
		}
		for j < len(b) && b[j].pos < c {
			j++
		}
		endA, ownA := last, a[0].node
		if i < len(a) {
			endA, ownA = min(a[i].pos, last), a[i].node
		}
		endB, ownB := last, b[0].node
		if j < len(b) {
			endB, ownB = min(b[j].pos, last), b[j].node
		}
		end := min(endA, endB)
		fn(ownA, ownB, float64(end-c)+1)
		if end == last {
			return
		}
		c = end + 1
	}
}

func spaceSize(size uint64) float64 {
	if size == 0 {
		return math.Exp2(64)
	}
	return float64(size)
}

func mergeMove(size uint64, a, b []point, na, nb []Node) Movement {
	pairs := make(map[uint64]float64)
	walkSpans(size, a, b, func(x, y uint32, n float64) {
		pairs[uint64(x)<<32|uint64(y)] += n
	})
	total := spaceSize(size)
	flows := make([]Flow, 0, len(pairs))
	for k, n := range pairs {
		flows = append(flows, Flow{From: na[k>>32].ID, To: nb[uint32(k)].ID, Fraction: n / total})
	}
	return newMovement(flows, true, 0)
}

func spanShares(size uint64, pts []point, own, nodes []Node) Ownership {
	frac := make(map[string]float64, len(own))
	total := spaceSize(size)
	walkSpans(size, pts, pts, func(x, _ uint32, n float64) { frac[own[x].ID] += n / total })
	return newOwnership(nodes, frac, true, 0)
}

// newMovement sorts flows and sums the moved fraction.
func newMovement(flows []Flow, exact bool, samples int) Movement {
	slices.SortFunc(flows, func(a, b Flow) int {
		if c := cmp.Compare(b.Fraction, a.Fraction); c != 0 {
			return c
		}
		if c := cmp.Compare(a.From, b.From); c != 0 {
			return c
		}
		return cmp.Compare(a.To, b.To)
	})
	m := Movement{Flows: flows, Exact: exact, Samples: samples}
	for _, f := range flows {
		if f.From != f.To {
			m.Moved += f.Fraction
		}
	}
	return m
}

func newOwnership(nodes []Node, frac map[string]float64, exact bool, samples int) Ownership {
	o := Ownership{Shares: make([]Share, len(nodes)), Exact: exact, Samples: samples}
	for i, n := range nodes {
		o.Shares[i] = Share{Node: n, Fraction: frac[n.ID]}
	}
	return o
}

// sampleKey writes the i-th sample key into buf: 8 well-mixed bytes, so
// the keys are distinct and unrelated to any node ID.
func sampleKey(buf *[8]byte, i int) []byte {
	binary.LittleEndian.PutUint64(buf[:], mix64(uint64(i)+phi))
	return buf[:]
}

// sampleOwners places the sample keys with each placer in parallel and counts
// the combinations of their owners' indexes in nodes[0] and nodes[1].
func sampleOwners(ps []Placer, nodes [][]Node) (map[uint64]int, error) {
	idx := make([]map[string]uint32, len(ps))
	for i, ns := range nodes {
		idx[i] = make(map[string]uint32, len(ns))
		for j, n := range ns {
			idx[i][n.ID] = uint32(j)
		}
	}
	workers := min(runtime.GOMAXPROCS(0), 16)
	counts := make([]map[uint64]int, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			counts[w], errs[w] = sampleRange(ps, idx, w*SampleKeys/workers, (w+1)*SampleKeys/workers)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	for w := 1; w < workers; w++ {
		for k, n := range counts[w] {
			counts[0][k] += n
		}
	}
	return counts[0], nil
}

func sampleRange(ps []Placer, idx []map[string]uint32, lo, hi int) (map[uint64]int, error) {
	counts := make(map[uint64]int)
	var buf [8]byte
	var key uint64
	for i := lo; i < hi; i++ {
		k := sampleKey(&buf, i)
		key = 0
		for j, p := range ps {
			id := p.Lookup(k).ID
			x, ok := idx[j][id]
			if !ok {
				return nil, fmt.Errorf("%w: Lookup returned %q, not a member", ErrUnknownNode, id)
			}
			key = key<<32 | uint64(x)
		}
		counts[key]++
	}
	return counts, nil
}

func sampleMove(na, nb []Node, counts map[uint64]int) Movement {
	flows := make([]Flow, 0, len(counts))
	for k, n := range counts {
		flows = append(flows, Flow{From: na[k>>32].ID, To: nb[uint32(k)].ID, Fraction: float64(n) / SampleKeys})
	}
	return newMovement(flows, false, SampleKeys)
}

func sampleShares(p Placer) (Ownership, error) {
	nodes := p.Nodes()
	counts, err := sampleOwners([]Placer{p}, [][]Node{nodes})
	if err != nil {
		return Ownership{}, err
	}
	frac := make(map[string]float64, len(nodes))
	for k, n := range counts {
		frac[nodes[k].ID] += float64(n) / SampleKeys
	}
	return newOwnership(nodes, frac, false, SampleKeys), nil
}

// Loads returns each node's share relative to its fair share, its weight
// over the total weight: 1 is a perfect balance, 2 twice the fair load.
// The slice is in the order of Shares.
//
// Weights are divided by the largest before they are summed, so that
// weights near MaxFloat64 do not overflow the total and subnormal ones keep
// their precision. A node whose weight is too small beside the largest to
// be represented relative to it (below about 1e-308 of it) and that owns
// keys has an infinite load.
func (o Ownership) Loads() []float64 {
	var top float64
	for _, s := range o.Shares {
		top = max(top, s.Node.Weight)
	}
	out := make([]float64, len(o.Shares))
	if !(top > 0) || math.IsInf(top, 0) {
		return out
	}
	var total float64
	for _, s := range o.Shares {
		total += s.Node.Weight / top
	}
	for i, s := range o.Shares {
		if w := s.Node.Weight / top; s.Fraction > 0 {
			out[i] = s.Fraction * (total / w)
		}
	}
	return out
}

// CV returns the coefficient of variation of Loads (population standard
// deviation over mean), the balance figure the ring's vnodes control.
//
// It is +Inf if a load is infinite (see Loads), never NaN.
func (o Ownership) CV() float64 {
	loads := o.Loads()
	if len(loads) == 0 {
		return 0
	}
	if slices.ContainsFunc(loads, func(l float64) bool { return math.IsInf(l, 0) }) {
		return math.Inf(1)
	}
	var sum, sq float64
	for _, l := range loads {
		sum += l
	}
	mean := sum / float64(len(loads))
	for _, l := range loads {
		sq += (l - mean) * (l - mean)
	}
	if mean == 0 {
		return 0
	}
	return math.Sqrt(sq/float64(len(loads))) / mean
}

// Peak returns the largest of Loads: the most loaded node's share over
// its fair share.
func (o Ownership) Peak() float64 {
	loads := o.Loads()
	if len(loads) == 0 {
		return 0
	}
	return slices.Max(loads)
}

// Closed forms. Rendezvous and jump place keys by independent uniform
// draws, so their movement follows from the weights alone; over the 2^64
// hash values the actual fractions differ from these by far less than
// one part in a billion.

// analyticShares: a rendezvous node owns weight/Σweight of the keys.
func (r *Rendezvous) analyticShares() (Ownership, bool) {
	if r.collide {
		return Ownership{}, false
	}
	return weightShares(r.nodes), true
}

// analyticShares: each of n jump buckets owns 1/n of the keys.
func (p *Jump) analyticShares() (Ownership, bool) {
	o := Ownership{Shares: make([]Share, len(p.nodes)), Exact: true}
	for i, n := range p.nodes {
		o.Shares[i] = Share{Node: n, Fraction: 1 / float64(len(p.nodes))}
	}
	return o, true
}

func weightShares(nodes []Node) Ownership {
	total := totalWeight(nodes)
	o := Ownership{Shares: make([]Share, len(nodes)), Exact: true}
	for i, n := range nodes {
		o.Shares[i] = Share{Node: n, Fraction: n.Weight / total}
	}
	return o
}

// analyticMove answers for two rendezvous placers with the same hasher in
// which every common node has the same weight. A node's score is an
// exponential clock of rate weight (the smallest -ln(u)/weight wins), so
// with S the common nodes, O those only in old and N those only in new,
// and s, o, n their total weights (T = s+o+n):
//
//	a in S stays          w_a/T
//	a in S -> b in N      b first of all, then a first of S∪O: w_b/T · w_a/(s+o)
//	a in O -> b in S      w_a/T · w_b/(s+n)
//	a in O -> b in N      either order of the two: both terms above
func (r *Rendezvous) analyticMove(to Placer) (Movement, bool) {
	S, O, N, ok := r.closedSplit(to)
	if !ok {
		return Movement{}, false
	}
	s, o, n := totalWeight(S), totalWeight(O), totalWeight(N)
	T := s + o + n
	var flows []Flow
	for _, a := range S {
		flows = append(flows, Flow{a.ID, a.ID, a.Weight / T})
		for _, b := range N {
			flows = append(flows, Flow{a.ID, b.ID, b.Weight / T * a.Weight / (s + o)})
		}
	}
	for _, a := range O {
		for _, b := range S {
			flows = append(flows, Flow{a.ID, b.ID, a.Weight / T * b.Weight / (s + n)})
		}
		for _, b := range N {
			flows = append(flows, Flow{a.ID, b.ID, a.Weight/T*b.Weight/(s+n) + b.Weight/T*a.Weight/(s+o)})
		}
	}
	return newMovement(flows, true, 0), true
}

// closedSplit says whether the closed form answers for r -> to and splits
// the nodes into S, O and N.
func (r *Rendezvous) closedSplit(to Placer) (S, O, N []Node, ok bool) {
	q, ok := to.(*Rendezvous)
	if !ok || r.collide || q.collide || !(keySpace{hasher: r.cfg.hasher}).same(keySpace{hasher: q.cfg.hasher}) {
		return nil, nil, nil, false
	}
	for _, a := range r.nodes {
		switch i := indexOf(q.nodes, a.ID); {
		case i < 0:
			O = append(O, a)
		case q.nodes[i].Weight != a.Weight:
			return nil, nil, nil, false // a reweighted node's clock is not independent
		default:
			S = append(S, a)
		}
	}
	for _, b := range q.nodes {
		if indexOf(r.nodes, b.ID) < 0 {
			N = append(N, b)
		}
	}
	return S, O, N, true
}

func totalWeight(nodes []Node) float64 { return summarize(nodes).total }

// analyticMove answers for two jump placers with the same hasher. Growing
// from n to m buckets, a key stays in its bucket i < n with probability
// 1/m and lands in each new bucket j >= n with probability 1/m, its old
// bucket uniform: bucket i -> j carries 1/(n·m) (Lamping and Veach, 2014).
// Shrinking is the same with the roles swapped. Flows are by bucket, then
// named by each placement's node at that bucket; distinct bucket pairs name
// distinct node pairs, since each placement's IDs are distinct.
func (p *Jump) analyticMove(to Placer) (Movement, bool) {
	small, large, grow, ok := p.closedPair(to)
	if !ok {
		return Movement{}, false
	}
	n, m := float64(len(small)), float64(len(large))
	flow := func(i, k int, f float64) Flow {
		if grow {
			return Flow{small[i].ID, large[k].ID, f}
		}
		return Flow{large[k].ID, small[i].ID, f}
	}
	var flows []Flow
	for i := range small {
		flows = append(flows, flow(i, i, 1/m))
		for k := len(small); k < len(large); k++ {
			flows = append(flows, flow(i, k, 1/(n*m)))
		}
	}
	return newMovement(flows, true, 0), true
}

// closedPair says whether the closed form answers for p -> to and returns
// the smaller and the larger bucket list; grow is set when the larger is
// to's.
func (p *Jump) closedPair(to Placer) (small, large []Node, grow, ok bool) {
	q, ok := to.(*Jump)
	if !ok || !(keySpace{hasher: p.cfg.hasher}).same(keySpace{hasher: q.cfg.hasher}) {
		return nil, nil, false, false
	}
	if len(p.nodes) > len(q.nodes) {
		return q.nodes, p.nodes, false, true
	}
	return p.nodes, q.nodes, true, true
}
