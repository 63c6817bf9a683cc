package main

import (
	"errors"
	"fmt"
	"io"
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
nodes node-0, node-1, ...

The defaults are the worked example of growing a fleet from 20 to 30 nodes.

examples:
  chash plan
  chash plan -from 20 -to 30 -step 10
  chash plan -from 12 -to 8 -step 1 -rate 50k -hit 0.95 -origin 10k -algo ring
  chash plan -algo gomemcache -switch-to ring -from 20 -rate 200k -hit 0.94 -origin 20k

flags:
`

type planStep struct {
	Label      string  `json:"label"`
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
	Steps     []planStep `json:"steps"`
	AtOnce    planStep   `json:"at_once"`
	ModN      planStep   `json:"mod_n_at_once"`
	SafeStep  int        `json:"safe_step"` // 0: none; -1: not searched
	SafePeak  float64    `json:"safe_step_peak_load"`
}

// planner computes movement for one algorithm, remembering each pair of
// node counts it has measured.
type planner struct {
	algo    string
	build   func([]chash.Node) (chash.Placer, error)
	known   map[[2]int]float64
	placers map[int]chash.Placer
	prog    *progress
}

func runPlan(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("plan", stderr)
	from := fs.Int("from", 20, "nodes now")
	to := fs.Int("to", 30, "nodes wanted")
	step := fs.Int("step", 2, "nodes added or removed per step")
	rate, origin := quantity(200_000), quantity(25_000)
	fs.Var(&rate, "rate", "requests per second reaching the cache (200000, 200k)")
	fs.Var(&origin, "origin", "requests per second the origin can serve")
	hit := fraction(0.94)
	fs.Var(&hit, "hit", "steady hit rate (0.94 or 94%)")
	algoName := fs.String("algo", "ideal", "ideal, mod-N, or an algorithm of this build (ring, ...)")
	asJSON := fs.Bool("json", false, "print JSON")
	switchTo := fs.String("switch-to", "", "instead of resizing, switch -from nodes from -algo to this placement")
	var lib libFlags
	lib.register(fs)
	var pos []string
	if code, stop := parse(fs, args, planHelp, stdout, &pos); stop {
		return code
	}
	if *switchTo != "" {
		return runPlanSwitch(*algoName, *switchTo, *from, float64(rate), float64(hit), float64(origin), lib, *asJSON, stdout, stderr)
	}
	limit := 1_000_000
	if *algoName != "ideal" && !strings.EqualFold(*algoName, "modn") && *algoName != modNName {
		limit = maxMeasuredNodes
	}
	switch {
	case len(pos) > 0:
		return usageError(stderr, "plan", "unexpected argument %q", pos[0])
	case *from < 1 || *from > limit || *to < 1 || *to > limit:
		return usageError(stderr, "plan", "-from %d -to %d: want node counts from 1 to %s", *from, *to, commas(int64(limit)))
	case *from == *to:
		return usageError(stderr, "plan", "-from and -to are both %d: nothing to plan", *from)
	case *step < 1:
		return usageError(stderr, "plan", "-step %d: want at least 1", *step)
	case (abs(*to-*from)+*step-1) / *step > maxSteps:
		return usageError(stderr, "plan", "-step %d: %d steps; want at most %d", *step, (abs(*to-*from)+*step-1) / *step, maxSteps)
	case rate <= 0 || origin <= 0:
		return usageError(stderr, "plan", "-rate and -origin must be positive")
	}
	pl := &planner{algo: *algoName, known: map[[2]int]float64{}, placers: map[int]chash.Placer{}}
	if pl.algo != "ideal" {
		opts, err := lib.options()
		if err != nil {
			return usageError(stderr, "plan", "%v", err)
		}
		a, err := findAlgo(pl.algo, opts)
		if err != nil {
			return usageError(stderr, "plan", "-algo: %v", err)
		}
		pl.algo, pl.build = a.name, a.build
	}
	pl.prog = startProgress(stderr)
	rep, err := pl.plan(*from, *to, *step, float64(rate), float64(hit), float64(origin))
	pl.prog.finish()
	if err != nil {
		fmt.Fprintf(stderr, "chash plan: %v\n", err)
		return exitFail
	}
	if *asJSON {
		return writeJSON(stdout, rep)
	}
	rep.write(stdout)
	return exitOK
}

// Limits that keep a plan quick: measured algorithms build a placer per
// node count and diff each pair of counts a plan visits.
const (
	maxSteps         = 1000
	maxMeasuredNodes = 1000
	maxMeasuredPairs = 100 // for the search of the largest safe step
)

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
	a, err := pl.placer(n)
	if err != nil {
		return 0, err
	}
	b, err := pl.placer(m)
	if err != nil {
		return 0, err
	}
	d, err := chash.Diff(a, b)
	if err != nil {
		return 0, err
	}
	pl.known[[2]int{n, m}] = d.Moved
	return d.Moved, nil
}

// placer returns the algorithm's placer of node-0 ... node-(n-1).
func (pl *planner) placer(n int) (chash.Placer, error) {
	if p, ok := pl.placers[n]; ok {
		return p, nil
	}
	p, err := pl.build(synthNodes(n))
	pl.placers[n] = p
	return p, err
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

func (pl *planner) plan(from, to, step int, rate, hit, origin float64) (*planReport, error) {
	rep := &planReport{Algorithm: pl.algo, From: from, To: to, Step: step, Rate: rate, Hit: hit, Origin: origin}
	effect := func(label string, n, m int, moved float64) planStep {
		s := planStep{Label: label, From: n, To: m, Moved: moved, HitRate: hit * (1 - moved)}
		s.OriginLoad = rate * (1 - s.HitRate)
		s.Over = s.OriginLoad > origin
		return s
	}
	err := walkPlan(from, to, step, func(n, m int) error {
		moved, err := pl.moved(n, m)
		rep.Steps = append(rep.Steps, effect(fmt.Sprint(len(rep.Steps)+1), n, m, moved))
		return err
	})
	if err != nil {
		return nil, err
	}
	moved, err := pl.moved(from, to)
	if err != nil {
		return nil, err
	}
	rep.AtOnce = effect("at once", from, to, moved)
	rep.ModN = effect("mod-N", from, to, modNMoved(from, to))
	if pl.searchable(from, to) {
		rep.SafeStep, rep.SafePeak, err = pl.safeStep(from, to, effect)
	} else {
		rep.SafeStep = -1
	}
	return rep, err
}

// errOver stops the walk of a plan at its first step over capacity.
var errOver = errors.New("over capacity")

// safeStep returns the largest step size of at most maxSteps steps whose
// every step keeps the origin within capacity, and its peak origin load;
// 0 if there is none.
func (pl *planner) safeStep(from, to int, effect func(string, int, int, float64) planStep) (int, float64, error) {
	delta := abs(to - from)
	for s := delta; s >= 1 && delta/s <= maxSteps; s-- {
		peak := 0.0
		err := walkPlan(from, to, s, func(n, m int) error {
			moved, err := pl.moved(n, m)
			if err != nil {
				return err
			}
			st := effect("", n, m, moved)
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
		m := n + step
		if to < from {
			m = n - step
		}
		if (m-to)*(n-to) <= 0 { // reached or passed the target
			m = to
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
	row := func(s planStep) {
		flag := ""
		if s.Over {
			flag = fmt.Sprintf("OVER %.2fx", s.OriginLoad/rep.Origin)
		}
		t.add(s.Label, fmt.Sprintf("%d -> %d", s.From, s.To), percent(s.Moved), fmt.Sprintf("%.1f%%", 100*s.HitRate),
			commas(int64(s.OriginLoad+0.5))+"/s", flag)
	}
	for _, s := range rep.Steps {
		row(s)
	}
	t.add()
	row(rep.AtOnce)
	row(rep.ModN)
	t.write(w)
	fmt.Fprintln(w)
	switch {
	case rep.SafeStep < 0:
		fmt.Fprintf(w, "Largest safe step not searched: it would measure over %d pairs of node counts; try -algo ideal.\n", maxMeasuredPairs)
	case rep.SafeStep == 0:
		fmt.Fprintf(w, "No step size keeps the origin within %s/s: warm new nodes before they take traffic.\n", commas(int64(rep.Origin)))
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
