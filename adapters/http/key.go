package chashhttp

import (
	"net/http"
	"net/url"
	"path"
	"strings"
)

// Key extracts a request's routing key, reporting false when the request
// has none. Any func(*http.Request) (string, bool) is a Key.
type Key func(r *http.Request) (string, bool)

// Header keys requests by the first value of the named header.
func Header(name string) Key {
	name = http.CanonicalHeaderKey(name)
	return func(r *http.Request) (string, bool) {
		v := r.Header.Get(name)
		return v, v != ""
	}
}

// Cookie keys requests by the value of the named cookie.
func Cookie(name string) Key {
	return func(r *http.Request) (string, bool) {
		c, err := r.Cookie(name)
		if err != nil || c.Value == "" {
			return "", false
		}
		return c.Value, true
	}
}

// Query keys requests by the first value of the named query parameter.
func Query(name string) Key {
	return func(r *http.Request) (string, bool) {
		v := r.URL.Query().Get(name)
		return v, v != ""
	}
}

// PathPrefix keys requests by the first n segments of the URL path as the
// backend serves it: with n = 2, "/tenants/42/orders/7" is keyed
// "/tenants/42". The path is read decoded (r.URL.Path, where %2F is a
// slash and %2E a dot) and cleaned (path.Clean: "." and ".." segments
// resolved, repeated slashes merged, a trailing slash ignored), so
// "/tenants/a/../42/x", "/tenants/a%2F..%2F42/x", "/tenants//42/x" and
// "/tenants/42/" are all keyed "/tenants/42": the tenant a backend that
// decodes and cleans its path serves. A path with fewer than n segments
// has no key.
//
// Through a Router, a request whose path is not already in that form is
// also forwarded in it (see [Router.Rewrite]), so that a backend that
// does not clean its path, or matches the escaped path segment by segment
// as net/http's ServeMux does, serves the same tenant the request was
// keyed by.
func PathPrefix(n int) Key {
	return func(r *http.Request) (string, bool) {
		p := r.URL.Path
		if n < 1 || !strings.HasPrefix(p, "/") {
			return "", false
		}
		p = path.Clean(p) // does not allocate when p is clean
		end := 0
		for i := 0; i < n; i++ {
			j := strings.IndexByte(p[end+1:], '/')
			if j < 0 {
				if i == n-1 && end+1 < len(p) {
					return p, true
				}
				return "", false
			}
			end += 1 + j
		}
		return p[:end], true
	}
}

// cleanPath returns the form of the rooted path p that PathPrefix reads
// (path.Clean), keeping a trailing slash, and whether u's path, as
// ReverseProxy would forward it (u.EscapedPath()), differs from it: dot
// segments, repeated slashes or an encoded slash (%2F, which a backend
// may read as a separator or not). Paths that do not start with "/"
// (such as "*") are left alone.
func cleanPath(u *url.URL) (string, bool) {
	p := u.Path
	if !strings.HasPrefix(p, "/") {
		return p, false
	}
	c := path.Clean(p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return c, c != p || hasEncodedSlash(u.RawPath)
}

func hasEncodedSlash(raw string) bool {
	for i := 0; i+2 < len(raw); i++ {
		if raw[i] == '%' && raw[i+1] == '2' && (raw[i+2] == 'F' || raw[i+2] == 'f') {
			return true
		}
	}
	return false
}
