package etcd_test

// The defects found by trying the adapter against real etcd processes
// (issue 29), each with a test that failed before its fix. Each logs a
// FIGURE line with what it saw, before asserting.

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/adapters/etcd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Defect 1: an Update during a re-registration was lost. The
// re-registration's put is delayed 500 ms after a lease revoke; an Update
// in that window returned nil, then the delayed put wrote the old value
// back, for good. The last Update must win.
func TestDefectUpdateDuringReregistration(t *testing.T) {
	addr := sharedEtcd(t)
	c, p := client(t, addr), prefix(t)
	r, err := etcd.Register(ctxT(t), client(t, addr), p, etcd.Member{ID: "n1", Weight: 1, Addr: "old:1"}, etcd.WithTTL(2*time.Second))
	require.NoError(t, err)
	defer r.Close()
	var puts atomic.Int32
	putting := make(chan struct{})
	etcd.SetTestHookPut(func() {
		if puts.Add(1) == 1 {
			close(putting)
			time.Sleep(500 * time.Millisecond)
		}
	})
	defer etcd.SetTestHookPut(nil)
	first, err := c.Get(ctxT(t), r.Key())
	require.NoError(t, err)
	require.Len(t, first.Kvs, 1)
	_, err = c.Revoke(ctxT(t), clientv3.LeaseID(first.Kvs[0].Lease))
	require.NoError(t, err)
	select {
	case <-putting:
	case <-time.After(5 * time.Second):
		t.Fatal("the registration did not register again after its lease was revoked")
	}
	updated := etcd.Member{ID: "n1", Weight: 7, Addr: "new:1"}
	updateErr := r.Update(ctxT(t), updated)
	time.Sleep(time.Second) // past the delayed put
	got := held(t, c, p)["n1"]
	t.Logf("FIGURE defect 1: Update during re-registration returned %v; etcd holds weight %v addr %q 1 s later",
		updateErr, got.Weight, got.Addr)
	require.NoError(t, updateErr)
	assert.Equal(t, 7.0, got.Weight, "the last Update wins")
	assert.Equal(t, "new:1", got.Addr)
}

// Defect 2: a connection that went silent while the watch was being
// created left the watcher stuck, silently: the silence check started only
// once etcd confirmed the watch. The bound must cover creation, fresh
// reads and re-watches: the watcher reports and reads afresh, and recovers
// once the connection is replaced.
func TestDefectSilentWatchCreation(t *testing.T) {
	srv := ownEtcd(t)
	c, p := client(t, srv.client), prefix(t)
	_, err := c.Put(ctxT(t), p+"/a", `{"id":"a"}`)
	require.NoError(t, err)
	px := newProxy(t, srv.client)
	var once sync.Once
	etcd.SetTestHookWatch(func() { once.Do(px.stall) })
	defer etcd.SetTestHookWatch(nil)
	var reported errs
	w, err := etcd.Watch(ctxT(t), client(t, px.addr()), p, maglev,
		etcd.WithErrorHook(reported.hook), etcd.WithProgressInterval(100*time.Millisecond))
	require.NoError(t, err)
	defer w.Close()
	stalled := time.Now()
	silent := func(err error) bool {
		return strings.Contains(err.Error(), "silent") || strings.Contains(err.Error(), "no word")
	}
	var reportedAfter time.Duration
	for time.Since(stalled) < 3*time.Second && reportedAfter == 0 {
		if reported.count(silent) > 0 {
			reportedAfter = time.Since(stalled)
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("FIGURE defect 2: connection silent during watch creation: silence reported after %v (0: not within 3 s; bound 300 ms)",
		reportedAfter.Round(time.Millisecond))
	assert.NotZero(t, reportedAfter, "the silence is reported: %v", reported.list)
	assert.Greater(t, time.Since(w.LastHeard()), 300*time.Millisecond, "LastHeard shows it")

	px.cut() // the connection is replaced: the client dials again
	px.restore()
	_, err = c.Put(ctxT(t), p+"/b", `{"id":"b"}`)
	require.NoError(t, err)
	converge(t, []*etcd.Watcher{w}, map[string]etcd.Member{"a": {ID: "a"}, "b": {ID: "b"}}, 10*time.Second)
}

// Defect 3: one member the builder refuses froze the fleet's view: dead
// nodes never left, new ones never joined, a new Watch failed. Now it is
// left out and reported, and everyone else is served.
func TestDefectRefusedMemberFreezes(t *testing.T) {
	addr := sharedEtcd(t)
	c, p := client(t, addr), prefix(t)
	putMembers(t, c, p, 5, 1)
	ringOf := func(n []chash.Node) (chash.Placer, error) { return chash.NewRing(n) }
	var reported errs
	ws := watchersOf(t, addr, p, 1, ringOf, etcd.WithErrorHook(reported.hook))
	for _, heavy := range []string{`{"id":"heavy","weight":200000}`, `{"id":"heavy","weight":1e12}`} {
		_, err := c.Put(ctxT(t), p+"/heavy", heavy)
		require.NoError(t, err)
	}
	_, err := c.Put(ctxT(t), p+"/joins", `{"id":"joins"}`)
	require.NoError(t, err)
	_, err = c.Delete(ctxT(t), p+"/m0000")
	require.NoError(t, err)
	want := held(t, c, p)
	delete(want, "heavy")
	served := false
	deadline := time.Now().Add(3 * time.Second)
	for !served && time.Now().Before(deadline) {
		served = sameMembers(viewOf(ws[0]), want)
		time.Sleep(10 * time.Millisecond)
	}
	_, newErr := etcd.Watch(ctxT(t), client(t, addr), p, ringOf)
	t.Logf("FIGURE defect 3: a member of weight 1e12 under a ring: the others served %v (join and leave within 3 s), a new Watch's error %v",
		served, newErr)
	assert.True(t, served, "the view follows joins and leaves around the refused member")
	assert.NoError(t, newErr, "a new Watch starts")
	assert.Positive(t, reported.count(func(err error) bool { return strings.Contains(err.Error(), `"heavy"`) }),
		"the refusal is reported: %v", reported.list)
}

// Defect 4: the zone was dropped: every field of chash.Node must travel
// from a registration to every watcher, and chash.Zoned must see it.
func TestDefectZoneDropped(t *testing.T) {
	addr := sharedEtcd(t)
	c, p := client(t, addr), prefix(t)
	for i := range 6 {
		_, err := c.Put(ctxT(t), fmt.Sprintf("%s/n%d", p, i), fmt.Sprintf(`{"id":"n%d","weight":%d,"zone":"z%d"}`, i, 1+i%2, i%3))
		require.NoError(t, err)
	}
	w := watchers(t, addr, p, 1)[0]
	zoned := 0
	for _, n := range w.Nodes() {
		if n.Zone != "" {
			zoned++
		}
	}
	z, err := chash.NewZoned(w.View().Placer)
	zones := 0
	if err == nil {
		zones = z.Zones()
	}
	t.Logf("FIGURE defect 4: %d of 6 nodes served with their zone; chash.Zoned sees %d zones", zoned, zones)
	assert.Equal(t, 6, zoned)
	assert.Equal(t, 3, zones)
}

// Item 5: nested prefixes. The members of /svc/cache are keys under /svc
// too; a watcher of /svc ignores them, reporting nothing, and each prefix
// serves its own.
func TestNestedPrefixes(t *testing.T) {
	addr := sharedEtcd(t)
	c, p := client(t, addr), prefix(t)
	for _, key := range []string{"/a", "/b", "/cache/x", "/cache/y", "/cache/z"} {
		id := key[strings.LastIndex(key, "/")+1:]
		_, err := c.Put(ctxT(t), p+key, fmt.Sprintf(`{"id":%q}`, id))
		require.NoError(t, err)
	}
	var outer, inner errs
	wo := watchersOf(t, addr, p, 1, maglev, etcd.WithErrorHook(outer.hook))[0]
	wi := watchersOf(t, addr, p+"/cache", 1, maglev, etcd.WithErrorHook(inner.hook))[0]
	_, err := c.Put(ctxT(t), p+"/cache/w", `{"id":"w"}`)
	require.NoError(t, err)
	converge(t, []*etcd.Watcher{wi}, map[string]etcd.Member{"x": {ID: "x"}, "y": {ID: "y"}, "z": {ID: "z"}, "w": {ID: "w"}}, 2*time.Second)
	time.Sleep(200 * time.Millisecond)
	bad := outer.count(func(err error) bool { return errors.Is(err, etcd.ErrBadMember) })
	t.Logf("FIGURE nested prefixes: the outer watcher reported %d of the inner prefix's 4 members as bad", bad)
	assert.Zero(t, bad, "%v", outer.list)
	assert.True(t, sameMembers(viewOf(wo), map[string]etcd.Member{"a": {ID: "a"}, "b": {ID: "b"}}))
	assert.Zero(t, inner.count(func(error) bool { return true }))
}
