package chashhttp

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/balance"
)

// Transport returns the RoundTripper that sends each request Rewrite
// routed to its backend over base (nil means http.DefaultTransport).
// Requests Rewrite did not see pass through to base unchanged.
//
// When dialling a backend fails, the backend is left out for the
// cooldown and the request tries its key's next choice, up to the
// configured attempts; a request with a body is retried only if it has
// GetBody. With a load factor the request holds a lease from the
// balancer, released when the response body is closed or the round trip
// fails.
func (r *Router) Transport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &transport{r: r, base: base}
}

type transport struct {
	r    *Router
	base http.RoundTripper
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	rt, ok := req.Context().Value(routeKey{}).(*route)
	if !ok {
		return t.base.RoundTrip(req)
	}
	var last error
	for attempt := range t.r.attempts {
		if attempt > 0 && !rewindable(req) {
			break
		}
		n, lease, err := t.r.pick(rt.key)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrNoRoute, err)
		}
		resp, err := t.send(req, attempt, n)
		if err == nil {
			resp.Body = leased(resp.Body, t.r, lease)
			return resp, nil
		}
		t.r.release(lease)
		if last = err; !isDial(err) {
			return nil, err
		}
		t.r.markDown(n.ID)
	}
	return nil, fmt.Errorf("%w: %w", ErrNoRoute, last)
}

// pick chooses the backend for key, with a lease when load is bounded.
func (r *Router) pick(key string) (chash.Node, balance.Lease, error) {
	v := r.view()
	if v.all.Len() == 0 {
		return chash.Node{}, balance.Lease{}, chash.ErrNoNodes
	}
	if r.bal == nil {
		return v.live.LookupString(key), balance.Lease{}, nil
	}
	l, err := r.bal.AcquireString(key)
	return l.Node(), l, err
}

// send sends a copy of req to backend n; later attempts get a fresh body.
func (t *transport) send(req *http.Request, attempt int, n chash.Node) (*http.Response, error) {
	u, err := t.r.target(n.ID)
	if err != nil {
		return nil, err
	}
	out := new(http.Request)
	*out = *req
	to := *req.URL
	to.Scheme, to.Host = u.Scheme, u.Host
	out.URL = &to
	if attempt > 0 && req.GetBody != nil {
		if out.Body, err = req.GetBody(); err != nil {
			return nil, err
		}
	}
	return t.base.RoundTrip(out)
}

func rewindable(req *http.Request) bool {
	return req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
}

// isDial reports a failure to connect, before anything was sent.
func isDial(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// leased wraps a response body so that closing it releases the lease,
// keeping the io.Writer a 101 Switching Protocols body has.
func leased(body io.ReadCloser, r *Router, l balance.Lease) io.ReadCloser {
	if l == (balance.Lease{}) {
		return body
	}
	if rwc, ok := body.(io.ReadWriteCloser); ok {
		return &leasedRWC{ReadWriteCloser: rwc, r: r, lease: l}
	}
	return &leasedBody{ReadCloser: body, r: r, lease: l}
}

type leasedBody struct {
	io.ReadCloser
	r     *Router
	lease balance.Lease
}

func (b *leasedBody) Close() error {
	defer b.r.release(b.lease)
	return b.ReadCloser.Close()
}

type leasedRWC struct {
	io.ReadWriteCloser
	r     *Router
	lease balance.Lease
}

func (b *leasedRWC) Close() error {
	defer b.r.release(b.lease)
	return b.ReadWriteCloser.Close()
}
