package chashhttp

import (
	"context"
	"errors"
	"io"
	"math"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/keyplace/chash"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// flakyDialer dials normally but fails the next dial to one address once
// armed, as a backend refusing one connection while its open ones serve.
type flakyDialer struct {
	net.Dialer
	addr  string
	armed atomic.Bool
	fired atomic.Int64
}

func (d *flakyDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	if addr == d.addr && d.armed.CompareAndSwap(true, false) {
		d.fired.Add(1)
		return nil, &net.OpError{Op: "dial", Net: network, Err: errors.New("injected dial error")}
	}
	return d.Dialer.DialContext(ctx, network, addr)
}

// holdOpen sends a /hold request for key through base in the background,
// waits until some backend holds it, and returns a wait for its end.
func holdOpen(t *testing.T, wg *sync.WaitGroup, base, key string) {
	t.Helper()
	wg.Add(1)
	go func() {
		defer wg.Done()
		req := newRequest(t, base+"/hold")
		req.Header.Set("X-Tenant", key)
		resp, err := client.Do(req)
		if assert.NoError(t, err) {
			assert.Equal(t, http.StatusOK, resp.StatusCode)
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
}

// A lease belongs to the backend, not to a cooldown window: the requests
// a backend holds when one dial to it fails stay counted against it while
// it cools down and after, so no backend runs more than the bound at
// once. (Before, the balancer forgot them: after one dial error the hot
// key's backend ran 36 requests against a bound of 25.) While it cools
// down it keeps its share of the bound, so the other backends are held
// to theirs too.
func TestBoundSurvivesDialError(t *testing.T) {
	const n, c, total = 4, 1.25, 80
	const cooldown = 300 * time.Millisecond
	bs := startBackends(t, n)
	p, err := chash.NewRendezvous(nodesOf(bs))
	require.NoError(t, err)
	hot := p.LookupString("hot-tenant").ID
	d := &flakyDialer{addr: hot}
	tr := &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: 64}
	t.Cleanup(tr.CloseIdleConnections)
	r, err := New(Header("X-Tenant"), p, WithLoadFactor(c), WithCooldown(cooldown))
	require.NoError(t, err)
	srv := proxyOver(t, r, tr)
	bound := func(t int) int64 { return int64(math.Ceil(c * float64(t) / n)) }
	inflight := func() (sum, peak int64, byAddr map[string]int64) {
		byAddr = map[string]int64{}
		for _, b := range bs {
			v := b.inflight.Load()
			byAddr[b.addr] = v
			sum += v
			peak = max(peak, v)
		}
		return
	}
	var wg sync.WaitGroup
	var release sync.Once
	done := func() {
		release.Do(func() {
			for _, b := range bs {
				close(b.hold)
			}
		})
		wg.Wait()
	}
	t.Cleanup(done)
	var peak, hotPeak int64
	over := 0 // requests after which a backend ran more than the bound
	open := func(i int) {
		holdOpen(t, &wg, srv, "hot-tenant")
		require.Eventually(t, func() bool { s, _, _ := inflight(); return s == int64(i+1) }, 5*time.Second, time.Millisecond)
		_, pk, by := inflight()
		peak, hotPeak = max(peak, pk), max(hotPeak, by[hot])
		if pk > bound(i+1) {
			over++
			t.Logf("after %d requests: a backend runs %d, bound %d: %v", i+1, pk, bound(i+1), by)
		}
	}
	for i := range total / 2 {
		open(i)
	}
	// One dial to the hot key's backend fails: the request fails over,
	// and the backend cools down holding its requests.
	d.armed.Store(true)
	for i := total / 2; i < total/2+10; i++ {
		open(i)
	}
	require.EqualValues(t, 1, d.fired.Load(), "the injected dial error")
	time.Sleep(cooldown + 50*time.Millisecond)
	for i := total/2 + 10; i < total; i++ {
		open(i)
	}
	t.Logf("%d held requests of one key on %d backends, c=%v, one dial error (cooldown %v): peak %d (hot backend %d), bound %d",
		total, n, c, cooldown, peak, hotPeak, bound(total))
	assert.LessOrEqual(t, peak, bound(total))
	assert.Zero(t, over, "requests after which a backend ran more than the bound")
	done()
	waitLeases(t, r)
}

// A backend cooling down keeps its share of the bound only while it runs
// requests: once they end, requests that do not fit the other backends'
// bounds no longer fall back to it, and the others take them.
func TestDrainedBackendLeavesTheBound(t *testing.T) {
	bs := startBackends(t, 2)
	p, err := chash.NewRendezvous(nodesOf(bs))
	require.NoError(t, err)
	a, b := bs[0], bs[1]
	if p.LookupString("hot-tenant").ID != a.addr {
		a, b = b, a
	}
	d := &flakyDialer{addr: a.addr}
	tr := &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: 64}
	t.Cleanup(tr.CloseIdleConnections)
	r, err := New(Header("X-Tenant"), p, WithLoadFactor(1.25), WithCooldown(time.Minute))
	require.NoError(t, err)
	srv := proxyOver(t, r, tr)
	var wg sync.WaitGroup
	var closeB sync.Once
	t.Cleanup(func() { closeB.Do(func() { close(b.hold) }); wg.Wait() })
	for i := range 4 {
		holdOpen(t, &wg, srv, "hot-tenant")
		require.Eventually(t, func() bool { return a.inflight.Load()+b.inflight.Load() == int64(i+1) }, 5*time.Second, time.Millisecond)
	}
	require.EqualValues(t, 3, a.inflight.Load(), "ceil(1.25 × 4 / 2) on the hot key's backend")
	d.armed.Store(true) // the next dial to a fails: a cools down for a minute
	holdOpen(t, &wg, srv, "hot-tenant")
	require.Eventually(t, func() bool { return b.inflight.Load() == 2 }, 5*time.Second, time.Millisecond)
	require.EqualValues(t, 1, d.fired.Load())
	close(a.hold) // a's requests end while it cools down
	require.Eventually(t, func() bool { return a.inflight.Load() == 0 && r.Load(a.addr) == 0 }, 5*time.Second, time.Millisecond)
	for i := range 10 {
		holdOpen(t, &wg, srv, "hot-tenant")
		require.Eventually(t, func() bool { return b.inflight.Load() == int64(3+i) }, 5*time.Second, time.Millisecond)
	}
	assert.Zero(t, a.inflight.Load(), "a backend cooling down with no request in flight takes none")
	closeB.Do(func() { close(b.hold) })
	wg.Wait()
	waitLeases(t, r)
}

// A backend that leaves the placement (a Holder swap) while it runs
// requests, and comes back, still has them counted against it.
func TestLeasesSurviveMembershipChange(t *testing.T) {
	const c = 1.25
	bs := startBackends(t, 4)
	nodes := nodesOf(bs)
	p, err := chash.NewRendezvous(nodes)
	require.NoError(t, err)
	var h chash.Holder
	h.Store(p)
	hot := p.LookupString("hot-tenant").ID
	r, err := New(Header("X-Tenant"), &h, WithLoadFactor(c))
	require.NoError(t, err)
	srv := proxy(t, r)
	var wg sync.WaitGroup
	var release sync.Once
	t.Cleanup(func() {
		release.Do(func() {
			for _, b := range bs {
				close(b.hold)
			}
		})
		wg.Wait()
	})
	held := func() (sum int64, by map[string]int64) {
		by = map[string]int64{}
		for _, b := range bs {
			by[b.addr] = b.inflight.Load()
			sum += by[b.addr]
		}
		return
	}
	for i := range 20 {
		holdOpen(t, &wg, srv, "hot-tenant")
		require.Eventually(t, func() bool { s, _ := held(); return s == int64(i+1) }, 5*time.Second, time.Millisecond)
	}
	_, by := held()
	require.EqualValues(t, 7, by[hot], "ceil(1.25 × 20 / 4)")
	var rest []chash.Node
	for _, n := range nodes {
		if n.ID != hot {
			rest = append(rest, n)
		}
	}
	without, err := chash.NewRendezvous(rest)
	require.NoError(t, err)
	h.Store(without)
	holdOpen(t, &wg, srv, "other-tenant") // a request sees the swap
	require.Eventually(t, func() bool { s, _ := held(); return s == 21 }, 5*time.Second, time.Millisecond)
	assert.EqualValues(t, 7, r.Load(hot), "the departed backend's requests are still counted")
	h.Store(p)
	for i := 21; i < 40; i++ {
		holdOpen(t, &wg, srv, "hot-tenant")
		require.Eventually(t, func() bool { s, _ := held(); return s == int64(i+1) }, 5*time.Second, time.Millisecond)
		_, by = held()
		require.LessOrEqual(t, by[hot], int64(math.Ceil(c*float64(i+1)/4)), "after %d requests: %v", i+1, by)
	}
	_, by = held()
	assert.Equal(t, by[hot], r.Load(hot))
	release.Do(func() {
		for _, b := range bs {
			close(b.hold)
		}
	})
	wg.Wait()
	waitLeases(t, r)
}
