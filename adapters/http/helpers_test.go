package chashhttp

// Test helpers: real HTTP backends on loopback ports, each answering with
// its own address and counting the requests in flight on it, and a real
// proxy server in front of them.

import (
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/keyplace/chash"
	"github.com/stretchr/testify/require"
)

type backend struct {
	addr     string
	mu       sync.Mutex
	srv      *http.Server
	hold     chan struct{} // requests to /hold wait until it is closed
	inflight atomic.Int64
}

func startBackends(t testing.TB, n int) []*backend {
	t.Helper()
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
	srv := &http.Server{Handler: http.HandlerFunc(b.handle), ReadHeaderTimeout: 5 * time.Second}
	b.mu.Lock()
	b.srv = srv
	b.mu.Unlock()
	go srv.Serve(lis)
}

// handle answers with the backend's address. /hold waits for b.hold or the
// client; /abort hangs up without an answer; /partial sends half a body.
func (b *backend) handle(w http.ResponseWriter, r *http.Request) {
	b.inflight.Add(1)
	defer b.inflight.Add(-1)
	switch r.URL.Path {
	case "/hold":
		select {
		case <-b.hold:
		case <-r.Context().Done():
			return
		}
	case "/abort":
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
		return
	case "/partial":
		w.Header().Set("Content-Length", "1000")
		io.WriteString(w, "half")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		return
	}
	io.WriteString(w, b.addr)
}

func (b *backend) stop() {
	b.mu.Lock()
	srv := b.srv
	b.srv = nil
	b.mu.Unlock()
	if srv != nil {
		srv.Close()
	}
}

func (b *backend) restart(t testing.TB) {
	t.Helper()
	var lis net.Listener
	require.Eventually(t, func() bool {
		var err error
		lis, err = net.Listen("tcp", b.addr)
		return err == nil
	}, 5*time.Second, 20*time.Millisecond)
	b.serve(lis)
}

func nodesOf(bs []*backend) []chash.Node {
	nodes := make([]chash.Node, len(bs))
	for i, b := range bs {
		nodes[i] = chash.Node{ID: b.addr}
	}
	return nodes
}

// proxy serves r on a loopback port and returns its URL.
func proxy(t testing.TB, r *Router) string {
	t.Helper()
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	t.Cleanup(tr.CloseIdleConnections)
	return proxyOver(t, r, tr)
}

// proxyOver serves r over the transport tr on a loopback port and returns
// its URL.
func proxyOver(t testing.TB, r *Router, tr http.RoundTripper) string {
	t.Helper()
	p := r.ReverseProxy(tr)
	p.ErrorLog = log.New(io.Discard, "", 0) // the tests provoke errors on purpose
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return srv.URL
}

var client = &http.Client{Timeout: 10 * time.Second}

// get sends req and returns the status and body.
func get(t testing.TB, req *http.Request) (int, string) {
	t.Helper()
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

func newRequest(t testing.TB, url string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	return req
}

func testKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("tenant-%05d", i)
	}
	return keys
}

func keyCount() int {
	if testing.Short() {
		return 300
	}
	return 1500
}
