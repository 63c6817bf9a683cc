package chashhttp

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/keyplace/chash"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func skewedKey(i int) string {
	if i%10 < 7 {
		return "hot-tenant"
	}
	return fmt.Sprintf("tenant-%d", i)
}

func totalInflight(bs []*backend) (sum, peak int64) {
	for _, b := range bs {
		n := b.inflight.Load()
		sum += n
		peak = max(peak, n)
	}
	return sum, peak
}

// With a load factor and a skewed key stream held open on the backends,
// no backend ever serves more than the bound, and once the requests end
// every lease is back.
func TestBoundedLoadUnderSkew(t *testing.T) {
	const n, c = 4, 1.25
	bs := startBackends(t, n)
	p, err := chash.NewRendezvous(nodesOf(bs))
	require.NoError(t, err)
	r, err := New(Header("X-Tenant"), p, WithLoadFactor(c))
	require.NoError(t, err)
	base := proxy(t, r)
	requests := 120
	if testing.Short() {
		requests = 60
	}
	bound := func(total int) int64 { return int64(math.Ceil(c * float64(total) / n)) }

	var wg sync.WaitGroup
	for i := range requests {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := newRequest(t, base+"/hold")
			req.Header.Set("X-Tenant", skewedKey(i))
			resp, err := client.Do(req)
			if assert.NoError(t, err) {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
		// Open one at a time: wait until the backend has it.
		require.Eventually(t, func() bool { s, _ := totalInflight(bs); return s == int64(i+1) }, 5*time.Second, time.Millisecond)
		_, peak := totalInflight(bs)
		require.LessOrEqual(t, peak, bound(i+1), "after %d requests", i+1)
	}
	_, peak := totalInflight(bs)
	assert.Greater(t, peak, int64(requests/n), "the skew should load the hot key's backend past its fair share")
	assert.Equal(t, int64(requests), r.InFlight())
	t.Logf("bounded load: %d requests on %d backends, c=%v: peak %d, bound %d, without a bound the hot backend would hold %d",
		requests, n, c, peak, bound(requests), requests*7/10)
	for _, b := range bs {
		close(b.hold)
	}
	wg.Wait()
	waitLeases(t, r)
}

func waitLeases(t *testing.T, r *Router) {
	t.Helper()
	require.Eventually(t, func() bool { return r.InFlight() == 0 }, 5*time.Second, time.Millisecond,
		"leases still held: %d", r.InFlight())
	for _, n := range r.view().all.Nodes() {
		assert.Zero(t, r.Load(n.ID), n.ID)
	}
}

// Leases come back after backend hang-ups, half-sent bodies, clients that
// give up, and dial errors.
func TestLeasesReleasedOnErrorsAndCancellations(t *testing.T) {
	bs := startBackends(t, 3)
	dead := startBackends(t, 1)[0]
	dead.stop()
	p, err := chash.NewRendezvous(append(nodesOf(bs), chash.Node{ID: dead.addr}))
	require.NoError(t, err)
	r, err := New(Query("k"), p, WithLoadFactor(1.5), WithCooldown(time.Millisecond))
	require.NoError(t, err)
	base := proxy(t, r)
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k := fmt.Sprint(i)
			switch i % 4 {
			case 0: // the backend hangs up: the proxy answers 502
				code, _ := get(t, newRequest(t, base+"/abort?k="+k))
				assert.Equal(t, http.StatusBadGateway, code)
			case 1: // the body stops half way and the client gives up
				ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
				defer cancel()
				resp, err := client.Do(newRequest(t, base+"/partial?k="+k).WithContext(ctx))
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			case 2: // the client gives up before the answer
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
				defer cancel()
				_, err := client.Do(newRequest(t, base+"/hold?k="+k).WithContext(ctx))
				assert.Error(t, err)
			default: // plain, some of them first dialling the dead backend
				code, _ := get(t, newRequest(t, base+"/?k="+k))
				assert.Equal(t, http.StatusOK, code)
			}
		}()
	}
	wg.Wait()
	for i := 0; ; i++ { // a key owned by the dead backend fails over
		if k := fmt.Sprint("dead-", i); p.LookupString(k).ID == dead.addr {
			code, body := get(t, newRequest(t, base+"/?k="+k))
			assert.Equal(t, http.StatusOK, code)
			assert.Equal(t, p.AppendTopKString(nil, k, 2)[1].ID, body)
			break
		}
	}
	waitLeases(t, r)
}

// A pick does not allocate, with or without a load bound.
func TestPickAllocs(t *testing.T) {
	p, err := chash.NewRendezvous([]chash.Node{{ID: "a:1"}, {ID: "b:1"}, {ID: "c:1"}})
	require.NoError(t, err)
	plain, err := New(Header("k"), p)
	require.NoError(t, err)
	bounded, err := New(Header("k"), p, WithLoadFactor(1.25))
	require.NoError(t, err)
	for _, r := range []*Router{plain, bounded} {
		got := testing.AllocsPerRun(1000, func() {
			_, l, err := r.pick("tenant-42")
			if err != nil {
				t.Fatal(err)
			}
			l.Release()
		})
		assert.Zero(t, got)
	}
}

func BenchmarkPick(b *testing.B) {
	nodes := make([]chash.Node, 8)
	for i := range nodes {
		nodes[i] = chash.Node{ID: fmt.Sprintf("10.0.0.%d:8080", i)}
	}
	p, err := chash.NewRendezvous(nodes)
	require.NoError(b, err)
	for _, tc := range []struct {
		name string
		opts []Option
	}{{"plain", nil}, {"bounded", []Option{WithLoadFactor(1.25)}}} {
		r, err := New(Header("k"), p, tc.opts...)
		require.NoError(b, err)
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, l, _ := r.pick("tenant-42")
				l.Release()
			}
		})
	}
}

// BenchmarkProxy is a whole request through the proxy to a loopback
// backend, for scale.
func BenchmarkProxy(b *testing.B) {
	bs := startBackends(b, 4)
	p, err := chash.NewRendezvous(nodesOf(bs))
	require.NoError(b, err)
	r, err := New(Header("X-Tenant"), p, WithLoadFactor(1.25))
	require.NoError(b, err)
	base := proxy(b, r)
	req := newRequest(b, base+"/")
	req.Header.Set("X-Tenant", "tenant-42")
	b.ReportAllocs()
	for b.Loop() {
		get(b, req)
	}
}
