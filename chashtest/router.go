package chashtest

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/internal/measure"
)

// Router describes a request router under test for [TestRouter]: an
// adapter that sends each request to the backend a placer chooses for its
// key (a gRPC balancer, an HTTP reverse proxy, a proxy's selection
// policy), running in front of real backends. Backends, Set and Route
// are required; the lease fields (Hold, InFlight, LoadFactor) are set
// together, for a router that bounds each backend's load, or left zero.
//
// The functions are called from the test's goroutine, one at a time,
// except that a call TestRouter gives up on (after Timeout) may still be
// running when the next begins.
type Router struct {
	// Backends are the healthy backends the test runs, at least 3 of
	// equal weight, as nodes whose IDs are what Route reports. The cases
	// make memberships of them, each of which the router must be able to
	// place: all but the last (the membership each case serves from), all
	// but the last two, and none. All of them together need not be
	// placeable: Unplaceable may use the last.
	Backends []chash.Node

	// Set makes backends the router's membership, as its membership
	// source would (a resolver update, a new upstream list, a placer
	// stored in a Holder), and returns the error the router reports for
	// it: nil when it placed them. It may wait for the router to connect
	// to them. Set(nil) leaves the router no backend.
	Set func(backends []chash.Node) error

	// Route sends one request for key through the router to a backend
	// and returns the ID of the backend that served it, or the error the
	// request failed with. It should give up on its own (a deadline, the
	// proxy's try duration) well within Timeout.
	Route func(key string) (backend string, err error)

	// Unplaceable, when set, returns a membership of the given backends
	// (the same IDs, possibly other weights, possibly not all of them)
	// that the router's configured placer refuses: a Maglev table smaller
	// than the backends, a ring past its point limit. Nil skips the
	// refused-membership steps of KeepsServing.
	Unplaceable func(backends []chash.Node) []chash.Node

	// LoadFactor is the router's bounded-load factor c (> 1): while T
	// requests are in flight, no backend may run more than ⌈c·T/n⌉ of
	// them, n the number of backends in the membership (all Backends but
	// the last). Used only with Hold.
	LoadFactor float64

	// Hold sends one request for key that the backend keeps open until
	// release is called, and returns as soon as the request is sent (the
	// case waits until a backend runs it). release ends the request, by
	// the client giving up or the backend answering, and may return
	// before the router has seen it end. Nil skips the Lease case.
	Hold func(key string) (release func(), err error)

	// InFlight returns how many requests each backend runs now, by
	// Backends' IDs, counted at the backends themselves, not by the
	// router. A missing ID means 0. Required with Hold.
	InFlight func() map[string]int

	// Disrupt, when set, breaks what the router holds for one backend
	// while requests still run on it: it cuts the router's connections to
	// it (a server's GOAWAY after MaxConnectionAge), or makes its next
	// dial fail. The backend itself keeps running and stays healthy.
	Disrupt func(backend string)

	// Keys is how many keys each sweep of KeepsServing and OnlyEmptyFails
	// routes. Zero means 200.
	Keys int
	// Held is T, how many requests of one key the Lease case holds open
	// at once, at least 4. Zero means 40.
	Held int
	// Timeout bounds each call of Route, Set, Hold and Disrupt, the wait
	// for a backend to run a held request or for the requests to end, and
	// the time a router may take to follow a membership. Zero means 10 s.
	Timeout time.Duration
}

// routerCases are the router contract's cases, in the order TestRouter
// runs them. Each takes a testing.TB so that the package's own tests can
// run it with a recorder and see it fail.
var routerCases = []struct {
	name string
	run  func(t testing.TB, r *Router)
}{
	{"KeepsServing", keepsServing},
	{"OnlyEmptyFails", onlyEmptyFails},
	{"Lease", lease},
}

// TestRouter checks a request router against the rules every router of
// the chash module keeps, running each as a named subtest against the
// real backends r describes. Every router adapter of the module runs it
// (in a test named TestContractRouter), and a router written outside the
// module can run it the same way:
//
//	func TestContractRouter(t *testing.T) {
//		bs := startBackends(t, 5)     // real servers, counting their requests
//		router := newRouter(t, bs)    // the router under test, in front of them
//		chashtest.TestRouter(t, chashtest.Router{
//			Backends: nodes(bs),
//			Set:      router.setMembers, // e.g. a resolver update
//			Route:    router.send,       // one real request; who answered
//		})
//	}
//
// The cases:
//
//   - KeepsServing: with a membership the router can place, every key is
//     served, each by a member. A membership the placer refuses
//     (Unplaceable) is reported (Set returns an error) and keeps the last
//     good placement serving: not one request fails and not one key
//     moves. The next membership it can place is followed (within
//     Timeout, no request failing meanwhile): the backend it drops serves
//     no key.
//   - OnlyEmptyFails: a router that served, left with no backend, fails
//     a request with an error, within Timeout and without a panic; given
//     backends again, it serves every key.
//   - Lease (with Hold): Held requests of one key are held open, the
//     key's backend disrupted (Disrupt) halfway. After every request no
//     backend runs more than ⌈c·T/n⌉ of the T in flight: the requests a
//     disrupted backend still runs keep counting against it. When all
//     end, every backend runs 0, the key comes back to its backend, and
//     the router admits a second round of held requests exactly as it
//     admitted the first: a lease leaked, or released twice, would shift
//     them.
//
// Rule 1 of a router also asks that a configuration be validated for what
// it is, at a bounded cost; that is the adapter's own test, since
// configurations differ.
func TestRouter(t *testing.T, r Router) {
	t.Helper()
	if err := r.check(); err != nil {
		t.Fatal(err)
	}
	r = r.withDefaults()
	for _, c := range routerCases {
		t.Run(c.name, func(t *testing.T) { c.run(t, &r) })
	}
}

// check reports a Router that TestRouter cannot run.
func (r *Router) check() error {
	switch {
	case r.Set == nil || r.Route == nil:
		return fmt.Errorf("chashtest: Router.Set and Router.Route are required")
	case len(r.Backends) < 3:
		return fmt.Errorf("chashtest: Router.Backends has %d backends, want at least 3", len(r.Backends))
	case r.Hold != nil && (r.InFlight == nil || !(r.LoadFactor > 1)):
		return fmt.Errorf("chashtest: Router.Hold needs InFlight and a LoadFactor > 1 (have %v)", r.LoadFactor)
	case r.Held != 0 && r.Held < 4:
		return fmt.Errorf("chashtest: Router.Held is %d, want at least 4", r.Held)
	}
	if _, err := chash.CheckNodes(r.Backends); err != nil {
		return fmt.Errorf("chashtest: Router.Backends: %w", err)
	}
	return nil
}

func (r Router) withDefaults() Router {
	if r.Keys <= 0 {
		r.Keys = 200
	}
	if r.Held == 0 {
		r.Held = 40
	}
	if r.Timeout <= 0 {
		r.Timeout = 10 * time.Second
	}
	return r
}

// bound is ⌈c·t/n⌉, the most requests of t in flight a backend of n may
// run, computed so that an exact quotient is not rounded up by a
// floating-point error.
func bound(c float64, t, n int) int {
	return int(math.Ceil(c*float64(t)/float64(n) - 1e-9))
}

// result is what a call the case bounded by a timeout returned.
type result struct {
	backend string
	err     error
	panic   any
	timeout bool
}

// call runs f in its own goroutine and waits for it at most d, recovering
// a panic, so that a router that hangs or panics fails the case instead
// of the test binary.
func call(d time.Duration, f func() (string, error)) result {
	ch := make(chan result, 1)
	go func() {
		var res result
		defer func() {
			if v := recover(); v != nil {
				res.panic = v
			}
			ch <- res
		}()
		res.backend, res.err = f()
	}()
	select {
	case res := <-ch:
		return res
	case <-time.After(d):
		return result{timeout: true}
	}
}

// describe says how a call went wrong, or returns "" if it returned.
func (res result) describe(d time.Duration) string {
	switch {
	case res.timeout:
		return fmt.Sprintf("did not return within %v", d)
	case res.panic != nil:
		return fmt.Sprintf("panicked: %v", res.panic)
	}
	return ""
}

// route calls Route(key) bounded by the timeout, failing the test on a
// hang or a panic.
func (r *Router) route(t testing.TB, key string) (string, error) {
	t.Helper()
	res := call(r.Timeout, func() (string, error) { return r.Route(key) })
	if s := res.describe(r.Timeout); s != "" {
		t.Fatalf("Route(%q) %s", key, s)
	}
	return res.backend, res.err
}

// set calls Set(backends) bounded by the timeout, failing the test on a
// hang or a panic.
func (r *Router) set(t testing.TB, backends []chash.Node) error {
	t.Helper()
	res := call(r.Timeout, func() (string, error) { return "", r.Set(slices.Clone(backends)) })
	if s := res.describe(r.Timeout); s != "" {
		t.Fatalf("Set(%d backends) %s", len(backends), s)
	}
	return res.err
}

// sweep routes each key once and returns the backend that served each,
// how many requests failed and the first error.
func (r *Router) sweep(t testing.TB, keys []string) (map[string]string, int, error) {
	t.Helper()
	got := make(map[string]string, len(keys))
	failed := 0
	var first error
	for _, k := range keys {
		b, err := r.route(t, k)
		if err != nil {
			failed++
			if first == nil {
				first = err
			}
			continue
		}
		got[k] = b
	}
	return got, failed, first
}

// follow waits, within the timeout, for the router to serve every key
// from members, failing the test if a request fails meanwhile or if it
// does not; it returns who served each key.
func (r *Router) follow(t testing.TB, keys []string, members []chash.Node) map[string]string {
	t.Helper()
	in := make(map[string]bool, len(members))
	for _, n := range members {
		in[n.ID] = true
	}
	deadline := time.Now().Add(r.Timeout)
	for {
		got, failed, err := r.sweep(t, keys)
		if failed > 0 {
			t.Fatalf("%d of %d requests failed on %d healthy backends (first error: %v)", failed, len(keys), len(members), err)
		}
		var outside []string
		for _, k := range keys {
			if !in[got[k]] {
				outside = append(outside, fmt.Sprintf("%s by %q", k, got[k]))
			}
		}
		if len(outside) == 0 {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v, %d of %d keys are served by backends outside the membership %q, such as %s",
				r.Timeout, len(outside), len(keys), measure.IDs(members), outside[0])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// keepsServing: a placeable membership is served, an unplaceable one is
// reported and keeps the last good placement serving, and the next
// placeable one is followed.
func keepsServing(t testing.TB, r *Router) {
	n := len(r.Backends)
	keys := Keys(r.Keys)
	first, later := r.members(), r.Backends[:n-2]
	if err := r.set(t, first); err != nil {
		t.Fatalf("Set(%q): %v, want a placement", measure.IDs(first), err)
	}
	good := r.follow(t, keys, first)
	if r.Unplaceable != nil {
		bad := r.Unplaceable(slices.Clone(r.Backends))
		for _, b := range bad {
			if !slices.Contains(measure.IDs(r.Backends), b.ID) {
				t.Fatalf("Unplaceable returned %q, which is not one of the Backends", b.ID)
			}
		}
		if err := r.set(t, bad); err == nil {
			t.Errorf("Set(%d backends the placer refuses) reported no error", len(bad))
		} else {
			t.Logf("refused membership reported: %v", err)
		}
		got, failed, err := r.sweep(t, keys)
		if failed > 0 {
			t.Errorf("after a refused membership, %d of %d requests failed on healthy backends (first error: %v)", failed, len(keys), err)
		}
		moved := 0
		for _, k := range keys {
			if b, ok := got[k]; ok && b != good[k] {
				if moved == 0 {
					t.Errorf("after a refused membership, key %s is served by %q, not %q as by the last good placement", k, b, good[k])
				}
				moved++
			}
		}
		if moved > 0 {
			t.Errorf("%d of %d keys moved after a refused membership", moved, len(keys))
		}
	}
	if err := r.set(t, later); err != nil {
		t.Fatalf("Set(%q): %v, want a placement", measure.IDs(later), err)
	}
	r.follow(t, keys, later)
	dropped := r.Backends[n-2].ID
	had := 0
	for _, b := range good {
		if b == dropped {
			had++
		}
	}
	t.Logf("%d keys: %d served by %q, which the last membership drops", len(keys), had, dropped)
}

// onlyEmptyFails: with no backend, requests fail promptly with an error;
// given its backends again, the router serves every key.
func onlyEmptyFails(t testing.TB, r *Router) {
	members, keys := r.members(), Keys(r.Keys)
	if err := r.set(t, members); err != nil {
		t.Fatalf("Set(%q): %v, want a placement", measure.IDs(members), err)
	}
	r.follow(t, keys, members)
	err := r.set(t, nil)
	t.Logf("Set(no backends): %v", err)
	// One request: a proxy may retry for its try duration before it fails.
	k := Keys(1)[0]
	if b, err := r.route(t, k); err == nil {
		t.Errorf("Route(%q) with no backend: served by %q, want an error", k, b)
	} else {
		t.Logf("Route(%q) with no backend: %v", k, err)
	}
	if err := r.set(t, members); err != nil {
		t.Fatalf("Set(%q): %v, want a placement", measure.IDs(members), err)
	}
	r.follow(t, keys, members)
}

// members is the membership the cases serve from: all Backends but the
// last.
func (r *Router) members() []chash.Node { return r.Backends[:len(r.Backends)-1] }
