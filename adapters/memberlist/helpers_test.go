package memberlist_test

// The tests run real memberlist nodes over UDP and TCP on loopback: in
// this process (the contract, the figures) and in child processes of
// their own (the fleet and its faults: the test binary runs itself again
// as a child, see TestMain). They need no server installed.

import (
	"errors"
	"io"
	"log"
	"math"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	ml "github.com/hashicorp/memberlist"
	"github.com/keyplace/chash"
	clml "github.com/keyplace/chash/adapters/memberlist"
	"github.com/keyplace/chash/member"
	"github.com/stretchr/testify/require"
)

// The configuration of every test node: memberlist's LAN defaults on
// loopback with intervals five times shorter, and dead nodes' names
// reclaimable at a new address at once.
const (
	probeInterval = 200 * time.Millisecond
	probeTimeout  = 100 * time.Millisecond
	gossipEvery   = 50 * time.Millisecond
)

func testConfig(name string) *ml.Config {
	c := ml.DefaultLANConfig() // SuspicionMult 4, SuspicionMaxTimeoutMult 6, IndirectChecks 3
	c.Name = name
	c.BindAddr, c.AdvertiseAddr = "127.0.0.1", "127.0.0.1"
	c.BindPort, c.AdvertisePort = 0, 0
	c.ProbeInterval, c.ProbeTimeout = probeInterval, probeTimeout
	c.GossipInterval = gossipEvery
	c.PushPullInterval = 2 * time.Second
	c.TCPTimeout = time.Second
	c.DeadNodeReclaimTime = time.Millisecond
	c.LogOutput = io.Discard
	return c
}

// crashBound is how long memberlist documents a crashed node may stay a
// member of n nodes under testConfig: up to a probe round to reach it
// (n-1 probe intervals), the failed probe's interval, the longest
// suspicion (SuspicionMaxTimeoutMult × SuspicionMult × max(1, log10 n) ×
// ProbeInterval), then a few gossip intervals and the watcher's window.
func crashBound(n int) time.Duration {
	c := testConfig("")
	scale := math.Max(1, math.Log10(float64(n)))
	suspicion := time.Duration(float64(c.SuspicionMaxTimeoutMult*c.SuspicionMult) * scale * float64(c.ProbeInterval))
	return time.Duration(n)*c.ProbeInterval + suspicion + 4*c.GossipInterval + member.DefaultCoalesce
}

// breakable is a memberlist transport that can be cut off: broken, it
// drops every packet in and out and refuses every stream, as a node whose
// network went away.
type breakable struct {
	*ml.NetTransport
	broken  atomic.Bool
	packets chan *ml.Packet
	streams chan net.Conn
	done    chan struct{}
	once    sync.Once
}

var _ ml.NodeAwareTransport = (*breakable)(nil)

func newBreakable(t *testing.T) *breakable {
	nt, err := ml.NewNetTransport(&ml.NetTransportConfig{BindAddrs: []string{"127.0.0.1"},
		Logger: log.New(io.Discard, "", 0)})
	require.NoError(t, err)
	b := &breakable{NetTransport: nt, packets: make(chan *ml.Packet), streams: make(chan net.Conn), done: make(chan struct{})}
	go func() {
		for {
			select {
			case <-b.done:
				return
			case p := <-nt.PacketCh():
				if b.broken.Load() {
					continue
				}
				select {
				case b.packets <- p:
				case <-b.done:
					return
				}
			}
		}
	}()
	go func() {
		for {
			select {
			case <-b.done:
				return
			case c := <-nt.StreamCh():
				if b.broken.Load() {
					c.Close()
					continue
				}
				select {
				case b.streams <- c:
				case <-b.done:
					c.Close()
					return
				}
			}
		}
	}()
	return b
}

var errBroken = errors.New("test: transport broken")

func (b *breakable) PacketCh() <-chan *ml.Packet { return b.packets }
func (b *breakable) StreamCh() <-chan net.Conn   { return b.streams }

func (b *breakable) WriteTo(p []byte, addr string) (time.Time, error) {
	if b.broken.Load() {
		return time.Now(), nil
	}
	return b.NetTransport.WriteTo(p, addr)
}

func (b *breakable) WriteToAddress(p []byte, addr ml.Address) (time.Time, error) {
	return b.WriteTo(p, addr.Addr)
}

func (b *breakable) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	if b.broken.Load() {
		return nil, errBroken
	}
	return b.NetTransport.DialTimeout(addr, timeout)
}

func (b *breakable) DialAddressTimeout(addr ml.Address, timeout time.Duration) (net.Conn, error) {
	return b.DialTimeout(addr.Addr, timeout)
}

// Shutdown drops what comes in while the listeners stop (they block
// until their packets are taken), then stops the forwarders.
func (b *breakable) Shutdown() error {
	b.broken.Store(true)
	err := b.NetTransport.Shutdown()
	b.once.Do(func() { close(b.done) })
	return err
}

// configOn returns testConfig on transport b.
func configOn(name string, b *breakable) *ml.Config {
	c := testConfig(name)
	c.Transport = b
	c.AdvertisePort = b.GetAutoBindPort()
	c.BindPort = c.AdvertisePort
	return c
}

// errs collects what an error hook reports.
type errs struct {
	mu   sync.Mutex
	list []error
}

func (e *errs) hook(err error) { e.mu.Lock(); e.list = append(e.list, err); e.mu.Unlock() }

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

// join starts a member node of cluster seeds, shut down at cleanup.
func join(t *testing.T, m member.Member, seeds ...string) *clml.Node {
	t.Helper()
	n, err := clml.Join(testConfig(m.ID), m, seeds)
	require.NoError(t, err)
	t.Cleanup(func() { n.Shutdown() })
	return n
}

// observe starts an observer node of cluster seeds, shut down at cleanup.
func observe(t *testing.T, name string, seeds ...string) *clml.Node {
	t.Helper()
	n, err := clml.Observe(testConfig(name), seeds)
	require.NoError(t, err)
	t.Cleanup(func() { n.Shutdown() })
	return n
}

// recorder is a member.Sink that keeps what it is handed.
type recorder struct {
	mu    sync.Mutex
	snaps []member.Snapshot
}

func (r *recorder) Snapshot(s member.Snapshot) {
	r.mu.Lock()
	r.snaps = append(r.snaps, s)
	r.mu.Unlock()
}
func (r *recorder) Heard()       {}
func (r *recorder) Report(error) {}

func (r *recorder) count() int { r.mu.Lock(); defer r.mu.Unlock(); return len(r.snaps) }

func (r *recorder) last() member.Snapshot {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.snaps[len(r.snaps)-1]
}
