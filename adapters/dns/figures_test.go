package dns_test

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/adapters/dns"
	"github.com/keyplace/chash/member"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// zoneOf returns n SRV targets t0000.. of weight 1, target "probe" of
// weight w, and TXT records with zones.
func zoneOf(n int, probe int) []string {
	rs := make([]string, 0, n+1)
	for i := range n {
		rs = append(rs, fmt.Sprintf("_cache._tcp SRV 10 1 11211 t%04d", i))
	}
	return append(rs, fmt.Sprintf("_cache._tcp SRV 10 %d 11211 probe", probe))
}

// Figures: propagation from a zone reload (knotc returns once the zone is
// loaded) to all 3 watchers serving it, with a 100 ms interval and the
// default 100 ms coalescing window; the probe's SRV weight carries the
// change's number.
func TestFiguresPropagation(t *testing.T) {
	k := newKnot(t)
	require.NoError(t, k.load(zoneOf(19, 1)))
	const watchers, changes = 3, 40
	var mu sync.Mutex
	first := make([]map[int]time.Time, watchers)
	for i := range first {
		first[i] = map[int]time.Time{}
		hook := dns.WithViewHook(func(v *member.View) {
			now := time.Now()
			j, ok := slices.BinarySearchFunc(v.Members, "probe.chash.test:11211", func(m member.Member, id string) int { return strings.Compare(m.ID, id) })
			if !ok {
				return
			}
			mu.Lock()
			if _, seen := first[i][int(v.Members[j].Weight)]; !seen {
				first[i][int(v.Members[j].Weight)] = now
			}
			mu.Unlock()
		})
		var reported errs
		watch(t, query, []string{k.addr}, &reported, dns.WithInterval(100*time.Millisecond), hook)
	}
	sent := map[int]time.Time{}
	for i := 2; i < changes+2; i++ {
		require.NoError(t, k.load(zoneOf(19, i)))
		sent[i] = time.Now()
		time.Sleep(150 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond)
	mu.Lock()
	var lat []time.Duration
	for i, at := range sent {
		// When every watcher served change i or a later one.
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
	t.Logf("FIGURE DNS propagation, zone reload to all %d watchers serving it, %d changes, interval 100ms, coalesce 100ms: p50 %v, p99 %v",
		watchers, changes, p50.Round(time.Millisecond), p99.Round(time.Millisecond))
	assert.Less(t, p99, time.Second, "within an interval, a window and a margin")
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// Figures: a watcher's memory at 1,000 members (answers over TCP), and
// the builds a burst of 1,000 changes causes: 1,000 weight changes over
// 100 reloads.
func TestFiguresThousand(t *testing.T) {
	k := newKnot(t)
	require.NoError(t, k.load(zoneOf(999, 1)))
	before := heapInUse()
	var reported errs
	w := watch(t, query, []string{k.addr}, &reported, dns.WithInterval(100*time.Millisecond),
		dns.WithMemberOptions(member.WithSilence(5*time.Second)))
	grown := int64(heapInUse()) - int64(before)
	require.Equal(t, 1000, w.Len())
	t.Logf("FIGURE DNS watcher memory at 1,000 members (rendezvous): %d KiB", grown/1024)

	maglev := func(n []chash.Node) (chash.Placer, error) { return chash.NewMaglev(n) }
	before = heapInUse()
	m, err := dns.Watch(ctxT(t, 10*time.Second), query, maglev, dns.WithServers(k.addr), dns.WithInterval(100*time.Millisecond))
	require.NoError(t, err)
	defer m.Close()
	grown = int64(heapInUse()) - int64(before)
	t.Logf("FIGURE DNS watcher memory at 1,000 members (Maglev, table 65537): %d KiB", grown/1024)

	builds := m.Builds()
	start := time.Now()
	zone := zoneOf(999, 1)
	for step := range 100 {
		for j := range 10 {
			i := step*10 + j
			if i < 999 {
				zone[i] = fmt.Sprintf("_cache._tcp SRV 10 %d 11211 t%04d", 2+step%2, i)
			}
		}
		require.NoError(t, k.load(zone))
	}
	burst := time.Since(start)
	require.Eventually(t, func() bool {
		for _, n := range m.Nodes() {
			if n.ID == "t0990.chash.test:11211" {
				return n.Weight == 3
			}
		}
		return false
	}, 5*time.Second, 10*time.Millisecond)
	rebuilt := m.Builds() - builds
	t.Logf("FIGURE DNS a burst of 1,000 changes (100 reloads over %v) caused %d builds of the 1,000-node Maglev (interval 100ms, window 100ms)",
		burst.Round(time.Millisecond), rebuilt)
	assert.LessOrEqual(t, rebuilt, int64(burst/(100*time.Millisecond))+3, "at most one build an interval")
}
