package chashgrpc

import (
	"context"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/keyplace/chash/balance"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
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
