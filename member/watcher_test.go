package member_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/member"
	"github.com/keyplace/chash/member/membertest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func members(n int, weight float64) []member.Member {
	out := make([]member.Member, n)
	for i, nd := range nodes(n, weight) {
		out[i] = member.FromNode(nd)
	}
	return out
}

type errs struct {
	mu   sync.Mutex
	list []error
}

func (e *errs) hook(err error) { e.mu.Lock(); e.list = append(e.list, err); e.mu.Unlock() }

func (e *errs) count(target error) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, err := range e.list {
		if errors.Is(err, target) {
			n++
		}
	}
	return n
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return c
}

// A burst of changes is built once a window, and the last one is served.
func TestCoalesce(t *testing.T) {
	var fleet membertest.Memory
	require.NoError(t, fleet.Set(members(100, 1)))
	w, err := member.Follow(ctx(t), fleet.Source(), maglev, member.WithCoalesce(50*time.Millisecond))
	require.NoError(t, err)
	defer w.Close()
	builds, spent := w.Builds(), w.BuildTime()
	assert.Positive(t, builds)
	assert.Positive(t, spent, "the first view's build took time")
	start := time.Now()
	ms := members(100, 1)
	for i := range 200 {
		ms[i%100].Weight = float64(1 + i%3)
		require.NoError(t, fleet.Set(ms))
		time.Sleep(time.Millisecond)
	}
	burst := time.Since(start)
	require.Eventually(t, func() bool { return w.View().Members[99].Weight == ms[99].Weight }, 2*time.Second, 5*time.Millisecond)
	rebuilt := w.Builds() - builds
	assert.LessOrEqual(t, rebuilt, int64(burst/(50*time.Millisecond))+2, "one build a window")
	assert.Greater(t, w.BuildTime(), spent, "the rebuilds' time is counted")
	assert.Less(t, w.BuildTime(), time.Since(start)+spent, "build time within the time that passed")
	t.Logf("200 changes over %v: %d builds in %v", burst.Round(time.Millisecond), rebuilt, w.BuildTime()-spent)
}

// backwards is a source whose second snapshot goes back a version.
type backwards struct{}

func (backwards) Run(ctx context.Context, sink member.Sink) error {
	sink.Snapshot(member.Snapshot{Version: 10, Members: members(2, 1)})
	time.Sleep(20 * time.Millisecond)
	sink.Snapshot(member.Snapshot{Version: 5, Members: members(3, 1)})
	<-ctx.Done()
	return nil
}

func TestBehind(t *testing.T) {
	var reported errs
	w, err := member.Follow(ctx(t), backwards{}, maglev, member.WithErrorHook(reported.hook), member.WithCoalesce(0))
	require.NoError(t, err)
	defer w.Close()
	require.Eventually(t, func() bool { return reported.count(member.ErrBehind) > 0 }, 2*time.Second, 5*time.Millisecond)
	assert.Equal(t, int64(10), w.Version())
	assert.Equal(t, 2, w.Len())
}

// stuck is a source that hands over one snapshot, then, on every later
// Run, blocks before reading anything, as a connection gone silent while
// a watch is being set up.
type stuck struct{ runs atomic.Int32 }

func (s *stuck) Run(ctx context.Context, sink member.Sink) error {
	if s.runs.Add(1) == 1 {
		sink.Snapshot(member.Snapshot{Version: 1, Members: members(3, 1)})
	}
	<-ctx.Done()
	return ctx.Err()
}

// The silence bound covers every step: a source that says nothing is
// reported and run again, each time, and the last view keeps serving.
func TestSilence(t *testing.T) {
	var reported errs
	src := &stuck{}
	w, err := member.Follow(ctx(t), src, maglev, member.WithErrorHook(reported.hook), member.WithSilence(50*time.Millisecond))
	require.NoError(t, err)
	defer w.Close()
	require.Eventually(t, func() bool { return reported.count(member.ErrSilent) >= 2 && src.runs.Load() >= 3 },
		3*time.Second, 5*time.Millisecond, "reported and restarted, again and again")
	assert.Equal(t, 3, w.Len())
	assert.Greater(t, time.Since(w.LastHeard()), 50*time.Millisecond)
}

// failing fails every Run, after a first snapshot.
type failing struct{ runs atomic.Int32 }

func (f *failing) Run(ctx context.Context, sink member.Sink) error {
	if f.runs.Add(1) == 1 {
		sink.Snapshot(member.Snapshot{Version: 1, Members: members(3, 1)})
	}
	return errors.New("server gone")
}

// A failing source is reported and retried with backoff, not in a loop.
func TestSourceFails(t *testing.T) {
	var reported errs
	src := &failing{}
	w, err := member.Follow(ctx(t), src, maglev, member.WithErrorHook(reported.hook))
	require.NoError(t, err)
	time.Sleep(400 * time.Millisecond)
	w.Close()
	runs := src.runs.Load()
	assert.GreaterOrEqual(t, runs, int32(3))
	assert.LessOrEqual(t, runs, int32(6), "backoff 50, 100, 200 ms")
	assert.Equal(t, 3, w.Len(), "the last view keeps serving after Close")
}

// A Builder that follows the spec when none is given, and nothing at all
// when none is published: reported, and Wait says so.
func TestNoSpec(t *testing.T) {
	var fleet membertest.Memory
	require.NoError(t, fleet.Set(members(3, 1)))
	var reported errs
	c, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := member.Follow(c, fleet.Source(), nil, member.WithErrorHook(reported.hook))
	assert.ErrorIs(t, err, member.ErrNoMembers)
	assert.ErrorIs(t, err, member.ErrNoSpec)
	w, err := member.Follow(ctx(t), fleet.Source(), nil, member.WithSpec(member.Spec{Algorithm: chash.AlgorithmRendezvous}))
	require.NoError(t, err)
	defer w.Close()
	assert.Contains(t, w.Fingerprint(), "rendezvous")
	require.NoError(t, fleet.Publish(&member.Spec{Algorithm: chash.AlgorithmMaglev}))
	require.Eventually(t, func() bool { return w.View().Spec != nil }, 2*time.Second, 5*time.Millisecond)
	assert.Contains(t, w.Fingerprint(), "maglev", "the published spec wins over the local fallback")
}

func TestNilWatcher(t *testing.T) {
	for _, w := range []*member.Watcher{nil, new(member.Watcher)} {
		assert.Equal(t, chash.Node{}, w.LookupString("k"))
		assert.Equal(t, chash.Node{}, w.Lookup([]byte("k")))
		assert.Empty(t, w.AppendTopK(nil, []byte("k"), 2))
		assert.Empty(t, w.AppendTopKString(nil, "k", 2))
		assert.Nil(t, w.Nodes())
		assert.Zero(t, w.Len())
		assert.Zero(t, w.Version())
		assert.Zero(t, w.Builds())
		assert.Zero(t, w.BuildTime())
		assert.True(t, w.LastHeard().IsZero())
		assert.Equal(t, chash.FingerprintNone, chash.Fingerprint(w))
		assert.Error(t, w.Wait(context.Background()))
		assert.NoError(t, w.Close())
	}
	_, err := member.New(nil, maglev)
	assert.ErrorIs(t, err, chash.ErrInvalidOption)
}

func BenchmarkLookup(b *testing.B) {
	var fleet membertest.Memory
	require.NoError(b, fleet.Set(members(1000, 1)))
	w, err := member.Follow(context.Background(), fleet.Source(), maglev)
	require.NoError(b, err)
	defer w.Close()
	p := w.View().Placer
	keys := make([]string, 1024)
	for i := range keys {
		keys[i] = fmt.Sprintf("user:%d", i)
	}
	b.Run("watcher", func(b *testing.B) {
		b.ReportAllocs()
		for i := range b.N {
			w.LookupString(keys[i&1023])
		}
	})
	b.Run("placer", func(b *testing.B) {
		b.ReportAllocs()
		for i := range b.N {
			p.LookupString(keys[i&1023])
		}
	})
}

// A fleet shares one view: each process follows the same source and
// builds with the spec the fleet publishes.
func Example() {
	var fleet membertest.Memory // in production: an etcd prefix, a DNS name...
	fleet.Set([]member.Member{{ID: "cache-1", Zone: "a"}, {ID: "cache-2", Zone: "b"}, {ID: "cache-3", Weight: 2, Zone: "a"}})
	fleet.Publish(&member.Spec{Algorithm: chash.AlgorithmMaglev, TableSize: 1009})

	w, err := member.Follow(context.Background(), fleet.Source(), nil) // nil: build with the published spec
	if err != nil {
		fmt.Println(err)
		return
	}
	defer w.Close()
	v := w.View()
	fmt.Println(len(v.Members), "members,", v.Spec, "->", w.LookupString("user:42").ID)
	// Output: 3 members, maglev table-size=1009 -> cache-3
}

// A refused member is found once (about log2 n builds) and then
// remembered: each later view costs one build, not another search.
func TestRefusedRemembered(t *testing.T) {
	var fleet membertest.Memory
	ms := members(1000, 1)
	ms[500].Weight = 1e12
	require.NoError(t, fleet.Set(ms))
	var reported errs
	w, err := member.Follow(ctx(t), fleet.Source(), ring, member.WithCoalesce(0), member.WithErrorHook(reported.hook))
	require.NoError(t, err)
	defer w.Close()
	first := w.Builds()
	assert.Equal(t, 999, w.Len())
	assert.Equal(t, 1, reported.count(member.ErrRefused))
	for i := range 5 {
		ms[i].Weight = 2
		require.NoError(t, fleet.Set(ms))
		require.Eventually(t, func() bool { return w.View().Members[i].Weight == 2 }, 2*time.Second, time.Millisecond)
	}
	assert.Equal(t, int64(5), w.Builds()-first, "one build a view")
	assert.Equal(t, 1, reported.count(member.ErrRefused), "reported once")
	t.Logf("first view: %d builds", first)
}
