package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keyplace/chash/shardmap"
)

// Build a map, rebalance it after a drain and a new node, and plan the
// moves: each output loads and the plan's copies go to the new nodes.
func TestShardMapCommand(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	fleet := "a1 1 za\na2 1 za\nb1 1 zb\nb2 1 zb\nc1 1 zc\nc2 1 zc # six nodes\n"
	nodes := write("nodes.txt", fleet)
	next := write("next.txt", strings.Replace(fleet, "a2 1 za", "a2 0 za\na3 1 za", 1))
	out, _ := runCode(t, 0, "shardmap", "build", "-partitions", "64", "-replicas", "3", "-pin", "5=b2", nodes)
	m1 := write("m1.json", out)
	old, err := shardmap.Parse([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	out, info := runCode(t, 0, "shardmap", "rebalance", m1, next)
	if !strings.Contains(info, "version 1 -> 2") {
		t.Errorf("rebalance summary %q", info)
	}
	m2 := write("m2.json", out)
	cur, err := shardmap.Parse([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := cur.Load("a2"); n != 0 {
		t.Errorf("drained a2 holds %d replicas", n)
	}
	if got := cur.AppendReplicas(nil, 5)[0].ID; got != "b2" {
		t.Errorf("pin lost: partition 5 primary %s", got)
	}
	var pl shardmap.Plan
	runJSON(t, &pl, "shardmap", "plan", "-size", "1k", m1, m2)
	held, _ := old.Load("a2")
	if pl.Moves != held || pl.Bytes != int64(held)*1000 {
		t.Errorf("plan copies %d replicas, %d bytes; a2 held %d", pl.Moves, pl.Bytes, held)
	}
	for _, st := range pl.Steps {
		if st.Kind == shardmap.StepAdd && st.Node != "a3" {
			t.Errorf("copy to %s, not the new node: %+v", st.Node, st)
		}
	}
	text, _ := runCode(t, 0, "shardmap", "plan", m1, m2)
	if !strings.Contains(text, "replicas copied") {
		t.Errorf("plan table:\n%s", text)
	}
	raw, _ := json.Marshal(pl)
	if !strings.Contains(string(raw), `"kind":"add"`) {
		t.Errorf("plan JSON %s", raw)
	}
}

func TestShardMapCommandErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"format":"nope"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		code int
		args []string
		msg  string
	}{
		{2, []string{"shardmap", "build"}, "want build NODES"},
		{2, []string{"shardmap", "build", "-pin", "x", "n.txt"}, "PARTITION=NODE"},
		{1, []string{"shardmap", "plan", bad, bad}, "invalid shard map"},
		{1, []string{"shardmap", "build", "-replicas", "16", "testdata/nodes10.txt"}, "distinct nodes"},
	} {
		_, errOut := runCode(t, tc.code, tc.args...)
		if !strings.Contains(errOut, tc.msg) {
			t.Errorf("chash %v: stderr %q lacks %q", tc.args, errOut, tc.msg)
		}
	}
	out, _ := runCode(t, 0, "shardmap", "-h")
	if !strings.Contains(out, "usage:") || !strings.Contains(out, "examples:") {
		t.Errorf("help:\n%s", out)
	}
}
