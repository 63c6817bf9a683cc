package zookeeper_test

// The tests run standalone ZooKeeper servers of their own, on loopback
// ports with data directories of their own, from the jar CHASH_ZOOKEEPER_JAR
// names (exported by .ci/services.sh, which installs Debian's zookeeper) or
// /usr/share/java/zookeeper.jar, with the java on PATH (or CHASH_JAVA).
// Without them the tests skip, unless CI is set, where they fail.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/keyplace/chash"
	"github.com/stretchr/testify/require"
)

func inCI() bool {
	ci := os.Getenv("CI")
	return ci != "" && ci != "false" && ci != "0"
}

// need skips the test (or fails it in CI) without a ZooKeeper jar and java.
func need(t *testing.T) (java, jar string) {
	t.Helper()
	jar = os.Getenv("CHASH_ZOOKEEPER_JAR")
	if jar == "" {
		jar = "/usr/share/java/zookeeper.jar"
	}
	java = os.Getenv("CHASH_JAVA")
	if java == "" {
		java, _ = exec.LookPath("java")
	}
	if _, err := os.Stat(jar); err == nil && java != "" {
		return java, jar
	}
	if inCI() {
		t.Fatalf("CI is set but there is no ZooKeeper jar at %q or no java: the ZooKeeper tests need what `eval \"$(.ci/services.sh start)\"` installs and exports", jar)
	}
	t.Skipf("no ZooKeeper jar at %q or no java: skipping the tests against a real ZooKeeper "+
		"(run `eval \"$(.ci/services.sh start)\"` from the repository root first)", jar)
	return "", ""
}

// server is a standalone ZooKeeper of a test's own, with a tick of 100 ms,
// so that sessions can be as short as 200 ms.
type server struct {
	t         *testing.T
	java, jar string
	dir, addr string
	cmd       *exec.Cmd
	done      chan struct{}
}

func newServer(t *testing.T) *server {
	t.Helper()
	java, jar := need(t)
	s := &server{t: t, java: java, jar: jar, dir: t.TempDir(), addr: freeAddr(t)}
	_, port, _ := net.SplitHostPort(s.addr)
	conf := fmt.Sprintf("tickTime=100\ndataDir=%s/data\nclientPort=%s\nclientPortAddress=127.0.0.1\n"+
		"admin.enableServer=false\nminSessionTimeout=200\nmaxSessionTimeout=60000\n4lw.commands.whitelist=ruok,srvr\n",
		s.dir, port)
	require.NoError(t, os.WriteFile(filepath.Join(s.dir, "zoo.cfg"), []byte(conf), 0o644))
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

// start runs the server and waits until it serves requests.
func (s *server) start() {
	s.t.Helper()
	out, err := os.OpenFile(filepath.Join(s.dir, "zookeeper.out"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	require.NoError(s.t, err)
	s.cmd = exec.Command(s.java, "-Xmx128m", "-XX:+UseSerialGC", "-Xshare:auto", "-cp", s.jar,
		"org.apache.zookeeper.server.ZooKeeperServerMain", filepath.Join(s.dir, "zoo.cfg"))
	s.cmd.Stdout, s.cmd.Stderr = out, out
	require.NoError(s.t, s.cmd.Start())
	s.done = make(chan struct{})
	go func(c *exec.Cmd, done chan struct{}) { c.Wait(); out.Close(); close(done) }(s.cmd, s.done)
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(s.fourLetters("srvr"), "Mode: standalone") {
		select {
		case <-s.done:
			log, _ := os.ReadFile(filepath.Join(s.dir, "zookeeper.out"))
			s.t.Fatalf("zookeeper at %s exited: %s", s.addr, log)
		default:
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("zookeeper at %s did not serve in 30 s", s.addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// fourLetters sends a four-letter command and returns the answer.
func (s *server) fourLetters(cmd string) string {
	c, err := net.DialTimeout("tcp", s.addr, time.Second)
	if err != nil {
		return ""
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	c.Write([]byte(cmd))
	b, _ := io.ReadAll(c)
	return string(b)
}

// kill ends the server with SIGKILL, if it runs.
func (s *server) kill() {
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.done
	s.cmd = nil
}

// quiet is the client's logger in the tests.
type quiet struct{}

func (quiet) Printf(string, ...any) {}

// connect opens a session of timeout to addr, closed at cleanup.
func connect(t *testing.T, addr string, timeout time.Duration) *zk.Conn {
	t.Helper()
	c, _, err := zk.Connect([]string{addr}, timeout, zk.WithLogger(quiet{}), zk.WithLogInfo(false))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	require.Eventually(t, func() bool { return c.State() == zk.StateHasSession }, 10*time.Second, 5*time.Millisecond,
		"a session at %s", addr)
	return c
}

// proxy relays TCP connections to a server and can cut them: cut, it
// closes every connection and refuses new ones, as a network that went
// away.
type proxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	cut    bool
	conns  []net.Conn
}

func newProxy(t *testing.T, target string) *proxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &proxy{ln: ln, target: target}
	t.Cleanup(func() { ln.Close(); p.Cut() })
	go p.serve()
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		cut := p.cut
		p.mu.Unlock()
		if cut {
			c.Close()
			continue
		}
		u, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, u)
		p.mu.Unlock()
		go func() { io.Copy(u, c); u.Close() }()
		go func() { io.Copy(c, u); c.Close() }()
	}
}

// Cut closes every connection and refuses new ones until Restore.
func (p *proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// Restore accepts connections again.
func (p *proxy) Restore() {
	p.mu.Lock()
	p.cut = false
	p.mu.Unlock()
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

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
