package dns_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
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

// errs collects what an error hook reports.
type errs struct {
	mu   sync.Mutex
	list []error
}

func (e *errs) hook(err error) { e.mu.Lock(); e.list = append(e.list, err); e.mu.Unlock() }

// has reports whether an error matching target and containing text was
// reported.
func (e *errs) has(target error, text string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, err := range e.list {
		if (target == nil || errors.Is(err, target)) && strings.Contains(err.Error(), text) {
			return true
		}
	}
	return false
}

func rendezvous(nodes []chash.Node) (chash.Placer, error) { return chash.NewRendezvous(nodes) }

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// watch follows q on the servers with a 50 ms interval.
func watch(t *testing.T, q string, servers []string, reported *errs, opts ...dns.Option) *member.Watcher {
	t.Helper()
	all := append([]dns.Option{dns.WithServers(servers...), dns.WithInterval(50 * time.Millisecond),
		dns.WithTimeout(200 * time.Millisecond), dns.WithErrorHook(reported.hook)}, opts...)
	w, err := dns.Watch(ctxT(t, 5*time.Second), q, rendezvous, all...)
	require.NoError(t, err)
	t.Cleanup(func() { w.Close() })
	return w
}

// ids returns the IDs the watcher serves, with weights and zones.
func ids(w *member.Watcher) []string {
	var out []string
	for _, m := range w.View().Members {
		out = append(out, fmt.Sprintf("%s/%v/%s", m.ID, m.Weight, m.Zone))
	}
	return out
}

func serves(t *testing.T, w *member.Watcher, want ...string) {
	t.Helper()
	require.Eventually(t, func() bool { return fmt.Sprint(ids(w)) == fmt.Sprint(want) }, 5*time.Second, 5*time.Millisecond,
		"want %v", want)
}

// A and AAAA records: each address a member "ip:port", added and removed
// by reloading the zone.
func TestAddresses(t *testing.T) {
	k := newKnot(t)
	require.NoError(t, k.load([]string{"hosts A 10.0.0.1", "hosts A 10.0.0.2", "hosts AAAA 2001:db8::1"}))
	var reported errs
	w := watch(t, "dns+hosts.chash.test:11211", []string{k.addr}, &reported)
	serves(t, w, "10.0.0.1:11211/0/", "10.0.0.2:11211/0/", "[2001:db8::1]:11211/0/")
	require.NoError(t, k.load([]string{"hosts A 10.0.0.2", "hosts A 10.0.0.3",
		`hosts TXT "chash-member 10.0.0.3:11211 zone=b weight=2"`}))
	serves(t, w, "10.0.0.2:11211/0/", "10.0.0.3:11211/2/b")
}

// SRV records: the targets of the lowest priority are the members, with
// the SRV weights; reweighting and a change of priority are served.
func TestSRV(t *testing.T) {
	k := newKnot(t)
	require.NoError(t, k.load([]string{
		"_cache._tcp SRV 10 1 11211 a", "_cache._tcp SRV 10 3 11211 b", "_cache._tcp SRV 20 5 11211 backup",
	}))
	var reported errs
	w := watch(t, query, []string{k.addr}, &reported)
	serves(t, w, "a.chash.test:11211/1/", "b.chash.test:11211/3/")
	require.NoError(t, k.load([]string{
		"_cache._tcp SRV 10 4 11211 a", "_cache._tcp SRV 10 3 11211 b", "_cache._tcp SRV 20 5 11211 backup",
	}))
	serves(t, w, "a.chash.test:11211/4/", "b.chash.test:11211/3/")
	require.NoError(t, k.load([]string{"_cache._tcp SRV 20 5 11211 backup", "_cache._tcp SRV 30 0 11211 last"}))
	serves(t, w, "backup.chash.test:11211/5/")
	assert.Equal(t, 1.0, w.Nodes()[0].Weight/5, "the weight is the SRV weight")
}

// The server stopped: every resolution fails and is reported, then the
// silence; the last view keeps serving, and after a restart changes are
// served again.
func TestServerStopped(t *testing.T) {
	k := newKnot(t)
	require.NoError(t, k.load([]string{"_cache._tcp SRV 10 1 11211 a"}))
	var reported errs
	w := watch(t, query, []string{k.addr}, &reported)
	serves(t, w, "a.chash.test:11211/1/")
	before := w.View()
	k.kill()
	require.Eventually(t, func() bool { return reported.has(dns.ErrResolve, "") && reported.has(member.ErrSilent, "") },
		3*time.Second, 10*time.Millisecond, "failures and silence reported")
	assert.Same(t, before, w.View(), "the last view keeps serving")
	assert.Equal(t, "a.chash.test:11211", w.LookupString("k").ID)
	k.write([]string{"_cache._tcp SRV 10 1 11211 a", "_cache._tcp SRV 10 1 11211 b"})
	k.start()
	serves(t, w, "a.chash.test:11211/1/", "b.chash.test:11211/1/")
}

// SERVFAIL, at the start and later: never an empty view. A name in a
// zone that does not load answers SERVFAIL: Watch waits and fails with
// its context, saying why; a running watcher whose zone fails keeps its
// view.
func TestServfail(t *testing.T) {
	k := newKnot(t)
	_, err := dns.Watch(ctxT(t, 300*time.Millisecond), "dnssrv+_cache._tcp.broken.test", rendezvous,
		dns.WithServers(k.addr), dns.WithInterval(50*time.Millisecond))
	require.ErrorIs(t, err, member.ErrNoMembers)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Contains(t, err.Error(), "SERVFAIL")

	require.NoError(t, k.load([]string{"_cache._tcp SRV 10 1 11211 a", "_cache._tcp SRV 10 1 11211 b"}))
	var reported errs
	w := watch(t, query, []string{k.addr}, &reported)
	serves(t, w, "a.chash.test:11211/1/", "b.chash.test:11211/1/")
	before := w.View()
	k.kill()
	require.NoError(t, os.WriteFile(filepath.Join(k.dir, "chash.test.zone"), []byte("garbage\n"), 0o644))
	k.startAnswering()
	require.Eventually(t, func() bool { return reported.has(dns.ErrResolve, "SERVFAIL") }, 3*time.Second, 10*time.Millisecond)
	assert.Same(t, before, w.View(), "the last view keeps serving")
	require.NoError(t, k.load([]string{"_cache._tcp SRV 10 1 11211 c"}))
	serves(t, w, "c.chash.test:11211/1/")
}

// udpOnly relays UDP datagrams to a server, and refuses TCP: a truncated
// answer cannot be completed through it.
func udpOnly(t *testing.T, server string) string {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 65536)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			q := append([]byte(nil), buf[:n]...)
			go func() {
				c, err := net.Dial("udp", server)
				if err != nil {
					return
				}
				defer c.Close()
				c.Write(q)
				c.SetReadDeadline(time.Now().Add(time.Second))
				r := make([]byte, 65536)
				if n, err := c.Read(r); err == nil {
					pc.WriteTo(r[:n], from)
				}
			}()
		}
	}()
	return pc.LocalAddr().String()
}

// many returns n SRV records: more than a UDP answer holds.
func many(n int) []string {
	var rs []string
	for i := range n {
		rs = append(rs, fmt.Sprintf("_cache._tcp SRV 10 1 11211 target-%04d", i))
	}
	return rs
}

// Truncated answers are completed over TCP, or not served: never a
// partial view.
func TestTruncated(t *testing.T) {
	k := newKnot(t)
	require.NoError(t, k.load(many(150)))
	var direct, relayed errs
	w := watch(t, query, []string{k.addr}, &direct)
	require.Eventually(t, func() bool { return w.Len() == 150 }, 5*time.Second, 5*time.Millisecond,
		"150 targets, in an answer truncated over UDP and completed over TCP")

	relay := udpOnly(t, k.addr)
	_, err := dns.Watch(ctxT(t, 300*time.Millisecond), query, rendezvous, dns.WithServers(relay), dns.WithInterval(50*time.Millisecond))
	require.ErrorIs(t, err, member.ErrNoMembers, "no view from a truncated answer")
	assert.Contains(t, err.Error(), "truncated")

	require.NoError(t, k.load(many(3)))
	r := watch(t, query, []string{relay}, &relayed)
	require.Equal(t, 3, r.Len())
	before := r.View()
	require.NoError(t, k.load(many(150)))
	require.Eventually(t, func() bool { return relayed.has(dns.ErrResolve, "truncated") }, 3*time.Second, 10*time.Millisecond)
	time.Sleep(200 * time.Millisecond)
	assert.Same(t, before, r.View(), "the 3 are served until a complete answer: never a partial view")
}

// A name that resolves to nothing (NXDOMAIN, or no such records): a
// watcher waits for the first member, and a running one keeps its view.
func TestNothing(t *testing.T) {
	k := newKnot(t)
	var reported errs
	done := make(chan *member.Watcher, 1)
	go func() {
		w, err := dns.Watch(ctxT(t, 5*time.Second), query, rendezvous, dns.WithServers(k.addr),
			dns.WithInterval(50*time.Millisecond), dns.WithErrorHook(reported.hook))
		if err != nil {
			t.Error(err)
		}
		done <- w
	}()
	require.Eventually(t, func() bool { return reported.has(member.ErrNoMembers, "") }, 3*time.Second, 10*time.Millisecond,
		"the empty name reported while waiting")
	require.NoError(t, k.load([]string{"_cache._tcp SRV 10 1 11211 a"}))
	w := <-done
	require.NotNil(t, w)
	defer w.Close()
	assert.Equal(t, 1, w.Len())
	require.NoError(t, k.load([]string{"other A 10.0.0.1"}))
	time.Sleep(300 * time.Millisecond)
	assert.Equal(t, 1, w.Len(), "NXDOMAIN keeps the last view")
}

// TXT records that do not parse are reported and ignored.
func TestBadTXT(t *testing.T) {
	k := newKnot(t)
	require.NoError(t, k.load([]string{"_cache._tcp SRV 10 1 11211 a",
		`_cache._tcp TXT "chash-member a.chash.test:11211 weight=-1"`, `_cache._tcp TXT "chash-spec nope"`,
		`_cache._tcp TXT "v=spf1 -all"`}))
	var reported errs
	w := watch(t, query, []string{k.addr}, &reported)
	serves(t, w, "a.chash.test:11211/1/")
	require.Eventually(t, func() bool {
		return reported.has(member.ErrBadMember, "weight") && reported.has(member.ErrBadSpec, "nope")
	}, 2*time.Second, 10*time.Millisecond)
	assert.False(t, reported.has(nil, "spf1"))
}

func TestNewSource(t *testing.T) {
	for _, q := range []string{"", "_cache._tcp.example.com", "dns+example.com", "dns+example.com:0", "dnssrv+", "dnssrv+a..b"} {
		_, err := dns.NewSource(q, dns.WithServers("127.0.0.1:53"))
		assert.ErrorIs(t, err, dns.ErrQuery, q)
	}
	_, err := dns.NewSource("dns+example.com:80", dns.WithServers("127.0.0.1:53"))
	assert.NoError(t, err)
}
