package chash

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// Balancer routes requests to nodes by a Placer's preference order while
// bounding each node's in-flight load, as Envoy's hash_balance_factor and
// HAProxy's hash-balance-factor do (after Mirrokni, Thorup and
// Zadimoghaddam, "Consistent Hashing with Bounded Loads", SODA 2018).
//
// Acquire counts the request in the balancer's in-flight total t, then
// walks the key's preference order (the wrapped placer's AppendTopK) and
// takes the first node i whose in-flight count, after taking it, is at most
//
//	ceil(c × t × w_i / W)
//
// for load factor c and total weight W. The claim is a compare-and-swap on
// the node's counter, so the bound holds at the moment of every acquire
// against the total that acquire counted: every lease not yet released when
// it began, plus itself and any acquires running with it. Releases that
// complete while an acquire runs can leave the node above the bound for the
// smaller total; the bound is checked at acquire, never enforced on release.
// (Where c × t × w_i / W lies within 2^-40 of an integer, float rounding
// may make the bound one request stricter, never looser.) Since the bounds
// sum to c × t > t, a lone acquire always finds room;
// concurrent ones that find none retry once with the grown total and then
// return ErrOverloaded, without spinning.
//
// Cost: when the first choice has room, an acquire is one Lookup, one map
// read (none for a Bounded placer) and one compare-and-swap, and a release two atomic adds. When nodes
// are full the walk asks the placer for 8, 64, 512, ... nodes until one has
// room, so the worst case, every node full, costs about 8/7 of
// AppendTopK(Len) plus two map reads and atomic loads a node. Acquire and
// release do not allocate (buffers and lease records are pooled).
//
// A Balancer is safe for concurrent use. SetPlacer swaps the membership
// while requests are in flight: nodes that stay keep their counts, leases
// on nodes that left still release correctly, and the total keeps counting
// them until they do.
type Balancer struct {
	cur   atomic.Pointer[members]
	total atomic.Int64
	c     float64
	mu    sync.Mutex // serialises SetPlacer
}

// members is one membership: the placer and its nodes' counters.
type members struct {
	p     Placer
	owner ownerIndexer // p, if it can name owners by position
	nodes []Node
	index map[string]int // node ID -> position in nodes and loads
	loads []*counter
	share []float64 // c × w_i / W
}

// counter is a node's in-flight count, padded to its own cache line.
type counter struct {
	n atomic.Int64
	_ [56]byte
}

// ownerIndexer is implemented by placers that can give a key's owner as
// its position in Nodes(), sparing the balancer a map read per acquire.
type ownerIndexer interface {
	ownerIndex(key []byte) int
	ownerIndexString(key string) int
}

// Lease is a node acquired for one request. Release it exactly once when
// the request ends; releasing it again, or releasing a copy, does nothing.
// The zero Lease holds no node.
type Lease struct {
	node Node
	load *counter
	b    *Balancer
	slot *leaseSlot
	gen  uint64
}

// leaseSlot makes a release count once: the release that advances gen
// from the lease's value is the only one that counts. Slots are reused
// only after that release, and gen never goes back, so a stale copy never
// matches again.
type leaseSlot struct{ gen atomic.Uint64 }

var (
	leaseSlots = sync.Pool{New: func() any { return new(leaseSlot) }}
	nodeBufs   = sync.Pool{New: func() any { return new([]Node) }}
)

// NewBalancer returns a balancer over p's nodes. It uses WithLoadFactor
// (default 1.25) and ignores the other options. p should be immutable
// (not a Holder): change the membership with SetPlacer. It fails if p is
// nil or has no nodes.
func NewBalancer(p Placer, opts ...Option) (*Balancer, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	if cfg.loadFactor == 0 {
		cfg.loadFactor = DefaultLoadFactor
	}
	b := &Balancer{c: cfg.loadFactor}
	if err := b.SetPlacer(p); err != nil {
		return nil, err
	}
	return b, nil
}

// SetPlacer makes p the membership that acquires use, keeping the counts
// of nodes that stay. It fails, leaving the balancer unchanged, if p is
// nil or has no nodes. It costs O(Len) and allocates.
func (b *Balancer) SetPlacer(p Placer) error {
	if p == nil {
		return fmt.Errorf("%w: nil placer", ErrNoNodes)
	}
	nodes := p.Nodes()
	if len(nodes) == 0 {
		return fmt.Errorf("%w: placer has no nodes", ErrNoNodes)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	old := b.cur.Load()
	owner, _ := p.(ownerIndexer)
	m := &members{
		p:     p,
		owner: owner,
		nodes: nodes,
		index: make(map[string]int, len(nodes)),
		loads: make([]*counter, len(nodes)),
		share: make([]float64, len(nodes)),
	}
	top := 0.0
	for _, n := range nodes {
		top = max(top, n.Weight)
	}
	total := 0.0 // of weights scaled to at most 1, so it cannot overflow
	for _, n := range nodes {
		total += n.Weight / top
	}
	for i, n := range nodes {
		m.index[n.ID] = i
		m.share[i] = b.c * (n.Weight / top) / total * (1 - 0x1p-40)
		if j, ok := old.find(n.ID); ok {
			m.loads[i] = old.loads[j]
		} else {
			m.loads[i] = new(counter)
		}
	}
	b.cur.Store(m)
	return nil
}

func (m *members) find(id string) (int, bool) {
	if m == nil {
		return 0, false
	}
	i, ok := m.index[id]
	return i, ok
}

// Placer returns the current membership's placer.
func (b *Balancer) Placer() Placer { return b.cur.Load().p }

// LoadFactor returns the load factor c.
func (b *Balancer) LoadFactor() float64 { return b.c }

// InFlight returns the number of leases acquired and not yet released.
func (b *Balancer) InFlight() int64 { return b.total.Load() }

// Load returns the in-flight leases on the member with the given ID, or 0
// if it is not a member.
func (b *Balancer) Load(id string) int64 {
	m := b.cur.Load()
	if i, ok := m.index[id]; ok {
		return m.loads[i].n.Load()
	}
	return 0
}

// Acquire returns a lease on the first node in key's preference order that
// is within its load bound, or ErrOverloaded. It does not allocate.
func (b *Balancer) Acquire(key []byte) (Lease, error) {
	m := b.cur.Load()
	t := b.total.Add(1)
	if m.owner != nil {
		if i := m.owner.ownerIndex(key); m.take(i, t) {
			return b.lease(m, m.nodes[i], i), nil
		}
	} else if i, ok := m.index[m.p.Lookup(key).ID]; ok && m.take(i, t) {
		return b.lease(m, m.nodes[i], i), nil
	}
	return b.spill(m, t, key, "", false)
}

// AcquireString is Acquire for a string key, without copying it.
func (b *Balancer) AcquireString(key string) (Lease, error) {
	m := b.cur.Load()
	t := b.total.Add(1)
	if m.owner != nil {
		if i := m.owner.ownerIndexString(key); m.take(i, t) {
			return b.lease(m, m.nodes[i], i), nil
		}
	} else if i, ok := m.index[m.p.LookupString(key).ID]; ok && m.take(i, t) {
		return b.lease(m, m.nodes[i], i), nil
	}
	return b.spill(m, t, nil, key, true)
}

// take claims a place on node i if its count stays within the bound for
// total t: count+1 <= ceil(x) exactly when count < x. The shares are
// shaded down by 2^-40 so that float rounding can only make the bound
// stricter: where c × t × w_i / W is within that of an integer, a node
// may be refused one request early.
func (m *members) take(i int, t int64) bool {
	c, limit := m.loads[i], m.share[i]*float64(t)
	for {
		n := c.n.Load()
		if float64(n) >= limit {
			return false
		}
		if c.n.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

func (b *Balancer) lease(m *members, n Node, i int) Lease {
	s := leaseSlots.Get().(*leaseSlot)
	return Lease{node: n, load: m.loads[i], b: b, slot: s, gen: s.gen.Load()}
}

// spill walks the preference order past the first choice, asking the
// placer for eight times more nodes each round, then retries the whole
// order once if concurrent acquires have raised the total meanwhile.
func (b *Balancer) spill(m *members, t int64, kb []byte, ks string, str bool) (Lease, error) {
	bp := nodeBufs.Get().(*[]Node)
	defer nodeBufs.Put(bp)
	n := len(m.loads)
	tried := 1
	for k := 8; ; k *= 8 {
		k = min(k, n)
		if str {
			*bp = m.p.AppendTopKString((*bp)[:0], ks, k)
		} else {
			*bp = m.p.AppendTopK((*bp)[:0], kb, k)
		}
		if l, ok := b.first(m, *bp, min(tried, len(*bp)), t); ok {
			return l, nil
		}
		tried = len(*bp)
		if k == n {
			break
		}
	}
	if t2 := b.total.Load(); t2 > t {
		if l, ok := b.first(m, *bp, 0, t2); ok {
			return l, nil
		}
	}
	b.total.Add(-1)
	return Lease{}, ErrOverloaded
}

// first takes the first node of order[from:] with room for total t.
func (b *Balancer) first(m *members, order []Node, from int, t int64) (Lease, bool) {
	for _, n := range order[from:] {
		if i, ok := m.index[n.ID]; ok && m.take(i, t) {
			return b.lease(m, m.nodes[i], i), true
		}
	}
	return Lease{}, false
}

// Node returns the node the lease is on; the zero Node for the zero Lease.
func (l Lease) Node() Node { return l.node }

// Release ends the lease and reports whether this call did: it returns
// false, changing nothing, for a lease already released (through any copy)
// and for the zero Lease. A lease on a node that has since left the
// membership releases normally. It does not allocate.
func (l Lease) Release() bool {
	if l.slot == nil || !l.slot.gen.CompareAndSwap(l.gen, l.gen+1) {
		return false
	}
	l.load.n.Add(-1)
	l.b.total.Add(-1)
	leaseSlots.Put(l.slot)
	return true
}
