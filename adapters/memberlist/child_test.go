package memberlist_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clml "github.com/keyplace/chash/adapters/memberlist"
	"github.com/keyplace/chash/member"
	"github.com/stretchr/testify/require"
)

// The fleet tests run each node in a process of its own: the test binary
// started again with childEnv set runs runChild instead of the tests.
const childEnv = "CHASH_MEMBERLIST_CHILD"

func TestMain(m *testing.M) {
	if id := os.Getenv(childEnv); id != "" {
		os.Exit(runChild(id))
	}
	os.Exit(m.Run())
}

// runChild joins the cluster at CHASH_SEEDS as member id (announcing its
// gossip address as its Addr, with weight CHASH_WEIGHT), publishes the
// spec CHASH_PUBLISH if set, watches with the published spec, and prints
// to stdout
//
//	ready ADDR
//	view UNIXNANO VERSION FINGERPRINT ID@ADDR,ID@ADDR,...
//
// for each view it serves. It leaves the cluster on "leave" on stdin and
// shuts down when stdin closes.
func runChild(id string) int {
	port, err := freePort()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cfg := testConfig(id)
	cfg.BindPort, cfg.AdvertisePort = port, port
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	weight, _ := strconv.ParseFloat(os.Getenv("CHASH_WEIGHT"), 64)
	m := member.Member{ID: id, Weight: weight, Zone: "z" + id[len(id)-1:], Addr: addr}
	var seeds []string
	if s := os.Getenv("CHASH_SEEDS"); s != "" {
		seeds = strings.Split(s, ",")
	}
	n, err := clml.Join(cfg, m, seeds)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if text := os.Getenv("CHASH_PUBLISH"); text != "" {
		spec, err := member.ParseSpec(text)
		if err == nil {
			err = n.Publish(&spec)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	var out sync.Mutex
	say := func(format string, args ...any) {
		out.Lock()
		fmt.Printf(format+"\n", args...)
		out.Unlock()
	}
	say("ready %s", addr)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	w, err := n.Watch(ctx, nil, member.WithViewHook(func(v *member.View) {
		ids := make([]string, len(v.Members))
		for i, m := range v.Members {
			ids[i] = m.ID + "@" + m.Addr
		}
		say("view %d %d %s %s", v.Built.UnixNano(), v.Version, v.Fingerprint, strings.Join(ids, ","))
	}))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer w.Close()
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		if in.Text() == "leave" {
			err := n.Leave(2 * time.Second)
			say("left %v", err)
			return 0
		}
	}
	n.Shutdown()
	return 0
}

// freePort returns a loopback port free for TCP and UDP.
func freePort() (int, error) {
	for range 20 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		u, err := net.ListenPacket("udp", l.Addr().String())
		l.Close()
		if err == nil {
			u.Close()
			return port, nil
		}
	}
	return 0, fmt.Errorf("no free loopback port")
}

// child is a node process started by a test.
type child struct {
	t    *testing.T
	id   string
	cmd  *exec.Cmd
	in   *os.File // its stdin
	addr string
	done chan struct{}

	mu    sync.Mutex
	views []view
}

// view is a view a child served.
type view struct {
	at          time.Time
	version     int64
	fingerprint string
	members     []string // ID@Addr
}

func (v view) has(id string) bool {
	for _, m := range v.members {
		if strings.HasPrefix(m, id+"@") {
			return true
		}
	}
	return false
}

// startChild starts node id joining through seeds, and waits until it is
// ready.
func startChild(t *testing.T, id string, weight float64, seeds []string, publish string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+id, "CHASH_SEEDS="+strings.Join(seeds, ","),
		"CHASH_WEIGHT="+strconv.FormatFloat(weight, 'g', -1, 64), "CHASH_PUBLISH="+publish)
	r, w, err := os.Pipe()
	require.NoError(t, err)
	cmd.Stdin = r
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	r.Close()
	c := &child{t: t, id: id, cmd: cmd, in: w, done: make(chan struct{})}
	ready := make(chan string, 1)
	go func() {
		defer close(c.done)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			c.line(sc.Text(), ready)
		}
		cmd.Wait()
	}()
	t.Cleanup(c.kill)
	select {
	case c.addr = <-ready:
	case <-c.done:
		t.Fatalf("node %s exited before it was ready", id)
	case <-time.After(10 * time.Second):
		t.Fatalf("node %s not ready in 10 s", id)
	}
	return c
}

func (c *child) line(text string, ready chan<- string) {
	f := strings.Fields(text)
	switch {
	case len(f) == 2 && f[0] == "ready":
		ready <- f[1]
	case len(f) >= 4 && f[0] == "view":
		ns, _ := strconv.ParseInt(f[1], 10, 64)
		ver, _ := strconv.ParseInt(f[2], 10, 64)
		v := view{at: time.Unix(0, ns), version: ver, fingerprint: f[3]}
		if len(f) > 4 {
			v.members = strings.Split(f[4], ",")
		}
		c.mu.Lock()
		c.views = append(c.views, v)
		c.mu.Unlock()
	}
}

// last returns the last view the child served.
func (c *child) last() (view, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.views) == 0 {
		return view{}, false
	}
	return c.views[len(c.views)-1], true
}

// firstSince returns the time of the first view served after t0 for
// which ok holds.
func (c *child) firstSince(t0 time.Time, ok func(view) bool) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, v := range c.views {
		if !v.at.Before(t0) && ok(v) {
			return v.at, true
		}
	}
	return time.Time{}, false
}

// leave has the node leave the cluster cleanly.
func (c *child) leave() {
	fmt.Fprintln(c.in, "leave")
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
		c.t.Errorf("node %s did not leave in 10 s", c.id)
	}
}

// crash kills the node with SIGKILL.
func (c *child) crash() {
	c.cmd.Process.Signal(syscall.SIGKILL)
	<-c.done
}

func (c *child) kill() {
	c.in.Close()
	select {
	case <-c.done:
	case <-time.After(5 * time.Second):
		c.crash()
	}
}
