package chashhttp

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"path"
	"strings"
	"testing"

	"github.com/keyplace/chash"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tenantBackends start n backends that answer with their address and the
// tenant they would serve the request for, read two ways: by a handler
// that decodes and cleans the path (path.Clean(r.URL.Path), as most
// handlers do), and by a router that matches the escaped path segment by
// segment without cleaning it, unescaping each segment (as net/http's
// ServeMux matches a pattern such as "/tenants/{id}/" once the path is
// clean). Neither redirects.
func tenantBackends(t *testing.T, n int) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range ids {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addr := lis.Addr().String()
		ids[i] = addr
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			cleaned, segment := "-", "-"
			if seg := strings.Split(path.Clean(r.URL.Path), "/"); len(seg) > 2 {
				cleaned = seg[2]
			}
			if seg := strings.Split(r.URL.EscapedPath(), "/"); len(seg) > 2 {
				segment, _ = url.PathUnescape(seg[2])
			}
			fmt.Fprintf(w, "%s %q %q", addr, cleaned, segment)
		})}
		go srv.Serve(lis)
		t.Cleanup(func() { srv.Close() })
	}
	return ids
}

// PathPrefix keys a request by the path the backend serves, not by the
// path as written: dot segments, encoded slashes and dots, double slashes
// and trailing slashes all reach the owner of the tenant the backend
// serves the request for, however the backend reads its path.
func TestPathPrefixAttackForms(t *testing.T) {
	ids := tenantBackends(t, 4)
	nodes := make([]chash.Node, len(ids))
	for i, id := range ids {
		nodes[i] = chash.Node{ID: id}
	}
	p, err := chash.NewRendezvous(nodes)
	require.NoError(t, err)
	r, err := New(PathPrefix(2), p)
	require.NoError(t, err)
	base := proxy(t, r)

	forms := []struct {
		name string
		path func(other string) string
	}{
		{"plain", func(string) string { return "/tenants/b/orders" }},
		{"trailing slash", func(string) string { return "/tenants/b/" }},
		{"double slash", func(string) string { return "/tenants//b/orders" }},
		{"leading double slash", func(string) string { return "//tenants/b/orders" }},
		{"dot segment", func(string) string { return "/tenants/./b/orders" }},
		{"dot-dot", func(o string) string { return "/tenants/" + o + "/../b/orders" }},
		{"dot-dot past the root", func(string) string { return "/../tenants/b/orders" }},
		{"dot-dot later", func(o string) string { return "/tenants/" + o + "/x/../../b/orders" }},
		{"encoded slashes", func(o string) string { return "/tenants/" + o + "%2F..%2Fb/orders" }},
		{"encoded slashes, lower case", func(o string) string { return "/tenants/" + o + "%2f..%2fb/orders" }},
		{"encoded dots", func(o string) string { return "/tenants/" + o + "/%2E%2E/b/orders" }},
		{"encoded dots, lower case", func(o string) string { return "/tenants/" + o + "/%2e./b/orders" }},
		{"encoded slash and dots", func(o string) string { return "/tenants/" + o + "%2F%2E%2E%2Fb/orders" }},
		{"encoded slash in a later segment", func(o string) string { return "/tenants/" + o + "/x%2F..%2F..%2Fb/orders" }},
	}
	const requests = 400
	wrong := map[string]int{}
	total := 0
	for i := range requests {
		f := forms[i%len(forms)]
		other := fmt.Sprintf("t%d", i)
		req := newRequest(t, base+f.path(other))
		code, body := get(t, req)
		require.Equal(t, http.StatusOK, code, "%s: %s", f.name, req.URL)
		var addr, cleaned, segment string
		_, err := fmt.Sscanf(body, "%s %q %q", &addr, &cleaned, &segment)
		require.NoError(t, err, body)
		require.Equal(t, "b", cleaned, "%s: %s: the tenant of the cleaned path", f.name, req.URL)
		if owner := p.LookupString("/tenants/b").ID; addr != owner {
			wrong[f.name]++
			total++
		}
		assert.Equal(t, "b", segment, "%s: %s: the tenant of the forwarded path's second segment", f.name, req.URL)
	}
	assert.Zero(t, total, "of %d requests for tenant b, served by a backend that does not own it: %v", requests, wrong)
	t.Logf("%d of %d requests for tenant b served by a backend that does not own it", total, requests)
}

// PathPrefix on its own (not through a Router) reads the cleaned,
// decoded path too.
func TestPathPrefixKey(t *testing.T) {
	k := PathPrefix(2)
	for raw, want := range map[string]string{
		"/tenants/42/orders/7":        "/tenants/42",
		"/tenants/42":                 "/tenants/42",
		"/tenants/42/":                "/tenants/42",
		"/tenants//42/orders":         "/tenants/42",
		"/tenants/a/../42/orders":     "/tenants/42",
		"/tenants/a%2F..%2F42/orders": "/tenants/42",
		"/tenants/a/%2E%2E/42/orders": "/tenants/42",
		"/tenants/./42":               "/tenants/42",
		"/tenants":                    "",
		"/":                           "",
		"/tenants/..":                 "",
	} {
		req, err := http.NewRequest(http.MethodGet, "http://x"+raw, nil)
		require.NoError(t, err)
		got, ok := k(req)
		assert.Equal(t, want, got, raw)
		assert.Equal(t, want != "", ok, raw)
	}
}

// A Router whose key does not read the path forwards the path as the
// client wrote it, encoded slashes and dot segments included; one whose
// key does forwards the clean path, keeping a trailing slash and the
// query.
func TestRewriteForwardsPath(t *testing.T) {
	got := make(chan string, 1)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.URL.EscapedPath() + "?" + r.URL.RawQuery
	})}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go srv.Serve(lis)
	t.Cleanup(func() { srv.Close() })
	p, err := chash.NewRendezvous([]chash.Node{{ID: lis.Addr().String()}})
	require.NoError(t, err)
	for _, tc := range []struct {
		key       Key
		sent, fwd string
	}{
		{Header("X-Tenant"), "/files/a%2Fb/../c?x=1", "/files/a%2Fb/../c?x=1"},
		{Header("X-Tenant"), "/tenants//b/", "/tenants//b/?"},
		{PathPrefix(2), "/tenants/a%2F..%2Fb/files/?x=1", "/tenants/b/files/?x=1"},
		{PathPrefix(2), "/tenants/a/%2E%2E/b//c", "/tenants/b/c?"},
		{PathPrefix(2), "/tenants/b/files/x%20y", "/tenants/b/files/x%20y?"},
		{func(r *http.Request) (string, bool) { return r.URL.Path, true }, "/a/../b", "/b?"},
	} {
		base := proxy(t, mustNew(t, tc.key, p))
		code, _ := get(t, newRequest(t, base+tc.sent))
		require.Equal(t, http.StatusOK, code)
		want := tc.fwd
		if !strings.Contains(want, "?") {
			want += "?"
		}
		assert.Equal(t, want, <-got, tc.sent)
	}
}

func mustNew(t *testing.T, key Key, p chash.Placer, opts ...Option) *Router {
	t.Helper()
	r, err := New(key, p, opts...)
	require.NoError(t, err)
	return r
}
