package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/keyplace/chash"
)

const planHelp = `usage: chash plan [flags]

A rollout plan for growing or shrinking a cache fleet from -from to -to
nodes, -step nodes at a time. For each step: the fraction of keys that
move, the hit rate right after it, and the load on the origin behind the
cache, flagged OVER when it exceeds -origin. Then the same change made at
once, with consistent placement and with mod-N, and the largest step that
keeps the origin within its capacity.

The model: right after a step the keys that moved miss, so
  hit rate    = hit x (1 - moved)
  origin load = rate x (1 - hit rate)
and the cache re-warms to -hit before the next step. -algo ideal (the
default) takes moved as the least any consistent placement moves,
|change|/larger node count; naming an algorithm measures it instead, on
nodes node-0, node-1, ... If the origin is over capacity before any step
(rate x (1 - hit) > origin), the plan says so: no step size can help.

The defaults are the worked example of growing a fleet from 20 to 30 nodes.

-json prints one object: the inputs (algorithm, from, to, step, rate,
hit_rate, origin_capacity), steady_origin_load and over_before_start;
steps, at_once and mod_n_at_once, each step as {step, from, to, moved,
hit_rate, origin_load, over_capacity} (step is 0 in the last two); and
safe_step (0: none; -1: not searched) with safe_step_peak_load. Fractions
are numbers from 0 to 1, loads requests/s.

examples:
  chash plan
  chash plan -from 20 -to 30 -step 10
  chash plan -from 12 -to 8 -step 1 -rate 50k -hit 0.95 -origin 10k -algo ring
  chash plan -algo gomemcache -switch-to ring -from 20 -rate 200k -hit 0.94 -origin 20k

flags:
`

type planStep struct {
	N          int     `json:"step"` // 1, 2, ...; 0 in at_once and mod_n_at_once
	From       int     `json:"from"`
	To         int     `json:"to"`
	Moved      float64 `json:"moved"`
	HitRate    float64 `json:"hit_rate"`
	OriginLoad float64 `json:"origin_load"`
	Over       bool    `json:"over_capacity"`
}

type planReport struct {
	Algorithm string     `json:"algorithm"`
	From      int        `json:"from"`
	To        int        `json:"to"`
	Step      int        `json:"step"`
	Rate      float64    `json:"rate"`
	Hit       float64    `json:"hit_rate"`
	Origin    float64    `json:"origin_capacity"`
	Steady    float64    `json:"steady_origin_load"` // rate x (1 - hit), before any step
	OverStart bool       `json:"over_before_start"`  // Steady > Origin: no step size helps
	Steps     []planStep `json:"steps"`
	AtOnce    planStep   `json:"at_once"`
	ModN      planStep   `json:"mod_n_at_once"`
	SafeStep  int        `json:"safe_step"` // 0: none; -1: not searched
	SafePeak  float64    `json:"safe_step_peak_load"`
}

// Limits that keep a plan quick and its figures printable. Measured
// algorithms build a placer per node count and diff each pair of counts a
// plan visits.
const (
	maxSteps         = 1000
	maxIdealNodes    = 1_000_000
	maxMeasuredNodes = 1000
	maxMeasuredPairs = 100 // for the search of the largest safe step
	maxRate          = 1e12
)

// planFlags are plan's command line.
type planFlags struct {
	from, to, step int
	rate, origin   quantity
	hit            fraction
	algo, switchTo string
	json           bool
	lib            libFlags
}

func newPlanFlags(stderr io.Writer) (*flag.FlagSet, *planFlags) {
	fs := newFlags("plan", stderr)
	f := &planFlags{rate: 200_000, origin: 25_000, hit: 0.94}
	nodes := fmt.Sprintf("1 to %s (1 to %s with a measured -algo)", commas(maxIdealNodes), commas(maxMeasuredNodes))
	fs.IntVar(&f.from, "from", 20, "nodes now, "+nodes)
	fs.IntVar(&f.to, "to", 30, "nodes wanted, "+nodes)
	fs.IntVar(&f.step, "step", 2, fmt.Sprintf("nodes added or removed per step, 1 or more (at most %s steps)", commas(maxSteps)))
	fs.Var(&f.rate, "rate", "requests per second reaching the cache, 1 to 1000G (200000, 200k)")
	fs.Var(&f.origin, "origin", "requests per second the origin can serve, 1 to 1000G")
	fs.Var(&f.hit, "hit", "steady hit rate, 0 to 1 (0.94 or 94%)")
	fs.StringVar(&f.algo, "algo", "ideal", "ideal, mod-N, or an algorithm of the library (ring, ...)")
	fs.StringVar(&f.switchTo, "switch-to", "", "instead of resizing, switch -from nodes from -algo to this placement")
	fs.BoolVar(&f.json, "json", false, "print JSON")
	f.lib.register(fs)
	return fs, f
}

// measured reports whether the plan measures an algorithm's movement
// rather than computing it.
func (f *planFlags) measured() bool {
	return f.algo != "ideal" && !strings.EqualFold(f.algo, "modn") && !strings.EqualFold(f.algo, modNName)
}

// check reports the first flag out of its range.
func (f *planFlags) check() error {
	limit := maxIdealNodes
	if f.measured() {
		limit = maxMeasuredNodes
	}
	for _, c := range []struct {
		name string
		n    int
	}{{"-from", f.from}, {"-to", f.to}} {
		if c.n < 1 || c.n > limit {
			return fmt.Errorf("%s %d: want a node count from 1 to %s", c.name, c.n, commas(int64(limit)))
		}
	}
	switch steps := stepsOf(abs(f.to-f.from), f.step); {
	case f.from == f.to:
		return fmt.Errorf("-from and -to are both %d: nothing to plan", f.from)
	case f.step < 1:
		return fmt.Errorf("-step %d: want at least 1", f.step)
	case steps > maxSteps:
		return fmt.Errorf("-step %d: %d steps; want at most %d", f.step, steps, maxSteps)
	}
	for _, c := range []struct {
		name string
		q    quantity
	}{{"-rate", f.rate}, {"-origin", f.origin}} {
		if !(c.q >= 1 && c.q <= maxRate) {
			return fmt.Errorf("%s %v: want 1 to 1000G requests/s", c.name, c.q)
		}
	}
	return nil
}

// planner computes movement for one algorithm, remembering each pair of
// node counts it has measured.
type planner struct {
	algo    string
	known   map[[2]int]float64
	placers placerCache
	prog    *progress
}

func runPlan(args []string, stdout, stderr io.Writer) int {
	fs, f := newPlanFlags(stderr)
	var pos []string
	if code, stop := parse(fs, args, planHelp, stdout, &pos); stop {
		return code
	}
	if len(pos) > 0 {
		return usageError(stderr, "plan", "unexpected argument %q", pos[0])
	}
	if f.switchTo != "" {
		return runPlanSwitch(f.algo, f.switchTo, f.from, float64(f.rate), float64(f.hit), float64(f.origin), f.lib, f.json, stdout, stderr)
	}
	if err := f.check(); err != nil {
		return usageError(stderr, "plan", "%v", err)
	}
	pl, err := newPlanner(f)
	if err != nil {
		return usageError(stderr, "plan", "%v", err)
	}
	pl.prog = startProgress(stderr)
	rep, err := pl.plan(f.from, f.to, f.step, float64(f.rate), float64(f.hit), float64(f.origin))
	pl.prog.finish()
	if err != nil {
		fmt.Fprintf(stderr, "chash plan: %v\n", err)
		return exitFail
	}
	if f.json {
		return writeJSON(stdout, rep)
	}
	rep.write(stdout)
	return exitOK
}

// newPlanner returns the planner of f's algorithm. For a measured one it
// builds the largest placer the plan needs, so that a size the library
// rejects is bad input, reported before any work.
func newPlanner(f *planFlags) (*planner, error) {
	pl := &planner{algo: f.algo, known: map[[2]int]float64{}}
	if !f.measured() {
		if pl.algo != "ideal" {
			pl.algo = modNName
		}
		return pl, nil
	}
	opts, err := f.lib.options()
	if err != nil {
		return nil, err
	}
	a, err := findAlgo(f.algo, opts)
	if err != nil {
		return nil, fmt.Errorf("-algo: %v", err)
	}
	pl.algo, pl.placers.algo = a.name, a
	if _, err := pl.placers.get(max(f.from, f.to)); err != nil {
		return nil, fmt.Errorf("%s of %d nodes: %v", a.name, max(f.from, f.to), err)
	}
	return pl, nil
}

// moved returns the fraction of keys that move from n to m nodes.
func (pl *planner) moved(n, m int) (float64, error) {
	switch pl.algo {
	case "ideal":
		return float64(abs(m-n)) / float64(max(n, m)), nil
	case modNName:
		return modNMoved(n, m), nil
	}
	if f, ok := pl.known[[2]int{n, m}]; ok {
		return f, nil
	}
	pl.prog.set("measuring %s %d -> %d", pl.algo, n, m)
	a, err := pl.placers.get(n)
	if err != nil {
		return 0, err
	}
	b, err := pl.placers.get(m)
	if err != nil {
		return 0, err
	}
	d, err := chash.DiffSummary(a, b)
	if err != nil {
		return 0, err
	}
	pl.known[[2]int{n, m}] = d.Moved
	return d.Moved, nil
}

// placerCache holds the two placers of node-0 ... node-(n-1) used last. A
// plan visits node counts in order, each step from the count the last one
// reached, so two are enough to build each count about once, and memory
// stays that of two placers however long the plan.
type placerCache struct {
	algo algo
	n    [2]int
	p    [2]chash.Placer // p[0] used last
}

func (c *placerCache) get(n int) (chash.Placer, error) {
	if c.p[1] != nil && c.n[1] == n {
		c.n[0], c.n[1], c.p[0], c.p[1] = c.n[1], c.n[0], c.p[1], c.p[0]
	}
	if c.p[0] != nil && c.n[0] == n {
		return c.p[0], nil
	}
	p, err := c.derive(n)
	if p == nil && err == nil {
		// The first placer is of the largest count a plan visits.
		p, err = c.algo.buildFor(synthNodes(n), n)
	}
	if err != nil {
		return nil, err
	}
	c.n[1], c.p[1] = c.n[0], c.p[0]
	c.n[0], c.p[0] = n, p
	return p, nil
}

// derive returns the ring of n nodes from a cached ring of n-1 or n+1, or
// nil if there is none. Ring.Add and Ring.Remove promise the ring NewRing
// would build, in O(P) instead of NewRing's O(P·log P): a plan of single
// steps then builds each ring in a few milliseconds. A stateful placement
// derives from the placer used last, whatever its count, as its fleet
// would (see algo.next).
func (c *placerCache) derive(n int) (chash.Placer, error) {
	if c.algo.stateful && c.p[0] != nil {
		return c.algo.next(c.p[0], synthNodes(n))
	}
	for i, p := range c.p {
		r, ok := p.(*chash.Ring)
		switch {
		case !ok:
		case c.n[i] == n-1:
			return r.Add(chash.Node{ID: "node-" + strconv.Itoa(n-1)})
		case c.n[i] == n+1:
			return r.Remove("node-" + strconv.Itoa(n))
		}
	}
	return nil, nil
}

// modNMoved is the fraction of hashes h with h%n != h%m: h%n == h%m holds
// for the min(n, m) residues r < min(n, m) modulo lcm(n, m).
func modNMoved(n, m int) float64 {
	g := gcd(n, m)
	lcm := float64(n/g) * float64(m)
	return 1 - float64(min(n, m))/lcm
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func abs(x int) int { return max(x, -x) }

// stepsOf returns the number of steps of at most step nodes that cover
// delta nodes, for any step >= 1 without overflow; 0 for a step < 1.
func stepsOf(delta, step int) int {
	if step < 1 || delta < 1 {
		return 0
	}
	return (delta-1)/step + 1
}

func (pl *planner) plan(from, to, step int, rate, hit, origin float64) (*planReport, error) {
	rep := &planReport{Algorithm: pl.algo, From: from, To: to, Step: step, Rate: rate, Hit: hit, Origin: origin,
		Steady: rate * (1 - hit)}
	rep.OverStart = over(rep.Steady, origin)
	effect := func(i, n, m int, moved float64) planStep {
		s := planStep{N: i, From: n, To: m, Moved: moved, HitRate: hit * (1 - moved)}
		s.OriginLoad = rate * (1 - s.HitRate)
		s.Over = over(s.OriginLoad, origin)
		return s
	}
	err := walkPlan(from, to, step, func(n, m int) error {
		moved, err := pl.moved(n, m)
		rep.Steps = append(rep.Steps, effect(len(rep.Steps)+1, n, m, moved))
		return err
	})
	if err != nil {
		return nil, err
	}
	moved, err := pl.moved(from, to)
	if err != nil {
		return nil, err
	}
	rep.AtOnce = effect(0, from, to, moved)
	rep.ModN = effect(0, from, to, modNMoved(from, to))
	switch {
	case rep.OverStart: // every step is over: none is safe
	case pl.searchable(from, to):
		rep.SafeStep, rep.SafePeak, err = pl.safeStep(from, to, effect)
	default:
		rep.SafeStep = -1
	}
	return rep, err
}

// over reports whether load exceeds capacity by more than rounding: 200k
// requests/s at 94% hits is 12,000/s, not 12,000.000000000002/s.
func over(load, capacity float64) bool { return load > capacity*(1+1e-12) }

// errOver stops the walk of a plan at its first step over capacity.
var errOver = errors.New("over capacity")

// safeStep returns the largest step size of at most maxSteps steps whose
// every step keeps the origin within capacity, and its peak origin load;
// 0 if there is none.
func (pl *planner) safeStep(from, to int, effect func(int, int, int, float64) planStep) (int, float64, error) {
	delta := abs(to - from)
	for s := delta; s >= 1 && delta/s <= maxSteps; s-- {
		peak := 0.0
		err := walkPlan(from, to, s, func(n, m int) error {
			moved, err := pl.moved(n, m)
			if err != nil {
				return err
			}
			st := effect(0, n, m, moved)
			if peak = max(peak, st.OriginLoad); st.Over {
				return errOver
			}
			return nil
		})
		switch {
		case err == nil:
			return s, peak, nil
		case err != errOver:
			return 0, 0, err
		}
	}
	return 0, 0, nil
}

// searchable reports whether searching for the largest safe step would
// measure few enough pairs of node counts.
func (pl *planner) searchable(from, to int) bool {
	if pl.algo == "ideal" || pl.algo == modNName {
		return true
	}
	pairs := map[[2]int]bool{}
	delta := abs(to - from)
	for s := delta; s >= 1 && delta/s <= maxSteps && len(pairs) <= maxMeasuredPairs; s-- {
		walkPlan(from, to, s, func(n, m int) error { pairs[[2]int{n, m}] = true; return nil })
	}
	return len(pairs) <= maxMeasuredPairs
}

// walkPlan calls fn for each step from -> to, step nodes at a time (the
// last step may be smaller), stopping at the first error.
func walkPlan(from, to, step int, fn func(n, m int) error) error {
	for n := from; n != to; {
		d := min(step, abs(to-n)) // never past the target, nor overflowing
		m := n + d
		if to < from {
			m = n - d
		}
		if err := fn(n, m); err != nil {
			return err
		}
		n = m
	}
	return nil
}

func (rep *planReport) write(w io.Writer) {
	verb := "grow"
	if rep.To < rep.From {
		verb = "shrink"
	}
	how := "ideal consistent movement"
	if rep.Algorithm != "ideal" {
		how = "movement measured with " + rep.Algorithm
	}
	fmt.Fprintf(w, "%s %d -> %d nodes, %d at a time (%s)\n", verb, rep.From, rep.To, rep.Step, how)
	fmt.Fprintf(w, "%s requests/s, %.1f%% hits: the origin serves %s of its %s requests/s\n\n",
		commas(int64(rep.Rate)), 100*rep.Hit, commas(int64(rep.Rate*(1-rep.Hit))), commas(int64(rep.Origin)))
	t := newTable(">step", "nodes", ">keys moved", ">hit rate", ">origin load", "")
	row := func(label string, s planStep) {
		flag := ""
		if s.Over {
			flag = fmt.Sprintf("OVER %.2fx", s.OriginLoad/rep.Origin)
		}
		t.add(label, fmt.Sprintf("%d -> %d", s.From, s.To), percent(s.Moved), fmt.Sprintf("%.1f%%", 100*s.HitRate),
			commas(int64(s.OriginLoad+0.5))+"/s", flag)
	}
	for _, s := range rep.Steps {
		row(strconv.Itoa(s.N), s)
	}
	t.add()
	row("at once", rep.AtOnce)
	row("mod-N", rep.ModN)
	t.write(w)
	fmt.Fprintln(w)
	switch {
	case rep.OverStart:
		fmt.Fprintf(w, "The origin is over capacity before any step: at %.1f%% hits it serves %s/s of its %s/s.\n",
			100*rep.Hit, commas(int64(rep.Steady+0.5)), commas(int64(rep.Origin)))
		fmt.Fprintln(w, "No step size helps: add origin capacity or raise the hit rate first.")
	case rep.SafeStep < 0:
		fmt.Fprintf(w, "Largest safe step not searched: it would measure over %d pairs of node counts; try -algo ideal.\n", maxMeasuredPairs)
	case rep.SafeStep == 0 && verb == "grow":
		fmt.Fprintf(w, "No step size keeps the origin within %s/s: warm new nodes before they take traffic.\n", commas(int64(rep.Origin)))
	case rep.SafeStep == 0:
		fmt.Fprintf(w, "No step size keeps the origin within %s/s: copy the leaving nodes' keys to the others first.\n", commas(int64(rep.Origin)))
	default:
		nodes := "nodes"
		if rep.SafeStep == 1 {
			nodes = "node"
		}
		fmt.Fprintf(w, "Largest step within %s/s: %d %s at a time (peak %s/s).\n",
			commas(int64(rep.Origin)), rep.SafeStep, nodes, commas(int64(rep.SafePeak+0.5)))
	}
	fmt.Fprintf(w, "Model: hit rate right after a step = %.1f%% x (1 - moved); origin load = rate x (1 - hit rate).\n", 100*rep.Hit)
}
