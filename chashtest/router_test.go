package chashtest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/keyplace/chash"
)

// fakeRouter is an in-process router for the router contract's own
// tests: it places keys by rendezvous over its membership, refuses a
// membership of more than fakeSlots backends (as a Maglev table too small
// for them would), bounds load with a load factor, and counts what each
// of its pretend backends runs. Its modes break one rule each, for the
// contract to catch.
type fakeRouter struct {
	mode routerMode
	c    float64

	mu      sync.Mutex
	placer  chash.Placer   // nil with no backend
	leases  map[string]int // what the router counts on each backend
	running map[string]int // what each backend runs
	epoch   map[string]int // disruptions of each backend
	stop    chan struct{}  // ends a hung Route
}

type routerMode int

const (
	routerGood        routerMode = iota
	failsAfterRefusal            // a refused membership leaves it placing nothing
	movesAfterRefusal            // a refused membership is placed by another placer
	silentRefusal                // Set does not report a refused membership
	stuck                        // a membership it can place is ignored
	servesEmpty                  // with no backend, it keeps the last ones
	hangsEmpty                   // with no backend, Route blocks
	panicsEmpty                  // with no backend, Route panics
	forgetsOnDisrupt             // a disruption resets the backend's count
	leaksOnDisrupt               // a request that outlives a disruption keeps its lease
	releasesTwice                // a request that outlives a disruption releases twice
)

// fakeSlots is how many backends a fakeRouter can place.
const fakeSlots = 4

var errRefused = errors.New("fake: more backends than slots")

func newFakeRouter(t *testing.T, m routerMode, c float64) *fakeRouter {
	f := &fakeRouter{mode: m, c: c, leases: map[string]int{}, running: map[string]int{}, epoch: map[string]int{}, stop: make(chan struct{})}
	t.Cleanup(func() { close(f.stop) })
	return f
}

func (f *fakeRouter) Set(nodes []chash.Node) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case len(nodes) == 0:
		if f.mode != servesEmpty {
			f.placer = nil
		}
		return chash.ErrNoNodes
	case len(nodes) > fakeSlots:
		switch f.mode {
		case failsAfterRefusal:
			f.placer = nil
		case movesAfterRefusal:
			f.placer, _ = chash.NewRendezvous(nodes, chash.WithHasher(chash.XXHashSeed(7)))
		case silentRefusal:
			return nil
		}
		return fmt.Errorf("%d backends: %w", len(nodes), errRefused)
	case f.mode == stuck && f.placer != nil:
		return nil
	}
	p, err := chash.NewRendezvous(nodes)
	if err == nil {
		f.placer = p
	}
	return err
}

// acquire picks key's backend, within the load bound, and counts a lease
// on it.
func (f *fakeRouter) acquire(key string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.placer == nil {
		switch f.mode {
		case hangsEmpty:
			f.mu.Unlock()
			<-f.stop
			f.mu.Lock()
		case panicsEmpty:
			panic("fake: no placer")
		}
		return "", chash.ErrNoNodes
	}
	total := 0
	for _, v := range f.leases {
		total += v
	}
	for _, n := range f.placer.AppendTopKString(nil, key, f.placer.Len()) {
		if f.c == 0 || f.leases[n.ID]+1 <= bound(f.c, total+1, f.placer.Len()) {
			f.leases[n.ID]++
			return n.ID, nil
		}
	}
	return "", errors.New("fake: every backend is full")
}

func (f *fakeRouter) Route(key string) (string, error) {
	b, err := f.acquire(key)
	if err == nil {
		f.mu.Lock()
		f.leases[b]--
		f.mu.Unlock()
	}
	return b, err
}

func (f *fakeRouter) Hold(key string) (func(), error) {
	b, err := f.acquire(key)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.running[b]++
	epoch := f.epoch[b]
	var once sync.Once
	return func() {
		once.Do(func() {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.running[b]--
			switch outlived := f.epoch[b] != epoch; {
			case !outlived:
				f.leases[b]--
			case f.mode == releasesTwice:
				f.leases[b] -= 2
			case f.mode == routerGood:
				f.leases[b]--
			}
		})
	}, nil
}

func (f *fakeRouter) Disrupt(b string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.epoch[b]++
	if f.mode == forgetsOnDisrupt {
		f.leases[b] = 0
	}
}

func (f *fakeRouter) InFlight() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string]int, len(f.running))
	for id, v := range f.running {
		out[id] = v
	}
	return out
}

// fakeSpec is the Router of a fakeRouter in mode m.
func fakeSpec(t *testing.T, m routerMode) Router {
	f := newFakeRouter(t, m, 1.25)
	return Router{
		Backends:    Nodes(fakeSlots + 1),
		Set:         f.Set,
		Route:       f.Route,
		Unplaceable: func(b []chash.Node) []chash.Node { return b },
		LoadFactor:  f.c,
		Hold:        f.Hold,
		InFlight:    f.InFlight,
		Disrupt:     f.Disrupt,
		Timeout:     300 * time.Millisecond,
	}
}

// The fake router keeps the whole contract.
func TestContractFakeRouter(t *testing.T) { TestRouter(t, fakeSpec(t, routerGood)) }

// runRouterCase runs the named case of the router contract on r with a
// recorder.
func runRouterCase(t *testing.T, name string, r Router) *recorder {
	t.Helper()
	rec := &recorder{TB: t}
	i := slices.IndexFunc(routerCases, func(c struct {
		name string
		run  func(testing.TB, *Router)
	}) bool {
		return c.name == name
	})
	if i < 0 {
		t.Fatalf("no case %q", name)
	}
	r = r.withDefaults()
	func() {
		defer func() {
			if v := recover(); v != nil {
				if _, ok := v.(stop); !ok {
					panic(v)
				}
			}
		}()
		routerCases[i].run(rec, &r)
	}()
	return rec
}

// Each broken router fails the case it breaks, with a message that says
// how.
func TestRouterCatches(t *testing.T) {
	for _, c := range []struct {
		name, label string // the case, and the breakage
		mode        routerMode
		want        string
	}{
		{"KeepsServing", "failsAfterRefusal", failsAfterRefusal, "requests failed on healthy backends"},
		{"KeepsServing", "movesAfterRefusal", movesAfterRefusal, "keys moved after a refused membership"},
		{"KeepsServing", "silentRefusal", silentRefusal, "reported no error"},
		{"KeepsServing", "stuck", stuck, "outside the membership"},
		{"OnlyEmptyFails", "servesEmpty", servesEmpty, "want an error"},
		{"OnlyEmptyFails", "hangsEmpty", hangsEmpty, "did not return within"},
		{"OnlyEmptyFails", "panicsEmpty", panicsEmpty, "panicked: fake: no placer"},
		{"Lease", "forgetsOnDisrupt", forgetsOnDisrupt, "more than ⌈c·T/n⌉"},
		{"Lease", "leaksOnDisrupt", leaksOnDisrupt, "not by its backend"},
		{"Lease", "releasesTwice", releasesTwice, "released twice"},
	} {
		t.Run(c.label, func(t *testing.T) {
			failedWith(t, c.name, runRouterCase(t, c.name, fakeSpec(t, c.mode)), c.want)
		})
	}
}

// Without Hold the Lease case is skipped; a Router TestRouter cannot run
// is refused with a reason.
func TestRouterSpecChecked(t *testing.T) {
	r := fakeSpec(t, routerGood)
	r.Hold = nil
	if rec := runRouterCase(t, "Lease", r); rec.failed {
		t.Errorf("Lease without Hold failed: %q", rec.log)
	}
	for name, broken := range map[string]func(*Router){
		"no Set":           func(r *Router) { r.Set = nil },
		"no Route":         func(r *Router) { r.Route = nil },
		"two backends":     func(r *Router) { r.Backends = r.Backends[:2] },
		"repeated backend": func(r *Router) { r.Backends[1] = r.Backends[0] },
		"Hold, no factor":  func(r *Router) { r.LoadFactor = 0 },
		"Hold, no count":   func(r *Router) { r.InFlight = nil },
		"three held":       func(r *Router) { r.Held = 3 },
	} {
		r := fakeSpec(t, routerGood)
		broken(&r)
		if err := r.check(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
