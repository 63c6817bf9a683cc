package balance

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/internal/place"
)

// ErrOverloaded reports that an acquire found every node at its load
// bound. A single goroutine never sees it; concurrent acquires can,
// transiently, and the caller may retry or shed the request.
var ErrOverloaded = errors.New("balance: every node is at its load bound")

// Balancer routes requests to nodes by a Placer's preference order while
// bounding each node's in-flight load, as Envoy's hash_balance_factor and
// HAProxy's hash-balance-factor do (after Mirrokni, Thorup and
// Zadimoghaddam, "Consistent Hashing with Bounded Loads", SODA 2018), and
// optionally picks the lighter of a key's first d choices (power of d
// choices) and spreads the reads of hot keys over several replicas.
//
// Acquire counts the request in the balancer's in-flight total t, chooses
// a candidate (the key's first choice; with [WithChoices], the lightest of
// its first d, the first kept unless another is strictly lighter for its
// weight; with [WithHotKeys], for a hot key, the lighter of two of its
// first R), and takes it if its in-flight count, after taking it, is at most
//
//	ceil(c × t × w_i / W)
//
// for load factor c and total weight W. A candidate without room spills
// to the next node in the key's preference order (the placer's AppendTopK)
// that has room. The claim is a compare-and-swap on the node's counter, so
// the bound holds at the moment of every acquire against the total that
// acquire counted: every lease not yet released when it began, plus itself
// and any acquires running with it. Releases that complete while an acquire
// runs can leave the node above the bound for the smaller total; the bound
// is checked at acquire, never enforced on release. (Where c × t × w_i / W
// lies within 2^-40 of an integer, float rounding may make the bound one
// request stricter, never looser.) [WithoutLoadBound] removes the bound.
//
// Since the bounds sum to c × t > t, some node always has room for a lone
// acquire, and a lone acquire always finds it: the spill walks AppendTopK
// lists of 8, 64, 512, ... nodes, trying each list whole (so it does not
// rely on a shorter list being a prefix of a longer one), and then makes
// one pass over every member. Concurrent acquires that find no room retry
// that pass once with the grown total and then return ErrOverloaded,
// without spinning.
//
// Cost: when the first choice has room, an acquire is one Lookup, one map
// read (none for a Bounded placer) and one compare-and-swap, and a release
// two atomic adds; WithChoices(d) replaces the Lookup by AppendTopK(d) and
// d map reads. When nodes are full the walk costs at most about 8/7 of
// AppendTopK(Len) plus three passes of a map read and an atomic load a
// node: O(Len) placer work and O(Len) tries, never more. Acquire and
// release do not allocate (buffers and lease records are pooled).
//
// A Balancer is safe for concurrent use. SetPlacer swaps the membership
// while requests are in flight: nodes that stay keep their counts, leases
// on nodes that left still release correctly, and the total keeps counting
// them until they do.
//
// The zero Balancer has no nodes: Acquire returns an error wrapping
// ErrNoNodes until SetPlacer gives it a placer, after which it behaves as
// New(p) with no options.
type Balancer struct {
	cur       atomic.Pointer[membership]
	total     atomic.Int64
	overloads atomic.Uint64
	cfg       config     // set by New, before b is shared
	mu        sync.Mutex // serialises SetPlacer
}

// membership is one membership: the placer, its nodes' counters and the
// balancer's effective configuration.
type membership struct {
	config
	p         chash.Placer
	owner     ownerIndexer // p, if it can name owners by position
	nodes     []chash.Node
	index     map[string]int // node ID -> position in nodes and loads
	loads     []*counter
	share     []float64 // c × w_i / W, shaded down
	weight    []float64 // w_i / max w, for comparing loads
	unbounded bool
}

// counter is a node's in-flight count and its acquire statistics, padded
// to its own cache line. The statistics are written only off the fast
// path, on the line the acquire has just written.
type counter struct {
	n       atomic.Int64
	away    atomic.Uint64 // served here, not the key's first choice
	spilled atomic.Uint64 // served here after the bound refused the candidates
	spread  atomic.Uint64 // hot-key acquires served here
	_       [32]byte
}

// ownerIndexer is implemented by placers that can give a key's owner as
// its position in Nodes(), sparing the balancer a map read per acquire.
type ownerIndexer interface {
	LookupIndex(key []byte) int
	LookupIndexString(key string) int
}

// Lease is a node acquired for one request. Release it exactly once when
// the request ends; releasing it again, or releasing a copy, does nothing.
// The zero Lease holds no node.
type Lease struct {
	node chash.Node
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
	nodeBufs   = sync.Pool{New: func() any { return new([]chash.Node) }}
)

// New returns a balancer over p's nodes. Its options are
// [WithLoadFactor] (default 1.25), [WithoutLoadBound], [WithChoices] and
// [WithHotKeys]; an option out of range, or options that conflict, are an
// error wrapping chash.ErrInvalidOption. p should be immutable (not a
// Holder): change the membership with SetPlacer. It fails with
// chash.ErrNilPlacer if p is nil (or a typed nil) and chash.ErrNoNodes if
// it has no nodes.
func New(p chash.Placer, opts ...Option) (*Balancer, error) {
	var cfg config
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	b := &Balancer{cfg: cfg}
	if err := b.SetPlacer(p); err != nil {
		return nil, err
	}
	return b, nil
}

// SetPlacer makes p the membership that acquires use, keeping the counts
// (and statistics) of nodes that stay. It fails, leaving the balancer
// unchanged, with chash.ErrNilPlacer if p is nil or a typed nil and
// chash.ErrNoNodes if it has no nodes. It costs O(Len) and
// allocates.
func (b *Balancer) SetPlacer(p chash.Placer) error {
	if place.IsNil(p) {
		return fmt.Errorf("%w: %T", chash.ErrNilPlacer, p)
	}
	if _, ok := p.(interface{ Load() chash.Placer }); ok {
		// The balancer's counts follow the members it was given; a view
		// that changes under it would leave them stale.
		return fmt.Errorf("%w: a %T changes its members: give the balancer each placer it serves with SetPlacer, from its view hook (member.WithViewHook, for example)", chash.ErrInvalidOption, p)
	}
	nodes := p.Nodes()
	if len(nodes) == 0 {
		return fmt.Errorf("%w: placer has no nodes", chash.ErrNoNodes)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	old := b.cur.Load()
	owner, _ := p.(ownerIndexer)
	m := &membership{
		config: b.cfg.withDefaults(),
		p:      p,
		owner:  owner,
		nodes:  nodes,
		index:  make(map[string]int, len(nodes)),
		loads:  make([]*counter, len(nodes)),
		share:  make([]float64, len(nodes)),
		weight: make([]float64, len(nodes)),
	}
	m.unbounded = m.c == unbounded
	top := 0.0
	for _, n := range nodes {
		top = max(top, leaseWeight(n.Weight))
	}
	if top == 0 {
		top = -1 // no node takes leases by weight: every node counts as 1
	}
	total := 0.0 // of weights scaled to at most 1, so it cannot overflow
	for _, n := range nodes {
		total += scaled(n.Weight, top)
	}
	for i, n := range nodes {
		m.index[n.ID] = i
		m.weight[i] = scaled(n.Weight, top)
		m.share[i] = m.c * m.weight[i] / total * (1 - 0x1p-40)
		if j, ok := old.find(n.ID); ok {
			m.loads[i] = old.loads[j]
		} else {
			m.loads[i] = new(counter)
		}
	}
	b.cur.Store(m)
	return nil
}

// leaseWeight is the weight a node takes leases by: its own if positive
// and finite, else 0 (a placer of this module reports 0 as 1; a placer of
// the caller's may report 0 for a draining node).
func leaseWeight(w float64) float64 {
	if w > 0 && !math.IsInf(w, 0) {
		return w
	}
	return 0
}

// scaled is a node's lease weight over the largest, top; a negative top
// says no node has a positive weight, and every node counts as 1.
func scaled(w, top float64) float64 {
	if top < 0 {
		return 1
	}
	return leaseWeight(w) / top
}

func (m *membership) find(id string) (int, bool) {
	if m == nil {
		return 0, false
	}
	i, ok := m.index[id]
	return i, ok
}

// Placer returns the current membership's placer, or nil for the zero
// Balancer.
func (b *Balancer) Placer() chash.Placer {
	if m := b.cur.Load(); m != nil {
		return m.p
	}
	return nil
}

// LoadFactor returns the load factor c: +Inf under WithoutLoadBound, and
// DefaultLoadFactor for the zero Balancer.
func (b *Balancer) LoadFactor() float64 { return b.cfg.withDefaults().c }

// InFlight returns the number of leases acquired and not yet released.
func (b *Balancer) InFlight() int64 { return b.total.Load() }

// Load returns the in-flight leases on the member with the given ID, or 0
// if it is not a member.
func (b *Balancer) Load(id string) int64 {
	m := b.cur.Load()
	if i, ok := m.find(id); ok {
		return m.loads[i].n.Load()
	}
	return 0
}

// Acquire returns a lease on a node for key within its load bound: the
// candidate chosen as the type describes if it has room, else the next
// node in key's preference order with room, else ErrOverloaded (only
// under concurrency). It does not allocate.
func (b *Balancer) Acquire(key []byte) (Lease, error) {
	return b.acquire(bkey(key))
}

// AcquireString is Acquire for a string key, without copying it.
func (b *Balancer) AcquireString(key string) (Lease, error) {
	return b.acquire(skey(key))
}

func (b *Balancer) acquire(k reqKey) (Lease, error) {
	m := b.cur.Load()
	if m == nil {
		return Lease{}, errNoPlacer
	}
	t := b.total.Add(1)
	if m.hot != nil {
		h := k.hash()
		m.hot.observeHash(h, k)
		if m.spread > 1 {
			if r := m.replicas(h); r > 1 {
				return b.acquireHot(m, t, k, r)
			}
		}
	}
	if m.choices > 1 {
		return b.acquireChoices(m, t, k)
	}
	i := m.firstIndex(k)
	if i >= 0 && m.take(i, t) {
		return b.lease(m, i), nil
	}
	return b.spill(m, t, k, i)
}

// firstIndex returns the position of key's first choice, or -1 if the
// placer names a node that is not a member (a Holder that changed).
func (m *membership) firstIndex(k reqKey) int {
	if m.owner != nil {
		if k.str {
			return m.owner.LookupIndexString(k.s)
		}
		return m.owner.LookupIndex(k.b)
	}
	var n chash.Node
	if k.str {
		n = m.p.LookupString(k.s)
	} else {
		n = m.p.Lookup(k.b)
	}
	if i, ok := m.index[n.ID]; ok {
		return i
	}
	return -1
}

// take claims a place on node i if its count stays within the bound for
// total t: count+1 <= ceil(x) exactly when count < x. The shares are
// shaded down by 2^-40 so that float rounding can only make the bound
// stricter: where c × t × w_i / W is within that of an integer, a node
// may be refused one request early.
func (m *membership) take(i int, t int64) bool {
	c := m.loads[i]
	if m.unbounded {
		c.n.Add(1)
		return true
	}
	limit := m.share[i] * float64(t)
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

func (b *Balancer) lease(m *membership, i int) Lease {
	s := leaseSlots.Get().(*leaseSlot)
	return Lease{node: m.nodes[i], load: m.loads[i], b: b, slot: s, gen: s.gen.Load()}
}

var errNoPlacer = fmt.Errorf("%w: the balancer has no placer (the zero Balancer)", chash.ErrNoNodes)

// overloadHook, if set (by tests), runs in spill where concurrent acquires
// can take the last room: on entry (stage 0), and between reading the
// grown total and the last pass (stage 1).
var overloadHook func(stage int)

// spill finds room for key after its candidates were refused (first is
// the position of its first choice, or -1): each AppendTopK list of 8,
// 64, ... nodes is tried whole, then every member once from first+1, then
// every member once more if concurrent acquires have raised the total.
func (b *Balancer) spill(m *membership, t int64, k reqKey, first int) (Lease, error) {
	if overloadHook != nil {
		overloadHook(0)
	}
	n := len(m.nodes)
	if n > 1 {
		bp := nodeBufs.Get().(*[]chash.Node)
		for size := 8; ; size *= 8 {
			size = min(size, n)
			*bp = k.topK(m.p, (*bp)[:0], size)
			if i := m.claimIn(*bp, t); i >= 0 {
				nodeBufs.Put(bp)
				return b.spilled(m, i, first), nil
			}
			if size == n {
				break
			}
		}
		nodeBufs.Put(bp)
	}
	if i := m.claimAny(t, first); i >= 0 {
		return b.spilled(m, i, first), nil
	}
	if t2 := b.total.Load(); t2 > t {
		if overloadHook != nil {
			overloadHook(1)
		}
		if i := m.claimAny(t2, first); i >= 0 {
			return b.spilled(m, i, first), nil
		}
	}
	b.total.Add(-1)
	b.overloads.Add(1)
	return Lease{}, ErrOverloaded
}

func (b *Balancer) spilled(m *membership, i, first int) Lease {
	m.loads[i].spilled.Add(1)
	if i != first {
		m.loads[i].away.Add(1)
	}
	return b.lease(m, i)
}

// claimIn takes the first node of order that is a member with room for
// total t and returns its position, or -1.
func (m *membership) claimIn(order []chash.Node, t int64) int {
	for _, n := range order {
		if i, ok := m.index[n.ID]; ok && m.take(i, t) {
			return i
		}
	}
	return -1
}

// claimAny takes the first member with room for total t, starting after
// position first so that keys with different first choices spread, and
// returns its position, or -1. It is the fallback that makes a lone
// acquire always succeed whatever the placer's AppendTopK returns.
func (m *membership) claimAny(t int64, first int) int {
	n := len(m.nodes)
	for j := 1; j <= n; j++ {
		i := (first + j) % n
		if i < 0 {
			i += n
		}
		if m.take(i, t) {
			return i
		}
	}
	return -1
}

// Node returns the node the lease is on; the zero Node for the zero Lease.
func (l Lease) Node() chash.Node { return l.node }

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
