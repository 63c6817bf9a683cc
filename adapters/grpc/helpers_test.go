package chashgrpc

// Test helpers: real gRPC servers (grpc-go's health service) listening on
// loopback, and channels to them through a manual resolver.

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"
)

// backend is one real gRPC server on a loopback port, counting the RPCs in
// flight on it and their peak.
type backend struct {
	addr     string
	opts     []grpc.ServerOption
	mu       sync.Mutex
	srv      *grpc.Server
	inflight atomic.Int64
	peak     atomic.Int64
}

func startBackends(t testing.TB, n int, opts ...grpc.ServerOption) []*backend {
	t.Helper()
	bs := make([]*backend, n)
	for i := range bs {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		bs[i] = &backend{addr: lis.Addr().String(), opts: opts}
		bs[i].serve(lis)
		t.Cleanup(bs[i].stop)
	}
	return bs
}

func (b *backend) serve(lis net.Listener) {
	srv := grpc.NewServer(append([]grpc.ServerOption{grpc.StreamInterceptor(b.countStream), grpc.UnaryInterceptor(b.countUnary)}, b.opts...)...)
	healthpb.RegisterHealthServer(srv, health.NewServer())
	b.mu.Lock()
	b.srv = srv
	b.mu.Unlock()
	go srv.Serve(lis)
}

func (b *backend) enter() {
	n := b.inflight.Add(1)
	for p := b.peak.Load(); n > p && !b.peak.CompareAndSwap(p, n); p = b.peak.Load() {
	}
}

func (b *backend) countUnary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	b.enter()
	defer b.inflight.Add(-1)
	return h(ctx, req)
}

func (b *backend) countStream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	b.enter()
	defer b.inflight.Add(-1)
	return h(srv, ss)
}

// stop closes the server and every connection to it.
func (b *backend) stop() {
	b.mu.Lock()
	srv := b.srv
	b.srv = nil
	b.mu.Unlock()
	if srv != nil {
		srv.Stop()
	}
}

// restart serves again on the same address.
func (b *backend) restart(t testing.TB) {
	t.Helper()
	var lis net.Listener
	require.Eventually(t, func() bool {
		var err error
		lis, err = net.Listen("tcp", b.addr)
		return err == nil
	}, 5*time.Second, 20*time.Millisecond, "cannot listen on %s again", b.addr)
	b.serve(lis)
}

var schemes atomic.Int64

// dial opens a channel to the endpoints with the service config js and
// returns it with the chash balancer it built (nil for other policies).
func dial(t testing.TB, eps []resolver.Endpoint, js string) (*grpc.ClientConn, *chashBalancer) {
	t.Helper()
	conn, b, _ := dialResolver(t, eps, js)
	return conn, b
}

// dialResolver is dial that also returns the channel's manual resolver,
// for updates.
func dialResolver(t testing.TB, eps []resolver.Endpoint, js string) (*grpc.ClientConn, *chashBalancer, *manual.Resolver) {
	t.Helper()
	r := manual.NewBuilderWithScheme(fmt.Sprintf("chashtest%d", schemes.Add(1)))
	r.InitialState(resolver.State{Endpoints: eps})
	built := make(chan *chashBalancer, 1)
	buildHook = func(b *chashBalancer) { built <- b }
	t.Cleanup(func() { buildHook = nil })
	conn, err := grpc.NewClient(r.Scheme()+":///backends",
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithResolvers(r),
		grpc.WithDefaultServiceConfig(js),
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 20 * time.Millisecond, Multiplier: 1.2, MaxDelay: 100 * time.Millisecond},
			MinConnectTimeout: time.Second,
		}))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	conn.Connect()
	var b *chashBalancer
	if strings.Contains(js, `"chash"`) {
		select {
		case b = <-built:
		case <-time.After(5 * time.Second):
			t.Fatal("the chash balancer was not built")
		}
	}
	buildHook = nil
	return conn, b, r
}

// endpoints makes one endpoint per backend.
func endpoints(bs []*backend) []resolver.Endpoint {
	eps := make([]resolver.Endpoint, len(bs))
	for i, b := range bs {
		eps[i] = resolver.Endpoint{Addresses: []resolver.Address{{Addr: b.addr}}}
	}
	return eps
}

// states returns the endpoints' states in the last picker, by identity.
func (b *chashBalancer) states() map[string]connectivity.State {
	b.mu.Lock()
	defer b.mu.Unlock()
	m := make(map[string]connectivity.State)
	if b.last != nil {
		for _, e := range b.last.eps {
			m[e.id] = e.state
		}
	}
	return m
}

// waitStates waits until every endpoint named in want is in its state.
func waitStates(t testing.TB, b *chashBalancer, want map[string]connectivity.State) {
	t.Helper()
	require.Eventually(t, func() bool {
		got := b.states()
		for id, s := range want {
			if got[id] != s {
				return false
			}
		}
		return true
	}, 10*time.Second, 5*time.Millisecond, "endpoint states: want %v, have %v", want, b.states())
}

func allReady(ids ...string) map[string]connectivity.State {
	m := make(map[string]connectivity.State, len(ids))
	for _, id := range ids {
		m[id] = connectivity.Ready
	}
	return m
}

// served returns the address of the backend that served one health check
// under ctx.
func served(t testing.TB, ctx context.Context, conn *grpc.ClientConn) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var p peer.Peer
	_, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{}, grpc.Peer(&p), grpc.WaitForReady(true))
	require.NoError(t, err)
	return p.Addr.String()
}

func testKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("tenant-%05d", i)
	}
	return keys
}

func keyCount() int {
	if testing.Short() {
		return 500
	}
	return 2000
}
