package chashhttp

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/chashtest"
	"github.com/stretchr/testify/require"
)

// failDialer dials normally, except that the next dial to an address
// marked with failNext fails, as a backend refusing one connection while
// its open ones serve.
type failDialer struct {
	net.Dialer
	mu   sync.Mutex
	fail map[string]bool
}

func (d *failDialer) failNext(addr string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.fail[addr] = true
}

func (d *failDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	d.mu.Lock()
	fail := d.fail[addr]
	delete(d.fail, addr)
	d.mu.Unlock()
	if fail {
		return nil, &net.OpError{Op: "dial", Net: network, Err: fmt.Errorf("injected dial error")}
	}
	return d.Dialer.DialContext(ctx, network, addr)
}

// The Router keeps the router contract against real HTTP backends, fed by
// a Holder as its membership source: each membership is a Maglev table
// of 5 (which cannot place the sixth backend) built and stored, a
// membership that cannot be built leaves the Holder as it was, and no
// backend empties it. The load factor is 1.25; a disruption is a failed
// dial to the backend (a cooldown of 300 ms), as in
// TestBoundSurvivesDialError.
func TestContractRouter(t *testing.T) {
	const c = 1.25
	bs := startBackends(t, 6)
	nodes := nodesOf(bs)
	first, err := chash.NewMaglev(nodes[:5], chash.WithTableSize(5))
	require.NoError(t, err)
	h := chash.NewHolder(first)
	r, err := New(Header("X-Tenant"), h, WithLoadFactor(c), WithCooldown(300*time.Millisecond))
	require.NoError(t, err)
	d := &failDialer{fail: map[string]bool{}}
	tr := &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: 64}
	t.Cleanup(tr.CloseIdleConnections)
	// The proxy's server would recover a panic and hang up, which the
	// client sees as an error: here a panic fails the test.
	p := r.ReverseProxy(tr)
	p.ErrorLog = log.New(io.Discard, "", 0)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				t.Errorf("the proxy panicked: %v", v)
				w.WriteHeader(http.StatusInternalServerError)
			}
		}()
		p.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	base := srv.URL
	send := &http.Client{Timeout: 5 * time.Second}
	request := func(ctx context.Context, path, key string) (*http.Request, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
		if err == nil {
			req.Header.Set("X-Tenant", key)
		}
		return req, err
	}
	var held sync.WaitGroup
	t.Cleanup(held.Wait)
	start := time.Now()
	chashtest.TestRouter(t, chashtest.Router{
		Backends: nodes,
		Set: func(ns []chash.Node) error {
			if len(ns) == 0 {
				h.Store(nil)
				return nil
			}
			p, err := chash.NewMaglev(ns, chash.WithTableSize(5))
			if err != nil {
				return err
			}
			h.Store(p)
			return nil
		},
		Route: func(key string) (string, error) {
			req, err := request(context.Background(), "/", key)
			if err != nil {
				return "", err
			}
			resp, err := send.Do(req)
			if err != nil {
				return "", err
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err == nil && resp.StatusCode != http.StatusOK {
				err = fmt.Errorf("status %s: %s", resp.Status, body)
			}
			return string(body), err
		},
		Unplaceable: func(all []chash.Node) []chash.Node { return all },
		LoadFactor:  c,
		Hold: func(key string) (func(), error) {
			ctx, cancel := context.WithCancel(context.Background())
			req, err := request(ctx, "/hold", key)
			if err != nil {
				cancel()
				return nil, err
			}
			held.Add(1)
			go func() {
				defer held.Done()
				if resp, err := send.Do(req); err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}()
			return cancel, nil
		},
		InFlight: func() map[string]int {
			m := make(map[string]int, len(bs))
			for _, b := range bs {
				m[b.addr] = int(b.inflight.Load())
			}
			return m
		},
		Disrupt: d.failNext,
	})
	t.Logf("the router contract took %v", time.Since(start).Round(time.Millisecond))
}
