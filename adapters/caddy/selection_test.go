package chashcaddy

// Caddy runs in the test process from a Caddyfile, proxying with this
// policy to real HTTP backends on loopback.

import (
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	_ "github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	_ "github.com/caddyserver/caddy/v2/modules/filestorage"
	"github.com/keyplace/chash"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type backend struct {
	addr     string
	mu       sync.Mutex
	srv      *http.Server
	hold     chan struct{}
	inflight atomic.Int64
}

func startBackends(t *testing.T, n int) []*backend {
	bs := make([]*backend, n)
	for i := range bs {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		bs[i] = &backend{addr: lis.Addr().String(), hold: make(chan struct{})}
		bs[i].serve(lis)
		t.Cleanup(bs[i].stop)
	}
	return bs
}

func (b *backend) serve(lis net.Listener) {
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.inflight.Add(1)
		defer b.inflight.Add(-1)
		if r.URL.Path == "/hold" {
			select {
			case <-b.hold:
			case <-r.Context().Done():
			}
		}
		io.WriteString(w, b.addr)
	})}
	b.mu.Lock()
	b.srv = srv
	b.mu.Unlock()
	go srv.Serve(lis)
}

func (b *backend) stop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.srv != nil {
		b.srv.Close()
		b.srv = nil
	}
}

func (b *backend) restart(t *testing.T) {
	var lis net.Listener
	require.Eventually(t, func() bool {
		var err error
		lis, err = net.Listen("tcp", b.addr)
		return err == nil
	}, 5*time.Second, 20*time.Millisecond)
	b.serve(lis)
}

func freePort(t *testing.T) int {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer lis.Close()
	return lis.Addr().(*net.TCPAddr).Port
}

// runCaddy starts Caddy from a Caddyfile whose reverse_proxy has the
// given lb_policy block, and returns the proxy's base URL.
func runCaddy(t *testing.T, bs []*backend, policy string) string {
	port := freePort(t)
	var ups []string
	for _, b := range bs {
		ups = append(ups, b.addr)
	}
	cf := fmt.Sprintf(`{
	admin off
	auto_https off
	persist_config off
	storage file_system %s
	log {
		output discard
	}
}
http://127.0.0.1:%d {
	reverse_proxy %s {
		%s
		lb_try_duration 2s
		lb_try_interval 10ms
		fail_duration 300ms
		max_fails 1
	}
}
`, t.TempDir(), port, strings.Join(ups, " "), policy)
	js, warn, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(cf), nil)
	require.NoError(t, err)
	require.Empty(t, warn)
	require.NoError(t, caddy.Load(js, true))
	t.Cleanup(func() { caddy.Stop() })
	return fmt.Sprintf("http://127.0.0.1:%d", port)
}

var client = &http.Client{Timeout: 10 * time.Second}

func served(t *testing.T, url, tenant string) string {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	req.Header.Set("X-Tenant", tenant)
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	return string(body)
}

func keys() []string {
	n := 1000
	if testing.Short() {
		n = 300
	}
	ks := make([]string, n)
	for i := range ks {
		ks[i] = fmt.Sprintf("tenant-%05d", i)
	}
	return ks
}

// Each key sticks to the placer's upstream; stopping one moves only its
// keys, each to its second choice in preference order; they come back
// once Caddy sees it healthy again.
func TestCaddyStickyAndFailover(t *testing.T) {
	const n = 4
	bs := startBackends(t, n)
	base := runCaddy(t, bs, `lb_policy chash {
			key {http.request.header.X-Tenant}
			algorithm maglev
		}`)
	var nodes []chash.Node
	for _, b := range bs {
		nodes = append(nodes, chash.Node{ID: b.addr})
	}
	p, err := chash.NewMaglev(nodes)
	require.NoError(t, err)
	before := map[string]string{}
	for _, k := range keys() {
		before[k] = served(t, base+"/", k)
		require.Equal(t, p.LookupString(k).ID, before[k], k)
	}

	bs[1].stop()
	moved := 0
	for _, k := range keys() {
		got := served(t, base+"/", k)
		if top := p.AppendTopKString(nil, k, 2); top[0].ID == bs[1].addr {
			moved++
			assert.Equal(t, top[1].ID, got, k)
		} else {
			assert.Equal(t, before[k], got, k)
		}
	}
	frac := float64(moved) / float64(len(keys()))
	sd := math.Sqrt(float64(len(keys()))*(1.0/n)*(1-1.0/n)) / float64(len(keys()))
	assert.InDelta(t, 1.0/n, frac, 5*sd)
	t.Logf("one of %d upstreams stopped: %.4f of %d keys moved (1/N = %.4f)", n, frac, len(keys()), 1.0/n)

	bs[1].restart(t)
	time.Sleep(400 * time.Millisecond) // fail_duration
	for _, k := range keys() {
		assert.Equal(t, before[k], served(t, base+"/", k), k)
	}
}

// With load_factor, held requests under a skewed key stream never put an
// upstream past the bound (Caddy's own in-flight counts).
func TestCaddyLoadFactor(t *testing.T) {
	const n, c, requests = 4, 1.25, 60
	bs := startBackends(t, n)
	base := runCaddy(t, bs, `lb_policy chash {http.request.header.X-Tenant} {
			load_factor 1.25
		}`)
	peak := func() (sum, p int64) {
		for _, b := range bs {
			v := b.inflight.Load()
			sum, p = sum+v, max(p, v)
		}
		return sum, p
	}
	var wg sync.WaitGroup
	for i := range requests {
		k := "hot"
		if i%10 >= 7 {
			k = fmt.Sprint("tenant-", i)
		}
		wg.Add(1)
		go func() { defer wg.Done(); served(t, base+"/hold", k) }()
		require.Eventually(t, func() bool { s, _ := peak(); return s == int64(i+1) }, 5*time.Second, time.Millisecond)
		_, p := peak()
		require.LessOrEqual(t, p, int64(math.Ceil(c*float64(i+1)/n)), "after %d requests", i+1)
	}
	_, p := peak()
	assert.Greater(t, p, int64(requests/n))
	t.Logf("load_factor %v: %d held requests on %d upstreams, peak %d (bound %d, the hot key alone is %d)",
		c, requests, n, p, int(math.Ceil(c*requests/n)), requests*7/10)
	for _, b := range bs {
		close(b.hold)
	}
	wg.Wait()
}

func TestUnmarshalCaddyfile(t *testing.T) {
	var s Selection
	d := caddyfile.NewTestDispenser(`chash {http.request.cookie.u} {
		algorithm Ring
		vnodes 100
		seed 7
		load_factor 1.5
	}`)
	require.NoError(t, s.UnmarshalCaddyfile(d))
	assert.Equal(t, "{http.request.cookie.u}", s.Key)
	assert.Equal(t, "ring", s.Algorithm)
	assert.Equal(t, 100, s.Vnodes)
	assert.Equal(t, uint64(7), s.Seed)
	assert.Equal(t, 1.5, s.LoadFactor)
	require.NoError(t, s.Provision(caddy.Context{}))

	for _, bad := range []string{
		`chash {
			colour blue
		}`,
		`chash {
			vnodes many
		}`,
		`chash a b`,
	} {
		var s Selection
		assert.Error(t, s.UnmarshalCaddyfile(caddyfile.NewTestDispenser(bad)), bad)
	}
	for _, bad := range []*Selection{{Algorithm: "cuckoo"}, {TableSize: 1000, Algorithm: "maglev"}, {LoadFactor: 0.9}} {
		assert.Error(t, bad.Provision(caddy.Context{}))
	}
}
