package etcd_test

import (
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/adapters/etcd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// seen records, per watcher, when it first served each sequence number of
// the member "probe" (carried in its Addr).
type seen struct {
	mu    sync.Mutex
	first []map[int]time.Time
}

func (s *seen) hook(i int) etcd.Option {
	s.first[i] = map[int]time.Time{}
	return etcd.WithViewHook(func(v *etcd.View) {
		now := time.Now()
		j, ok := slices.BinarySearchFunc(v.Members, "probe", func(m etcd.Member, id string) int {
			return cmpString(m.ID, id)
		})
		if !ok {
			return
		}
		seq, _ := strconv.Atoi(v.Members[j].Addr)
		s.mu.Lock()
		if _, ok := s.first[i][seq]; !ok {
			s.first[i][seq] = now
		}
		s.mu.Unlock()
	})
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// latency returns, for each change i made at sent[i], how long until all
// watchers served it or a later one.
func (s *seen) latency(sent []time.Time) []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]time.Duration, 0, len(sent))
	for i, at := range sent {
		var worst time.Duration
		for _, first := range s.first {
			best := time.Duration(-1)
			for seq, when := range first {
				if seq >= i && (best < 0 || when.Sub(at) < best) {
					best = when.Sub(at)
				}
			}
			if best < 0 {
				best = time.Hour // never served
			}
			worst = max(worst, best)
		}
		out = append(out, worst)
	}
	slices.Sort(out)
	return out
}

func rendezvous(nodes []chash.Node) (chash.Placer, error) { return chash.NewRendezvous(nodes) }

func pct(d []time.Duration, p float64) time.Duration { return d[int(p*float64(len(d)-1))] }

// Figures: propagation latency over 500 changes to 3 watchers of 20
// members, with the default coalescing window and without one. The
// watchers build rendezvous placers, whose build is negligible, so that the
// figure is etcd's and the watcher's own (a 20-node Maglev build takes
// 100 ms under the race detector, which would make the run without
// coalescing fall behind: the reason coalescing exists).
func TestFiguresPropagation(t *testing.T) {
	addr := sharedEtcd(t)
	for _, window := range []time.Duration{etcd.DefaultCoalesce, 0} {
		c, p := client(t, addr), prefix(t)
		ch := newChurn(t, c, p, 5)
		for i := 0; i < 19; i++ {
			ch.join(fmt.Sprintf("r%02d", i))
		}
		r, err := etcd.Register(ctxT(t), c, p, etcd.Member{ID: "probe", Addr: "-1"})
		require.NoError(t, err)
		s := &seen{first: make([]map[int]time.Time, 3)}
		var ws []*etcd.Watcher
		for i := range 3 {
			ws = append(ws, watchersOf(t, addr, p, 1, rendezvous, etcd.WithCoalesce(window), s.hook(i))...)
		}
		const changes = 500
		sent := make([]time.Time, changes)
		for i := range sent {
			sent[i] = time.Now()
			require.NoError(t, r.Update(ctxT(t), etcd.Member{ID: "probe", Weight: float64(1 + i%2), Addr: strconv.Itoa(i)}))
			time.Sleep(15 * time.Millisecond)
		}
		ch.want["probe"] = etcd.Member{ID: "probe", Weight: float64(1 + (changes-1)%2), Addr: strconv.Itoa(changes - 1)}
		converge(t, ws, ch.want, 2*time.Second)
		lat := s.latency(sent)
		t.Logf("FIGURE propagation, coalesce %v, %d changes, 3 watchers of 20 members (rendezvous): p50 %v, p99 %v, max %v; builds per watcher %d",
			window, changes, pct(lat, 0.5).Round(time.Microsecond), pct(lat, 0.99).Round(time.Microsecond),
			lat[len(lat)-1].Round(time.Microsecond), ws[0].Builds())
		assert.Less(t, pct(lat, 0.99), window+time.Second, "p99 within the window plus a second")
		if window > 0 {
			assert.Less(t, ws[0].Builds(), int64(changes), "coalescing builds fewer views than changes")
		}
		r.Close()
		ch.close()
	}
}

// putMembers puts n members m0000 to m(n-1) under prefix in transactions
// of 100.
func putMembers(t *testing.T, c *clientv3.Client, prefix string, n int, weight int) {
	for i := 0; i < n; i += 100 {
		var ops []clientv3.Op
		for j := i; j < min(n, i+100); j++ {
			id := fmt.Sprintf("m%04d", j)
			ops = append(ops, clientv3.OpPut(prefix+"/"+id, fmt.Sprintf(`{"id":%q,"weight":%d,"addr":"10.0.%d.%d:11211"}`, id, weight, j/256, j%256)))
		}
		_, err := c.Txn(ctxT(t)).Then(ops...).Commit()
		require.NoError(t, err)
	}
}

func heap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// Figures: a watcher's memory at 1,000 members, and the builds a burst of
// 1,000 changes causes.
func TestFiguresThousand(t *testing.T) {
	addr := sharedEtcd(t)
	c, p := client(t, addr), prefix(t)
	putMembers(t, c, p, 1000, 1)
	wc := client(t, addr)
	before := heap()
	w, err := etcd.Watch(ctxT(t), wc, p, maglev)
	require.NoError(t, err)
	defer w.Close()
	grown := int64(heap()) - int64(before)
	t.Logf("FIGURE watcher memory at 1,000 members (Maglev, table 65537): %d KiB", grown/1024)
	assert.Less(t, grown, int64(8<<20), "a watcher of 1,000 members takes less than 8 MiB")
	require.Equal(t, 1000, w.Len())

	builds := w.Builds()
	start := time.Now()
	for i := 0; i < 1000; i++ { // one change per member, each its own revision
		id := fmt.Sprintf("m%04d", i)
		_, err := c.Put(ctxT(t), p+"/"+id, fmt.Sprintf(`{"id":%q,"weight":2}`, id))
		require.NoError(t, err)
	}
	burst := time.Since(start)
	want := map[string]etcd.Member{}
	for i := 0; i < 1000; i++ {
		id := fmt.Sprintf("m%04d", i)
		want[id] = etcd.Member{ID: id, Weight: 2}
	}
	converge(t, []*etcd.Watcher{w}, want, 5*time.Second)
	rebuilt := w.Builds() - builds
	t.Logf("FIGURE a burst of 1,000 changes over %v caused %d builds of the 1,000-node Maglev (window %v)",
		burst.Round(time.Millisecond), rebuilt, etcd.DefaultCoalesce)
	assert.LessOrEqual(t, rebuilt, int64(burst/etcd.DefaultCoalesce)+2, "at most one build per window")
	assert.Positive(t, rebuilt)
}
