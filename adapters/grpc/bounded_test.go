package chashgrpc

import (
	"context"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/balance"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/status"
)

func (b *chashBalancer) balancer() *balance.Balancer {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.bal
}

// skewedKey sends 70% of the requests to one hot key.
func skewedKey(i int) string {
	if i%10 < 7 {
		return "hot-tenant"
	}
	return fmt.Sprintf("tenant-%d", i)
}

// openWatch opens a health Watch stream, which the server holds open, and
// waits for its first answer, so the stream is in flight on its server.
func openWatch(t *testing.T, ctx context.Context, conn *grpc.ClientConn) {
	t.Helper()
	st, err := healthpb.NewHealthClient(conn).Watch(ctx, &healthpb.HealthCheckRequest{}, grpc.WaitForReady(true))
	require.NoError(t, err)
	_, err = st.Recv()
	require.NoError(t, err)
}

// With a load factor and a skewed key stream, no server ever holds more
// in-flight RPCs than the bound, and every lease is released when the RPCs
// end: cancelled streams, failed RPCs and concurrent ones included.
func TestBoundedLoadUnderSkew(t *testing.T) {
	const n, c = 4, 1.25
	bs := startBackends(t, n)
	eps, nodes, _ := named(endpoints(bs), nil)
	conn, b := dial(t, eps, fmt.Sprintf(`{"loadBalancingConfig":[{"chash":{"algorithm":"rendezvous","loadFactor":%v}}]}`, c))
	waitStates(t, b, allReady(ids(nodes)...))
	streams := 200
	if testing.Short() {
		streams = 80
	}
	bound := func(total int) int64 { return int64(math.Ceil(c * float64(total) / n)) }
	peak := func() (p int64) {
		for _, s := range bs {
			p = max(p, s.inflight.Load())
		}
		return p
	}

	ctx, cancel := context.WithCancel(context.Background())
	for i := range streams {
		openWatch(t, WithKey(ctx, skewedKey(i)), conn)
		require.LessOrEqual(t, peak(), bound(i+1), "after %d streams", i+1)
	}
	require.Equal(t, int64(streams), b.balancer().InFlight())
	require.Greater(t, peak(), int64(streams/n), "the skew should load the hot key's server past its fair share")
	t.Logf("bounded load: %d streams on %d servers, c=%v: peak %d, bound %d, without a bound the hot server would hold %d",
		streams, n, c, peak(), bound(streams), streams*7/10)

	// Failed RPCs release their leases too.
	for i := range 50 {
		_, err := healthpb.NewHealthClient(conn).Check(WithKey(context.Background(), skewedKey(i)),
			&healthpb.HealthCheckRequest{Service: "no-such-service"})
		require.Equal(t, codes.NotFound, status.Code(err))
	}
	cancel()
	waitLeases(t, b)

	// Concurrent streams: the bound holds against the total each acquire
	// counted, which is at most the final total.
	ctx, cancel = context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range streams / 8 {
				openWatch(t, WithKey(ctx, skewedKey(w*1000+i)), conn)
			}
		}()
	}
	wg.Wait()
	assert.LessOrEqual(t, peak(), bound(streams))
	cancel()
	waitLeases(t, b)
}

func waitLeases(t *testing.T, b *chashBalancer) {
	t.Helper()
	bal := b.balancer()
	require.Eventually(t, func() bool { return bal.InFlight() == 0 }, 5*time.Second, 5*time.Millisecond,
		"leases still held: %d", bal.InFlight())
	for _, n := range bal.Placer().Nodes() {
		assert.Zero(t, bal.Load(n.ID), n.ID)
	}
}

// A lease belongs to the backend, not to a connection: with the servers
// closing every connection after 300 ms (MaxConnectionAge, the streams
// held on the old connection running on), the streams a server runs stay
// counted against it across its reconnections, so no server runs more
// than the bound. (Before, a reconnected server got a fresh count: one ran
// 38 streams against a bound of 25.)
func TestBoundSurvivesReconnect(t *testing.T) {
	const n, c, streams = 4, 1.25, 80
	bs := startBackends(t, n, grpc.KeepaliveParams(keepalive.ServerParameters{
		MaxConnectionAge:      300 * time.Millisecond,
		MaxConnectionAgeGrace: time.Hour,
	}))
	eps, nodes, _ := named(endpoints(bs), nil)
	conn, b := dial(t, eps, fmt.Sprintf(`{"loadBalancingConfig":[{"chash":{"algorithm":"rendezvous","loadFactor":%v}}]}`, c))
	waitStates(t, b, allReady(ids(nodes)...))
	bound := func(total int) int64 { return int64(math.Ceil(c * float64(total) / n)) }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var peak int64
	over := 0
	start := time.Now()
	for i := range streams {
		openWatch(t, WithKey(ctx, "hot-tenant"), conn)
		var by []int64
		for _, s := range bs {
			v := s.inflight.Load()
			by = append(by, v)
			peak = max(peak, v)
			if v > bound(i+1) {
				over++
				t.Logf("after %d streams: a server runs %d, bound %d: %v", i+1, v, bound(i+1), by)
			}
		}
		time.Sleep(10 * time.Millisecond) // spread the streams over several connection ages
	}
	t.Logf("%d streams of one key on %d servers, c=%v, connections closed every 300 ms, opened over %v: peak %d, bound %d",
		streams, n, c, time.Since(start).Round(time.Millisecond), peak, bound(streams))
	assert.LessOrEqual(t, peak, bound(streams))
	assert.Zero(t, over, "streams after which a server ran more than the bound")
	cancel()
	waitLeases(t, b)
}

// An endpoint whose server has closed its connection (MaxConnectionAge)
// while streams still run on it keeps its share of the bound, without
// taking keys, until they end: the other endpoint is held to its bound,
// and the RPC that finds it full waits for the reconnecting endpoint
// rather than exceed it. Once those streams end, the share goes, and the
// other endpoint takes every RPC.
func TestReconnectingEndpointKeepsItsShare(t *testing.T) {
	const c = 1.25
	bound := func(total int64) int64 { return int64(math.Ceil(c * float64(total) / 2)) }
	for _, ends := range []bool{false, true} {
		name := "streams run on"
		if ends {
			name = "streams end"
		}
		t.Run(name, func(t *testing.T) {
			aging := startBackends(t, 1, grpc.KeepaliveParams(keepalive.ServerParameters{
				MaxConnectionAge: 200 * time.Millisecond, MaxConnectionAgeGrace: time.Hour,
			}))[0]
			steady := startBackends(t, 1)[0]
			bs := []*backend{aging, steady}
			eps, nodes, byAddr := named(endpoints(bs), nil)
			p, err := chash.NewRendezvous(nodes)
			require.NoError(t, err)
			keyOn := func(id string) string {
				for i := 0; ; i++ {
					if k := fmt.Sprint("tenant-", i); p.LookupString(k).ID == id {
						return k
					}
				}
			}
			ka, kb := keyOn(byAddr[aging.addr]), keyOn(byAddr[steady.addr])
			conn, b := dial(t, eps, fmt.Sprintf(`{"loadBalancingConfig":[{"chash":{"loadFactor":%v}}]}`, c))
			waitStates(t, b, allReady(ids(nodes)...))
			actx, acancel := context.WithCancel(context.Background())
			defer acancel()
			openWatch(t, WithKey(actx, ka), conn)
			openWatch(t, WithKey(actx, ka), conn)
			require.EqualValues(t, 2, aging.inflight.Load())
			// The server closes the connection; the streams run on.
			waitStates(t, b, map[string]connectivity.State{byAddr[aging.addr]: connectivity.Idle})
			require.EqualValues(t, 2, aging.inflight.Load())
			if ends {
				acancel()
				require.Eventually(t, func() bool { return b.balancer().Load(byAddr[aging.addr]) == 0 }, 5*time.Second, time.Millisecond)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			for i := range 12 {
				openWatch(t, WithKey(ctx, kb), conn)
				total := aging.inflight.Load() + steady.inflight.Load()
				if ends {
					require.EqualValues(t, i+1, steady.inflight.Load(), "the endpoint without RPCs keeps no share")
					continue
				}
				require.LessOrEqual(t, steady.inflight.Load(), bound(total), "after %d streams", total)
				if aging.inflight.Load() > 2 {
					t.Logf("stream %d of %s's key waited for the reconnecting endpoint, which took it: %d and %d streams",
						i+1, byAddr[steady.addr], aging.inflight.Load(), steady.inflight.Load())
					return
				}
			}
			if !ends {
				t.Fatal("no stream went to the reconnecting endpoint")
			}
			assert.Equal(t, connectivity.Idle, b.states()[byAddr[aging.addr]], "no RPC asked the endpoint to reconnect")
		})
	}
}
