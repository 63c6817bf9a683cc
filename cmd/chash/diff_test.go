package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/keyplace/chash"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// 10 -> 11 ring nodes: every moved key goes to the new node.
func TestDiffAddOneRingNode(t *testing.T) {
	var rep diffReport
	runJSON(t, &rep, "diff", "testdata/nodes10.txt", "testdata/nodes11.txt")
	require.True(t, rep.Exact)
	assert.Equal(t, methodSpace, rep.Method)
	assert.Equal(t, 10, rep.OldNodes)
	assert.Equal(t, 11, rep.NewNodes)
	var toNew float64
	for _, f := range rep.Flows {
		assert.Equal(t, "node-10", f.To, "flow %+v does not go to the new node", f)
		toNew += f.Fraction
	}
	assert.Len(t, rep.Flows, 10)
	assert.Zero(t, rep.Between)
	assert.InDelta(t, rep.Moved, toNew, 1e-12)
	assert.InDelta(t, 1.0/11, rep.Moved, 0.01)
	last := rep.Shares[len(rep.Shares)-1]
	assert.Equal(t, "node-10", last.ID)
	assert.Zero(t, last.Old)
	assert.InDelta(t, rep.Moved, last.New, 1e-12)
}

func TestDiffText(t *testing.T) {
	out, _ := runCode(t, 0, "diff", "-top", "3", "testdata/nodes10.txt", "testdata/nodes11.txt")
	for _, want := range []string{"ring, 10 -> 11 nodes: exact over the whole hash space\n",
		"moved: 9.11% of keys; between nodes in both memberships: 0.00%",
		"node-10          -      9.11%  +9.11%", "(3 of 10)", "node-9  node-10"} {
		assert.Contains(t, out, want)
	}
}

func TestDiffListsWeightsAndSampling(t *testing.T) {
	var rep diffReport
	runJSON(t, &rep, "diff", "-vnodes", "1000", "-old", "a,b", "-new", "a,b=3")
	// b goes from 1/2 to 3/4: a quarter of the keys move, all a -> b.
	assert.InDelta(t, 0.25, rep.Moved, 0.02)
	require.Len(t, rep.Flows, 1)
	assert.Equal(t, "a", rep.Flows[0].From)

	rep = diffReport{}
	runJSON(t, &rep, "diff", "-algo", "modn", "testdata/nodes10.txt", "testdata/nodes11.txt")
	assert.False(t, rep.Exact)
	assert.Equal(t, methodSample, rep.Method)
	assert.Equal(t, chash.SampleKeys, rep.Samples)
	assert.InDelta(t, 10.0/11, rep.Moved, 0.005)

	rep = diffReport{}
	runJSON(t, &rep, "diff", "testdata/weighted.txt", "testdata/weighted.txt")
	assert.Zero(t, rep.Moved)
	assert.Empty(t, rep.Flows)
	assert.Len(t, rep.Shares, 3)
}

// Rendezvous and jump print "exact" from closed forms: the output and
// the help say so, rather than calling them sampled or exact over the
// hash space.
func TestDiffClosedForms(t *testing.T) {
	for _, algo := range []string{"jump", "rendezvous"} {
		out, _ := runCode(t, 0, "diff", "-algo", algo, "-old", "a,b", "-new", "a,b,c")
		assert.Contains(t, out, algo+", 2 -> 3 nodes: exact by closed form (see chash diff -h)\n")
		var rep diffReport
		runJSON(t, &rep, "diff", "-algo", algo, "-old", "a,b", "-new", "a,b,c")
		assert.True(t, rep.Exact)
		assert.Equal(t, methodClosed, rep.Method)
		assert.Zero(t, rep.Samples)
		assert.InDelta(t, 1.0/3, rep.Moved, 1e-12, algo)
	}
	for _, algo := range []string{"ring", "maglev", "bounded"} {
		var rep diffReport
		runJSON(t, &rep, "diff", "-algo", algo, "-old", "a,b", "-new", "a,b,c")
		assert.Equal(t, methodSpace, rep.Method, algo)
	}
	help, _ := runCode(t, 0, "diff", "-h")
	assert.NotContains(t, help, "other algorithms are sampled")
	assert.Regexp(t, `exact by closed form +rendezvous, jump`, help)
	assert.Regexp(t, `exact over the whole hash space +ring, maglev, bounded`, help)
	assert.Contains(t, help, "estimated from 1,048,576 sampled keys")
}

// diff -json has one schema: lower-case snake_case keys throughout
// (the seed's flows had From, To and Fraction), numbers as JSON numbers,
// and the keys its help documents.
func TestDiffJSONSchema(t *testing.T) {
	for _, algo := range []string{"ring", "rendezvous", "jump", "modn"} {
		out, _ := runCode(t, 0, "diff", "-algo", algo, "-json", "-old", "a,b", "-new", "a,b,c")
		var doc map[string]any
		require.NoError(t, json.Unmarshal([]byte(out), &doc))
		walkJSON(t, "", doc)
		help, _ := runCode(t, 0, "diff", "-h")
		for key := range doc {
			assert.Regexp(t, `(?m)^  (\w+, )*`+regexp.QuoteMeta(key)+`[ ,]`, help, "%s: key %q undocumented", algo, key)
		}
		for _, key := range []string{"old_nodes", "new_nodes", "samples", "moved", "moved_between_kept_nodes"} {
			assert.IsType(t, float64(0), doc[key], "%s: %s", algo, key)
		}
		flows := doc["flows"].([]any)
		require.NotEmpty(t, flows)
		for _, f := range flows {
			f := f.(map[string]any)
			assert.Len(t, f, 3)
			assert.IsType(t, "", f["from"])
			assert.IsType(t, "", f["to"])
			assert.IsType(t, float64(0), f["fraction"])
		}
		for _, s := range doc["shares"].([]any) {
			s := s.(map[string]any)
			assert.Len(t, s, 3)
			assert.IsType(t, "", s["id"])
			assert.IsType(t, float64(0), s["old"])
			assert.IsType(t, float64(0), s["new"])
		}
	}
}

// walkJSON checks every key of v is snake_case and no number is a string.
func walkJSON(t *testing.T, path string, v any) {
	t.Helper()
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			assert.Regexp(t, `^[a-z][a-z0-9_]*$`, k, "key at %s", path)
			walkJSON(t, path+"."+k, e)
		}
	case []any:
		for _, e := range v {
			walkJSON(t, path+"[]", e)
		}
	case string:
		assert.NotRegexp(t, `^-?[0-9.]+(e[-+]?\d+)?$`, v, "a number as a string at %s", path)
	}
}

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
	return p
}

// A UTF-8 byte order mark at the start of a file is not part of the
// first ID (the seed read node "\ufeffa").
func TestDiffByteOrderMark(t *testing.T) {
	bom := writeFile(t, "bom.txt", "\ufeffa\r\nb 2\r\n")
	var rep diffReport
	runJSON(t, &rep, "diff", bom, bom)
	require.Len(t, rep.Shares, 2)
	assert.Equal(t, "a", rep.Shares[0].ID)
	assert.Equal(t, "b", rep.Shares[1].ID)
	assert.InDelta(t, 2.0/3, rep.Shares[1].Old, 0.1)
}

func TestDiffBadInput(t *testing.T) {
	good := "testdata/nodes10.txt"
	long := make([]byte, maxLine+1)
	for i := range long {
		long[i] = 'x'
	}
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{good}, "want two membership files"},
		{[]string{good, filepath.Join(t.TempDir(), "missing.txt")}, "missing.txt"},
		{[]string{good, writeFile(t, "weight.txt", "a 1\nb heavy\n")}, "weight.txt:2: weight \"heavy\""},
		{[]string{good, writeFile(t, "fields.txt", "a 1 z1 extra\n")}, "fields.txt:1"},
		{[]string{good, writeFile(t, "empty.txt", "# nobody\n\n")}, "no nodes"},
		{[]string{good, writeFile(t, "dup.txt", "a\na\n")}, "duplicate node ID"},
		{[]string{good, writeFile(t, "neg.txt", "a -1\n")}, "want a number >= 0"},
		// Lines that would silently become odd IDs.
		{[]string{good, writeFile(t, "eq.txt", "b\na=2\n")}, "eq.txt:2: ID \"a=2\" holds \"=\": write the weight after a space (a 2)"},
		{[]string{good, writeFile(t, "list.txt", "a,b\n")}, "list.txt:1: ID \"a,b\" holds \",\": write one node a line"},
		{[]string{good, writeFile(t, "bom2.txt", "a\n\ufeffb\n")}, "bom2.txt:2: ID \"\\ufeffb\" holds the non-printing character U+FEFF"},
		{[]string{good, writeFile(t, "ctl.txt", "a\x01\n")}, "ctl.txt:1: ID \"a\\x01\" holds the non-printing character U+0001"},
		{[]string{good, writeFile(t, "utf8.txt", "a\xff\n")}, "utf8.txt:1: ID \"a\\xff\" is not valid UTF-8"},
		{[]string{good, writeFile(t, "long.txt", "a\n"+string(long)+"\n")}, "long.txt:2: line longer than 1048576 bytes"},
		{[]string{"-old", "a"}, "both -old and -new"},
		{[]string{"-old", "a", "-new", "b", good, good}, "not both"},
		{[]string{"-old", "a", "-new", ","}, "-new: no nodes"},
		{[]string{"-old", "a", "-new", "#b"}, "-new: no nodes"},
		{[]string{"-algo", "nosuch", good, good}, "unknown algorithm \"nosuch\" (want mod-N, ring, "},
		{[]string{"-algo", "modn", "-old", "a", "-new", "a=2"}, "weight"},
		{[]string{"-top", "-1", good, good}, "-top"},
	} {
		_, errOut := runCode(t, 2, append([]string{"diff"}, tc.args...)...)
		assert.Contains(t, errOut, tc.msg, "diff %v", tc.args)
	}
}

// A list item that is only a comment adds no node (the seed added one
// with an empty ID).
func TestDiffListComment(t *testing.T) {
	var rep diffReport
	runJSON(t, &rep, "diff", "-old", "a,#x", "-new", "a,b")
	assert.Equal(t, 1, rep.OldNodes)
}

func TestNaturalCompare(t *testing.T) {
	ordered := []string{"a", "a1", "a2", "a02b", "a10", "b", "node-2", "node-10", "node-10x"}
	for i := range ordered {
		for j := range ordered {
			got := naturalCompare(ordered[i], ordered[j])
			assert.Equal(t, i < j, got < 0, "naturalCompare(%q, %q) = %d", ordered[i], ordered[j], got)
			assert.Equal(t, i == j, got == 0, "naturalCompare(%q, %q) = %d", ordered[i], ordered[j], got)
		}
	}
}

// 10,000 -> 20,000 jump nodes would be 100 million flows: diff reports
// the exact figures without them.
func TestDiffLargeSkipsFlows(t *testing.T) {
	members := func(n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "node-%d\n", i)
		}
		return b.String()
	}
	old, new := writeFile(t, "old.txt", members(10000)), writeFile(t, "new.txt", members(20000))
	var rep diffReport
	runJSON(t, &rep, "diff", "-algo", "jump", old, new)
	assert.True(t, rep.Exact)
	assert.False(t, rep.Listed)
	assert.NotNil(t, rep.Flows)
	assert.Empty(t, rep.Flows)
	assert.InDelta(t, 0.5, rep.Moved, 1e-12)
	assert.Equal(t, "50.00%", percent(rep.Moved))
	assert.Zero(t, rep.Between)
	assert.Len(t, rep.Shares, 20000)
	out, _ := runCode(t, 0, "diff", "-algo", "jump", old, new)
	assert.Contains(t, out, "moved: 50.00% of keys; between nodes in both memberships: 0.00%\n")
	assert.Contains(t, out, "\nflows not listed: 10,000 x 20,000 node pairs (over 4,194,304); the figures above are exact\n")
	js, _ := runCode(t, 0, "diff", "-json", "-algo", "jump", old, new)
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(js), &doc))
	assert.Equal(t, false, doc["flows_listed"])
	assert.Equal(t, []any{}, doc["flows"])

	rep = diffReport{}
	runJSON(t, &rep, "diff", "-algo", "jump", "-old", "a,b", "-new", "a,b,c")
	assert.True(t, rep.Listed)
	assert.Len(t, rep.Flows, 2)
}
