package main

import (
	"math"
	"strings"
	"testing"
)

func near(got, want, rel float64) bool { return math.Abs(got/want-1) <= rel }

// The worked example: 20 -> 30 nodes, 200k requests/s, 94% hits, origin
// 25k/s. One step of 10 puts about 74k/s on the origin; steps of two keep
// each step near 30k/s.
func TestPlanWorkedExample(t *testing.T) {
	var one planReport
	runJSON(t, &one, "plan", "-from", "20", "-to", "30", "-step", "10", "-rate", "200k", "-hit", "94%", "-origin", "25k")
	if len(one.Steps) != 1 {
		t.Fatalf("one step of 10: %+v", one.Steps)
	}
	s := one.Steps[0]
	if !near(s.OriginLoad, 74_000, 0.02) || !s.Over || !near(s.HitRate, 0.63, 0.01) || !near(s.Moved, 1.0/3, 1e-9) {
		t.Errorf("one step of 10: %+v, want about 74k/s over capacity at a 63%% hit rate", s)
	}
	var two planReport
	runJSON(t, &two, "plan", "-from", "20", "-to", "30", "-step", "2", "-rate", "200000", "-hit", "0.94", "-origin", "25000")
	if len(two.Steps) != 5 {
		t.Fatalf("steps of two: %+v", two.Steps)
	}
	if s := two.Steps[0]; !near(s.OriginLoad, 30_000, 0.04) || !near(s.Moved, 2.0/22, 1e-9) || !near(1-s.HitRate, 0.15, 0.04) {
		t.Errorf("first step of two: %+v, want about 30k/s, 9%% moved, 15%% misses", s)
	}
	for _, s := range two.Steps {
		if s.OriginLoad < 24_000 || s.OriginLoad > 30_000 || s.Over != (s.OriginLoad > 25_000) {
			t.Errorf("step %+v: want near 30k/s, flagged when over 25k", s)
		}
	}
	// mod-N at once: h%20 == h%30 for 20 residues in 60.
	if !near(two.ModN.Moved, 2.0/3, 1e-9) || !two.ModN.Over {
		t.Errorf("mod-N at once: %+v", two.ModN)
	}
	// One node at a time peaks at 20 -> 21: 200k x (1 - 0.94 x 20/21).
	if two.SafeStep != 1 || !near(two.SafePeak, 200_000*(1-0.94*20/21), 1e-9) {
		t.Errorf("safe step %d peaking at %.0f", two.SafeStep, two.SafePeak)
	}
}

func TestPlanMeasuredAndShrink(t *testing.T) {
	var rep planReport
	runJSON(t, &rep, "plan", "-algo", "ring", "-step", "10")
	if s := rep.Steps[0]; !near(s.Moved, 1.0/3, 0.1) || !near(s.OriginLoad, 74_000, 0.05) {
		t.Errorf("ring, one step of 10: %+v", s)
	}
	runJSON(t, &rep, "plan", "-from", "12", "-to", "7", "-step", "2", "-origin", "1M")
	var nodes []int
	for _, s := range rep.Steps {
		nodes = append(nodes, s.From)
		if s.Over {
			t.Errorf("step %+v over a capacity of 1M/s", s)
		}
	}
	if len(nodes) != 3 || nodes[2] != 8 || rep.Steps[2].To != 7 || !near(rep.Steps[0].Moved, 2.0/12, 1e-9) {
		t.Errorf("12 -> 7 in twos: %+v", rep.Steps)
	}
	if rep.SafeStep != 5 {
		t.Errorf("safe step %d, want all 5 at once", rep.SafeStep)
	}
}

func TestPlanText(t *testing.T) {
	out, _ := runCode(t, 0, "plan")
	for _, want := range []string{"grow 20 -> 30 nodes, 2 at a time", "29,091/s  OVER 1.16x", "74,667/s  OVER 2.99x", "at a time (peak 20,952/s)"} {
		if !strings.Contains(out, want) {
			t.Errorf("plan output lacks %q:\n%s", want, out)
		}
	}
	out, _ = runCode(t, 0, "plan", "-origin", "1k")
	if !strings.Contains(out, "No step size keeps the origin") {
		t.Errorf("origin below the steady load: %s", out)
	}
}

func TestPlanBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"-hit", "94"}, {"-hit", "x"}, {"-rate", "fast"}, {"-rate", "0"}, {"-origin", "-5"},
		{"-from", "5", "-to", "5"}, {"-from", "0"}, {"-step", "0"}, {"-algo", "nosuch"},
		{"-algo", "ring", "-to", "20000"}, {"stray"},
	} {
		_, errOut := runCode(t, 2, append([]string{"plan"}, args...)...)
		if !strings.Contains(errOut, "chash plan") && !strings.Contains(errOut, "invalid value") {
			t.Errorf("plan %v: unclear message %q", args, errOut)
		}
	}
}

func TestModNMoved(t *testing.T) {
	for _, tc := range []struct {
		n, m int
		want float64
	}{{10, 11, 10.0 / 11}, {4, 5, 0.8}, {20, 30, 2.0 / 3}, {11, 10, 10.0 / 11}, {10, 12, 1 - 10.0/60}} {
		if got := modNMoved(tc.n, tc.m); !near(got, tc.want, 1e-12) {
			t.Errorf("modNMoved(%d, %d) = %v, want %v", tc.n, tc.m, got, tc.want)
		}
	}
}

func TestPlanLimits(t *testing.T) {
	var rep planReport
	runJSON(t, &rep, "plan", "-algo", "ring", "-from", "100", "-to", "1000", "-step", "100", "-origin", "50k")
	if rep.SafeStep != -1 || len(rep.Steps) != 9 {
		t.Errorf("ring 100 -> 1000: %d steps, safe step %d (want 9, not searched)", len(rep.Steps), rep.SafeStep)
	}
	out, _ := runCode(t, 0, "plan", "-algo", "ring", "-from", "100", "-to", "1000", "-step", "100")
	if !strings.Contains(out, "not searched") {
		t.Errorf("unsearched safe step not said:\n%s", out)
	}
	runJSON(t, &rep, "plan", "-from", "1", "-to", "1000000", "-step", "1000")
	if rep.SafeStep != 0 || len(rep.Steps) != 1000 {
		t.Errorf("1 -> 1M: %d steps, safe step %d", len(rep.Steps), rep.SafeStep)
	}
	_, errOut := runCode(t, 2, "plan", "-from", "1", "-to", "5000", "-step", "1")
	if !strings.Contains(errOut, "4999 steps") {
		t.Errorf("too many steps: %q", errOut)
	}
}
