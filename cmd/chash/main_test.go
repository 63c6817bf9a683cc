package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runCode runs the command and fails the test unless it exits with want.
func runCode(t *testing.T, want int, args ...string) (stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(args, &out, &errOut)
	require.Equal(t, want, code, "chash %s: exit status\nstdout:\n%s\nstderr:\n%s",
		strings.Join(args, " "), out.String(), errOut.String())
	return out.String(), errOut.String()
}

// runJSON runs the command with -json and decodes its output into v.
func runJSON(t *testing.T, v any, args ...string) {
	t.Helper()
	out, _ := runCode(t, 0, append(args, "-json")...)
	require.NoError(t, json.Unmarshal([]byte(out), v), "chash %s -json:\n%s", strings.Join(args, " "), out)
}

func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"help"}, {"compare", "-h"}, {"plan", "-h"}, {"diff", "-help"}} {
		out, errOut := runCode(t, 0, args...)
		assert.Contains(t, out, "usage:", "chash %v", args)
		assert.Contains(t, out, "example", "chash %v", args)
		assert.Empty(t, errOut, "chash %v wrote to stderr", args)
	}
}

// The help and the unknown-command message come from the table, so a
// command added to it is listed and dispatched.
func TestCommandTable(t *testing.T) {
	help, _ := runCode(t, 0, "-h")
	_, errOut := runCode(t, 2, "frobnicate")
	assert.Contains(t, errOut, "unknown command \"frobnicate\"")
	for i, c := range commands {
		use := "chash " + c.name + " " + c.args
		if i == 0 {
			use = "chash [" + c.name + "] " + c.args
		}
		assert.Regexp(t, regexp.MustCompile(`(?m)^  `+regexp.QuoteMeta(use)+` +`+regexp.QuoteMeta(c.summary)+`$`), help)
		assert.Contains(t, errOut, c.name)
		out, _ := runCode(t, 0, c.name, "-h")
		assert.Contains(t, out, "usage: chash "+c.name, "chash %s -h", c.name)
	}
}

func TestBadCommandLines(t *testing.T) {
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"frobnicate"}, "unknown command"},
		{[]string{"-nodes", "x"}, "invalid value"},
		{[]string{"compare", "-nodes", "1"}, "-nodes 1"},
		{[]string{"compare", "-keys", "0"}, "-keys"},
		{[]string{"compare", "-keys", "1.5"}, "whole number"},
		{[]string{"compare", "-points", "0"}, "-points"},
		{[]string{"compare", "-vnodes", "-3"}, "-vnodes -3: want 0 (the default) or 1 to 65536"},
		{[]string{"compare", "extra"}, "unexpected argument"},
		{[]string{"plan", "-nosuchflag"}, "not defined: -nosuchflag\nrun \"chash plan -h\" for help"},
	} {
		_, errOut := runCode(t, 2, tc.args...)
		assert.Contains(t, errOut, tc.msg, "chash %v", tc.args)
	}
}

func TestFlagsAfterArguments(t *testing.T) {
	out, _ := runCode(t, 0, "diff", "testdata/nodes10.txt", "-top", "1", "testdata/nodes11.txt")
	assert.Contains(t, out, "(1 of 10)", "-top between the files ignored")
	_, errOut := runCode(t, 2, "diff", "--", "-json", "testdata/nodes11.txt")
	assert.Contains(t, errOut, "-json", "after --, -json should be a file name")
}

// flagSets returns every command's flag set.
func flagSets() []*flag.FlagSet {
	c, _ := newCompareFlags(io.Discard)
	p, _ := newPlanFlags(io.Discard)
	d, _ := newDiffFlags(io.Discard)
	return []*flag.FlagSet{c, p, d}
}

// Every numeric flag's help gives its range.
func TestNumericFlagsDocumented(t *testing.T) {
	rng := regexp.MustCompile(`\d[\d,.]*[kMG]? to \d|\d or more|from \d`)
	n := 0
	for _, fs := range flagSets() {
		fs.VisitAll(func(f *flag.Flag) {
			switch fmt.Sprintf("%T", f.Value) {
			case "*flag.intValue", "*flag.uint64Value", "*main.quantity", "*main.fraction":
				n++
				assert.Regexp(t, rng, f.Usage, "%s -%s: no range in its help", fs.Name(), f.Name)
			}
		})
	}
	assert.GreaterOrEqual(t, n, 13, "numeric flags found")
}

// Every numeric flag out of its range is a usage error (exit status 2)
// that names the flag, found before any work.
func TestNumericFlagRanges(t *testing.T) {
	for _, args := range [][]string{
		{"compare", "-nodes", "1"}, {"compare", "-nodes", "10001"},
		{"compare", "-keys", "0"}, {"compare", "-keys", "100000001"}, {"compare", "-keys", "2.5"},
		{"compare", "-points", "0"}, {"compare", "-points", "65537"},
		{"compare", "-vnodes", "-1"}, {"compare", "-vnodes", "65537"}, {"compare", "-seed", "-1"},
		{"plan", "-from", "0"}, {"plan", "-from", "1000001"}, {"plan", "-to", "0"}, {"plan", "-to", "1000001"},
		{"plan", "-algo", "ring", "-to", "1001"}, {"plan", "-step", "0"}, {"plan", "-step", "-2"},
		{"plan", "-rate", "0"}, {"plan", "-rate", "0.5"}, {"plan", "-rate", "1e300"}, {"plan", "-rate", "1001G"},
		{"plan", "-origin", "0"}, {"plan", "-origin", "2e12"}, {"plan", "-hit", "1.01"}, {"plan", "-hit", "-1%"},
		{"plan", "-algo", "ring", "-vnodes", "70000"}, {"plan", "-algo", "ring", "-seed", "x"},
		{"diff", "-top", "-1", "-old", "a", "-new", "b"}, {"diff", "-vnodes", "65537", "-old", "a", "-new", "b"},
	} {
		_, errOut := runCode(t, 2, args...)
		flagName := args[len(args)-2]
		if args[0] == "diff" {
			flagName = args[1]
		}
		assert.Contains(t, errOut, flagName, "chash %v", args)
	}
}

// Every command's -json output has lower-case snake_case keys, no number
// written as a string (walkJSON; the seed wrote plan's step numbers as
// strings), and every key named in the command's help.
func TestJSONSchemas(t *testing.T) {
	for _, args := range [][]string{
		{"compare", "-keys", "1000", "-points", "1"},
		{"plan"}, {"plan", "-algo", "ring", "-origin", "1k"},
		{"diff", "-old", "a,b", "-new", "a,b,c"},
	} {
		var doc map[string]any
		runJSON(t, &doc, args...)
		require.NotEmpty(t, doc, "chash %v", args)
		walkJSON(t, args[0], doc)
		help, _ := runCode(t, 0, args[0], "-h")
		for _, k := range jsonKeys(doc) {
			assert.Regexp(t, `\b`+k+`\b`, help, "chash %s -h does not document %q", args[0], k)
		}
	}
}

// jsonKeys returns every key in v, at any depth.
func jsonKeys(v any) []string {
	var keys []string
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			keys = append(append(keys, k), jsonKeys(e)...)
		}
	case []any:
		for _, e := range v {
			keys = append(keys, jsonKeys(e)...)
		}
	}
	return keys
}

// TestPackageDocListsCommands: the package doc's usage block names every
// subcommand of the table, so that a new one cannot be left out of it.
func TestPackageDocListsCommands(t *testing.T) {
	src, err := os.ReadFile("main.go")
	require.NoError(t, err)
	doc, _, _ := strings.Cut(string(src), "package main")
	for _, c := range commands {
		assert.Regexp(t, `//\tchash \[?`+c.name+`\b`, doc, "the package doc's usage omits %q", c.name)
	}
}
