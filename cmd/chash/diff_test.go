package main

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// 10 -> 11 ring nodes: every moved key goes to the new node.
func TestDiffAddOneRingNode(t *testing.T) {
	var rep diffReport
	runJSON(t, &rep, "diff", "testdata/nodes10.txt", "testdata/nodes11.txt")
	if !rep.Exact || rep.OldNodes != 10 || rep.NewNodes != 11 {
		t.Fatalf("report %+v", rep)
	}
	var toNew float64
	for _, f := range rep.Flows {
		if f.To != "node-10" {
			t.Errorf("flow %+v does not go to the new node", f)
		}
		toNew += f.Fraction
	}
	if len(rep.Flows) != 10 || rep.Between != 0 || math.Abs(toNew-rep.Moved) > 1e-12 {
		t.Errorf("%d flows, %v between old nodes, %v to node-10 of %v moved", len(rep.Flows), rep.Between, toNew, rep.Moved)
	}
	if math.Abs(rep.Moved*11-1) > 0.1 {
		t.Errorf("moved %v, want about 1/11", rep.Moved)
	}
	last := rep.Shares[len(rep.Shares)-1]
	if last.ID != "node-10" || last.Old != 0 || math.Abs(last.New-rep.Moved) > 1e-12 {
		t.Errorf("new node's share %+v", last)
	}
}

func TestDiffText(t *testing.T) {
	out, _ := runCode(t, 0, "diff", "-top", "3", "testdata/nodes10.txt", "testdata/nodes11.txt")
	for _, want := range []string{"ring, 10 -> 11 nodes: exact", "moved: 9.11% of keys; between nodes in both memberships: 0.00%",
		"node-10          -      9.11%  +9.11%", "(3 of 10)", "node-9  node-10"} {
		if !strings.Contains(out, want) {
			t.Errorf("diff output lacks %q:\n%s", want, out)
		}
	}
}

func TestDiffListsWeightsAndSampling(t *testing.T) {
	var rep diffReport
	runJSON(t, &rep, "diff", "-vnodes", "1000", "-old", "a,b", "-new", "a,b=3")
	// b goes from 1/2 to 3/4: a quarter of the keys move, all a -> b.
	if math.Abs(rep.Moved-0.25) > 0.02 || len(rep.Flows) != 1 || rep.Flows[0].From != "a" {
		t.Errorf("reweighting b to 3: %+v", rep)
	}
	runJSON(t, &rep, "diff", "-algo", "modn", "testdata/nodes10.txt", "testdata/nodes11.txt")
	if rep.Exact || rep.Samples == 0 || math.Abs(rep.Moved-10.0/11) > 0.005 {
		t.Errorf("mod-N: exact %v, samples %d, moved %v", rep.Exact, rep.Samples, rep.Moved)
	}
	runJSON(t, &rep, "diff", "testdata/weighted.txt", "testdata/weighted.txt")
	if rep.Moved != 0 || len(rep.Flows) != 0 || len(rep.Shares) != 3 {
		t.Errorf("same file twice: %+v", rep)
	}
}

func TestDiffBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := "testdata/nodes10.txt"
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{good}, "want two membership files"},
		{[]string{good, filepath.Join(dir, "missing.txt")}, "missing.txt"},
		{[]string{good, write("weight.txt", "a 1\nb heavy\n")}, "weight.txt:2: weight \"heavy\""},
		{[]string{good, write("fields.txt", "a 1 2\n")}, "fields.txt:1"},
		{[]string{good, write("empty.txt", "# nobody\n\n")}, "no nodes"},
		{[]string{good, write("dup.txt", "a\na\n")}, "duplicate node ID"},
		{[]string{good, write("neg.txt", "a -1\n")}, "want a number >= 0"},
		{[]string{"-old", "a"}, "both -old and -new"},
		{[]string{"-old", "a", "-new", "b", good, good}, "not both"},
		{[]string{"-old", "a", "-new", ","}, "-new: no nodes"},
		{[]string{"-algo", "nosuch", good, good}, "unknown or unbuilt algorithm"},
		{[]string{"-algo", "modn", "-old", "a", "-new", "a=2"}, "weight"},
		{[]string{"-top", "-1", good, good}, "-top"},
	} {
		_, errOut := runCode(t, 2, append([]string{"diff"}, tc.args...)...)
		if !strings.Contains(errOut, tc.msg) {
			t.Errorf("diff %v: stderr %q lacks %q", tc.args, errOut, tc.msg)
		}
	}
}

func TestNaturalCompare(t *testing.T) {
	ordered := []string{"a", "a1", "a2", "a02b", "a10", "b", "node-2", "node-10", "node-10x"}
	for i := range ordered {
		for j := range ordered {
			got := naturalCompare(ordered[i], ordered[j])
			if (i < j) != (got < 0) || (i == j) != (got == 0) {
				t.Errorf("naturalCompare(%q, %q) = %d", ordered[i], ordered[j], got)
			}
		}
	}
}
