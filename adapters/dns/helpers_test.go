package dns_test

// The tests run against Knot DNS servers of their own, on loopback ports,
// from the binaries CHASH_KNOTD_BIN and CHASH_KNOTC_BIN name (exported by
// .ci/services.sh, which installs Debian's knot), or knotd and knotc on
// PATH. Without them the tests skip, unless CI is set, where they fail.

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/keyplace/chash/member"
	mdns "github.com/miekg/dns"
	"github.com/stretchr/testify/require"
)

func inCI() bool {
	ci := os.Getenv("CI")
	return ci != "" && ci != "false" && ci != "0"
}

// binary returns the path of a Knot binary, skipping (or failing in CI)
// without it.
func binary(t *testing.T, env, name string) string {
	t.Helper()
	if p := os.Getenv(env); p != "" {
		return p
	}
	for _, dir := range []string{"", "/usr/sbin/"} {
		if p, err := exec.LookPath(dir + name); err == nil {
			return p
		}
	}
	if inCI() {
		t.Fatalf("CI is set but %s is not set and no %s is installed: the DNS tests need what `eval \"$(.ci/services.sh start)\"` exports", env, name)
	}
	t.Skipf("%s is not set and no %s is installed: skipping the tests against a real DNS server "+
		"(run `eval \"$(.ci/services.sh start)\"` from the repository root first)", env, name)
	return ""
}

// zone is the name every test server is authoritative for.
const zone = "chash.test."

// knot is a Knot DNS server of a test's own, authoritative for chash.test.
// (and for broken.test., whose zone file does not parse, so that it
// answers SERVFAIL).
type knot struct {
	t      *testing.T
	knotd  string
	knotc  string
	dir    string
	addr   string
	mu     sync.Mutex
	serial int
	cmd    *exec.Cmd
	done   chan struct{}
}

// newKnot starts a server with an empty zone.
func newKnot(t *testing.T) *knot {
	t.Helper()
	k := &knot{t: t, knotd: binary(t, "CHASH_KNOTD_BIN", "knotd"), knotc: binary(t, "CHASH_KNOTC_BIN", "knotc"),
		dir: t.TempDir(), addr: freeAddr(t)}
	host, port, _ := net.SplitHostPort(k.addr)
	conf := fmt.Sprintf(`server:
    rundir: "%[1]s"
    listen: %[2]s@%[3]s
log:
  - target: "%[1]s/knot.log"
    any: info
database:
    storage: "%[1]s/db"
zone:
  - domain: %[4]s
    file: "%[1]s/chash.test.zone"
    journal-content: none
    zonefile-load: whole
    semantic-checks: off
  - domain: broken.test.
    file: "%[1]s/broken.test.zone"
    journal-content: none
`, k.dir, host, port, zone)
	require.NoError(t, os.WriteFile(filepath.Join(k.dir, "knot.conf"), []byte(conf), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(k.dir, "broken.test.zone"), []byte("not a zone\n"), 0o644))
	k.write(nil)
	k.start()
	t.Cleanup(k.kill)
	return k
}

// freeAddr returns a loopback address free for both UDP and TCP.
func freeAddr(t *testing.T) string {
	for range 20 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addr := l.Addr().String()
		u, err := net.ListenPacket("udp", addr)
		l.Close()
		if err == nil {
			u.Close()
			return addr
		}
	}
	t.Fatal("no free loopback port for UDP and TCP")
	return ""
}

// start runs knotd and waits until it serves the zone.
func (k *knot) start() { k.t.Helper(); k.run(true) }

// startAnswering runs knotd and waits until it answers at all (a zone
// that fails to load answers SERVFAIL).
func (k *knot) startAnswering() { k.t.Helper(); k.run(false) }

func (k *knot) run(loaded bool) {
	k.t.Helper()
	k.cmd = exec.Command(k.knotd, "-c", filepath.Join(k.dir, "knot.conf"))
	out, err := os.OpenFile(filepath.Join(k.dir, "knotd.out"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	require.NoError(k.t, err)
	k.cmd.Stdout, k.cmd.Stderr = out, out
	require.NoError(k.t, k.cmd.Start())
	k.done = make(chan struct{})
	go func(c *exec.Cmd, done chan struct{}) { c.Wait(); out.Close(); close(done) }(k.cmd, k.done)
	deadline := time.Now().Add(10 * time.Second)
	for {
		q := new(mdns.Msg)
		q.SetQuestion(zone, mdns.TypeSOA)
		c := &mdns.Client{Timeout: 200 * time.Millisecond}
		if r, _, err := c.Exchange(q, k.addr); err == nil && (r.Rcode == mdns.RcodeSuccess || !loaded) {
			return
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(k.dir, "knot.log"))
			k.t.Fatalf("knotd at %s did not answer: %s", k.addr, log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// kill ends knotd with SIGKILL, if it runs.
func (k *knot) kill() {
	if k.cmd == nil {
		return
	}
	k.cmd.Process.Signal(syscall.SIGKILL)
	<-k.done
	k.cmd = nil
}

// write writes the zone file: the SOA, with a serial one higher each time,
// and records, each "owner TYPE data" relative to the zone.
func (k *knot) write(records []string) {
	k.mu.Lock()
	k.serial++
	serial := k.serial
	k.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "$ORIGIN %s\n$TTL 1\n@ SOA ns hostmaster %d 60 60 60 1\n@ NS ns\nns A 127.0.0.1\n", zone, serial)
	for _, r := range records {
		b.WriteString(r + "\n")
	}
	require.NoError(k.t, os.WriteFile(filepath.Join(k.dir, "chash.test.zone"), []byte(b.String()), 0o644))
}

// load writes the zone and has knotd load it, waiting until it has.
func (k *knot) load(records []string) error {
	k.write(records)
	out, err := exec.Command(k.knotc, "-c", filepath.Join(k.dir, "knot.conf"), "-b", "-t", "10", "zone-reload", zone).CombinedOutput()
	if err != nil {
		return fmt.Errorf("knotc zone-reload: %v: %s", err, out)
	}
	return nil
}

// srvZone returns the records of members as SRV targets under
// _cache._tcp, with TXT records for their zones and exact weights, and the
// spec if one is given. IDs are "host:port" with host under chash.test.
func srvZone(ms []member.Member, spec *member.Spec) []string {
	var rs []string
	for _, m := range ms {
		host, port, _ := net.SplitHostPort(m.ID)
		w := min(int(m.Weight), 65535)
		rs = append(rs, fmt.Sprintf("_cache._tcp SRV 10 %d %s %s.", w, port, host))
		rs = append(rs, fmt.Sprintf(`_cache._tcp TXT "chash-member %s zone=%s weight=%v"`, m.ID, m.Zone, m.Weight))
	}
	if spec != nil {
		rs = append(rs, fmt.Sprintf(`_cache._tcp TXT "chash-spec %s"`, spec))
	}
	return rs
}

// memberID is the contract suite's ID of member i.
func memberID(i int) string { return fmt.Sprintf("m%04d.chash.test:%d", i, 11211+i%3) }

const query = "dnssrv+_cache._tcp.chash.test"
