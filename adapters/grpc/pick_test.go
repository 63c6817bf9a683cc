package chashgrpc

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/serviceconfig"
)

// livePicker returns the picker of a chash channel to real servers once
// every endpoint is READY.
func livePicker(t testing.TB, bs []*backend, js string) *picker {
	t.Helper()
	eps, nodes, _ := named(endpoints(bs), nil)
	_, b := dial(t, eps, js)
	require.NotNil(t, b)
	waitStates(t, b, allReady(ids(nodes)...))
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.last
}

func pickInfo(ctx context.Context) balancer.PickInfo {
	return balancer.PickInfo{FullMethodName: "/grpc.health.v1.Health/Check", Ctx: ctx}
}

func pickOnce(t testing.TB, p balancer.Picker, info balancer.PickInfo) {
	res, err := p.Pick(info)
	if err != nil || res.SubConn == nil {
		t.Fatalf("pick: %v", err)
	}
	if res.Done != nil {
		res.Done(balancer.DoneInfo{})
	}
}

// A pick keyed by WithKey allocates nothing, with or without a load bound;
// one keyed by a header allocates only the header's value copy.
func TestPickAllocs(t *testing.T) {
	bs := startBackends(t, 4)
	plain := livePicker(t, bs, `{"loadBalancingConfig":[{"chash":{"header":"x-key"}}]}`)
	bounded := livePicker(t, bs, `{"loadBalancingConfig":[{"chash":{"header":"x-key","loadFactor":1.25}}]}`)
	keyed := pickInfo(WithKey(context.Background(), "tenant-42"))
	header := pickInfo(metadata.AppendToOutgoingContext(context.Background(), "x-key", "tenant-42"))
	for _, tc := range []struct {
		name string
		p    *picker
		info balancer.PickInfo
		max  float64
	}{
		{"key", plain, keyed, 0},
		{"key bounded", bounded, keyed, 0},
		{"header", plain, header, 1},
		{"header bounded", bounded, header, 1},
	} {
		got := testing.AllocsPerRun(1000, func() { pickOnce(t, tc.p, tc.info) })
		assert.LessOrEqual(t, got, tc.max, tc.name)
		t.Logf("%s: %v allocations a pick", tc.name, got)
	}
	assert.Zero(t, bounded.bal.InFlight(), "every Done released its lease")
}

// captured wraps grpc-go's own ring_hash_experimental to keep the pickers
// it publishes, so its pick can be measured beside ours on the same
// servers.
type captured struct {
	balancer.ClientConn
	mu     sync.Mutex
	picker balancer.Picker
}

func (c *captured) UpdateState(s balancer.State) {
	c.mu.Lock()
	c.picker = s.Picker
	c.mu.Unlock()
	c.ClientConn.UpdateState(s)
}

type captureBuilder struct{ last chan *captured }

var ringCapture = captureBuilder{last: make(chan *captured, 1)}

func init() { balancer.Register(ringCapture) }

func (captureBuilder) Name() string { return "captured_ring_hash" }

func (b captureBuilder) Build(cc balancer.ClientConn, opts balancer.BuildOptions) balancer.Balancer {
	c := &captured{ClientConn: cc}
	select {
	case <-b.last:
	default:
	}
	b.last <- c
	return balancer.Get("ring_hash_experimental").Build(c, opts)
}

func (captureBuilder) ParseConfig(js json.RawMessage) (serviceconfig.LoadBalancingConfig, error) {
	return balancer.Get("ring_hash_experimental").(balancer.ConfigParser).ParseConfig(js)
}

// grpcRingHashPicker returns ring_hash_experimental's picker over the
// servers once a sweep of keys has connected every endpoint.
func grpcRingHashPicker(b *testing.B, bs []*backend) balancer.Picker {
	eps := endpoints(bs)
	conn, _ := dial(b, eps, `{"loadBalancingConfig":[{"captured_ring_hash":{"requestHashHeader":"x-key"}}]}`)
	c := <-ringCapture.last
	seen := make(map[string]bool)
	for i := 0; len(seen) < len(bs) && i < 100000; i++ {
		seen[served(b, metadata.AppendToOutgoingContext(context.Background(), "x-key", fmt.Sprint(i)), conn)] = true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.picker
}

// BenchmarkPick compares a pick of this balancer with grpc-go's own
// ring_hash_experimental picker, over the same 8 READY loopback servers.
func BenchmarkPick(b *testing.B) {
	bs := startBackends(b, 8)
	header := pickInfo(metadata.AppendToOutgoingContext(context.Background(), "x-key", "tenant-42"))
	keyed := pickInfo(WithKey(context.Background(), "tenant-42"))
	cases := []struct {
		name string
		p    balancer.Picker
		info balancer.PickInfo
	}{
		{"grpc-ring_hash/header", grpcRingHashPicker(b, bs), header},
		{"chash-ring_hash/header", livePicker(b, bs, `{"loadBalancingConfig":[{"chash":{"algorithm":"ring_hash","header":"x-key"}}]}`), header},
		{"chash-rendezvous/header", livePicker(b, bs, `{"loadBalancingConfig":[{"chash":{"header":"x-key"}}]}`), header},
		{"chash-rendezvous/key", livePicker(b, bs, `{"loadBalancingConfig":[{"chash":{}}]}`), keyed},
		{"chash-maglev/key", livePicker(b, bs, `{"loadBalancingConfig":[{"chash":{"algorithm":"maglev"}}]}`), keyed},
		{"chash-rendezvous-bounded/key", livePicker(b, bs, `{"loadBalancingConfig":[{"chash":{"loadFactor":1.25}}]}`), keyed},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				pickOnce(b, tc.p, tc.info)
			}
		})
	}
}
