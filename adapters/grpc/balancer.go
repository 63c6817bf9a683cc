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
// With a load factor, picks go through a balance.Balancer over the READY
// endpoints: an RPC takes a lease on the first endpoint of its key's order
// within its load bound, released when the RPC ends (the pick's Done
// callback, which gRPC also calls for failed and cancelled RPCs).
//
// An RPC without a key (no WithKey and no configured header in its
// metadata) goes round-robin over the READY endpoints, without a lease.
package chashgrpc

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/balance"
	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/balancer/base"
	"google.golang.org/grpc/balancer/endpointsharding"
	"google.golang.org/grpc/balancer/lazy"
	"google.golang.org/grpc/balancer/pickfirst"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/experimental/balancer/weight"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/ringhash"
	"google.golang.org/grpc/serviceconfig"
)

func init() { balancer.Register(builder{}) }

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
	inhibit  bool                          // during UpdateClientConnState
	children []endpointsharding.ChildState // latest, from the child
	nodes    []chash.Node                  // the placement's members, by ID
	placer   chash.Placer                  // nil until built, or on err
	err      error                         // why the placement could not be built
	bal      *balance.Balancer             // with a load factor, once an endpoint is READY
	last     *picker                       // last published
	seen     map[string]bool               // endpoints READY or failed since they joined
}

func (b *chashBalancer) UpdateClientConnState(ccs balancer.ClientConnState) error {
	cfg, ok := ccs.BalancerConfig.(*Config)
	if !ok {
		return fmt.Errorf("%w: balancer config of type %T", ErrConfig, ccs.BalancerConfig)
	}
	b.mu.Lock()
	if b.cfg == nil || *b.cfg != *cfg {
		b.cfg, b.placer, b.err, b.nodes, b.bal = cfg, nil, nil, nil, nil
	}
	b.inhibit = true
	b.mu.Unlock()
	err := b.child.UpdateClientConnState(balancer.ClientConnState{
		ResolverState: pickfirst.EnableHealthListener(ccs.ResolverState),
	})
	b.mu.Lock()
	b.inhibit = false
	b.updateLocked()
	b.mu.Unlock()
	return err
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

func (b *chashBalancer) Close() { b.child.Close() }

// updateLocked rebuilds the placement if the membership changed and
// publishes a picker for the endpoints' current states.
func (b *chashBalancer) updateLocked() {
	if b.inhibit || b.cfg == nil {
		return
	}
	if len(b.children) == 0 {
		b.ClientConn.UpdateState(balancer.State{
			ConnectivityState: connectivity.TransientFailure,
			Picker:            base.NewErrPicker(errors.New("chashgrpc: the resolver gave no endpoints")),
		})
		return
	}
	if nodes := membership(b.children); b.placer == nil && b.err == nil || !slices.Equal(nodes, b.nodes) {
		b.nodes = nodes
		b.placer, b.err = b.cfg.placer(nodes)
		for id := range b.seen {
			if _, found := slices.BinarySearchFunc(nodes, id, func(n chash.Node, id string) int { return strings.Compare(n.ID, id) }); !found {
				delete(b.seen, id)
			}
		}
	}
	p := b.newPickerLocked()
	b.last = p
	state := aggregate(p.eps)
	if state == connectivity.Connecting || state == connectivity.TransientFailure {
		kickOne(p.eps)
	}
	b.ClientConn.UpdateState(balancer.State{ConnectivityState: state, Picker: p})
}

// membership returns the endpoints as nodes, ascending by ID.
func membership(children []endpointsharding.ChildState) []chash.Node {
	nodes := make([]chash.Node, len(children))
	for i, c := range children {
		nodes[i] = chash.Node{ID: identity(c.Endpoint), Weight: float64(max(weight.FromEndpoint(c.Endpoint).Weight, 1))}
	}
	slices.SortFunc(nodes, func(a, b chash.Node) int { return strings.Compare(a.ID, b.ID) })
	return nodes
}

// identity is the endpoint's hash key (gRFC A76), else its first address.
func identity(e resolver.Endpoint) string {
	if k := ringhash.HashKey(e); k != "" {
		return k
	}
	if len(e.Addresses) == 0 {
		return ""
	}
	return e.Addresses[0].Addr
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
