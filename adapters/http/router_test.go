package chashhttp

import (
	"math"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/keyplace/chash"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every key extractor sends each key's requests to the placer's choice.
func TestStickyPlacement(t *testing.T) {
	bs := startBackends(t, 4)
	p, err := chash.NewRendezvous(nodesOf(bs))
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		key  Key
		req  func(base, k string) *http.Request
	}{
		{"header", Header("x-tenant"), func(base, k string) *http.Request {
			r := newRequest(t, base+"/orders")
			r.Header.Set("X-Tenant", k)
			return r
		}},
		{"cookie", Cookie("tenant"), func(base, k string) *http.Request {
			r := newRequest(t, base+"/orders")
			r.AddCookie(&http.Cookie{Name: "tenant", Value: k})
			return r
		}},
		{"query", Query("t"), func(base, k string) *http.Request { return newRequest(t, base+"/orders?t="+url.QueryEscape(k)) }},
		{"path prefix", PathPrefix(2), func(base, k string) *http.Request { return newRequest(t, base+"/tenants/"+k+"/orders") }},
		{"function", func(r *http.Request) (string, bool) { return r.Header.Get("X-User"), true }, func(base, k string) *http.Request {
			r := newRequest(t, base+"/")
			r.Header.Set("X-User", k)
			return r
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := New(tc.key, p)
			require.NoError(t, err)
			base := proxy(t, r)
			wrong := 0
			for _, k := range testKeys(keyCount()) {
				want := p.LookupString(k).ID
				if tc.name == "path prefix" {
					want = p.LookupString("/tenants/" + k).ID
				}
				code, body := get(t, tc.req(base, k))
				require.Equal(t, http.StatusOK, code)
				if body != want {
					wrong++
				}
			}
			assert.Zero(t, wrong, "requests served by another backend than the placer's")
		})
	}
}

// Stopping one of N backends moves only its keys, each to its second
// choice, through the dial error's failover; after a restart and the
// cooldown they come back.
func TestFailover(t *testing.T) {
	const n = 5
	bs := startBackends(t, n)
	p, err := chash.NewRendezvous(nodesOf(bs))
	require.NoError(t, err)
	r, err := New(Header("X-Tenant"), p, WithCooldown(200*time.Millisecond))
	require.NoError(t, err)
	base := proxy(t, r)
	keys := testKeys(keyCount())
	sweep := func() map[string]string {
		m := make(map[string]string)
		for _, k := range keys {
			req := newRequest(t, base+"/")
			req.Header.Set("X-Tenant", k)
			code, body := get(t, req)
			require.Equal(t, http.StatusOK, code, k)
			m[k] = body
		}
		return m
	}
	before := sweep()
	down := bs[3].addr
	bs[3].stop()
	after := sweep()
	moved := 0
	for _, k := range keys {
		top := p.AppendTopKString(nil, k, 2)
		if top[0].ID == down {
			moved++
			assert.Equal(t, top[1].ID, after[k], "key %s of the stopped backend goes to its second choice", k)
		} else {
			assert.Equal(t, before[k], after[k], "key %s of a live backend stays", k)
		}
	}
	frac := float64(moved) / float64(len(keys))
	sd := math.Sqrt(float64(len(keys))*(1.0/n)*(1-1.0/n)) / float64(len(keys))
	assert.InDelta(t, 1.0/n, frac, 5*sd)
	t.Logf("one of %d backends stopped: %.4f of %d keys moved (1/N = %.4f)", n, frac, len(keys), 1.0/n)

	bs[3].restart(t)
	time.Sleep(250 * time.Millisecond) // the cooldown
	assert.Equal(t, before, sweep(), "after the restart every key is back on its first choice")
}

// A Holder's swaps take effect on the next request.
func TestHolder(t *testing.T) {
	bs := startBackends(t, 3)
	one, err := chash.NewRendezvous(nodesOf(bs[:1]))
	require.NoError(t, err)
	h := chash.NewHolder(one)
	r, err := New(Query("k"), h)
	require.NoError(t, err)
	base := proxy(t, r)
	_, body := get(t, newRequest(t, base+"/?k=x"))
	assert.Equal(t, bs[0].addr, body)
	all, err := chash.NewRendezvous(nodesOf(bs))
	require.NoError(t, err)
	h.Store(all)
	for _, k := range testKeys(50) {
		_, body := get(t, newRequest(t, base+"/?k="+k))
		assert.Equal(t, all.LookupString(k).ID, body)
	}
}

func TestNewRejects(t *testing.T) {
	p, err := chash.NewRendezvous([]chash.Node{{ID: "http://h:1/path"}})
	require.NoError(t, err)
	_, err = New(Header("k"), p)
	assert.ErrorIs(t, err, chash.ErrInvalidOption)
	_, err = New(nil, p)
	assert.ErrorIs(t, err, chash.ErrInvalidOption)
	_, err = New(Header("k"), nil)
	assert.ErrorIs(t, err, chash.ErrNilPlacer)
	var nilRing *chash.Ring
	_, err = New(Header("k"), nilRing)
	assert.ErrorIs(t, err, chash.ErrNilPlacer)
	ok, err := chash.NewRendezvous([]chash.Node{{ID: "h:1"}})
	require.NoError(t, err)
	_, err = New(Header("k"), ok, WithLoadFactor(0.5))
	assert.ErrorIs(t, err, chash.ErrInvalidOption)
	_, err = New(Header("k"), ok, WithAttempts(0))
	assert.ErrorIs(t, err, chash.ErrInvalidOption)
}

func TestPathPrefix(t *testing.T) {
	for path, want := range map[string]string{
		"/tenants/42/orders": "/tenants/42",
		"/tenants/42":        "/tenants/42",
		"/tenants/42/":       "/tenants/42",
		"/tenants":           "",
		"/tenants/":          "",
		"//42/x":             "/42/x", // read cleaned, as the backend serves it
		"":                   "",
	} {
		got, ok := PathPrefix(2)(&http.Request{URL: &url.URL{Path: path}})
		assert.Equal(t, want, got, path)
		assert.Equal(t, want != "", ok, path)
	}
}

// A positional placer (jump, jumpback, binomial, flip) numbers backends
// by position: removing one but the last, or a new order, moves most
// keys. New refuses one, also behind a Holder, unless WithReshuffle
// accepts it, naming the stateful placers as the way to keep jump's cost.
// A stateful placer is accepted: derived at each change, it loses any
// backend moving only its keys.
func TestPositionalRefused(t *testing.T) {
	nodes := []chash.Node{{ID: "a:1"}, {ID: "b:1"}, {ID: "c:1"}}
	for _, a := range chash.Algorithms() {
		p, err := chash.New(a, nodes)
		require.NoError(t, err)
		var h chash.Holder
		h.Store(p)
		for _, src := range []chash.Placer{p, &h} {
			_, err = New(Header("k"), src)
			if !a.Positional() {
				assert.NoError(t, err, a)
				continue
			}
			require.ErrorIs(t, err, chash.ErrInvalidOption, a)
			assert.Contains(t, err.Error(), "WithReshuffle")
			assert.Contains(t, err.Error(), "memento")
			t.Log(err)
			_, err = New(Header("k"), src, WithReshuffle())
			assert.NoError(t, err, a)
		}
	}
}
