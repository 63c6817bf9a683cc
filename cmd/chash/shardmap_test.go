package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyplace/chash/shardmap"
)

// mapFile writes text to name in dir and returns its path.
func mapFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
	return p
}

// Build a map, rebalance it after a drain and a new node, and plan the
// moves: each output loads and the plan's copies go to the new nodes.
func TestShardMapCommand(t *testing.T) {
	dir := t.TempDir()
	fleet := "a1 1 za\na2 1 za\nb1 1 zb\nb2 1 zb\nc1 1 zc\nc2 1 zc # six nodes\n"
	nodes := mapFile(t, dir, "nodes.txt", fleet)
	next := mapFile(t, dir, "next.txt", strings.Replace(fleet, "a2 1 za", "a2 0 za\na3 1 za", 1))
	out, info := runCode(t, 0, "shardmap", "build", "-partitions", "64", "-replicas", "3", "-pin", "5=b2", nodes)
	assert.Contains(t, info, "built shard map version 1", "the summary goes to stderr when the map goes to stdout")
	assert.Contains(t, info, "balanced: every node within 0 replicas and 0 primaries")
	m1 := mapFile(t, dir, "m1.json", out)
	old, err := shardmap.Parse([]byte(out))
	require.NoError(t, err)
	out, info = runCode(t, 0, "shardmap", "rebalance", m1, next)
	assert.Contains(t, info, "rebalanced version 1 -> 2")
	assert.Contains(t, info, "replicas move; the least any map within the tolerance moves is")
	m2 := mapFile(t, dir, "m2.json", out)
	cur, err := shardmap.Parse([]byte(out))
	require.NoError(t, err)
	if n, _ := cur.Load("a2"); n != 0 {
		t.Errorf("drained a2 holds %d replicas", n)
	}
	assert.Equal(t, "b2", cur.AppendReplicas(nil, 5)[0].ID, "pin kept")
	var pl shardmap.Plan
	runJSON(t, &pl, "shardmap", "plan", "-size", "1k", m1, m2)
	held, _ := old.Load("a2")
	assert.Equal(t, held, pl.Moves)
	assert.Equal(t, int64(held)*1000, pl.Bytes)
	for _, st := range pl.Steps {
		if st.Kind == shardmap.StepAdd {
			assert.Equal(t, "a3", st.Node, "%+v", st)
		}
	}
	text, _ := runCode(t, 0, "shardmap", "plan", "-size", "2G", m1, m2)
	assert.Contains(t, text, "replicas copied")
	assert.Contains(t, text, fmt.Sprintf("%.1f GB", float64(held)*2), "-size 2G is 2,000,000,000 bytes, and totals print in GB")
	raw, _ := json.Marshal(pl)
	assert.Contains(t, string(raw), `"kind":"add"`)
}

// -o writes the map to a file and the table to stdout; -json makes the
// table JSON; show reports a map alone.
func TestShardMapOutputs(t *testing.T) {
	dir := t.TempDir()
	nodes := mapFile(t, dir, "nodes.txt", "a1 1 a\na2 1 a\nb1 1 b\nb2 1 b\nc1 1 c\nc2 1 c\n")
	file := filepath.Join(dir, "map.json")
	out, info := runCode(t, 0, "shardmap", "build", "-partitions", "120", "-o", file, nodes)
	assert.Empty(t, info)
	assert.Contains(t, out, "map written to "+file)
	assert.Contains(t, out, "a1    a          1        60  60.0         20  20.0     75")
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.Contains(t, string(data), "\n    [\"", "one line a partition")
	var s mapSummary
	out, _ = runCode(t, 0, "shardmap", "build", "-partitions", "120", "-o", file, "-json", nodes)
	require.NoError(t, json.Unmarshal([]byte(out), &s))
	assert.True(t, s.Balanced)
	assert.Len(t, s.Nodes, 6)
	assert.Equal(t, 60, s.Nodes[0].Target)
	runJSON(t, &s, "shardmap", "show", "-size", "1M", file)
	assert.Equal(t, int64(60e6), s.Nodes[0].Bytes)
	text, _ := runCode(t, 0, "shardmap", "show", file)
	assert.Contains(t, text, "shard map version 1")
}

// rebalance takes -load, -replicas and -tolerance and refuses -partitions
// and -seed that would move every key; a failed zone is handled from the
// command: its nodes drained, the map keeps R over the zones left, or
// lowers R, or raises the load factor (all three were ignored).
func TestShardMapRebalanceFlags(t *testing.T) {
	dir := t.TempDir()
	fleet := "a1 1 a\na2 1 a\nb1 1 b\nb2 1 b\nc1 1 c\nc2 1 c\n"
	nodes := mapFile(t, dir, "nodes.txt", fleet)
	failed := mapFile(t, dir, "failed.txt", strings.ReplaceAll(fleet, "1 c", "0 c"))
	file := filepath.Join(dir, "m1.json")
	runCode(t, 0, "shardmap", "build", "-partitions", "64", "-o", file, nodes)
	out, _ := runCode(t, 0, "shardmap", "rebalance", "-o", filepath.Join(dir, "m1b.json"), file, failed)
	assert.Contains(t, out, "64 partitions × 3 replicas over 4 nodes in 2 zones")
	out, _ = runCode(t, 0, "shardmap", "rebalance", "-replicas", "2", "-o", filepath.Join(dir, "m2.json"), file, failed)
	assert.Contains(t, out, "64 partitions × 2 replicas")
	out, _ = runCode(t, 0, "shardmap", "rebalance", "-load", "2", "-tolerance", "3", "-o", filepath.Join(dir, "m3.json"), file, failed)
	assert.Contains(t, out, "64 partitions × 3 replicas over 4 nodes in 2 zones, load factor 2")
	assert.Contains(t, out, "tolerance 3")
	_, errOut := runCode(t, 2, "shardmap", "rebalance", "-partitions", "65", file, nodes)
	assert.Contains(t, errOut, "would move every key")
	_, errOut = runCode(t, 2, "shardmap", "rebalance", "-seed", "9", file, nodes)
	assert.Contains(t, errOut, "would move every key")
	runCode(t, 0, "shardmap", "rebalance", "-partitions", "64", "-seed", "0", file, nodes)
}

func TestShardMapCommandErrors(t *testing.T) {
	dir := t.TempDir()
	bad := mapFile(t, dir, "bad.json", `{"format":"nope"}`)
	dup := mapFile(t, dir, "dup.txt", "a 1 x\nb 1 y\n# c\na 2 z\n")
	badLine := mapFile(t, dir, "badline.txt", "a 1 x\nb one y\n")
	nodes := mapFile(t, dir, "nodes.txt", "a 1 x\nb 1 y\nc 1 z\n")
	for _, tc := range []struct {
		code int
		args []string
		msg  string
	}{
		{2, []string{"shardmap", "build"}, "want build NODES"},
		{2, []string{"shardmap", "frob", "x"}, "unknown subcommand"},
		{2, []string{"shardmap", "build", "-pin", "x", "n.txt"}, "PARTITION=NODE"},
		{2, []string{"shardmap", "plan", bad, bad}, "invalid shard map"},
		{1, []string{"shardmap", "build", "-replicas", "16", "testdata/nodes10.txt"}, "distinct nodes"},
		{2, []string{"shardmap", "build", dup}, dup + ":4: node \"a\" again (first on line 1)"},
		{2, []string{"shardmap", "build", badLine}, badLine + ":2: weight \"one\""},
		{2, []string{"shardmap", "build", "-partitions", "0", nodes}, "0 partitions"},
		{2, []string{"shardmap", "build", filepath.Join(dir, "missing.txt")}, "no such file"},
		{2, []string{"shardmap", "build", "-size", "2G", nodes}, "-size applies to plan and show, not build"},
		{2, []string{"shardmap", "plan", "-size", "9e18", bad, bad}, "more than 250 GB"},
		{2, []string{"shardmap", "plan", "-size", "1e300G", bad, bad}, "more than 250 GB"},
		{2, []string{"shardmap", "plan", "-size", "1.5", bad, bad}, "whole number of bytes"},
		{2, []string{"shardmap", "plan", "-kafka", "t", bad, bad}, "-kafka TOPIC and -kafka-dir DIR go together"},
		{2, []string{"shardmap", "build", "-json", nodes}, "give the map a file with -o"},
		{2, []string{"shardmap", "build", "-zone-replicas", "x", nodes}, "ZONE=REPLICAS"},
		{2, []string{"shardmap", "build", "-residency", "9-1=x", nodes}, "FIRST-LAST"},
		{2, []string{"shardmap", "build", "-tolerance", "-1", nodes}, "tolerance"},
	} {
		_, errOut := runCode(t, tc.code, tc.args...)
		assert.Contains(t, errOut, tc.msg, "chash %v", tc.args)
	}
	out, _ := runCode(t, 0, "shardmap", "-h")
	for _, want := range []string{"usage:", "examples:", "-partitions", "-copies-in", "-kafka-dir", "-zone-replicas", "Exit status"} {
		assert.Contains(t, out, want, "help")
	}
}

// Batches within limits, and a Kafka topic from import to reassignment
// files: the operator's session of the issue.
func TestShardMapKafkaSession(t *testing.T) {
	dir := t.TempDir()
	var cur strings.Builder
	cur.WriteString(`{"version":1,"partitions":[`)
	for p := 0; p < 24; p++ {
		if p > 0 {
			cur.WriteString(",")
		}
		fmt.Fprintf(&cur, `{"topic":"orders","partition":%d,"replicas":[%d,%d,%d]}`, p, p%6+1, (p+1)%6+1, (p+2)%6+1)
	}
	cur.WriteString("]}")
	assignment := mapFile(t, dir, "current.json", cur.String())
	brokers := "1 1 r0\n2 1 r0\n3 1 r1\n4 1 r1\n5 1 r2\n6 1 r2\n"
	b1 := mapFile(t, dir, "brokers.txt", brokers)
	b2 := mapFile(t, dir, "brokers2.txt", brokers+"7 1 r0\n8 1 r1\n9 1 r2\n")
	m1, m2 := filepath.Join(dir, "m1.json"), filepath.Join(dir, "m2.json")
	out, _ := runCode(t, 0, "shardmap", "import", "-o", m1, assignment, b1)
	assert.Contains(t, out, "imported topic orders as an observed map (it breaks the constraints")
	out, _ = runCode(t, 0, "shardmap", "rebalance", "-o", m2, m1, b2)
	assert.Contains(t, out, "balanced")
	kdir := filepath.Join(dir, "reassign")
	out, _ = runCode(t, 0, "shardmap", "plan", "-copies-in", "2", "-kafka", "orders", "-kafka-dir", kdir, m1, m2)
	assert.Contains(t, out, "kafka-reassign-partitions.sh --bootstrap-server BROKER --reassignment-json-file "+filepath.Join(kdir, "batch-0001.json")+" --execute")
	files, err := filepath.Glob(filepath.Join(kdir, "batch-*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	var doc shardmap.KafkaReassignment
	data, err := os.ReadFile(files[0])
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &doc))
	assert.Equal(t, 1, doc.Version)
	assert.Equal(t, "orders", doc.Partitions[0].Topic)
	var pl shardmap.Plan
	runJSON(t, &pl, "shardmap", "plan", "-copies-in", "2", "-throttle", "50M", "-size", "1G", m1, m2)
	assert.Len(t, files, len(pl.Batches))
	assert.Greater(t, pl.Seconds, 0.0)
	text, _ := runCode(t, 0, "shardmap", "plan", "-copies-in", "2", "-throttle", "50M", "-size", "1G", m1, m2)
	assert.Contains(t, text, "batches (the critical path)")
	assert.Contains(t, text, "at 50.0 MB/s a node: about")
}
