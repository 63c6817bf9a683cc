package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/adapters/etcd"
	"github.com/keyplace/chash/member"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestMain doubles as the registrant child process of TestRegistrantKilled.
func TestMain(m *testing.M) {
	if spec := os.Getenv("CHASH_ETCD_REGISTRANT"); spec != "" {
		registrant(spec)
		return
	}
	os.Exit(m.Run())
}

// registrant registers the member spec names ("addr prefix id ttl"), says
// so on stdout and waits to be killed.
func registrant(spec string) {
	f := strings.Fields(spec)
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{f[0]}, DialTimeout: 5 * time.Second})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	ttl, _ := time.ParseDuration(f[3])
	if _, err := etcd.Register(context.Background(), c, f[1], etcd.Member{ID: f[2]}, etcd.WithTTL(ttl)); err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("registered")
	select {}
}

// churn drives registrants through random joins, leaves and weight
// changes, and tracks what etcd should hold.
type churn struct {
	t      *testing.T
	rng    *rand.Rand
	c      *clientv3.Client
	prefix string
	opts   []etcd.Option
	regs   map[string]*etcd.Registration
	want   map[string]etcd.Member
}

func newChurn(t *testing.T, c *clientv3.Client, prefix string, seed int64, opts ...etcd.Option) *churn {
	return &churn{t: t, rng: rand.New(rand.NewSource(seed)), c: c, prefix: prefix, opts: opts,
		regs: map[string]*etcd.Registration{}, want: map[string]etcd.Member{}}
}

func (ch *churn) join(id string) {
	m := etcd.Member{ID: id, Weight: float64(1 + ch.rng.Intn(4)), Addr: "10.0.0.1:" + id}
	r, err := etcd.Register(ctxT(ch.t), ch.c, ch.prefix, m, ch.opts...)
	require.NoError(ch.t, err)
	ch.regs[id], ch.want[id] = r, m
}

// step makes one random change among the registrants r0 to r(n-1).
func (ch *churn) step(n int) {
	id := fmt.Sprintf("r%02d", ch.rng.Intn(n))
	r, ok := ch.regs[id]
	switch {
	case !ok:
		ch.join(id)
	case ch.rng.Intn(2) == 0 && len(ch.regs) > 1:
		require.NoError(ch.t, r.Close())
		delete(ch.regs, id)
		delete(ch.want, id)
	default:
		m := ch.want[id]
		m.Weight = float64(1 + ch.rng.Intn(4))
		require.NoError(ch.t, r.Update(ctxT(ch.t), m))
		ch.want[id] = m
	}
}

func (ch *churn) close() {
	for _, r := range ch.regs {
		r.Close()
	}
}

// fingerprints checks that the watchers serve one placement, the one
// built from want.
func fingerprints(t *testing.T, ws []*etcd.Watcher, want map[string]etcd.Member) {
	t.Helper()
	nodes := []chash.Node{}
	for _, m := range want {
		nodes = append(nodes, m.Node())
	}
	p, err := maglev(nodes)
	require.NoError(t, err)
	for i, w := range ws {
		assert.Equal(t, chash.Fingerprint(p), w.Fingerprint(), "watcher %d", i)
		assert.Equal(t, w.Fingerprint(), chash.Fingerprint(w), "watcher %d: chash.Fingerprint sees through it", i)
	}
}

// Fault test 1: 3 watchers, 20 registrants, 300 random changes.
func TestChurn(t *testing.T) {
	addr := sharedEtcd(t)
	c, p := client(t, addr), prefix(t)
	ch := newChurn(t, c, p, 1)
	defer ch.close()
	ch.join("r00")
	ws := watchers(t, addr, p, 3)
	for i := 0; i < 300; i++ {
		ch.step(20)
		if i%10 == 0 {
			time.Sleep(time.Duration(ch.rng.Intn(30)) * time.Millisecond)
		}
	}
	require.Equal(t, ch.want, held(t, c, p), "etcd holds what the registrants announced")
	// Bound: the coalescing window (100 ms) plus a build, with a wide
	// margin for a loaded CI machine.
	took := converge(t, ws, ch.want, 2*time.Second)
	t.Logf("3 watchers converged on %d members %v after the last of 300 changes", len(ch.want), took)
	fingerprints(t, ws, ch.want)
}

// lookups calls Lookup on every watcher until stop, counting the lookups
// that found no node.
func lookups(ws []*etcd.Watcher, stop <-chan struct{}, failed, total *atomic.Int64) *sync.WaitGroup {
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if w.LookupString(fmt.Sprintf("key-%d", i)).ID == "" {
					failed.Add(1)
				}
				total.Add(1)
				if i%64 == 0 {
					time.Sleep(time.Millisecond)
				}
			}
		}()
	}
	return &wg
}

// Fault test 2: etcd killed with SIGKILL mid-churn, restarted on the same
// data directory after longer than the lease TTL.
func TestEtcdKilled(t *testing.T) {
	srv := ownEtcd(t)
	c, p := client(t, srv.client), prefix(t)
	var reported errs
	ch := newChurn(t, c, p, 2, etcd.WithTTL(2*time.Second), etcd.WithErrorHook(reported.hook))
	defer ch.close()
	for i := 0; i < 10; i++ {
		ch.join(fmt.Sprintf("r%02d", i))
	}
	ws := watchers(t, srv.client, p, 3)
	var failed, total atomic.Int64
	stop := make(chan struct{})
	wg := lookups(ws, stop, &failed, &total)
	for i := 0; i < 50; i++ {
		ch.step(15)
	}
	converge(t, ws, ch.want, 2*time.Second)
	before := ws[0].View()

	srv.kill()
	time.Sleep(3 * time.Second) // longer than the TTL: the leases are lost
	for i, w := range ws {
		assert.Equal(t, sameMembers(viewOf(w), ch.want), true, "watcher %d serves its last view during the outage", i)
	}
	assert.Same(t, before, ws[0].View(), "nothing was published during the outage")
	srv.start()

	// Registrations come back by themselves, and churn resumes.
	require.Eventually(t, func() bool { return sameMembers(held(t, c, p), ch.want) }, 15*time.Second, 20*time.Millisecond,
		"registrations come back after the restart")
	for i := 0; i < 50; i++ {
		ch.step(15)
	}
	converge(t, ws, ch.want, 5*time.Second)
	fingerprints(t, ws, ch.want)
	close(stop)
	wg.Wait()
	assert.Zero(t, failed.Load(), "lookups that found no node, of %d", total.Load())
	assert.Positive(t, total.Load())
}

// A lease lost on the server (here revoked behind the registration's back)
// is replaced, and the node comes back under the same key.
func TestLeaseLost(t *testing.T) {
	addr := sharedEtcd(t)
	c, p := client(t, addr), prefix(t)
	var reported errs
	opts := []etcd.Option{etcd.WithErrorHook(reported.hook), etcd.WithTTL(3 * time.Second)}
	r, err := etcd.Register(ctxT(t), client(t, addr), p, etcd.Member{ID: "n1", Addr: "a:1"}, opts...)
	require.NoError(t, err)
	defer r.Close()
	stays, err := etcd.Register(ctxT(t), c, p, etcd.Member{ID: "stays"})
	require.NoError(t, err)
	defer stays.Close()
	assert.Equal(t, p+"/n1", r.Key())
	ws := watchers(t, addr, p, 1)
	first, err := c.Get(ctxT(t), r.Key())
	require.NoError(t, err)
	require.Len(t, first.Kvs, 1)
	_, err = c.Revoke(ctxT(t), clientv3.LeaseID(first.Kvs[0].Lease))
	require.NoError(t, err)

	var again *clientv3.GetResponse
	require.Eventually(t, func() bool {
		again, err = c.Get(ctxT(t), r.Key())
		return err == nil && len(again.Kvs) == 1
	}, 5*time.Second, 10*time.Millisecond, "the node registers again")
	assert.NotEqual(t, first.Kvs[0].Lease, again.Kvs[0].Lease, "under a new lease")
	assert.Equal(t, first.Kvs[0].Value, again.Kvs[0].Value, "with the same member")
	assert.Positive(t, reported.count(func(err error) bool { return strings.Contains(err.Error(), "lease lost") }))
	converge(t, ws, map[string]etcd.Member{"n1": {ID: "n1", Addr: "a:1"}, "stays": {ID: "stays"}}, 2*time.Second)

	require.NoError(t, r.Close())
	converge(t, ws, map[string]etcd.Member{"stays": {ID: "stays"}}, time.Second) // revoked at once, far within the TTL
	require.NoError(t, r.Close(), "closing again")
	assert.Error(t, r.Update(ctxT(t), etcd.Member{ID: "n1"}), "update after close")
}

// Fault test 3: a watcher cut off while changes happen and the history is
// compacted recovers through a fresh read.
func TestWatcherCutOffAndCompacted(t *testing.T) {
	srv := ownEtcd(t)
	c, p := client(t, srv.client), prefix(t)
	ch := newChurn(t, c, p, 3)
	defer ch.close()
	for i := 0; i < 5; i++ {
		ch.join(fmt.Sprintf("r%02d", i))
	}
	px := newProxy(t, srv.client)
	var reported errs
	w, err := etcd.Watch(ctxT(t), client(t, px.addr()), p, maglev, etcd.WithErrorHook(reported.hook))
	require.NoError(t, err)
	defer w.Close()
	// quick asks etcd for progress every 100 ms, so it notices the silence.
	var silence errs
	tick := etcd.WithProgressInterval(100 * time.Millisecond)
	quick, err := etcd.Watch(ctxT(t), client(t, px.addr()), p, maglev, etcd.WithErrorHook(silence.hook), tick)
	require.NoError(t, err)
	defer quick.Close()
	direct := watchers(t, srv.client, p, 1, tick)[0]

	px.cut()
	for i := 0; i < 40; i++ {
		ch.step(10)
	}
	resp, err := c.Get(ctxT(t), "/any")
	require.NoError(t, err)
	_, err = c.Compact(ctxT(t), resp.Header.Revision)
	require.NoError(t, err)
	converge(t, []*etcd.Watcher{direct}, ch.want, 2*time.Second)
	assert.False(t, sameMembers(viewOf(w), ch.want), "the cut-off watcher cannot have seen the changes")
	time.Sleep(500 * time.Millisecond)
	assert.Less(t, time.Since(direct.LastHeard()), 400*time.Millisecond, "a connected watcher hears from etcd each interval")
	assert.Greater(t, time.Since(quick.LastHeard()), 400*time.Millisecond, "a cut-off one shows its silence")
	// Reported either as silence or as the broken stream that made it read
	// afresh (a read that waits for the connection).
	assert.Positive(t, silence.count(func(err error) bool {
		return strings.Contains(err.Error(), "etcd: watch") || errors.Is(err, member.ErrSilent)
	}),
		"the outage is reported: %v", silence.list)
	px.restore()

	converge(t, []*etcd.Watcher{w, quick}, ch.want, 10*time.Second)
	assert.GreaterOrEqual(t, w.Revision(), direct.Revision()-1)
	fingerprints(t, []*etcd.Watcher{w, direct}, ch.want)
	assert.Positive(t, reported.count(func(err error) bool { return strings.Contains(err.Error(), "compacted") }),
		"the watcher found its revision compacted and read afresh: %v", reported.list)
}

// Fault test 4: a registrant process killed with SIGKILL leaves every view
// within its lease TTL plus a margin.
func TestRegistrantKilled(t *testing.T) {
	addr := sharedEtcd(t)
	c, p := client(t, addr), prefix(t)
	ch := newChurn(t, c, p, 4)
	defer ch.close()
	ch.join("stays")
	ws := watchers(t, addr, p, 3)

	const ttl = 2 * time.Second
	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), fmt.Sprintf("CHASH_ETCD_REGISTRANT=%s %s child %v", addr, p, ttl))
	out, err := child.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, child.Start())
	defer child.Process.Kill()
	line := make([]byte, 64)
	n, _ := out.Read(line)
	require.Equal(t, "registered\n", string(line[:n]))
	withChild := map[string]etcd.Member{"child": {ID: "child"}, "stays": ch.want["stays"]}
	converge(t, ws, withChild, 2*time.Second)

	require.NoError(t, child.Process.Signal(syscall.SIGKILL))
	killed := time.Now()
	child.Wait()
	// Margin: etcd checks expiry every 500 ms, and the watchers coalesce
	// for 100 ms; 1.5 s covers both on a loaded machine.
	converge(t, ws, ch.want, ttl+1500*time.Millisecond)
	t.Logf("the killed registrant left every view %v after SIGKILL (TTL %v)", time.Since(killed), ttl)
}

// Fault test 5: garbage, oversized and conflicting values are reported and
// skipped; a view that would be empty keeps the last good one.
func TestBadValues(t *testing.T) {
	addr := sharedEtcd(t)
	c, p := client(t, addr), prefix(t)
	put := func(name, value string) {
		_, err := c.Put(ctxT(t), p+"/"+name, value)
		require.NoError(t, err)
	}
	put("good", `{"id":"good","weight":2}`)
	var reported errs
	var builds atomic.Int64
	build := func(nodes []chash.Node) (chash.Placer, error) {
		builds.Add(1)
		return chash.NewJump(nodes) // fails for unequal weights
	}
	w, err := etcd.Watch(ctxT(t), client(t, addr), p, build, etcd.WithErrorHook(reported.hook), etcd.WithMaxValueSize(1024))
	require.NoError(t, err)
	defer w.Close()
	good := viewOf(w)

	bad := map[string]string{
		"garbage":    "not json",
		"negative":   `{"id":"negative","weight":-1}`,
		"nan":        `{"id":"nan","weight":NaN}`,
		"infinite":   `{"id":"infinite","weight":1e999}`,
		"":           `{"id":""}`,
		"noid":       `{"weight":1}`,
		"conflict":   `{"id":"good"}`,
		"oversized":  `{"id":"oversized","addr":"` + strings.Repeat("x", 2000) + `"}`,
		"wrong type": `{"id":"wrong type","weight":"heavy"}`,
	}
	for name, value := range bad {
		put(name, value)
	}
	put("also", `{"id":"also","weight":2}`)
	want := map[string]etcd.Member{"good": good["good"], "also": {ID: "also", Weight: 2}}
	converge(t, []*etcd.Watcher{w}, want, 2*time.Second)
	// The key of the empty name is where the spec lives: its garbage is a
	// bad spec.
	require.Eventually(t, func() bool {
		return reported.count(func(err error) bool { return errors.Is(err, etcd.ErrBadMember) }) >= len(bad)-1 &&
			reported.count(func(err error) bool { return errors.Is(err, member.ErrBadSpec) }) >= 1
	},
		2*time.Second, 10*time.Millisecond, "every bad value is reported")

	// A member the builder refuses is left out and reported; everyone
	// else is served.
	put("light", `{"id":"light","weight":1}`)
	require.Eventually(t, func() bool {
		return reported.count(func(err error) bool {
			return errors.Is(err, member.ErrRefused) && errors.Is(err, chash.ErrInvalidWeight)
		}) > 0
	},
		2*time.Second, 10*time.Millisecond, "the refusal is reported")
	require.Eventually(t, func() bool { return len(w.View().Refused) == 1 }, 2*time.Second, 10*time.Millisecond)
	before := w.View()
	assert.Equal(t, "light", before.Refused[0].Member.ID)
	assert.True(t, sameMembers(viewOf(w), want), "the others are served")

	// Deleting every valid member leaves only garbage: the view stays.
	for _, name := range []string{"good", "also", "light"} {
		_, err := c.Delete(ctxT(t), p+"/"+name)
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool {
		return reported.count(func(err error) bool { return errors.Is(err, etcd.ErrNoMembers) }) > 0
	},
		2*time.Second, 10*time.Millisecond, "an empty view is reported")
	assert.Same(t, before, w.View(), "the last good view keeps serving")
	assert.Contains(t, []string{"good", "also"}, w.LookupString("k").ID)

	put("back", `{"id":"back"}`)
	converge(t, []*etcd.Watcher{w}, map[string]etcd.Member{"back": {ID: "back"}}, 2*time.Second)
	assert.Greater(t, w.Revision(), before.Version)
}
