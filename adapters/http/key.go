package chashhttp

import (
	"net/http"
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

// PathPrefix keys requests by the first n segments of the URL path: with
// n = 2, "/tenants/42/orders/7" is keyed "/tenants/42". A path with fewer
// than n segments has no key.
func PathPrefix(n int) Key {
	return func(r *http.Request) (string, bool) {
		p := r.URL.Path
		if n < 1 || !strings.HasPrefix(p, "/") {
			return "", false
		}
		end := 0
		for i := 0; i < n; i++ {
			j := strings.IndexByte(p[end+1:], '/')
			if j < 0 {
				if i == n-1 && end+1 < len(p) {
					return p, true
				}
				return "", false
			}
			if j == 0 {
				return "", false // an empty segment
			}
			end += 1 + j
		}
		return p[:end], true
	}
}
