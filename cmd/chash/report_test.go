package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/shardmap"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	figureRE = regexp.MustCompile(`data-p="([^"]*)" data-v="([^"]*)"`)
	rowIDRE  = regexp.MustCompile(`<tr data-id="([^"]*)">`)
)

// resolve returns the value at path in a decoded JSON document: keys and
// array indexes separated by dots, and "length" for an array's length.
func resolve(t *testing.T, doc any, path string) float64 {
	t.Helper()
	v := doc
	for _, k := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			v, ok = x[k]
			require.True(t, ok, "%s: no key %q", path, k)
		case []any:
			if k == "length" {
				return float64(len(x))
			}
			i, err := strconv.Atoi(k)
			require.NoError(t, err, path)
			require.Less(t, i, len(x), path)
			v = x[i]
		default:
			t.Fatalf("%s: %q of a %T", path, k, v)
		}
	}
	f, ok := v.(float64)
	require.True(t, ok, "%s is a %T, not a number", path, v)
	return f
}

// checkFigures checks every figure of page against doc, and returns how
// many there were.
func checkFigures(t *testing.T, page string, doc any) int {
	t.Helper()
	figs := figureRE.FindAllStringSubmatch(page, -1)
	for _, m := range figs {
		path := html.UnescapeString(m[1])
		v, err := strconv.ParseFloat(html.UnescapeString(m[2]), 64)
		require.NoError(t, err, path)
		assert.Equal(t, resolve(t, doc, path), v, path)
	}
	return len(figs)
}

func decode(t *testing.T, s string) any {
	t.Helper()
	var doc any
	require.NoError(t, json.Unmarshal([]byte(s), &doc), s)
	return doc
}

// reportCase runs "chash report KIND args" as HTML and -json, and the
// command the report shows with -json.
func reportCase(t *testing.T, kind string, args, command []string) (page string, doc map[string]any, cmd any) {
	t.Helper()
	page, _ = runCode(t, 0, append([]string{"report", kind}, args...)...)
	js, _ := runCode(t, 0, append([]string{"report", kind, "-json"}, args...)...)
	doc = decode(t, js).(map[string]any)
	out, _ := runCode(t, 0, append(command, "-json")...)
	return page, doc, decode(t, out)
}

// Every figure of a diff report is diff -json's, and every node of both
// memberships has its row.
func TestReportDiffMatchesJSON(t *testing.T) {
	args := []string{"-algo", "maglev", "testdata/nodes10.txt", "testdata/nodes11.txt"}
	page, doc, cmd := reportCase(t, "diff", args, append([]string{"diff"}, args...))
	assert.Equal(t, cmd, doc["diff"], "the report's diff is chash diff -json")
	n := checkFigures(t, page, doc)
	d := cmd.(map[string]any)
	shares := d["shares"].([]any)
	flows := d["flows"].([]any)
	assert.GreaterOrEqual(t, n, 2*len(shares)+len(flows), "shares, and flows in the matrix")
	var ids []string
	for _, m := range rowIDRE.FindAllStringSubmatch(page, -1) {
		ids = append(ids, html.UnescapeString(m[1]))
	}
	for _, s := range shares {
		assert.Contains(t, ids, s.(map[string]any)["id"])
	}
	assert.Contains(t, page, `id="matrix"`, "11 nodes: the whole matrix")
	assert.NotContains(t, strings.ToLower(page), "<script")
}

// A plan report's figures are plan -json's and its fallback steps'.
func TestReportPlanMatchesJSON(t *testing.T) {
	args := []string{"-algo", "ring", "-from", "10", "-to", "16", "-step", "2", "-rate", "100k", "-hit", "0.9", "-origin", "15k"}
	page, doc, cmd := reportCase(t, "plan", args, append([]string{"plan"}, args...))
	assert.Equal(t, cmd, doc["plan"], "the report's plan is chash plan -json")
	steps := cmd.(map[string]any)["steps"].([]any)
	fb := doc["with_fallback"].([]any)
	require.Len(t, fb, len(steps))
	for i, s := range steps {
		f := fb[i].(map[string]any)
		assert.Equal(t, 0.9, f["hit_rate"], "a fallback read keeps the hit rate")
		assert.InDelta(t, 100e3*s.(map[string]any)["moved"].(float64), f["extra_reads"], 1e-6)
	}
	assert.GreaterOrEqual(t, checkFigures(t, page, doc), 8*len(steps))
	assert.Equal(t, 2, strings.Count(page, `<svg class="chart"`))
}

// A shard map report's plan is shardmap plan -json's, and each node's
// replicas and primaries sum to the map's.
func TestReportShardMapMatchesJSON(t *testing.T) {
	dir := t.TempDir()
	old, next := writeMaps(t, dir, 12, 2, 256)
	args := []string{"-size", "1G", old, next}
	page, doc, cmd := reportCase(t, "shardmap", args, []string{"shardmap", "plan", "-size", "1G", old, next})
	sm := doc["shardmap"].(map[string]any)
	assert.Equal(t, cmd, sm["plan"], "the report's plan is chash shardmap plan -json")
	n := checkFigures(t, page, doc)
	nodes := sm["nodes"].([]any)
	require.Len(t, nodes, 14)
	assert.GreaterOrEqual(t, n, 12*len(nodes))
	var oldR, newR, newP float64
	for _, x := range nodes {
		m := x.(map[string]any)
		oldR += m["old_replicas"].(float64)
		newR += m["new_replicas"].(float64)
		newP += m["new_primaries"].(float64)
		assert.Equal(t, m["new_replicas"].(float64)*1e9, m["new_bytes"])
	}
	assert.EqualValues(t, 256*3, oldR)
	assert.EqualValues(t, 256*3, newR)
	assert.EqualValues(t, 256, newP)
}

// writeMaps writes a shard map of n nodes in 3 zones and its rebalance
// after add more nodes join, and returns their paths.
func writeMaps(t testing.TB, dir string, n, add, partitions int) (string, string) {
	t.Helper()
	nodes := make([]chash.Node, n+add)
	for i := range nodes {
		nodes[i] = chash.Node{ID: fmt.Sprintf("node-%d", i), Weight: float64(1 + i%2), Zone: fmt.Sprintf("zone-%d", i%3)}
	}
	m, err := shardmap.New(nodes[:n], shardmap.Spec{Partitions: partitions, Replicas: 3})
	require.NoError(t, err)
	m2, err := m.Rebalance(nodes, m.Spec())
	require.NoError(t, err)
	paths := [2]string{filepath.Join(dir, "old.json"), filepath.Join(dir, "new.json")}
	for i, mp := range []*shardmap.Map{m, m2} {
		data, err := mp.MarshalJSON()
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(paths[i], data, 0o644))
	}
	return paths[0], paths[1]
}

// Node IDs that would break out of HTML are escaped: the page has no
// markup but its own, and every ID reads back from its row intact.
func TestReportEscapesHostileIDs(t *testing.T) {
	hostile := []string{`<script>alert(1)</script>`, `"><img/src/onerror/alert(2)>`, `</svg><script>x</script>`, `'&amp;'`, `</title>`, `<!--`}
	file := filepath.Join(t.TempDir(), "hostile.txt")
	require.NoError(t, os.WriteFile(file, []byte(strings.Join(hostile, "\n")+"\n"), 0o644))
	page, _ := runCode(t, 0, "report", "diff", file, "testdata/nodes10.txt")
	lower := strings.ToLower(page)
	for _, bad := range []string{"<script", "<img", "<!--"} {
		assert.False(t, strings.Contains(lower, bad), "the page has %q", bad)
	}
	assert.Equal(t, 1, strings.Count(lower, "</title>"))
	var ids []string
	for _, m := range rowIDRE.FindAllStringSubmatch(page, -1) {
		ids = append(ids, html.UnescapeString(m[1]))
	}
	assert.Subset(t, ids, hostile)
}

func TestReportUsage(t *testing.T) {
	out, _ := runCode(t, 0, "report", "-h")
	assert.Contains(t, out, "usage: chash report")
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"report", "frob"}, "unknown report"},
		{[]string{"report", "diff", "-old", "a"}, "give both -old and -new"},
		{[]string{"report", "plan", "-switch-to", "ring", "-algo", "ring"}, "-switch-to"},
		{[]string{"report", "plan", "-from", "0"}, "-from 0"},
		{[]string{"report", "shardmap", "a.json"}, "want two shard map files"},
		{[]string{"report", "shardmap", "-steps", "-1", "a", "b"}, "-steps -1"},
		{[]string{"report", "shardmap", "-size", "300G", "a", "b"}, "-size"},
		{[]string{"report", "shardmap", "no-such.json", "no-such.json"}, "no-such.json"},
		{[]string{"report", "diff", "-nosuch"}, "chash report diff -h"},
	} {
		_, errOut := runCode(t, 2, tc.args...)
		assert.Contains(t, errOut, tc.msg, "chash %v", tc.args)
	}
	out, _ = runCode(t, 0, "report", "diff", "-old", "a,b", "-new", "a,b,c", "-o", filepath.Join(t.TempDir(), "r.html"))
	assert.Empty(t, out, "-o writes the file, not stdout")
	_, errOut := runCode(t, 1, "report", "diff", "-old", "a,b", "-new", "a,b,c", "-o", filepath.Join(t.TempDir(), "no", "dir", "r.html"))
	assert.Contains(t, errOut, "chash report diff")
}

// BenchmarkReportHTML renders reports of 1,000 nodes: a diff of a ring
// from 1,000 to 1,001 nodes (1,001 share rows, the largest 20 flows), a
// plan of 100 steps, and a shard map of 4,096 partitions x 3 replicas on
// 1,000 nodes rebalanced for 10 more (1,010 node rows and its steps). The
// data is computed once; each iteration renders it.
func BenchmarkReportHTML(b *testing.B) {
	nodes := synthNodes(1001)
	r1, _ := chash.NewRing(nodes[:1000])
	r2, _ := chash.NewRing(nodes)
	d, err := newDiffReport("ring", r1, r2)
	require.NoError(b, err)
	plan := &planReport{Algorithm: "ideal", From: 100, To: 1000, Step: 9, Rate: 1e6, Hit: 0.95, Origin: 1e5}
	for i := range 100 {
		moved := 9.0 / float64(109+9*i)
		hit := 0.95 * (1 - moved)
		plan.Steps = append(plan.Steps, planStep{N: i + 1, From: 100 + 9*i, To: 109 + 9*i, Moved: moved, HitRate: hit, OriginLoad: 1e6 * (1 - hit)})
	}
	plan.Steady = 5e4
	dir := b.TempDir()
	old, next := writeMaps(b, dir, 1000, 10, 4096)
	mo, err := readMap(old)
	require.NoError(b, err)
	mn, err := readMap(next)
	require.NoError(b, err)
	sm, err := newShardMapReport(mo, mn, 1<<30)
	require.NoError(b, err)
	for _, c := range []struct {
		name  string
		rep   *report
		limit int
	}{
		{"diff-1000", &report{Kind: "diff", Diff: d}, 20},
		{"plan-100-steps", &report{Kind: "plan", Plan: plan, Fallback: withFallback(plan)}, 0},
		{"shardmap-1000", &report{Kind: "shardmap", ShardMap: sm}, 1000},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			var buf bytes.Buffer
			for range b.N {
				buf.Reset()
				if err := writeReportHTML(&buf, c.rep, c.limit); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(buf.Len()), "bytes/report")
		})
	}
}

// The report's -json keys are snake_case, and each is documented in its
// help, as TestJSONSchemas checks for the other commands (the keys of the
// diff and plan it embeds are theirs, documented there).
func TestReportJSONSchema(t *testing.T) {
	dir := t.TempDir()
	old, next := writeMaps(t, dir, 6, 1, 64)
	help, _ := runCode(t, 0, "report", "-h")
	for _, args := range [][]string{
		{"report", "diff", "-old", "a,b", "-new", "a,b,c"},
		{"report", "plan"},
		{"report", "shardmap", old, next},
	} {
		var doc map[string]any
		runJSON(t, &doc, args...)
		walkJSON(t, args[1], doc)
		delete(doc, "diff")
		delete(doc, "plan")
		if sm, ok := doc["shardmap"].(map[string]any); ok {
			delete(sm, "plan")
		}
		for _, k := range jsonKeys(doc) {
			assert.Regexp(t, `\b`+k+`\b`, help, "chash report -h does not document %q", k)
		}
	}
}
