// Package chashgrpc is a grpc-go load balancer that routes each RPC by a
// request key with a chash placement: every RPC for one tenant, user or
// object goes to the backend that owns it, fails over to the key's next
// choice while that backend is down, and comes back when it recovers.
//
// Importing the package registers the balancer under [Name]; a service
// config selects and configures it (see [Config]):
//
//	{"loadBalancingConfig": [{"chash": {"algorithm": "rendezvous", "header": "x-tenant", "loadFactor": 1.25}}]}
//
// Endpoint identity is the hash key the resolver sets with grpc-go's
// resolver/ringhash.SetHashKey (gRFC A76), else the endpoint's first
// address, so a StatefulSet member keeps its keys across IP changes.
// Weights come from the endpoint weight attribute
// (experimental/balancer/weight); zero or unset is 1.
//
// Every endpoint stays in the placement whatever its connection state: a
// pick walks the key's preference order (chash's AppendTopK) past
// endpoints that are not READY, so an endpoint going down moves only its
// own keys, each to its second choice. Endpoints start IDLE and connect
// when a pick meets them (ClientConn.Connect connects them all). A pick
// returns balancer.ErrNoSubConnAvailable, which makes the RPC wait for the
// next picker, only while no endpoint is READY and some are connecting or
// idle, or when the key's order reaches an endpoint still making its first
// connection since it joined (so a starting channel does not send keys
// away from their owners); when all are in TRANSIENT_FAILURE it fails
// with their error.
//
// With a load factor, picks go through a balance.Balancer: an RPC takes a
// lease on the first READY endpoint of its key's order within its load
// bound, released exactly once, when the RPC ends (the pick's Done
// callback, which gRPC also calls for failed and cancelled RPCs). A lease
// belongs to the endpoint, not to its connection: the channel keeps one
// balancer, whose members are the endpoints by identity and change with
// SetPlacer, so the RPCs an endpoint runs stay counted against it when
// its connection is closed and re-made (a server's MaxConnectionAge) or it
// leaves the resolver's list and comes back. While an endpoint reconnects
// with RPCs still running on it, it takes no key but keeps its share of
// the bound, so the other endpoints stay within theirs; an RPC that finds
// every READY endpoint full then waits for it to reconnect. Once its RPCs
// end, or if it is in TRANSIENT_FAILURE, its share goes to the READY
// endpoints.
//
// An RPC without a key (no WithKey and no configured header in its
// metadata) goes round-robin over the READY endpoints, without a lease.
//
// # Configurations and memberships that cannot be placed
//
// [ParseConfig] validates a configuration for what it is, at a cost that
// does not depend on the sizes it configures: the algorithm, each
// option's range, the load factor. Positional algorithms (jump, jumpback,
// binomial, flip) are refused: they number endpoints by position, so
// dropping one other than the last moves most keys. So are the stateful
// ones (memento, anchor, dx, jumpbackanchor, choosek), whose slots every
// client would have to derive alike from a state a resolver does not
// carry.
//
// Whether a resolver's endpoints can be placed depends on them: a Maglev
// table smaller than the endpoints, a ring past its point limit (an
// endpoint of weight 200000), two endpoints with one hash key. A
// membership the configured placement refuses never turns healthy
// endpoints into failed RPCs:
//
//   - endpoints with a hash key (or, without one, a first address) that
//     an earlier endpoint in the resolver's list has are left out, the
//     first kept, as grpc-go's ring_hash keeps one; so are endpoints
//     without an address;
//   - if the configured placement refuses the rest, the channel keeps its
//     last good placement, as long as it names any of the endpoints (the
//     ones it names that are gone are skipped; new ones take no key until
//     a membership can be placed);
//   - without such a placement (a channel's first membership, or one that
//     shares no endpoint with it), the endpoints are placed by rendezvous
//     with the same weights and seed, which can place any non-empty set.
//
// Each is reported: UpdateClientConnState returns an error wrapping
// [ErrMembership] to the resolver, the grpclog component "chash" logs a
// warning, and [ReadCounters] counts it. RPCs fail only when no endpoint
// is READY.
package chashgrpc

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/balance"
	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/balancer/base"
	"google.golang.org/grpc/balancer/endpointsharding"
	"google.golang.org/grpc/balancer/lazy"
	"google.golang.org/grpc/balancer/pickfirst"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/experimental/balancer/weight"
	"google.golang.org/grpc/grpclog"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/ringhash"
	"google.golang.org/grpc/serviceconfig"
)

func init() { balancer.Register(builder{}) }

var logger = grpclog.Component("chash")

// ErrMembership reports a resolver update whose endpoints cannot be placed
// as configured: the configured placement refused them (a Maglev table
// smaller than the endpoints, a ring past its size limit, jump's unequal
// weights...), or some endpoints were left out (a hash key, or first
// address, given to two endpoints; an endpoint without an address).
// UpdateClientConnState returns it, wrapped with the detail, to the
// resolver; the channel keeps serving (see the package documentation).
var ErrMembership = errors.New("chashgrpc: the endpoints cannot be placed as configured")

// Counters are the balancer's process-wide counts of memberships it could
// not place as configured, over every channel, for export.
type Counters struct {
	// Refused counts the resolver memberships the configured placement
	// refused. Each was logged, and returned to the resolver wrapping
	// ErrMembership; the channel kept its last good placement or, without
	// one, used the fallback.
	Refused uint64
	// Fallbacks counts the refused memberships placed by the fallback
	// (rendezvous over the same endpoints) because the channel had no
	// last good placement naming any of the endpoints.
	Fallbacks uint64
	// Skipped counts the endpoints left out of a membership: the second
	// and later endpoints with one hash key (or first address), and
	// endpoints without an address.
	Skipped uint64
}

var counters struct{ refused, fallbacks, skipped atomic.Uint64 }

// ReadCounters returns the current Counters.
func ReadCounters() Counters {
	return Counters{Refused: counters.refused.Load(), Fallbacks: counters.fallbacks.Load(), Skipped: counters.skipped.Load()}
}

type builder struct{}

func (builder) Name() string { return Name }

func (builder) ParseConfig(js json.RawMessage) (serviceconfig.LoadBalancingConfig, error) {
	return ParseConfig(js)
}

// Build makes one endpoint-sharding child per endpoint, each a lazy
// pick_first: IDLE until a pick or ExitIdle asks it to connect, and left
// IDLE when its connection drops, as grpc-go's ring_hash does.
func (builder) Build(cc balancer.ClientConn, opts balancer.BuildOptions) balancer.Balancer {
	b := &chashBalancer{ClientConn: cc, seen: make(map[string]bool)}
	lazyPickFirst := func(cc balancer.ClientConn, opts balancer.BuildOptions) balancer.Balancer {
		return lazy.NewBalancer(cc, opts, balancer.Get(pickfirst.Name).Build)
	}
	b.child = endpointsharding.NewBalancer(b, opts, lazyPickFirst, endpointsharding.Options{DisableAutoReconnect: true})
	if buildHook != nil {
		buildHook(b)
	}
	return b
}

// buildHook, when set (by tests), sees every balancer built.
var buildHook func(*chashBalancer)

// chashBalancer keeps the placement over every endpoint and publishes a
// new picker whenever an endpoint's state or the membership changes. It
// embeds the channel's ClientConn to intercept the endpoint-sharding
// child's UpdateState calls.
type chashBalancer struct {
	balancer.ClientConn
	child balancer.Balancer

	mu       sync.Mutex
	cfg      *Config
	inhibit  bool // during UpdateClientConnState
	closed   bool
	children []endpointsharding.ChildState // latest, from the child
	rank     map[string]int                // address -> position of its endpoint in the resolver's list
	members  []chash.Node                  // the membership last placed or tried, by ID; nil before the first
	skipped  []string                      // the endpoints left out of members, described
	placer   chash.Placer                  // the keys' placement: of members, the last good one, or the fallback
	good     bool                          // placer is a configured placement (of members, or kept)
	err      error                         // why members could not be placed as configured
	bal      *balance.Balancer             // with a load factor, once an endpoint is READY
	last     *picker                       // last published
	seen     map[string]bool               // endpoints READY or failed since they joined

	refreshing atomic.Bool                     // a refresh is scheduled
	draining   atomic.Pointer[map[string]bool] // the last picker's draining endpoints
}

func (b *chashBalancer) UpdateClientConnState(ccs balancer.ClientConnState) error {
	cfg, ok := ccs.BalancerConfig.(*Config)
	if !ok {
		return fmt.Errorf("%w: balancer config of type %T", ErrConfig, ccs.BalancerConfig)
	}
	b.mu.Lock()
	if b.cfg == nil || *b.cfg != *cfg {
		if b.cfg != nil && b.cfg.LoadFactor != cfg.LoadFactor {
			// The factor is fixed when a balancer is made; the leases of
			// the old one still release on it.
			b.bal = nil
		}
		// Place the endpoints again under the new config; the current
		// placement stays the last good one until then.
		b.cfg, b.members = cfg, nil
	}
	b.rank = make(map[string]int)
	for i, e := range ccs.ResolverState.Endpoints {
		for _, a := range e.Addresses {
			if _, ok := b.rank[a.Addr]; !ok {
				b.rank[a.Addr] = i
			}
		}
	}
	b.inhibit = true
	b.mu.Unlock()
	err := b.child.UpdateClientConnState(balancer.ClientConnState{
		ResolverState: pickfirst.EnableHealthListener(ccs.ResolverState),
	})
	b.mu.Lock()
	b.inhibit = false
	b.updateLocked()
	merr := b.membershipErrLocked()
	b.mu.Unlock()
	return errors.Join(err, merr)
}

// membershipErrLocked is the error the resolver is told about the current
// membership, or nil.
func (b *chashBalancer) membershipErrLocked() error {
	var parts []string
	if b.err != nil {
		parts = append(parts, b.err.Error())
	}
	if len(b.skipped) > 0 {
		parts = append(parts, "left out: "+strings.Join(b.skipped, ", "))
	}
	if len(parts) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrMembership, strings.Join(parts, "; "))
}

// UpdateState receives the endpoint-sharding child's state: every
// endpoint's own state and picker.
func (b *chashBalancer) UpdateState(s balancer.State) {
	b.mu.Lock()
	b.children = endpointsharding.ChildStatesFromPicker(s.Picker)
	b.updateLocked()
	b.mu.Unlock()
}

func (b *chashBalancer) ResolverError(err error) { b.child.ResolverError(err) }

func (b *chashBalancer) UpdateSubConnState(balancer.SubConn, balancer.SubConnState) {}

// ExitIdle connects every endpoint (ClientConn.Connect calls it).
func (b *chashBalancer) ExitIdle() { b.child.ExitIdle() }

func (b *chashBalancer) Close() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	b.child.Close()
}

// refresh publishes a new picker soon, from another goroutine: a picker's
// Done calls it when the last RPC on an endpoint that kept its share of
// the load bound while reconnecting ends, so that the share goes.
func (b *chashBalancer) refresh() {
	if !b.refreshing.CompareAndSwap(false, true) {
		return
	}
	go func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.refreshing.Store(false)
		b.updateLocked()
	}()
}

// updateLocked places the endpoints again if the membership changed and
// publishes a picker for their current states.
func (b *chashBalancer) updateLocked() {
	if b.inhibit || b.cfg == nil || b.closed {
		return
	}
	if len(b.children) == 0 {
		b.ClientConn.UpdateState(balancer.State{
			ConnectivityState: connectivity.TransientFailure,
			Picker:            base.NewErrPicker(errors.New("chashgrpc: the resolver gave no endpoints")),
		})
		return
	}
	members, winners, skipped := b.membershipLocked()
	if b.members == nil || !slices.Equal(members, b.members) || !slices.Equal(skipped, b.skipped) {
		b.members, b.skipped = members, skipped
		b.placeLocked()
		for id := range b.seen {
			if _, found := slices.BinarySearchFunc(members, id, func(n chash.Node, id string) int { return strings.Compare(n.ID, id) }); !found {
				delete(b.seen, id)
			}
		}
	}
	p := b.newPickerLocked(winners)
	b.last = p
	state := aggregate(p.eps)
	if state == connectivity.Connecting || state == connectivity.TransientFailure {
		kickOne(p.eps)
	}
	b.ClientConn.UpdateState(balancer.State{ConnectivityState: state, Picker: p})
}

// placeLocked builds the placement of b.members. If the configured
// placement refuses them, the last good placement keeps serving if it
// names any of them; else the fallback places them. Either way the refusal
// is counted and logged, and UpdateClientConnState returns it.
func (b *chashBalancer) placeLocked() {
	if len(b.skipped) > 0 {
		counters.skipped.Add(uint64(len(b.skipped)))
		logger.Warningf("chash balancer %p: endpoints left out of the placement: %s", b, strings.Join(b.skipped, ", "))
	}
	if len(b.members) == 0 {
		b.placer, b.good, b.err = nil, false, fmt.Errorf("%w: no endpoint has an address", chash.ErrNoNodes)
		return
	}
	p, err := b.cfg.placer(b.members)
	if err == nil {
		b.placer, b.good, b.err = p, true, nil
		return
	}
	b.err = err
	counters.refused.Add(1)
	if b.good && b.placer != nil {
		if kept := namesAny(b.placer, b.members); kept > 0 {
			logger.Warningf("chash balancer %p: cannot place the %d endpoints: %v; keeping the last good placement (%d of its %d endpoints remain)",
				b, len(b.members), err, kept, b.placer.Len())
			return
		}
	}
	fp, ferr := b.cfg.fallback(b.members)
	if ferr != nil { // not for endpoint weights and distinct, named endpoints
		b.placer, b.good = nil, false
		logger.Errorf("chash balancer %p: cannot place the %d endpoints: %v; nor by the fallback: %v; keyed RPCs go round-robin", b, len(b.members), err, ferr)
		return
	}
	counters.fallbacks.Add(1)
	b.placer, b.good = fp, false
	logger.Warningf("chash balancer %p: cannot place the %d endpoints: %v; placing them by rendezvous until a membership can be placed as configured",
		b, len(b.members), err)
}

// namesAny returns how many of members p places.
func namesAny(p chash.Placer, members []chash.Node) int {
	n := 0
	for _, m := range p.Nodes() {
		if _, found := slices.BinarySearchFunc(members, m.ID, func(n chash.Node, id string) int { return strings.Compare(n.ID, id) }); found {
			n++
		}
	}
	return n
}

// membershipLocked returns the endpoints as nodes, ascending by ID, the
// positions in b.children of the endpoints that stand for them, and the
// endpoints left out, described and sorted: of endpoints with one
// identity the first in the resolver's list is kept (as grpc-go's
// ring_hash keeps one), and endpoints without an address are left out.
func (b *chashBalancer) membershipLocked() ([]chash.Node, map[int]bool, []string) {
	best := make(map[string]int, len(b.children))
	var skipped []string
	for i, c := range b.children {
		id := identity(c.Endpoint)
		if id == "" {
			skipped = append(skipped, "an endpoint without an address")
			continue
		}
		j, dup := best[id]
		if !dup {
			best[id] = i
			continue
		}
		if b.before(i, j) {
			best[id], i = i, j
		}
		skipped = append(skipped, fmt.Sprintf("%s (repeats the identity %q of %s)", firstAddr(b.children[i].Endpoint), id, firstAddr(b.children[best[id]].Endpoint)))
	}
	nodes := make([]chash.Node, 0, len(best))
	winners := make(map[int]bool, len(best))
	for id, i := range best {
		nodes = append(nodes, chash.Node{ID: id, Weight: float64(max(weight.FromEndpoint(b.children[i].Endpoint).Weight, 1))})
		winners[i] = true
	}
	slices.SortFunc(nodes, func(a, b chash.Node) int { return strings.Compare(a.ID, b.ID) })
	slices.Sort(skipped)
	return nodes, winners, skipped
}

// before reports whether child i comes before child j in the resolver's
// list (by first address, for endpoints the list does not order).
func (b *chashBalancer) before(i, j int) bool {
	ai, aj := firstAddr(b.children[i].Endpoint), firstAddr(b.children[j].Endpoint)
	ri, oki := b.rank[ai]
	rj, okj := b.rank[aj]
	switch {
	case oki && okj && ri != rj:
		return ri < rj
	case oki != okj:
		return oki
	}
	return ai < aj
}

func firstAddr(e resolver.Endpoint) string {
	if len(e.Addresses) == 0 {
		return ""
	}
	return e.Addresses[0].Addr
}

// identity is the endpoint's hash key (gRFC A76), else its first address.
func identity(e resolver.Endpoint) string {
	if k := ringhash.HashKey(e); k != "" {
		return k
	}
	return firstAddr(e)
}

// aggregate is the channel's state by ring_hash's rules (gRFC A42, A61):
// READY if any endpoint is; TRANSIENT_FAILURE if two or more are;
// CONNECTING if any is, or one is in TRANSIENT_FAILURE among several;
// IDLE if any is; else TRANSIENT_FAILURE.
func aggregate(eps []endpoint) connectivity.State {
	var n [5]int
	for _, e := range eps {
		n[e.state]++
	}
	switch {
	case n[connectivity.Ready] > 0:
		return connectivity.Ready
	case n[connectivity.TransientFailure] > 1:
		return connectivity.TransientFailure
	case n[connectivity.Connecting] > 0, n[connectivity.TransientFailure] == 1 && len(eps) > 1:
		return connectivity.Connecting
	case n[connectivity.Idle] > 0:
		return connectivity.Idle
	}
	return connectivity.TransientFailure
}

// kickOne makes sure some endpoint is trying to connect while none can
// serve, so the channel recovers without waiting for a pick: if none is
// CONNECTING, the first IDLE endpoint (by ID, so repeated updates kick
// the same one) is asked to connect.
func kickOne(eps []endpoint) {
	var idle *endpoint
	for i := range eps {
		switch e := &eps[i]; {
		case e.state == connectivity.Connecting:
			return
		case e.state == connectivity.Idle && (idle == nil || e.id < idle.id):
			idle = e
		}
	}
	if idle != nil && idle.exitIdle != nil {
		idle.exitIdle()
	}
}
