package etcd_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/adapters/etcd"
	"github.com/keyplace/chash/member"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// membersView is what `chash members -json` prints for each view.
type membersView struct {
	Revision    int64    `json:"revision"`
	Fingerprint string   `json:"fingerprint"`
	Members     []any    `json:"members"`
	Skipped     []any    `json:"skipped"`
	Refused     []any    `json:"refused"`
	Moved       *float64 `json:"moved"`
}

// The chash command's members subcommand, built from this repository,
// agrees with the adapter's watchers on a real etcd: members, revision,
// fingerprint, and with -watch the keys each change moves.
func TestMembersCommand(t *testing.T) {
	addr := sharedEtcd(t)
	bin := filepath.Join(t.TempDir(), "chash")
	build := exec.Command("go", "build", "-o", bin, "github.com/keyplace/chash/cmd/chash")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build chash: %s", out)

	c, p := client(t, addr), prefix(t)
	putMembers(t, c, p, 20, 1)
	_, err = c.Put(ctxT(t), p+"/junk", "junk")
	require.NoError(t, err)
	w := watchers(t, addr, p, 1)[0]
	converge(t, []*etcd.Watcher{w}, held(t, c, p), 2*time.Second)

	once, err := exec.Command(bin, "members", "-endpoints", addr, "-prefix", p, "-algo", "maglev", "-json").Output()
	require.NoError(t, err)
	var v membersView
	require.NoError(t, json.Unmarshal(once, &v))
	assert.Equal(t, w.Revision(), v.Revision)
	assert.Equal(t, w.Fingerprint(), v.Fingerprint)
	assert.Len(t, v.Members, 20)
	assert.Len(t, v.Skipped, 1)

	cmd := exec.Command(bin, "members", "-endpoints", addr, "-prefix", p, "-algo", "maglev", "-json", "-watch")
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	lines := bufio.NewScanner(stdout)
	require.True(t, lines.Scan())
	before := w.View()
	_, err = c.Put(ctxT(t), p+"/m0020", `{"id":"m0020","weight":1}`)
	require.NoError(t, err)
	done := make(chan membersView, 1)
	go func() {
		var next membersView
		if lines.Scan() {
			json.Unmarshal(lines.Bytes(), &next)
		}
		done <- next
	}()
	select {
	case next := <-done:
		require.NotNil(t, next.Moved, "a change reports the keys it moved")
		require.Eventually(t, func() bool { return w.Len() == 21 }, 2*time.Second, 5*time.Millisecond)
		m, err := chash.Diff(before.Placer, w.View().Placer)
		require.NoError(t, err)
		assert.InDelta(t, m.Moved, *next.Moved, 1e-9)
		assert.Equal(t, w.Fingerprint(), next.Fingerprint)
		assert.Len(t, next.Members, 21)
	case <-time.After(10 * time.Second):
		t.Fatal("chash members -watch printed nothing for a change")
	}

	text, err := exec.Command(bin, "members", "-endpoints", addr, "-prefix", p, "-algo", "maglev").Output()
	require.NoError(t, err)
	assert.Contains(t, string(text), fmt.Sprintf("fingerprint %s  21 members", w.Fingerprint()))
	assert.True(t, strings.Contains(string(text), "skipped "+p+"/junk"))
}

// The command reads the fleet's published spec by default, so that its
// fingerprint is the one the fleet's watchers show, and lists a member the
// placer refuses as refused, placing everyone else (exit 0).
func TestMembersCommandSpec(t *testing.T) {
	addr := sharedEtcd(t)
	bin := filepath.Join(t.TempDir(), "chash")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/keyplace/chash/cmd/chash").CombinedOutput()
	require.NoError(t, err, "go build chash: %s", out)
	c, p := client(t, addr), prefix(t)
	putMembers(t, c, p, 10, 1)
	require.NoError(t, etcd.Publish(ctxT(t), c, p, &member.Spec{Algorithm: chash.AlgorithmRing, Vnodes: 100}))
	_, err = c.Put(ctxT(t), p+"/heavy", `{"id":"heavy","weight":1e12}`)
	require.NoError(t, err)
	w, err := etcd.Watch(ctxT(t), client(t, addr), p, nil) // nil: the published spec
	require.NoError(t, err)
	defer w.Close()
	require.Eventually(t, func() bool { return len(w.View().Refused) == 1 }, 2*time.Second, 5*time.Millisecond)

	got, err := exec.Command(bin, "members", "-endpoints", addr, "-prefix", p, "-json").Output()
	require.NoError(t, err, "exit 0 with a refused member")
	var v membersView
	require.NoError(t, json.Unmarshal(got, &v))
	assert.Equal(t, w.Fingerprint(), v.Fingerprint, "the published spec's placement, as the watchers'")
	assert.Contains(t, w.Fingerprint(), "ring")
	assert.Len(t, v.Members, 10)
	assert.Len(t, v.Refused, 1)
}
