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
	placer chash.Placer   // over every endpoint
	index  map[string]int // node ID -> position in eps
	eps    []endpoint
	kicked []atomic.Bool // an IDLE endpoint is asked to connect once per picker
	ready  []int         // positions of the READY endpoints
	next   atomic.Uint32 // round-robin position for RPCs without a key
	bal    *balance.Balancer
	header string
	err    error // if set, every pick fails with it
}

// newPickerLocked snapshots the endpoints' states into a picker and, with
// a load factor, points the balancer at the READY endpoints.
func (b *chashBalancer) newPickerLocked() *picker {
	p := &picker{placer: b.placer, header: b.cfg.Header, index: make(map[string]int, len(b.children))}
	if b.err != nil {
		p.err = status.Errorf(codes.Unavailable, "chashgrpc: cannot place the endpoints: %v", b.err)
	}
	p.eps = make([]endpoint, len(b.children))
	p.kicked = make([]atomic.Bool, len(b.children))
	ready := make(map[string]bool)
	for i, c := range b.children {
		e := endpoint{id: identity(c.Endpoint), state: c.State.ConnectivityState, picker: c.State.Picker, exitIdle: c.ExitIdle}
		if e.state == connectivity.Ready || e.state == connectivity.TransientFailure {
			b.seen[e.id] = true
		}
		e.fresh = !b.seen[e.id]
		p.eps[i], p.index[e.id] = e, i
		if e.state == connectivity.Ready {
			p.ready = append(p.ready, i)
			ready[e.id] = true
		}
	}
	if b.cfg.LoadFactor != 0 && b.placer != nil && len(p.ready) > 0 {
		view := newReadyView(b.placer, ready)
		if b.bal == nil {
			// ParseConfig checked the factor, and view has nodes.
			b.bal, _ = balance.New(view, balance.WithLoadFactor(b.cfg.LoadFactor))
		} else {
			_ = b.bal.SetPlacer(view) // fails only for an empty view
		}
		p.bal = b.bal
	}
	return p
}

func (p *picker) Pick(info balancer.PickInfo) (balancer.PickResult, error) {
	if p.err != nil {
		return balancer.PickResult{}, p.err
	}
	key, ok := p.key(info)
	if !ok {
		return p.roundRobin(info)
	}
	if p.bal != nil {
		return p.pickBounded(info, key)
	}
	if e := &p.eps[p.index[p.placer.LookupString(key).ID]]; e.state == connectivity.Ready {
		return e.picker.Pick(info)
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
		i := p.index[n.ID]
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

// pickBounded takes a lease from the balancer over the READY endpoints and
// releases it in the pick's Done.
func (p *picker) pickBounded(info balancer.PickInfo, key string) (balancer.PickResult, error) {
	if e := &p.eps[p.index[p.placer.LookupString(key).ID]]; e.state != connectivity.Ready && p.kickAhead(key) {
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
		// A newer picker has moved the balancer to other endpoints.
		l.Release()
		return balancer.PickResult{}, balancer.ErrNoSubConnAvailable
	}
	res, err := p.eps[i].picker.Pick(info)
	if err != nil {
		l.Release()
		return res, err
	}
	d := dones.Get().(*done)
	d.lease, d.child = l, res.Done
	res.Done = d.fn
	return res, nil
}

// kickAhead asks the IDLE endpoints before key's first READY one to
// connect, and reports whether a fresh one comes first, to wait for.
func (p *picker) kickAhead(key string) bool {
	bp := orderBufs.Get().(*[]chash.Node)
	defer orderBufs.Put(bp)
	*bp = p.placer.AppendTopKString((*bp)[:0], key, p.placer.Len())
	for _, n := range *bp {
		i := p.index[n.ID]
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
	l, child := d.lease, d.child
	d.lease, d.child = balance.Lease{}, nil
	dones.Put(d)
	l.Release()
	if child != nil {
		child(info)
	}
}
