package zookeeper_test

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/keyplace/chash"
	"github.com/keyplace/chash/adapters/zookeeper"
	"github.com/keyplace/chash/member"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Figures: propagation from a registration's Update (which returns once
// ZooKeeper has applied it) to all 3 watchers serving it, each on a
// session of its own, with a 100 ms interval and the default 100 ms
// coalescing window; the probe's weight carries the change's number.
func TestFiguresPropagation(t *testing.T) {
	s := newServer(t)
	conn := connect(t, s.addr, 10*time.Second)
	for i := range 19 {
		register(t, conn, member.Member{ID: fmt.Sprintf("m%02d", i)})
	}
	probe := register(t, conn, member.Member{ID: "probe", Weight: 1})
	const watchers, changes = 3, 40
	var mu sync.Mutex
	first := make([]map[int]time.Time, watchers)
	for i := range first {
		first[i] = map[int]time.Time{}
		hook := zookeeper.WithViewHook(func(v *member.View) {
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
		var reported errs
		watch(t, connect(t, s.addr, 10*time.Second), &reported, hook)
	}
	sent := map[int]time.Time{}
	for i := 2; i < changes+2; i++ {
		require.NoError(t, probe.Update(member.Member{ID: "probe", Weight: float64(i)}))
		sent[i] = time.Now()
		time.Sleep(150 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond)
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
	t.Logf("FIGURE zookeeper propagation, Update to all %d watchers serving it, %d changes, coalesce 100ms: p50 %v, p99 %v",
		watchers, changes, p50.Round(time.Millisecond), p99.Round(time.Millisecond))
	assert.Less(t, p99, time.Second, "within a window and a margin")
}

// inUse returns the heap and goroutine stacks in use.
func inUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc + m.StackInuse
}

// Figures, with CHASH_FIGURES set: a watcher's memory at 1,000 members,
// and the Maglev builds a burst of 1,000 changes (one member's data each,
// as fast as one client writes them) causes.
func TestFiguresThousand(t *testing.T) {
	if os.Getenv("CHASH_FIGURES") == "" {
		t.Skip("set CHASH_FIGURES=1 for the figures at 1,000 members")
	}
	s := newServer(t)
	conn := connect(t, s.addr, 30*time.Second)
	_, err := conn.Create("/fleets", nil, 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	_, err = conn.Create(fleetPath, nil, 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	data := func(i int, w float64) []byte {
		b, _ := member.EncodeJSON(member.Member{ID: fmt.Sprintf("m%04d", i), Weight: w, Zone: fmt.Sprintf("z%d", i%3),
			Addr: fmt.Sprintf("10.0.%d.%d:11211", i/256, i%256)})
		return b
	}
	for i0 := 0; i0 < 1000; i0 += 100 {
		var ops []any
		for i := i0; i < i0+100; i++ {
			ops = append(ops, &zk.CreateRequest{Path: fmt.Sprintf("%s/m%04d", fleetPath, i), Data: data(i, 1), Acl: zk.WorldACL(zk.PermAll)})
		}
		_, err := conn.Multi(ops...)
		require.NoError(t, err)
	}
	var reported errs
	for _, c := range []struct {
		name  string
		build member.Builder
	}{{"warm-up", rendezvous}, {"rendezvous", rendezvous}, {"Maglev, table 65537", func(n []chash.Node) (chash.Placer, error) { return chash.NewMaglev(n) }}} {
		wc := connect(t, s.addr, 30*time.Second)
		before := inUse()
		start := time.Now()
		w, err := zookeeper.Watch(ctxT(t, 30*time.Second), wc, fleetPath, c.build, zookeeper.WithInterval(100*time.Millisecond),
			zookeeper.WithErrorHook(reported.hook), zookeeper.WithMemberOptions(member.WithSilence(5*time.Second)))
		require.NoError(t, err)
		took := time.Since(start)
		grown := int64(inUse()) - int64(before)
		require.Equal(t, 1000, w.Len())
		if c.name != "warm-up" {
			t.Logf("FIGURE zookeeper watcher memory (heap and stacks) at 1,000 members (%s): %d KiB, first view in %v (1,000 reads with watches)",
				c.name, grown/1024, took.Round(time.Millisecond))
		}
		if c.name != "Maglev, table 65537" {
			w.Close()
			continue
		}
		builds := w.Builds()
		start = time.Now()
		for i := range 1000 {
			_, err := conn.Set(fmt.Sprintf("%s/m%04d", fleetPath, i), data(i, 2), -1)
			require.NoError(t, err)
		}
		burst := time.Since(start)
		require.Eventually(t, func() bool {
			v := w.View()
			return len(v.Members) == 1000 && v.Members[999].Weight == 2
		}, 10*time.Second, 10*time.Millisecond)
		rebuilt := w.Builds() - builds
		t.Logf("FIGURE zookeeper a burst of 1,000 changes (1,000 writes over %v) caused %d builds of the 1,000-node Maglev (window 100ms)",
			burst.Round(time.Millisecond), rebuilt)
		assert.LessOrEqual(t, rebuilt, int64(burst/(100*time.Millisecond))+3, "at most one build a window")
		w.Close()
	}
}
