package chashcaddy

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp/reverseproxy"
	"github.com/keyplace/chash"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Provision validates a configuration for what it is, at a bounded cost:
// option ranges are checked without building a placement of the
// configured size.
func TestProvisionBoundedCost(t *testing.T) {
	for _, s := range []*Selection{
		{Algorithm: "bounded", Partitions: 1 << 24},
		{Algorithm: "maglev", TableSize: 16777213},
		{Algorithm: "ring", Vnodes: 1 << 16},
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		err := s.Provision(caddy.Context{})
		took := time.Since(start)
		runtime.ReadMemStats(&after)
		require.NoError(t, err)
		bytes := after.TotalAlloc - before.TotalAlloc
		t.Logf("%s: %v, %d bytes", s.Algorithm, took, bytes)
		assert.Less(t, took, 100*time.Millisecond, s.Algorithm)
		assert.Less(t, bytes, uint64(1<<20), s.Algorithm)
	}
	for _, bad := range []*Selection{
		{Algorithm: "maglev", TableSize: 4},
		{Algorithm: "bounded", Partitions: 1<<24 + 1},
		{Algorithm: "ring", Vnodes: -1},
	} {
		assert.Error(t, bad.Provision(caddy.Context{}), "%+v", bad)
	}
}

// A positional algorithm (jump, jumpback, binomial, flip) numbers
// upstreams by their position in the pool: a new order of the upstreams,
// or removing one but the last, moves most keys. A stateful one (memento,
// anchor, dx, jumpbackanchor, choosek) would do the same, since each
// configuration load builds the placement afresh. Both are refused,
// naming the alternatives.
func TestPositionalRefused(t *testing.T) {
	for _, a := range chash.Algorithms() {
		if !a.Positional() && !a.Stateful() {
			continue
		}
		err := (&Selection{Algorithm: a.String()}).Provision(caddy.Context{})
		require.ErrorIs(t, err, chash.ErrInvalidOption, a)
		assert.Contains(t, err.Error(), "rendezvous")
		t.Log(err)
	}
}

func pool(addrs ...string) reverseproxy.UpstreamPool {
	var p reverseproxy.UpstreamPool
	for _, a := range addrs {
		p = append(p, &reverseproxy.Upstream{Host: new(reverseproxy.Host), Dial: a})
	}
	return p
}

func selectFor(s *Selection, p reverseproxy.UpstreamPool, key string) string {
	repl := caddy.NewReplacer()
	repl.Set("tenant", key)
	r, _ := http.NewRequest(http.MethodGet, "http://x/", nil)
	r = r.WithContext(context.WithValue(r.Context(), caddy.ReplacerCtxKey, repl))
	if up := s.Select(p, r, nil); up != nil {
		return up.Dial
	}
	return ""
}

// A pool the configured placement cannot place keeps the last good
// placement serving (not one key moves), is counted, and the next pool it
// can place is placed; without a last good placement, the pool is placed
// by rendezvous. An upstream is never refused for a placement's sake.
func TestSelectUnplaceablePool(t *testing.T) {
	var addrs []string
	for i := range 7 {
		addrs = append(addrs, fmt.Sprintf("10.0.0.%d:80", i+1))
	}
	s := &Selection{Key: "{tenant}", Algorithm: "maglev", TableSize: 5}
	require.NoError(t, s.Provision(caddy.Context{}))
	keys := keys()
	sweep := func(p reverseproxy.UpstreamPool) (map[string]string, int) {
		got, failed := map[string]string{}, 0
		for _, k := range keys {
			if got[k] = selectFor(s, p, k); got[k] == "" {
				failed++
			}
		}
		return got, failed
	}
	good, failed := sweep(pool(addrs[:5]...))
	require.Zero(t, failed)

	before := ReadCounters()
	got, failed := sweep(pool(addrs[:6]...))
	assert.Zero(t, failed, "requests refused on a pool of healthy upstreams")
	moved := 0
	for _, k := range keys {
		if got[k] != good[k] {
			moved++
		}
	}
	assert.Zero(t, moved, "keys moved by a pool the placement refused")
	assert.Equal(t, before.Refused+1, ReadCounters().Refused)
	t.Logf("maglev table 5, pool of 6: %d of %d requests refused, %d keys moved", failed, len(keys), moved)

	// The next pool it can place is placed.
	next, failed := sweep(pool(addrs[:4]...))
	require.Zero(t, failed)
	nodes := []chash.Node{{ID: addrs[0]}, {ID: addrs[1]}, {ID: addrs[2]}, {ID: addrs[3]}}
	want, err := chash.NewMaglev(nodes, chash.WithTableSize(5))
	require.NoError(t, err)
	for _, k := range keys {
		require.Equal(t, want.LookupString(k).ID, next[k], k)
	}

	// A first pool it cannot place is placed by rendezvous.
	fresh := &Selection{Key: "{tenant}", Algorithm: "maglev", TableSize: 3}
	require.NoError(t, fresh.Provision(caddy.Context{}))
	before = ReadCounters()
	per := map[string]int{}
	for _, k := range keys {
		d := selectFor(fresh, pool(addrs[:5]...), k)
		require.NotEmpty(t, d, k)
		per[d]++
	}
	assert.Len(t, per, 5, "every upstream serves")
	assert.Equal(t, before.Fallbacks+1, ReadCounters().Fallbacks)
}

// Through Caddy: five healthy upstreams and a Maglev table of 3 serve every
// request (they all failed with 502 before).
func TestCaddyUnplaceablePool(t *testing.T) {
	bs := startBackends(t, 5)
	base := runCaddy(t, bs, `lb_policy chash {
			key {http.request.header.X-Tenant}
			algorithm maglev
			table_size 3
		}`)
	codes := map[int]int{}
	per := map[string]int{}
	ks := keys()[:100]
	for _, k := range ks {
		req, err := http.NewRequest(http.MethodGet, base+"/", nil)
		require.NoError(t, err)
		req.Header.Set("X-Tenant", k)
		resp, err := client.Do(req)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		codes[resp.StatusCode]++
		if resp.StatusCode == http.StatusOK {
			per[string(body)]++
		}
	}
	t.Logf("maglev table_size 3, 5 upstreams: status codes %v", codes)
	assert.Equal(t, map[int]int{http.StatusOK: len(ks)}, codes)
	assert.Len(t, per, 5)
}
