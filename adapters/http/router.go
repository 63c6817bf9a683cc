// Package chashhttp routes net/http/httputil.ReverseProxy requests by a
// request key with a chash placement: every request for one tenant, user
// or object goes to the backend that owns it, fails over to the key's
// next choice when that backend cannot be dialled, and, with a load
// factor, no backend takes more than its bounded share of the requests in
// flight.
//
//	router, err := chashhttp.New(chashhttp.Header("X-Tenant"), placer)
//	proxy := &httputil.ReverseProxy{Rewrite: router.Rewrite, Transport: router.Transport(nil)}
//
// A node's ID names its backend: "host:port" (plain HTTP) or a URL with a
// scheme and host and no path, such as "https://10.0.0.7:8443".
package chashhttp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/balance"
)

// ErrNoRoute reports a request the Transport cannot route: every attempt
// failed to dial, the bounded balancer found every backend full, or the
// placer has no backend (a Holder emptied, wrapping chash.ErrNoNodes).
var ErrNoRoute = errors.New("chashhttp: no backend can take the request")

// Router picks backends for a ReverseProxy. Its Rewrite records each
// request's key; its Transport picks the backend, fails over on dial
// errors and holds the request's lease until the response body is closed
// (ReverseProxy closes it for every response, also when copying it fails
// or the client goes away). A Router is safe for concurrent use. Make one
// with New; the zero Router is not usable.
type Router struct {
	key       Key
	src       chash.Placer
	c         float64
	attempts  int
	cooldown  time.Duration
	reshuffle bool

	cur   atomic.Pointer[view]
	dirty atomic.Bool // the view must be rebuilt: a draining backend finished
	mu    sync.Mutex  // serialises view rebuilds
	bal   *balance.Balancer
	down  map[string]time.Time // backend ID -> when it may be tried again
	urls  sync.Map             // backend ID -> *url.URL
}

// Option configures New.
type Option func(*Router) error

// WithLoadFactor bounds each backend's in-flight requests to about c times
// its weighted share, through a balance.Balancer (c > 1). Requests without a
// key are not counted.
//
// A lease belongs to the backend, not to a connection or a cooldown: the
// Router keeps one balancer whose members are the backends by ID, changed
// with SetPlacer, and a lease is released exactly once, when its request
// ends. A backend cooling down after a dial error takes no request by
// preference, but the requests it still runs stay counted against it and
// it keeps its share of the bound until they end (the other backends are
// held to their bounds meanwhile; only when all of them are full does a
// request go to it); a backend that leaves the placer keeps its count
// until its requests end, so that if it comes back it is bounded with
// them.
func WithLoadFactor(c float64) Option {
	return func(r *Router) error { r.c = c; return nil }
}

// WithAttempts sets how many backends, in the key's preference order, a
// request tries when dialling fails (default 3, at least 1).
func WithAttempts(n int) Option {
	return func(r *Router) error {
		if n < 1 {
			return fmt.Errorf("%w: chashhttp.WithAttempts(%d): want at least 1", chash.ErrInvalidOption, n)
		}
		r.attempts = n
		return nil
	}
}

// WithCooldown sets how long a backend that could not be dialled is left
// out of the placement before requests try it again (default 2s). Only
// its own keys move meanwhile, each to its next choice.
func WithCooldown(d time.Duration) Option {
	return func(r *Router) error {
		if d <= 0 {
			return fmt.Errorf("%w: chashhttp.WithCooldown(%v): want a positive duration", chash.ErrInvalidOption, d)
		}
		r.cooldown = d
		return nil
	}
}

// WithReshuffle accepts a positional placer (chash.IsPositional: a jump,
// jumpback, binomial or flip placer, also behind a Holder), which New
// otherwise refuses.
// Such a placer numbers the backends by their position in the list it was
// built from: the Router never renumbers them (a backend that cannot be
// dialled is skipped in its keys' order, not removed), but a new list
// that removes a backend other than the last, or reorders them, moves
// most keys. Give it only with a list you keep in a stable order.
func WithReshuffle() Option {
	return func(r *Router) error { r.reshuffle = true; return nil }
}

// New returns a Router keyed by key over p, any chash placer or a
// *chash.Holder (whose swaps it follows on the next request; while it is
// empty, every request fails with ErrNoRoute). Every node
// ID must name a backend as the package documents. A positional placer
// (jump, jumpback, binomial, flip) is refused with chash.ErrInvalidOption
// unless WithReshuffle is given; New checks the placer it is given (a
// Holder's current one), not the ones a Holder is given later. A stateful
// placer (memento, anchor, dx, jumpbackanchor, choosek:
// chash.Algorithm.Stateful) has jump's memory and speed and can lose any
// backend moving only its keys, provided each placer the Holder is given
// is derived from the last (chash.Derive), or built from the engine state
// the fleet shares, rather than built afresh from a list.
func New(key Key, p chash.Placer, opts ...Option) (*Router, error) {
	if key == nil {
		return nil, fmt.Errorf("%w: chashhttp.New: nil Key", chash.ErrInvalidOption)
	}
	if p == nil || reflect.ValueOf(p).Kind() == reflect.Pointer && reflect.ValueOf(p).IsNil() {
		return nil, fmt.Errorf("%w: chashhttp.New: nil placer", chash.ErrNilPlacer)
	}
	r := &Router{key: key, src: p, attempts: 3, cooldown: 2 * time.Second, down: map[string]time.Time{}}
	for _, o := range opts {
		if err := o(r); err != nil {
			return nil, err
		}
	}
	all := current(p)
	if all == nil || all.Len() == 0 {
		return nil, fmt.Errorf("%w: chashhttp.New", chash.ErrNoNodes)
	}
	if !r.reshuffle && chash.IsPositional(p) {
		return nil, fmt.Errorf("%w: chashhttp.New: %T numbers the backends by position: removing one but the last, or a new order, moves most keys; "+
			"use a rendezvous, maglev, ring or bounded placer, or a memento, anchor, dx, jumpbackanchor or choosek placer derived with chash.Derive at each change "+
			"(either lets any backend leave moving only its keys), or pass WithReshuffle to accept that", chash.ErrInvalidOption, all)
	}
	for _, n := range all.Nodes() {
		if _, err := r.target(n.ID); err != nil {
			return nil, err
		}
	}
	if r.c != 0 {
		b, err := balance.New(all, balance.WithLoadFactor(r.c))
		if err != nil {
			return nil, err
		}
		r.bal = b
	}
	r.mu.Lock()
	r.rebuildLocked(all, time.Now())
	r.mu.Unlock()
	return r, nil
}

// current is the placer p stands for now: a Holder's current one, or
// noBackends while the Holder is empty.
func current(p chash.Placer) chash.Placer {
	if h, ok := p.(*chash.Holder); ok {
		if q := h.Load(); q != nil {
			return q
		}
		return noBackends
	}
	return p
}

// noBackends is the placer of an emptied Holder: it has no node, so
// every request fails with ErrNoRoute until the Holder is given one.
var noBackends chash.Placer = new(chash.Holder)

// target parses a backend ID into the URL requests to it are sent to.
func (r *Router) target(id string) (*url.URL, error) {
	if u, ok := r.urls.Load(id); ok {
		return u.(*url.URL), nil
	}
	raw := id
	if !strings.Contains(id, "://") {
		raw = "http://" + id
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		return nil, fmt.Errorf("%w: chashhttp: node ID %q is not host:port or scheme://host[:port]", chash.ErrInvalidOption, id)
	}
	u.Path = ""
	r.urls.Store(id, u)
	return u, nil
}

type routeKey struct{}

// route is what Rewrite leaves for the Transport.
type route struct{ key string }

// Rewrite is the ReverseProxy's Rewrite (or a step of it): it records the
// request's key and points the outbound URL at the key's first choice;
// the Transport makes the final choice. A request without a key is keyed
// by its client's IP address. Compose it to add headers, for example
//
//	Rewrite: func(pr *httputil.ProxyRequest) { router.Rewrite(pr); pr.SetXForwarded() }
//
// ReverseProxy forwards the path as the client wrote it
// (URL.EscapedPath()), dot segments and encoded slashes included, and
// backends read such paths differently: one that cleans its path serves
// "/tenants/a/../b/x" and "/tenants/a%2F..%2Fb/x" for tenant b, one that
// matches escaped segments serves the second for tenant "a/../b". So
// when the request's path is not clean (dot segments, repeated slashes,
// an encoded slash) and the key reads the path (as PathPrefix does), the
// key is taken from the cleaned, decoded path and that path is what is
// forwarded, keeping a trailing slash: the backend that owns the key
// receives the path it was keyed by. Requests whose key does not read
// the path (Header, Cookie, Query) are forwarded unchanged.
func (r *Router) Rewrite(pr *httputil.ProxyRequest) {
	k, ok := r.key(pr.In)
	clean, fix := "", false
	if c, changed := cleanPath(pr.In.URL); changed {
		// Does the key read the path? Compare it on the clean path and on
		// the root.
		kc, okc := r.key(withPath(pr.In, c))
		k0, ok0 := r.key(withPath(pr.In, "/"))
		if kc != k0 || okc != ok0 {
			k, ok, clean, fix = kc, okc, c, true
		}
	}
	if !ok {
		k, _, _ = net.SplitHostPort(pr.In.RemoteAddr)
	}
	if u, err := r.target(r.view().live.LookupString(k).ID); err == nil {
		pr.SetURL(u)
	}
	if fix {
		pr.Out.URL.Path, pr.Out.URL.RawPath = clean, ""
	}
	pr.Out = pr.Out.WithContext(context.WithValue(pr.Out.Context(), routeKey{}, &route{key: k}))
}

// withPath returns a shallow copy of req whose URL has path p.
func withPath(req *http.Request, p string) *http.Request {
	c := *req
	u := *req.URL
	u.Path, u.RawPath = p, ""
	c.URL = &u
	return &c
}

// ReverseProxy returns a ReverseProxy routed by r over base (nil means
// http.DefaultTransport) that also sets the X-Forwarded headers.
func (r *Router) ReverseProxy(base http.RoundTripper) *httputil.ReverseProxy {
	return &httputil.ReverseProxy{
		Rewrite:   func(pr *httputil.ProxyRequest) { r.Rewrite(pr); pr.SetXForwarded() },
		Transport: r.Transport(base),
	}
}

// InFlight returns the requests holding a lease (0 without a load factor).
func (r *Router) InFlight() int64 {
	if r.bal == nil {
		return 0
	}
	return r.bal.InFlight()
}

// Load returns the leases held on backend id (0 without a load factor).
func (r *Router) Load(id string) int64 {
	if r.bal == nil {
		return 0
	}
	return r.bal.Load(id)
}
