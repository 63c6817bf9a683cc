package chashgrpc

import (
	"strings"
	"sync"
	"sync/atomic"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/balance"
	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// endpoint is one endpoint's state as a picker saw it.
type endpoint struct {
	id       string
	state    connectivity.State
	picker   balancer.Picker
	exitIdle func()
	// fresh is an endpoint not yet READY or failed since it joined: picks
	// wait for it, as ring_hash does, instead of sending its keys
	// elsewhere while the channel starts.
	fresh bool
}

// picker routes by key over a snapshot of the endpoints' states. It is
// immutable but for kicked and next, and safe for concurrent use.
type picker struct {
	placer chash.Placer   // the keys' placement; nil: keyed RPCs go round-robin
	index  map[string]int // node ID -> position in eps of the endpoint placed as it
	eps    []endpoint
	kicked []atomic.Bool // an IDLE endpoint is asked to connect once per picker
	ready  []int         // positions of the READY endpoints
	next   atomic.Uint32 // round-robin position for RPCs without a key
	bal    *balance.Balancer
	header string
	// draining are the endpoints that keep their share of the load bound
	// while they reconnect, because RPCs still run on them; when the last
	// one ends, owner publishes a picker without the share.
	draining map[string]bool
	owner    *chashBalancer
}

// newPickerLocked snapshots the endpoints' states into a picker and, with
// a load factor, gives the balancer the membership of every endpoint.
// winners are the positions in b.children of the endpoints placed (of
// endpoints with one identity, the first in the resolver's list).
func (b *chashBalancer) newPickerLocked(winners map[int]bool) *picker {
	p := &picker{placer: b.placer, header: b.cfg.Header, index: make(map[string]int, len(b.children)), owner: b}
	p.eps = make([]endpoint, len(b.children))
	p.kicked = make([]atomic.Bool, len(b.children))
	ready := make(map[string]bool)
	states := make(map[string]connectivity.State)
	for i, c := range b.children {
		e := endpoint{id: identity(c.Endpoint), state: c.State.ConnectivityState, picker: c.State.Picker, exitIdle: c.ExitIdle}
		if e.state == connectivity.Ready || e.state == connectivity.TransientFailure {
			b.seen[e.id] = true
		}
		e.fresh = !b.seen[e.id]
		p.eps[i] = e
		if e.state == connectivity.Ready {
			p.ready = append(p.ready, i)
		}
		if winners[i] {
			p.index[e.id] = i
			states[e.id] = e.state
			if e.state == connectivity.Ready {
				ready[e.id] = true
			}
		}
	}
	if b.cfg.LoadFactor != 0 && b.placer != nil && len(ready) > 0 {
		view := b.balancerViewLocked(ready, states, p)
		if b.bal == nil {
			// ParseConfig checked the factor, and view has a node of
			// positive weight.
			b.bal, _ = balance.New(view, balance.WithLoadFactor(b.cfg.LoadFactor))
		} else {
			_ = b.bal.SetPlacer(view)
		}
		p.bal = b.bal
	}
	if p.draining != nil {
		b.draining.Store(&p.draining)
	} else {
		b.draining.Store(nil)
	}
	return p
}

// balancerViewLocked is the balancer's membership: every endpoint of the
// placement, by identity, so that the RPCs an endpoint runs stay counted
// against it whatever happens to its connection. Keys choose the READY
// endpoints, in their placement order. An endpoint reconnecting (IDLE or
// CONNECTING, as after its server closed the connection at
// MaxConnectionAge) while RPCs still run on it keeps its weight, its
// share of the bound, until they end; other endpoints that are not READY
// have weight 0, which takes no lease. An endpoint that has left the
// placement stays, with weight 0, while RPCs run on it, so that its count
// is intact if it comes back.
func (b *chashBalancer) balancerViewLocked(ready map[string]bool, states map[string]connectivity.State, p *picker) *readyView {
	nodes := b.placer.Nodes()
	in := make(map[string]bool, len(nodes))
	for i := range nodes {
		id := nodes[i].ID
		in[id] = true
		if !(nodes[i].Weight > 0) {
			nodes[i].Weight = 1 // a placer's weight 0 means 1
		}
		if ready[id] {
			continue
		}
		st, ok := states[id]
		if ok && (st == connectivity.Idle || st == connectivity.Connecting) && b.bal != nil && b.bal.Load(id) > 0 {
			if p.draining == nil {
				p.draining = make(map[string]bool)
			}
			p.draining[id] = true
			continue
		}
		nodes[i].Weight = 0
	}
	if b.bal != nil {
		for _, n := range b.bal.Placer().Nodes() {
			if !in[n.ID] && b.bal.Load(n.ID) > 0 {
				in[n.ID] = true
				nodes = append(nodes, chash.Node{ID: n.ID})
			}
		}
	}
	return newReadyView(b.placer, ready, nodes)
}

func (p *picker) Pick(info balancer.PickInfo) (balancer.PickResult, error) {
	key, ok := p.key(info)
	if !ok || p.placer == nil {
		return p.roundRobin(info)
	}
	if p.bal != nil {
		return p.pickBounded(info, key)
	}
	if i, ok := p.index[p.placer.LookupString(key).ID]; ok && p.eps[i].state == connectivity.Ready {
		return p.eps[i].picker.Pick(info)
	}
	return p.walk(info, key)
}

// key is the request key: WithKey's, else the header's values joined by
// "," (as ring_hash joins them).
func (p *picker) key(info balancer.PickInfo) (string, bool) {
	if k, ok := KeyFrom(info.Ctx); ok {
		return k, true
	}
	if p.header == "" {
		return "", false
	}
	vals := metadata.ValueFromOutgoingContext(info.Ctx, p.header)
	if len(vals) == 0 {
		return "", false
	}
	return strings.Join(vals, ","), true
}

var orderBufs = sync.Pool{New: func() any { return new([]chash.Node) }}

// walk picks the first READY endpoint in key's preference order, asking
// the IDLE endpoints it passes to connect. It waits instead if it meets a
// fresh endpoint first.
func (p *picker) walk(info balancer.PickInfo, key string) (balancer.PickResult, error) {
	bp := orderBufs.Get().(*[]chash.Node)
	defer orderBufs.Put(bp)
	*bp = p.placer.AppendTopKString((*bp)[:0], key, p.placer.Len())
	waiting := false
	for _, n := range *bp {
		i, ok := p.index[n.ID]
		if !ok {
			continue // a kept placement's endpoint the resolver has dropped
		}
		switch p.eps[i].state {
		case connectivity.Ready:
			return p.eps[i].picker.Pick(info)
		case connectivity.Idle:
			p.kick(i)
			waiting = true
		case connectivity.Connecting:
			waiting = true
		}
		if p.eps[i].fresh {
			return balancer.PickResult{}, balancer.ErrNoSubConnAvailable
		}
	}
	return p.none(info, waiting)
}

// kick asks endpoint i to connect, once per picker.
func (p *picker) kick(i int) {
	if p.eps[i].exitIdle != nil && p.kicked[i].CompareAndSwap(false, true) {
		p.eps[i].exitIdle()
	}
}

// none answers a pick that found no READY endpoint: wait for a new picker
// while some endpoint is connecting or idle, else fail as the first
// endpoint in TRANSIENT_FAILURE does.
func (p *picker) none(info balancer.PickInfo, waiting bool) (balancer.PickResult, error) {
	if waiting {
		return balancer.PickResult{}, balancer.ErrNoSubConnAvailable
	}
	for i := range p.eps {
		switch p.eps[i].state {
		case connectivity.TransientFailure:
			return p.eps[i].picker.Pick(info)
		case connectivity.Idle:
			p.kick(i)
			waiting = true
		case connectivity.Connecting:
			waiting = true
		}
	}
	if waiting {
		return balancer.PickResult{}, balancer.ErrNoSubConnAvailable
	}
	return balancer.PickResult{}, status.Error(codes.Unavailable, "chashgrpc: no endpoint can serve")
}

// roundRobin spreads RPCs without a key over the READY endpoints.
func (p *picker) roundRobin(info balancer.PickInfo) (balancer.PickResult, error) {
	if len(p.ready) == 0 {
		return p.none(info, false)
	}
	i := p.ready[int(p.next.Add(1)%uint32(len(p.ready)))]
	return p.eps[i].picker.Pick(info)
}

// pickBounded takes a lease from the balancer over the endpoints and
// releases it in the pick's Done.
func (p *picker) pickBounded(info balancer.PickInfo, key string) (balancer.PickResult, error) {
	if i, ok := p.index[p.placer.LookupString(key).ID]; (!ok || p.eps[i].state != connectivity.Ready) && p.kickAhead(key) {
		return balancer.PickResult{}, balancer.ErrNoSubConnAvailable
	}
	if len(p.ready) == 0 {
		return p.none(info, false)
	}
	l, err := p.bal.AcquireString(key)
	if err != nil {
		return balancer.PickResult{}, status.Errorf(codes.Unavailable, "chashgrpc: %v", err)
	}
	i, ok := p.index[l.Node().ID]
	if !ok || p.eps[i].state != connectivity.Ready {
		// Every READY endpoint is at its bound and the lease is on one
		// that keeps its share while it reconnects (or a newer picker has
		// moved the balancer): have it connect, and wait for the picker
		// its new state brings.
		p.release(l)
		if ok {
			p.kick(i)
		}
		return balancer.PickResult{}, balancer.ErrNoSubConnAvailable
	}
	res, err := p.eps[i].picker.Pick(info)
	if err != nil {
		p.release(l)
		return res, err
	}
	d := dones.Get().(*done)
	d.lease, d.child, d.p = l, res.Done, p
	res.Done = d.fn
	return res, nil
}

// release ends a lease; the end of the last one on an endpoint the
// current picker counts as draining (whichever picker took the lease) has
// the balancer publish a picker without its share.
func (p *picker) release(l balance.Lease) {
	if !l.Release() {
		return
	}
	if d := p.owner.draining.Load(); d != nil {
		if id := l.Node().ID; (*d)[id] && p.bal.Load(id) == 0 {
			p.owner.refresh()
		}
	}
}

// kickAhead asks the IDLE endpoints before key's first READY one to
// connect, and reports whether a fresh one comes first, to wait for.
func (p *picker) kickAhead(key string) bool {
	bp := orderBufs.Get().(*[]chash.Node)
	defer orderBufs.Put(bp)
	*bp = p.placer.AppendTopKString((*bp)[:0], key, p.placer.Len())
	for _, n := range *bp {
		i, ok := p.index[n.ID]
		if !ok {
			continue
		}
		switch p.eps[i].state {
		case connectivity.Ready:
			return false
		case connectivity.Idle:
			p.kick(i)
		}
		if p.eps[i].fresh {
			return true
		}
	}
	return false
}

// done releases a pick's lease when gRPC ends the RPC, then calls the
// endpoint's own Done. Pooled with its bound method value, so a pick does
// not allocate one; gRPC calls Done once per pick result.
type done struct {
	lease balance.Lease
	child func(balancer.DoneInfo)
	p     *picker
	fn    func(balancer.DoneInfo)
}

var dones sync.Pool

func init() {
	dones.New = func() any {
		d := new(done)
		d.fn = d.finish
		return d
	}
}

func (d *done) finish(info balancer.DoneInfo) {
	l, child, p := d.lease, d.child, d.p
	d.lease, d.child, d.p = balance.Lease{}, nil, nil
	dones.Put(d)
	p.release(l)
	if child != nil {
		child(info)
	}
}
