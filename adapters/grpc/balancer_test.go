package chashgrpc

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/keyplace/chash"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	_ "google.golang.org/grpc/balancer/ringhash" // registers ring_hash_experimental
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/experimental/balancer/weight"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/ringhash"
)

// named gives the endpoints hash keys (gRFC A76) and weights, and returns
// the nodes a chash placer over them has.
func named(eps []resolver.Endpoint, weights []uint32) ([]resolver.Endpoint, []chash.Node, map[string]string) {
	nodes := make([]chash.Node, len(eps))
	byAddr := make(map[string]string)
	for i := range eps {
		id := fmt.Sprintf("backend-%d", i)
		eps[i] = ringhash.SetHashKey(eps[i], id)
		if weights != nil {
			eps[i] = weight.Set(eps[i], weight.EndpointInfo{Weight: weights[i]})
		}
		nodes[i] = chash.Node{ID: id, Weight: float64(max(weightAt(weights, i), 1))}
		byAddr[eps[i].Addresses[0].Addr] = id
	}
	return eps, nodes, byAddr
}

func weightAt(w []uint32, i int) uint32 {
	if w == nil {
		return 1
	}
	return w[i]
}

func ids(nodes []chash.Node) []string {
	s := make([]string, len(nodes))
	for i, n := range nodes {
		s[i] = n.ID
	}
	return s
}

// Every key's RPC is served by the endpoint the placer names, for each
// algorithm, with identities from hash keys and weights from attributes.
func TestPlacementMatchesPlacer(t *testing.T) {
	bs := startBackends(t, 4)
	for _, tc := range []struct {
		alg     string
		weights []uint32
		header  bool
	}{
		{"rendezvous", []uint32{1, 2, 1, 3}, true},
		{"ring", []uint32{1, 2, 1, 3}, false},
		{"maglev", []uint32{2, 1, 1, 1}, true},
		// jump and jumpback are refused (TestPositionalRefused).
		{"bounded", nil, true},
	} {
		t.Run(tc.alg, func(t *testing.T) {
			eps, nodes, byAddr := named(endpoints(bs), tc.weights)
			alg, err := chash.ParseAlgorithm(tc.alg)
			require.NoError(t, err)
			want, err := chash.New(alg, nodes)
			require.NoError(t, err)
			conn, b := dial(t, eps, fmt.Sprintf(`{"loadBalancingConfig":[{"chash":{"algorithm":%q,"header":"X-Tenant"}}]}`, tc.alg))
			require.NotNil(t, b)
			waitStates(t, b, allReady(ids(nodes)...))
			wrong := 0
			for _, k := range testKeys(keyCount()) {
				ctx := WithKey(context.Background(), k)
				if tc.header {
					ctx = metadata.AppendToOutgoingContext(context.Background(), "x-tenant", k)
				}
				if byAddr[served(t, ctx, conn)] != want.LookupString(k).ID {
					wrong++
				}
			}
			assert.Zero(t, wrong, "keys served by another endpoint than the placer's")
		})
	}
}

// Stopping one of N servers moves only its keys, each to its second
// choice; restarting it brings exactly those keys back.
func TestFailoverMovesOnlyTheStoppedServersKeys(t *testing.T) {
	const n = 5
	bs := startBackends(t, n)
	eps, nodes, byAddr := named(endpoints(bs), nil)
	want, err := chash.NewRendezvous(nodes)
	require.NoError(t, err)
	conn, b := dial(t, eps, `{"loadBalancingConfig":[{"chash":{"algorithm":"rendezvous"}}]}`)
	waitStates(t, b, allReady(ids(nodes)...))
	keys := testKeys(keyCount())
	sweep := func() map[string]string {
		m := make(map[string]string, len(keys))
		for _, k := range keys {
			m[k] = byAddr[served(t, WithKey(context.Background(), k), conn)]
		}
		return m
	}
	before := sweep()
	for _, k := range keys {
		require.Equal(t, want.LookupString(k).ID, before[k], k)
	}

	bs[2].stop()
	waitStates(t, b, map[string]connectivity.State{"backend-2": connectivity.Idle})
	after := sweep()
	moved := 0
	for _, k := range keys {
		top := want.AppendTopKString(nil, k, 2)
		if top[0].ID == "backend-2" {
			moved++
			assert.Equal(t, top[1].ID, after[k], "key %s of the stopped server goes to its second choice", k)
		} else {
			assert.Equal(t, before[k], after[k], "key %s of a live server stays", k)
		}
	}
	frac := float64(moved) / float64(len(keys))
	// The owner of each key is backend-2 with probability 1/n: allow five
	// binomial standard deviations.
	sd := math.Sqrt(float64(len(keys))*(1.0/n)*(1-1.0/n)) / float64(len(keys))
	assert.InDelta(t, 1.0/n, frac, 5*sd, "fraction of keys moved")
	t.Logf("one of %d servers stopped: %.4f of %d keys moved (1/N = %.4f)", n, frac, len(keys), 1.0/n)

	bs[2].restart(t)
	waitStates(t, b, allReady(ids(nodes)...))
	assert.Equal(t, before, sweep(), "after the restart every key is back on its first choice")
}

// ring_hash mode routes every key as grpc-go's own ring_hash_experimental
// does for the same weighted endpoints and request hash header.
func TestRingHashModeMatchesGRPCRingHash(t *testing.T) {
	bs := startBackends(t, 5)
	for _, tc := range []struct {
		name    string
		weights []uint32
		ringCfg string
		hashKey bool
	}{
		{"addresses", nil, ``, false},
		{"weighted hash keys", []uint32{1, 2, 3, 1, 5}, ``, true},
		{"small ring", []uint32{3, 3, 4, 1, 1}, `"minRingSize":10,"maxRingSize":64,`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eps := endpoints(bs)
			byAddr := make(map[string]string)
			for i := range eps {
				byAddr[eps[i].Addresses[0].Addr] = eps[i].Addresses[0].Addr
			}
			if tc.hashKey {
				eps, _, byAddr = named(eps, tc.weights)
			}
			theirs, _ := dial(t, eps, `{"loadBalancingConfig":[{"ring_hash_experimental":{`+tc.ringCfg+`"requestHashHeader":"x-key"}}]}`)
			ours, b := dial(t, eps, `{"loadBalancingConfig":[{"chash":{"algorithm":"ring_hash",`+tc.ringCfg+`"header":"x-key"}}]}`)
			waitStates(t, b, allReady(mapValues(byAddr)...))
			differ := 0
			for i, k := range testKeys(keyCount()) {
				vals := []string{"x-key", k}
				if i%7 == 0 { // several values are joined by ","
					vals = append(vals, "x-key", "second")
				}
				ctx := metadata.AppendToOutgoingContext(context.Background(), vals...)
				if served(t, ctx, theirs) != served(t, ctx, ours) {
					differ++
				}
			}
			assert.Zero(t, differ, "keys ring_hash_experimental and ring_hash mode send to different servers")
		})
	}
}

func mapValues(m map[string]string) []string {
	var s []string
	for _, v := range m {
		s = append(s, v)
	}
	return s
}
