package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// runOK runs the command and fails the test unless it exits with want.
func runCode(t *testing.T, want int, args ...string) (stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	if code := run(args, &out, &errOut); code != want {
		t.Fatalf("chash %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, want, out.String(), errOut.String())
	}
	return out.String(), errOut.String()
}

func runJSON(t *testing.T, v any, args ...string) {
	t.Helper()
	out, _ := runCode(t, 0, append(args, "-json")...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("chash %s -json: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"help"}, {"compare", "-h"}, {"plan", "-h"}, {"diff", "-help"}} {
		out, errOut := runCode(t, 0, args...)
		if !strings.Contains(out, "usage:") || !strings.Contains(out, "example") || errOut != "" {
			t.Errorf("chash %v: help lacks usage or examples, or wrote to stderr %q:\n%s", args, errOut, out)
		}
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
		{[]string{"compare", "-vnodes", "-3"}, "WithVnodes"},
		{[]string{"compare", "extra"}, "unexpected argument"},
		{[]string{"plan", "-nosuchflag"}, "not defined: -nosuchflag\nrun \"chash plan -h\" for help"},
	} {
		_, errOut := runCode(t, 2, tc.args...)
		if !strings.Contains(errOut, tc.msg) {
			t.Errorf("chash %v: stderr %q lacks %q", tc.args, errOut, tc.msg)
		}
	}
}

func TestFlagsAfterArguments(t *testing.T) {
	out, _ := runCode(t, 0, "diff", "testdata/nodes10.txt", "-top", "1", "testdata/nodes11.txt")
	if !strings.Contains(out, "(1 of 10)") {
		t.Errorf("-top between the files ignored:\n%s", out)
	}
	_, errOut := runCode(t, 2, "diff", "--", "-json", "testdata/nodes11.txt")
	if !strings.Contains(errOut, "-json") {
		t.Errorf("after --, -json should be a file name: %q", errOut)
	}
}
