package etcd_test

// Integration tests run against real etcd servers: the one .ci/services.sh
// starts, named by CHASH_ETCD, and, for the tests that kill and restart
// etcd, servers of their own run from the binary CHASH_ETCD_BIN names (or
// etcd on PATH). Without them the tests skip, unless CI is set, where they
// fail.

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/adapters/etcd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
)

func inCI() bool {
	ci := os.Getenv("CI")
	return ci != "" && ci != "false" && ci != "0"
}

func missing(t *testing.T, what string) {
	t.Helper()
	if inCI() {
		t.Fatalf("CI is set but %s: the etcd tests need what `eval \"$(.ci/services.sh start)\"` exports", what)
	}
	t.Skipf("%s: skipping the tests against a real etcd (run `eval \"$(.ci/services.sh start)\"` "+
		"from the repository root first; see README.md)", what)
}

// sharedEtcd returns the address of the etcd CHASH_ETCD names.
func sharedEtcd(t *testing.T) string {
	t.Helper()
	addr := os.Getenv("CHASH_ETCD")
	if addr == "" {
		missing(t, "CHASH_ETCD is not set")
	}
	return addr
}

// client returns a client of the etcd at addr that reconnects within a
// second of the server coming back, closed when the test ends.
func client(t testing.TB, addr string) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{addr},
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
		DialOptions: []grpc.DialOption{grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 50 * time.Millisecond, Multiplier: 1.6, MaxDelay: time.Second},
			MinConnectTimeout: time.Second,
		})},
	})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// prefix returns a prefix of the test's own.
func prefix(t testing.TB) string {
	return fmt.Sprintf("/chash-test/%s-%d", strings.ReplaceAll(t.Name(), "/", "-"), time.Now().UnixNano())
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func maglev(nodes []chash.Node) (chash.Placer, error) { return chash.NewMaglev(nodes) }

// errs collects what an error hook reports.
type errs struct {
	mu   sync.Mutex
	list []error
}

func (e *errs) hook(err error) {
	e.mu.Lock()
	e.list = append(e.list, err)
	e.mu.Unlock()
}

func (e *errs) count(match func(error) bool) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, err := range e.list {
		if match(err) {
			n++
		}
	}
	return n
}

// etcdServer is an etcd process of a test's own, on loopback ports and a
// data directory that survive a kill, so that it can be restarted.
type etcdServer struct {
	t          *testing.T
	bin, dir   string
	client     string
	peer       string
	cmd        *exec.Cmd
	log        *os.File
	waitResult chan error
}

// ownEtcd starts an etcd of the test's own.
func ownEtcd(t *testing.T) *etcdServer {
	t.Helper()
	bin := os.Getenv("CHASH_ETCD_BIN")
	if bin == "" {
		if p, err := exec.LookPath("etcd"); err == nil {
			bin = p
		} else {
			missing(t, "CHASH_ETCD_BIN is not set and no etcd is on PATH")
		}
	}
	dir := t.TempDir()
	s := &etcdServer{t: t, bin: bin, dir: dir, client: freeAddr(t), peer: freeAddr(t)}
	s.start()
	t.Cleanup(s.kill)
	return s
}

func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}

// start runs etcd and waits until it answers.
func (s *etcdServer) start() {
	s.t.Helper()
	log, err := os.OpenFile(filepath.Join(s.dir, "etcd.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	require.NoError(s.t, err)
	s.log = log
	s.cmd = exec.Command(s.bin, "--name", "t", "--data-dir", filepath.Join(s.dir, "data"),
		"--listen-client-urls", "http://"+s.client, "--advertise-client-urls", "http://"+s.client,
		"--listen-peer-urls", "http://"+s.peer, "--initial-advertise-peer-urls", "http://"+s.peer,
		"--initial-cluster", "t=http://"+s.peer)
	s.cmd.Stdout, s.cmd.Stderr = log, log
	require.NoError(s.t, s.cmd.Start())
	s.waitResult = make(chan error, 1)
	go func(c *exec.Cmd) { s.waitResult <- c.Wait() }(s.cmd)
	c := client(s.t, s.client)
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := c.Get(ctx, "/health")
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			out, _ := os.ReadFile(filepath.Join(s.dir, "etcd.log"))
			s.t.Fatalf("etcd at %s did not answer: %v\n%s", s.client, err, tail(out))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// kill ends etcd with SIGKILL, if it runs.
func (s *etcdServer) kill() {
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.waitResult
	s.cmd = nil
	s.log.Close()
}

func tail(b []byte) string {
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// proxy forwards TCP connections to an address until cut, which drops
// every connection and refuses new ones until restore. While stalled it
// forwards nothing but keeps the connections open: a connection gone
// silent, which without gRPC keepalives no one notices.
type proxy struct {
	l       net.Listener
	to      string
	mu      sync.Mutex
	conns   map[net.Conn]bool
	cutOff  bool
	stalled atomic.Bool
}

func newProxy(t *testing.T, to string) *proxy {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &proxy{l: l, to: to, conns: map[net.Conn]bool{}}
	t.Cleanup(func() { l.Close(); p.cut() })
	go p.serve()
	return p
}

func (p *proxy) addr() string { return p.l.Addr().String() }

func (p *proxy) serve() {
	for {
		in, err := p.l.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.cutOff {
			p.mu.Unlock()
			in.Close()
			continue
		}
		out, err := net.Dial("tcp", p.to)
		if err != nil {
			p.mu.Unlock()
			in.Close()
			continue
		}
		p.conns[in], p.conns[out] = true, true
		p.mu.Unlock()
		go func() { p.copy(out, in); out.Close(); in.Close() }()
		go func() { p.copy(in, out); in.Close(); out.Close() }()
	}
}

// copy forwards from src to dst, holding what it reads while stalled.
func (p *proxy) copy(dst io.Writer, src io.Reader) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		for p.stalled.Load() {
			time.Sleep(5 * time.Millisecond)
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// stall stops forwarding, keeping the connections open.
func (p *proxy) stall() { p.stalled.Store(true) }

func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cutOff = true
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

func (p *proxy) restore() {
	p.mu.Lock()
	p.cutOff = false
	p.mu.Unlock()
	p.stalled.Store(false)
}

// held reads the valid members under prefix as etcd holds them.
func held(t testing.TB, c *clientv3.Client, prefix string) map[string]etcd.Member {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := c.Get(ctx, prefix+"/", clientv3.WithPrefix())
	require.NoError(t, err)
	out := map[string]etcd.Member{}
	for _, kv := range resp.Kvs {
		m, err := etcd.ParseMember(string(kv.Key[len(prefix)+1:]), kv.Value)
		if err == nil {
			out[m.ID] = m
		}
	}
	return out
}

func viewOf(w *etcd.Watcher) map[string]etcd.Member {
	out := map[string]etcd.Member{}
	for _, m := range w.View().Members {
		out[m.ID] = m
	}
	return out
}

// converge waits up to limit for every watcher to serve exactly want and
// returns how long that took.
func converge(t *testing.T, ws []*etcd.Watcher, want map[string]etcd.Member, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		ok := true
		for _, w := range ws {
			ok = ok && sameMembers(viewOf(w), want)
		}
		if ok {
			return time.Since(start)
		}
		if time.Since(start) > limit {
			for i, w := range ws {
				t.Logf("watcher %d at revision %d: %d members", i, w.Revision(), len(viewOf(w)))
			}
			t.Fatalf("watchers did not converge on the %d members etcd holds within %v", len(want), limit)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func sameMembers(a, b map[string]etcd.Member) bool {
	if len(a) != len(b) {
		return false
	}
	for id, m := range a {
		n, ok := b[id]
		if !ok || n.Node() != m.Node() || n.Addr != m.Addr {
			return false
		}
	}
	return true
}

// watchers starts n watchers of prefix building Maglev placers, each with
// a client of its own.
func watchers(t *testing.T, addr, prefix string, n int, opts ...etcd.Option) []*etcd.Watcher {
	t.Helper()
	return watchersOf(t, addr, prefix, n, maglev, opts...)
}

// watchersOf starts n watchers of prefix building placers with build.
func watchersOf(t *testing.T, addr, prefix string, n int, build etcd.Builder, opts ...etcd.Option) []*etcd.Watcher {
	t.Helper()
	ws := make([]*etcd.Watcher, n)
	for i := range ws {
		var last, back atomic.Int64
		t.Cleanup(func() { assert.Zero(t, back.Load(), "watcher %d: views whose revision went backwards", i) })
		monotonic := etcd.WithViewHook(func(v *etcd.View) {
			if v.Version <= last.Load() {
				back.Add(1)
			}
			last.Store(v.Version)
		})
		w, err := etcd.Watch(ctxT(t), client(t, addr), prefix, build, append(opts, monotonic)...)
		require.NoError(t, err)
		t.Cleanup(func() { w.Close() })
		ws[i] = w
	}
	return ws
}
