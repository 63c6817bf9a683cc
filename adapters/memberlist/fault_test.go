package memberlist_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// converged waits until every node of nodes serves a view of exactly the
// members ids, all with one fingerprint, and returns that fingerprint and
// how long after t0 the last of them first served such a view.
func converged(t *testing.T, nodes []*child, ids []string, t0 time.Time, within time.Duration) (string, time.Duration) {
	t.Helper()
	exactly := func(v view) bool {
		if len(v.members) != len(ids) {
			return false
		}
		for _, id := range ids {
			if !v.has(id) {
				return false
			}
		}
		return true
	}
	deadline := time.Now().Add(within)
	for {
		fps := map[string]bool{}
		all := true
		for _, c := range nodes {
			v, ok := c.last()
			all = all && ok && exactly(v)
			fps[v.fingerprint] = true
		}
		if all && len(fps) == 1 {
			break
		}
		if time.Now().After(deadline) {
			var b strings.Builder
			for _, c := range nodes {
				v, _ := c.last()
				fmt.Fprintf(&b, "\n\t%s: version %d %s %v", c.id, v.version, v.fingerprint, v.members)
			}
			t.Fatalf("the nodes did not converge on %v within %v:%s", ids, within, b.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	fp, _ := nodes[0].last()
	var took time.Duration
	for _, c := range nodes {
		at, _ := c.firstSince(t0, exactly)
		took = max(took, at.Sub(t0))
	}
	return fp.fingerprint, took
}

// Five node processes on loopback join one cluster, each watching it with
// the spec the first publishes. One leaves cleanly, one is SIGKILLed:
// every survivor converges on one fingerprint, within 1 s of the leave
// and within memberlist's failure detection of the crash. Both come back
// at new addresses under their IDs, and the fleet's placement is again
// the one it had with them: no key moves.
func TestFleet(t *testing.T) {
	const spec = "maglev table-size=1009"
	ids := []string{"node-0", "node-1", "node-2", "node-3", "node-4"}
	weight := func(i int) float64 { return float64(1 + i%2) }
	t0 := time.Now()
	nodes := []*child{startChild(t, ids[0], weight(0), nil, spec)}
	seed := []string{nodes[0].addr}
	for i := 1; i < len(ids); i++ {
		nodes = append(nodes, startChild(t, ids[i], weight(i), seed, ""))
	}
	all, took := converged(t, nodes, ids, t0, 10*time.Second)
	t.Logf("FIGURE memberlist: 5 processes started and converged on one fingerprint in %v", took.Round(time.Millisecond))

	t0 = time.Now()
	nodes[4].leave()
	four, left := converged(t, nodes[:4], ids[:4], t0, 5*time.Second)
	t.Logf("FIGURE memberlist: convergence of the 4 survivors after a clean leave: %v", left.Round(time.Millisecond))
	assert.Less(t, left, time.Second, "a clean leave converges within 1 s")
	assert.NotEqual(t, all, four)

	oldAddr := nodes[3].addr
	t0 = time.Now()
	nodes[3].crash()
	bound := crashBound(4)
	_, crashed := converged(t, nodes[:3], ids[:3], t0, bound+5*time.Second)
	t.Logf("FIGURE memberlist: convergence of the 3 survivors after a SIGKILL: %v (memberlist's detection bound for this config: %v)",
		crashed.Round(time.Millisecond), bound.Round(time.Millisecond))
	assert.Less(t, crashed, bound, "a crash converges within the failure detection time")

	// node-3 comes back at a new address: same ID, same keys.
	nodes[3] = startChild(t, ids[3], weight(3), seed, "")
	require.NotEqual(t, oldAddr, nodes[3].addr)
	got, _ := converged(t, nodes[:4], ids[:4], time.Now(), 10*time.Second)
	assert.Equal(t, four, got, "node-3 back at a new address: the placement of the 4 before the crash")
	v, _ := nodes[0].last()
	assert.True(t, slices.Contains(v.members, ids[3]+"@"+nodes[3].addr), "the view holds node-3's new address: %v", v.members)

	// node-4 comes back after its leave: the placement of all 5 again.
	nodes[4] = startChild(t, ids[4], weight(4), seed, "")
	got, _ = converged(t, nodes, ids, time.Now(), 10*time.Second)
	assert.Equal(t, all, got, "both back: the placement of the 5 at the start")
}
