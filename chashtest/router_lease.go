package chashtest

import (
	"testing"
	"time"

	"github.com/keyplace/chash/internal/measure"
)

// hotKey is the one key whose requests the Lease case holds open.
const hotKey = "hot:0:profile"

// holds are the releases of the requests a Lease case holds open.
type holds []func()

// end releases every held request.
func (h *holds) end() {
	for _, release := range *h {
		release()
	}
	*h = nil
}

// lease: held requests of one key keep within the bound across a
// disruption of the key's backend, and every lease comes back exactly
// once: afterwards the router admits the same requests again.
func lease(t testing.TB, r *Router) {
	if r.Hold == nil {
		t.Skip("no Hold: the router does not bound load")
	}
	members := r.members()
	if err := r.set(t, members); err != nil {
		t.Fatalf("Set(%q): %v, want a placement", measure.IDs(members), err)
	}
	r.waitIdle(t)
	owner, err := r.route(t, hotKey)
	if err != nil {
		t.Fatalf("Route(%q): %v", hotKey, err)
	}
	var h holds
	defer h.end()
	half := r.Held / 2
	first := r.holdRound(t, &h, 0, half)
	if first[0] != owner {
		t.Errorf("the first held request of %q went to %q, but its requests go to %q", hotKey, first[0], owner)
	}
	if r.Disrupt != nil {
		res := call(r.Timeout, func() (string, error) { r.Disrupt(owner); return "", nil })
		if s := res.describe(r.Timeout); s != "" {
			t.Fatalf("Disrupt(%q) %s", owner, s)
		}
	}
	r.holdRound(t, &h, half, r.Held)
	h.end()
	r.waitIdle(t)
	r.waitFor(t, owner)
	second := r.holdRound(t, &h, 0, half)
	for i := range second {
		if second[i] != first[i] {
			t.Errorf("with every request of the first round ended, held request %d of %q went to %q where the first round's went to %q: "+
				"the router counts leases the first round leaked or released twice (first round %q, second %q)",
				i+1, hotKey, second[i], first[i], first, second)
			break
		}
	}
	h.end()
	r.waitIdle(t)
}

// holdRound holds requests from+1 to to of the hot key open, one at a
// time, each once a backend runs the last, and returns who runs each. After
// each it checks the bound for the requests then in flight.
func (r *Router) holdRound(t testing.TB, h *holds, from, to int) []string {
	t.Helper()
	n := len(r.members())
	var served []string
	over, peakAll := 0, 0
	for i := from; i < to; i++ {
		before := r.inFlight(t)
		var release func()
		res := call(r.Timeout, func() (string, error) {
			var err error
			release, err = r.Hold(hotKey)
			return "", err
		})
		if s := res.describe(r.Timeout); s != "" {
			t.Fatalf("Hold(%q) %s", hotKey, s)
		}
		if res.err != nil {
			t.Fatalf("held request %d of %q: %v", i+1, hotKey, res.err)
		}
		*h = append(*h, release)
		now := r.waitTotal(t, i+1)
		who := ""
		for id, v := range now {
			if v == before[id]+1 {
				who = id
			}
		}
		served = append(served, who)
		peak := 0
		for _, v := range now {
			peak = max(peak, v)
		}
		peakAll = max(peakAll, peak)
		if b := bound(r.LoadFactor, i+1, n); peak > b {
			if over == 0 {
				t.Errorf("with %d requests in flight on %d backends and c = %v, a backend runs %d, more than ⌈c·T/n⌉ = %d: %v",
					i+1, n, r.LoadFactor, peak, b, now)
			}
			over++
		}
	}
	if over > 1 {
		t.Errorf("%d of requests %d to %d left a backend running more than the bound", over, from+1, to)
	}
	t.Logf("requests %d to %d of %q on %d backends, c = %v: the busiest ran %d (bound at %d requests: %d); served by %q",
		from+1, to, hotKey, n, r.LoadFactor, peakAll, to, bound(r.LoadFactor, to, n), served)
	return served
}

// inFlight returns what each of the Backends runs now, by ID.
func (r *Router) inFlight(t testing.TB) map[string]int {
	t.Helper()
	got := r.InFlight()
	out := make(map[string]int, len(r.Backends))
	for _, b := range r.Backends {
		out[b.ID] = got[b.ID]
	}
	for id := range got {
		if _, ok := out[id]; !ok && got[id] != 0 {
			t.Fatalf("InFlight reports %d requests on %q, which is not one of the Backends", got[id], id)
		}
	}
	return out
}

// waitTotal waits, within the timeout, until the backends run total
// requests in all, and returns what each runs.
func (r *Router) waitTotal(t testing.TB, total int) map[string]int {
	t.Helper()
	deadline := time.Now().Add(r.Timeout)
	for {
		now := r.inFlight(t)
		sum := 0
		for _, v := range now {
			sum += v
		}
		if sum == total {
			return now
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v the backends run %d requests, want %d: %v", r.Timeout, sum, total, now)
		}
		time.Sleep(time.Millisecond)
	}
}

// waitIdle waits, within the timeout, until no backend runs a request.
func (r *Router) waitIdle(t testing.TB) {
	t.Helper()
	r.waitTotal(t, 0)
}

// waitFor routes the hot key until backend serves it, within the timeout:
// the router returns a key to its backend once a disruption is over.
func (r *Router) waitFor(t testing.TB, backend string) {
	t.Helper()
	deadline := time.Now().Add(r.Timeout)
	for {
		got, err := r.route(t, hotKey)
		if err != nil {
			t.Fatalf("Route(%q) after every request ended: %v", hotKey, err)
		}
		if got == backend {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v, %q is still served by %q, not by its backend %q", r.Timeout, hotKey, got, backend)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
