package chashgrpc

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/keyplace/chash"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/experimental/balancer/weight"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/ringhash"
)

// try sends one health check under ctx and returns the address of the
// backend that served it, or the error; it does not wait for a READY
// endpoint, so a channel that cannot place its endpoints fails it.
func try(ctx context.Context, conn *grpc.ClientConn) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var p peer.Peer
	_, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{}, grpc.Peer(&p))
	if err != nil {
		return "", err
	}
	return p.Addr.String(), nil
}

// sweep sends one RPC per key and returns who served each, counting the
// failed ones.
func sweep(conn *grpc.ClientConn, keys []string) (map[string]string, int, error) {
	got := make(map[string]string, len(keys))
	failed := 0
	var first error
	for _, k := range keys {
		addr, err := try(WithKey(context.Background(), k), conn)
		if err != nil {
			failed++
			first = cmpOr(first, err)
			continue
		}
		got[k] = addr
	}
	return got, failed, first
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// ParseConfig validates a configuration for what it is, at a bounded
// cost: option ranges are checked without building a placement of the
// configured size (which took up to 1.8 s and 268 MB for 16M partitions,
// 4.5 s for the largest Maglev table).
func TestParseConfigBoundedCost(t *testing.T) {
	for _, js := range []string{
		`{"algorithm":"bounded","partitions":16777216}`,
		`{"algorithm":"maglev","tableSize":16777213}`,
		`{"algorithm":"ring","vnodes":65536}`,
		`{"algorithm":"ring_hash","minRingSize":4096,"maxRingSize":4096}`,
		`{"algorithm":"rendezvous","loadFactor":1.25,"seed":7}`,
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		_, err := ParseConfig([]byte(js))
		took := time.Since(start)
		runtime.ReadMemStats(&after)
		require.NoError(t, err, js)
		bytes := after.TotalAlloc - before.TotalAlloc
		t.Logf("%s: %v, %d bytes", js, took, bytes)
		assert.Less(t, took, 100*time.Millisecond, js)
		assert.Less(t, bytes, uint64(1<<20), js)
	}
	for _, js := range []string{
		`{"algorithm":"maglev","tableSize":4}`,
		`{"algorithm":"maglev","tableSize":16777259}`,
		`{"algorithm":"bounded","partitions":16777217}`,
		`{"algorithm":"bounded","partitionLoadFactor":0.5}`,
		`{"algorithm":"ring","vnodes":-1}`,
		`{"algorithm":"ring_hash","minRingSize":10,"maxRingSize":5}`,
		`{"algorithm":"rendezvous","loadFactor":1}`,
		`{"algorithm":"nope"}`,
		`{"header":"x-key-bin"}`,
	} {
		_, err := ParseConfig([]byte(js))
		assert.ErrorIs(t, err, ErrConfig, js)
	}
}

// A positional algorithm (jump, jumpback, binomial, flip) numbers the
// endpoints by position: when the resolver drops one other than the last,
// most keys move, and the resolver's order is not stable. A stateful one
// (memento, anchor, dx, jumpbackanchor, choosek) needs a state every
// client shares, which a resolver does not carry. Both are refused, with
// an error that names the alternatives.
func TestPositionalRefused(t *testing.T) {
	for _, a := range chash.Algorithms() {
		if !a.Positional() && !a.Stateful() {
			continue
		}
		_, err := ParseConfig([]byte(fmt.Sprintf(`{"algorithm":%q}`, a)))
		require.ErrorIs(t, err, ErrConfig, a)
		assert.ErrorIs(t, err, chash.ErrInvalidOption, a)
		assert.Contains(t, err.Error(), "rendezvous", a)
		t.Log(err)
	}
}

// A membership the configured placement cannot build, on a channel that
// has had no placement yet, falls back to one that can be built, so five
// healthy backends serve every RPC; it is reported, and the endpoints a
// placement cannot take twice (a repeated hash key) are skipped, the
// first in the resolver's order kept, as grpc-go's ring_hash does.
func TestUnplaceableMembershipServes(t *testing.T) {
	bs := startBackends(t, 5)
	for _, tc := range []struct {
		name    string
		js      string
		weights []uint32
		dup     bool // endpoint 4 repeats endpoint 3's hash key
	}{
		{"maglev table smaller than the endpoints", `{"algorithm":"maglev","tableSize":3}`, nil, false},
		// The fallback keeps the weights: backend-2 takes nearly every key.
		{"ring too large: one heavy endpoint", `{"algorithm":"ring"}`, []uint32{1, 1, 200000, 1, 1}, false},
		{"ring too large: many points", `{"algorithm":"ring","vnodes":65536}`, []uint32{64, 64, 64, 64, 64}, false},
		{"repeated hash key", `{"algorithm":"rendezvous"}`, nil, true},
		{"repeated hash key, ring_hash", `{"algorithm":"ring_hash"}`, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eps, nodes, byAddr := named(endpoints(bs), tc.weights)
			want := allReady(ids(nodes)...)
			if tc.dup {
				eps[4] = ringhash.SetHashKey(eps[4], "backend-3")
				byAddr[bs[4].addr] = "backend-3 (repeated)"
				delete(want, "backend-4")
			}
			before := ReadCounters()
			conn, b := dial(t, eps, `{"loadBalancingConfig":[{"chash":`+tc.js+`}]}`)
			waitStates(t, b, want)
			keys := testKeys(keyCount() / 4)
			got, failed, err := sweep(conn, keys)
			assert.Zero(t, failed, "RPCs failed on 5 healthy backends (first error: %v)", err)
			per := map[string]int{}
			for _, addr := range got {
				per[byAddr[addr]]++
			}
			t.Logf("%d of %d RPCs failed; served per backend: %v", failed, len(keys), per)
			after := ReadCounters()
			if tc.dup {
				assert.Greater(t, after.Skipped, before.Skipped, "the repeated hash key is reported")
				assert.Zero(t, per["backend-3 (repeated)"], "the second endpoint with a hash key takes no key")
				assert.NotZero(t, per["backend-3"], "the first endpoint with a hash key keeps it")
			} else {
				assert.Greater(t, after.Refused, before.Refused, "the refused membership is reported")
				assert.Greater(t, after.Fallbacks, before.Fallbacks, "placed by the fallback")
				if tc.weights == nil || tc.weights[0] == tc.weights[2] {
					assert.Len(t, per, 5, "every healthy backend serves")
				} else {
					assert.Greater(t, per["backend-2"], len(keys)*9/10, "weights are kept")
				}
			}
		})
	}
}

// A resolver update with a membership the placement cannot build keeps
// the last good placement serving (not one key moves), is reported to the
// resolver and counted, and the next good membership is placed.
func TestBadUpdateKeepsLastGoodPlacement(t *testing.T) {
	bs := startBackends(t, 7)
	for _, tc := range []struct {
		name string
		js   string
		bad  func(eps []resolver.Endpoint) []resolver.Endpoint
	}{
		{"maglev table smaller than the endpoints", `{"algorithm":"maglev","tableSize":5}`, func(eps []resolver.Endpoint) []resolver.Endpoint {
			return eps[:6]
		}},
		{"ring too large", `{"algorithm":"ring"}`, func(eps []resolver.Endpoint) []resolver.Endpoint {
			eps = append([]resolver.Endpoint(nil), eps[:5]...)
			eps[2] = weightSet(eps[2], 200000)
			return eps
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			all, nodes, byAddr := named(endpoints(bs), nil)
			conn, b, r := dialResolver(t, all[:5], `{"loadBalancingConfig":[{"chash":`+tc.js+`}]}`)
			waitStates(t, b, allReady(ids(nodes[:5])...))
			keys := testKeys(keyCount() / 4)
			good, failed, err := sweep(conn, keys)
			require.Zero(t, failed, "%v", err)

			before := ReadCounters()
			err = r.CC().UpdateState(resolver.State{Endpoints: tc.bad(all)})
			assert.ErrorIs(t, err, ErrMembership, "the resolver is told")
			assert.Equal(t, before.Refused+1, ReadCounters().Refused)
			got, failed, err := sweep(conn, keys)
			assert.Zero(t, failed, "RPCs failed after the update (first error: %v)", err)
			moved := 0
			for _, k := range keys {
				if got[k] != good[k] {
					moved++
				}
			}
			assert.Zero(t, moved, "keys moved by an update the placement refused")
			t.Logf("bad update: %d of %d RPCs failed, %d keys moved", failed, len(keys), moved)

			// The next membership it can build is placed.
			require.NoError(t, r.CC().UpdateState(resolver.State{Endpoints: all[:4]}))
			alg := strings.Trim(strings.SplitN(strings.SplitN(tc.js, ":", 2)[1], ",", 2)[0], `"}`)
			a, err := chash.ParseAlgorithm(alg)
			require.NoError(t, err)
			var opts []chash.Option
			if strings.Contains(tc.js, "tableSize") {
				opts = append(opts, chash.WithTableSize(5))
			}
			want, err := chash.New(a, nodes[:4], opts...)
			require.NoError(t, err)
			require.Eventually(t, func() bool {
				got, failed, _ := sweep(conn, keys[:50])
				if failed > 0 {
					return false
				}
				for _, k := range keys[:50] {
					if byAddr[got[k]] != want.LookupString(k).ID {
						return false
					}
				}
				return true
			}, 5*time.Second, 20*time.Millisecond, "keys follow the new membership")
		})
	}
}

// A working channel whose resolver repeats a hash key keeps serving: the
// first endpoint with the key keeps it, the other is skipped, and both are
// reported.
func TestRepeatedHashKeyUpdate(t *testing.T) {
	bs := startBackends(t, 5)
	eps, nodes, byAddr := named(endpoints(bs), nil)
	conn, b, r := dialResolver(t, eps, `{"loadBalancingConfig":[{"chash":{"algorithm":"ring_hash"}}]}`)
	waitStates(t, b, allReady(ids(nodes)...))
	keys := testKeys(keyCount() / 4)
	_, failed, err := sweep(conn, keys)
	require.Zero(t, failed, "%v", err)

	dup := append([]resolver.Endpoint(nil), eps...)
	dup[4] = ringhash.SetHashKey(dup[4], "backend-3")
	before := ReadCounters()
	err = r.CC().UpdateState(resolver.State{Endpoints: dup})
	if assert.ErrorIs(t, err, ErrMembership) {
		assert.Contains(t, err.Error(), "backend-3")
	}
	assert.Equal(t, before.Skipped+1, ReadCounters().Skipped)
	got, failed, err := sweep(conn, keys)
	assert.Zero(t, failed, "RPCs failed after a repeated hash key (first error: %v)", err)
	for _, addr := range got {
		assert.NotEqual(t, bs[4].addr, addr, "the endpoint that repeats a hash key takes no key")
	}
	t.Logf("repeated hash key: %d of %d RPCs failed", failed, len(keys))
	_ = byAddr
}

var _ = errors.Is

func weightSet(e resolver.Endpoint, w uint32) resolver.Endpoint {
	return weight.Set(e, weight.EndpointInfo{Weight: w})
}
