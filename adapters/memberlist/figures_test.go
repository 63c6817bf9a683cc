package memberlist_test

import (
	"fmt"
	"net"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	ml "github.com/hashicorp/memberlist"
	"github.com/keyplace/chash"
	clml "github.com/keyplace/chash/adapters/memberlist"
	"github.com/keyplace/chash/member"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Figures: propagation from a member's Update (which returns once the
// update is broadcast) to all 3 watchers serving it, each on an observer
// node of its own, in a cluster of 20 members under testConfig, with the
// default 100 ms coalescing window; the probe's weight carries the
// change's number.
func TestFiguresPropagation(t *testing.T) {
	// Probes at memberlist's LAN pace, so that 24 nodes in one process
	// under the race detector raise no false suspicion; gossip as fast as
	// in testConfig, which is what propagation depends on.
	config := func(name string) *ml.Config {
		c := testConfig(name)
		c.ProbeInterval, c.ProbeTimeout = time.Second, 500*time.Millisecond
		return c
	}
	start := func(name string, m *member.Member, seeds ...string) *clml.Node {
		var n *clml.Node
		var err error
		if m == nil {
			n, err = clml.Observe(config(name), seeds)
		} else {
			n, err = clml.Join(config(name), *m, seeds)
		}
		require.NoError(t, err)
		t.Cleanup(func() { n.Shutdown() })
		return n
	}
	anchor := start("anchor", nil)
	for i := range 19 {
		start("", &member.Member{ID: fmt.Sprintf("m%02d", i)}, anchor.Addr())
	}
	probe := start("", &member.Member{ID: "probe", Weight: 1}, anchor.Addr())
	const watchers, changes = 3, 40
	var mu sync.Mutex
	first := make([]map[int]time.Time, watchers)
	for i := range first {
		first[i] = map[int]time.Time{}
		hook := member.WithViewHook(func(v *member.View) {
			now := time.Now()
			j, ok := slices.BinarySearchFunc(v.Members, "probe", func(m member.Member, id string) int { return strings.Compare(m.ID, id) })
			if !ok {
				return
			}
			mu.Lock()
			if _, seen := first[i][int(v.Members[j].Weight)]; !seen {
				first[i][int(v.Members[j].Weight)] = now
			}
			mu.Unlock()
		})
		o := start(fmt.Sprintf("watcher-%d", i), nil, anchor.Addr())
		w, err := o.Watch(ctxT(t, 10*time.Second), rendezvous, hook)
		require.NoError(t, err)
		t.Cleanup(func() { w.Close() })
		require.Eventually(t, func() bool { return w.Len() == 20 }, 10*time.Second, 5*time.Millisecond)
	}
	sent := map[int]time.Time{}
	for i := 2; i < changes+2; i++ {
		require.NoError(t, probe.Update(member.Member{ID: "probe", Weight: float64(i)}, time.Second))
		sent[i] = time.Now()
		time.Sleep(150 * time.Millisecond)
	}
	time.Sleep(time.Second)
	mu.Lock()
	var lat []time.Duration
	for i, at := range sent {
		worst := time.Duration(0)
		for _, f := range first {
			best := time.Hour
			for seq, when := range f {
				if seq >= i {
					best = min(best, when.Sub(at))
				}
			}
			worst = max(worst, best)
		}
		lat = append(lat, worst)
	}
	mu.Unlock()
	slices.Sort(lat)
	p50, p99 := lat[len(lat)/2], lat[len(lat)*99/100]
	t.Logf("FIGURE memberlist propagation, Update to all %d watchers serving it, 20 members, %d changes, gossip every %v, coalesce 100ms: p50 %v, p99 %v",
		watchers, changes, gossipEvery, p50.Round(time.Millisecond), p99.Round(time.Millisecond))
	assert.Less(t, p99, time.Second, "within a few gossip intervals, a window and a margin")
}

func inUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc + m.StackInuse
}

// Figures: a watcher's memory at 1,000 members, and the Maglev builds a
// burst of 1,000 changes causes (a new weight on each member, as fast as
// the events come). 2 cores do not run a cluster of 1,000 memberlist
// nodes (past about 700 in one process, joins time out and probes fail
// into storms of suspicion), so the members come through the node's event
// delegate, as memberlist hands them over, without a network: the figures
// are the source's and the watcher's own.
func TestFiguresThousand(t *testing.T) {
	n := clml.Detached(probeInterval)
	events := clml.Events(n)
	meta := func(i int, w float64) []byte {
		b, _ := member.EncodeJSON(member.Member{ID: fmt.Sprintf("m%04d", i), Weight: w, Zone: fmt.Sprintf("z%d", i%3),
			Addr: fmt.Sprintf("10.0.%d.%d:11211", i/256, i%256)})
		return b
	}
	for i := range 1000 {
		events.NotifyJoin(&ml.Node{Name: fmt.Sprintf("m%04d", i), Addr: net.IPv4(10, 0, byte(i/256), byte(i%256)), Port: 7946, Meta: meta(i, 1)})
	}
	var reported errs
	for _, c := range []struct {
		name  string
		build member.Builder
	}{{"warm-up", rendezvous}, {"rendezvous", rendezvous}, {"Maglev, table 65537", func(n []chash.Node) (chash.Placer, error) { return chash.NewMaglev(n) }}} {
		before := inUse()
		w, err := member.Follow(ctxT(t, 30*time.Second), n.Source(), c.build, member.WithErrorHook(reported.hook), member.WithSilence(time.Minute))
		require.NoError(t, err)
		grown := int64(inUse()) - int64(before)
		require.Equal(t, 1000, w.Len())
		if c.name != "warm-up" {
			t.Logf("FIGURE memberlist watcher memory (heap and stacks) at 1,000 members (%s): %d KiB", c.name, grown/1024)
		}
		if c.name != "Maglev, table 65537" {
			w.Close()
			continue
		}
		builds := w.Builds()
		start := time.Now()
		for i := range 1000 {
			events.NotifyUpdate(&ml.Node{Name: fmt.Sprintf("m%04d", i), Addr: net.IPv4(10, 0, byte(i/256), byte(i%256)), Port: 7946, Meta: meta(i, 2)})
			if i%10 == 9 {
				time.Sleep(2 * time.Millisecond) // 1,000 events over about 0.2 s and more
			}
		}
		burst := time.Since(start)
		require.Eventually(t, func() bool { v := w.View(); return v.Members[999].Weight == 2 }, 10*time.Second, 5*time.Millisecond)
		rebuilt := w.Builds() - builds
		t.Logf("FIGURE memberlist a burst of 1,000 update events (over %v) caused %d builds of the 1,000-node Maglev (window 100ms)",
			burst.Round(time.Millisecond), rebuilt)
		assert.LessOrEqual(t, rebuilt, int64(burst/member.DefaultCoalesce)+3, "at most one build a window")
		w.Close()
	}
}
