package main

import (
	"math"
	"strconv"
	"testing"

	"github.com/keyplace/chash"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The worked example: 20 -> 30 nodes, 200k requests/s, 94% hits, origin
// 25k/s. One step of 10 puts about 74k/s on the origin; steps of two keep
// each step near 30k/s.
func TestPlanWorkedExample(t *testing.T) {
	var one planReport
	runJSON(t, &one, "plan", "-from", "20", "-to", "30", "-step", "10", "-rate", "200k", "-hit", "94%", "-origin", "25k")
	require.Len(t, one.Steps, 1)
	s := one.Steps[0]
	assert.InEpsilon(t, 74_667, s.OriginLoad, 0.001, "one step of 10: %+v", s)
	assert.True(t, s.Over)
	assert.InEpsilon(t, 0.94*2/3, s.HitRate, 1e-9)
	assert.InEpsilon(t, 1.0/3, s.Moved, 1e-9)
	assert.InEpsilon(t, 12_000, one.Steady, 1e-9)
	assert.False(t, one.OverStart)

	var two planReport
	runJSON(t, &two, "plan", "-from", "20", "-to", "30", "-step", "2", "-rate", "200000", "-hit", "0.94", "-origin", "25000")
	require.Len(t, two.Steps, 5)
	s = two.Steps[0]
	assert.InEpsilon(t, 2.0/22, s.Moved, 1e-9)
	assert.InEpsilon(t, 200_000*(1-0.94*20/22), s.OriginLoad, 1e-9)
	for _, s := range two.Steps {
		assert.True(t, s.OriginLoad > 24_000 && s.OriginLoad < 30_000, "step %+v: want near 30k/s", s)
		assert.Equal(t, s.OriginLoad > 25_000, s.Over, "step %+v: flagged when over 25k", s)
	}
	// mod-N at once: h%20 == h%30 for 20 residues in 60.
	assert.InEpsilon(t, 2.0/3, two.ModN.Moved, 1e-9)
	assert.True(t, two.ModN.Over)
	// One node at a time peaks at 20 -> 21: 200k x (1 - 0.94 x 20/21).
	assert.Equal(t, 1, two.SafeStep)
	assert.InEpsilon(t, 200_000*(1-0.94*20/21), two.SafePeak, 1e-9)
}

func TestPlanMeasuredAndShrink(t *testing.T) {
	var rep planReport
	runJSON(t, &rep, "plan", "-algo", "ring", "-step", "10")
	s := rep.Steps[0]
	assert.InEpsilon(t, 1.0/3, s.Moved, 0.1, "ring, one step of 10: %+v", s)
	assert.InEpsilon(t, 74_000, s.OriginLoad, 0.05, "ring, one step of 10: %+v", s)

	runJSON(t, &rep, "plan", "-from", "12", "-to", "7", "-step", "2", "-origin", "1M")
	require.Len(t, rep.Steps, 3)
	var from []int
	for _, s := range rep.Steps {
		from = append(from, s.From)
		assert.False(t, s.Over, "step %+v over a capacity of 1M/s", s)
	}
	assert.Equal(t, []int{12, 10, 8}, from)
	assert.Equal(t, 7, rep.Steps[2].To)
	assert.InEpsilon(t, 2.0/12, rep.Steps[0].Moved, 1e-9)
	assert.Equal(t, 5, rep.SafeStep, "all 5 at once")
}

func TestPlanText(t *testing.T) {
	out, _ := runCode(t, 0, "plan")
	for _, want := range []string{"grow 20 -> 30 nodes, 2 at a time", "29,091/s  OVER 1.16x", "74,667/s  OVER 2.99x", "at a time (peak 20,952/s)"} {
		assert.Contains(t, out, want)
	}
	// Every step over, though the origin copes before the first.
	out, _ = runCode(t, 0, "plan", "-origin", "13k")
	assert.Contains(t, out, "No step size keeps the origin within 13,000/s: warm new nodes before they take traffic.")
}

// An origin over capacity before any step is said to be: no step size
// helps, and warming new nodes would not either.
func TestPlanOverBeforeStart(t *testing.T) {
	out, _ := runCode(t, 0, "plan", "-origin", "1k")
	assert.Contains(t, out, "The origin is over capacity before any step: at 94.0% hits it serves 12,000/s of its 1,000/s.\n"+
		"No step size helps: add origin capacity or raise the hit rate first.\n")
	assert.NotContains(t, out, "warm new nodes")

	var rep planReport
	runJSON(t, &rep, "plan", "-origin", "11999", "-algo", "ring")
	assert.True(t, rep.OverStart)
	assert.InEpsilon(t, 12_000, rep.Steady, 1e-9)
	assert.Equal(t, 0, rep.SafeStep)
	runJSON(t, &rep, "plan", "-origin", "12000")
	assert.False(t, rep.OverStart, "exactly at capacity is within it")
}

// Shrinking adds no nodes to warm: the advice is about the leaving
// nodes' keys.
func TestPlanShrinkAdvice(t *testing.T) {
	out, _ := runCode(t, 0, "plan", "-from", "30", "-to", "20", "-step", "10", "-origin", "13k")
	assert.Contains(t, out, "No step size keeps the origin within 13,000/s: copy the leaving nodes' keys to the others first.")
	assert.NotContains(t, out, "warm new nodes")
}

// -rate and -origin beyond 1000G would print as negative int64s; the
// seed printed -9,223,372,036,854,775,808 requests/s and exited 0.
func TestPlanHugeRate(t *testing.T) {
	out, errOut := runCode(t, 2, "plan", "-rate", "1e300")
	assert.Empty(t, out)
	assert.Contains(t, errOut, "chash plan: -rate 1e+300: want 1 to 1000G requests/s")
	var rep planReport
	runJSON(t, &rep, "plan", "-rate", "1000G", "-origin", "1000G")
	out, _ = runCode(t, 0, "plan", "-rate", "1000G", "-origin", "1000G")
	assert.Contains(t, out, "1,000,000,000,000 requests/s")
	assert.NotRegexp(t, `-\d`, out, "a negative figure")
}

// A step larger than any change is one step; the seed's step arithmetic
// overflowed at the largest int and the plan never ended.
func TestPlanHugeStep(t *testing.T) {
	var rep planReport
	runJSON(t, &rep, "plan", "-step", strconv.Itoa(math.MaxInt))
	require.Len(t, rep.Steps, 1)
	assert.Equal(t, 20, rep.Steps[0].From)
	assert.Equal(t, 30, rep.Steps[0].To)
	runJSON(t, &rep, "plan", "-from", "30", "-to", "1", "-step", strconv.Itoa(math.MaxInt))
	require.Len(t, rep.Steps, 1)
	assert.Equal(t, 1, rep.Steps[0].To)
	assert.Equal(t, 0, stepsOf(5, 0))
	assert.Equal(t, 1, stepsOf(5, math.MaxInt))
	assert.Equal(t, 3, stepsOf(5, 2))
}

// A size the library rejects is bad input found before any step is
// measured, not a failure after.
func TestPlanSizeCheckedUpFront(t *testing.T) {
	_, errOut := runCode(t, 2, "plan", "-algo", "ring", "-from", "1", "-to", "1000", "-vnodes", "65536")
	assert.Contains(t, errOut, "chash plan: ring of 1000 nodes: "+chash.ErrTooLarge.Error())
}

// A plan of many single steps keeps two placers, not one per node count
// (the seed kept 1,000 rings, 1.8 GB, for 1 -> 1000), and deriving each
// ring from the last gives the ring NewRing builds.
func TestPlanKeepsTwoPlacers(t *testing.T) {
	f := &planFlags{from: 1, to: 60, step: 1, rate: 200_000, origin: 25_000, hit: 0.94, algo: "ring"}
	require.NoError(t, f.check())
	pl, err := newPlanner(f)
	require.NoError(t, err)
	pl.prog = newProgress(nopWriter{}, false)
	built := 0
	build := pl.placers.algo.build
	pl.placers.algo.build = func(n []chash.Node) (chash.Placer, error) { built++; return build(n) }
	rep, err := pl.plan(f.from, f.to, f.step, 200_000, 0.94, 25_000)
	pl.prog.finish()
	require.NoError(t, err)
	require.Len(t, rep.Steps, 59)
	held := 0
	for _, p := range pl.placers.p {
		if p != nil {
			held++
		}
	}
	assert.LessOrEqual(t, held, 2)
	assert.LessOrEqual(t, built, 2, "rings built from scratch rather than derived")
	for i, s := range rep.Steps {
		a, err := chash.NewRing(synthNodes(s.From))
		require.NoError(t, err)
		b, err := chash.NewRing(synthNodes(s.To))
		require.NoError(t, err)
		d, err := chash.DiffSummary(a, b)
		require.NoError(t, err)
		require.Equal(t, d.Moved, s.Moved, "step %d (%d -> %d): derived rings move differently", i+1, s.From, s.To)
	}
	for n := 60; n >= 55; n-- { // back down: Remove
		p, err := pl.placers.get(n)
		require.NoError(t, err)
		fresh, err := chash.NewRing(synthNodes(n))
		require.NoError(t, err)
		d, err := chash.Diff(p, fresh)
		require.NoError(t, err)
		assert.Zero(t, d.Moved, "%d nodes: derived ring differs from NewRing", n)
	}
}

type nopWriter struct{}

func (nopWriter) Write(p []byte) (int, error) { return len(p), nil }

func TestModNMoved(t *testing.T) {
	for _, tc := range []struct {
		n, m int
		want float64
	}{{10, 11, 10.0 / 11}, {4, 5, 0.8}, {20, 30, 2.0 / 3}, {11, 10, 10.0 / 11}, {10, 12, 1 - 10.0/60}} {
		assert.InEpsilon(t, tc.want, modNMoved(tc.n, tc.m), 1e-12, "modNMoved(%d, %d)", tc.n, tc.m)
	}
}

func TestPlanLimits(t *testing.T) {
	var rep planReport
	runJSON(t, &rep, "plan", "-algo", "ring", "-from", "100", "-to", "1000", "-step", "100", "-origin", "50k")
	assert.Equal(t, -1, rep.SafeStep, "ring 100 -> 1000: safe step not searched")
	assert.Len(t, rep.Steps, 9)
	out, _ := runCode(t, 0, "plan", "-algo", "ring", "-from", "100", "-to", "1000", "-step", "100")
	assert.Contains(t, out, "not searched")
	runJSON(t, &rep, "plan", "-from", "1", "-to", "1000000", "-step", "1000")
	assert.Equal(t, 0, rep.SafeStep, "1 -> 1M")
	assert.Len(t, rep.Steps, 1000)
	_, errOut := runCode(t, 2, "plan", "-from", "1", "-to", "5000", "-step", "1")
	assert.Contains(t, errOut, "4999 steps")
}
