package main

import (
	"fmt"
	"io"

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
	SafeStep  int        `json:"safe_step"` // 0: none
	SafePeak  float64    `json:"safe_step_peak_load"`
}

// planner computes movement for one algorithm, remembering each pair of
// node counts it has measured.
type planner struct {
	algo  string
	build func([]chash.Node) (chash.Placer, error)
	known map[[2]int]float64
	prog  *progress
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
	var lib libFlags
	lib.register(fs)
	var pos []string
	if code, stop := parse(fs, args, planHelp, stdout, &pos); stop {
		return code
	}
	limit := 1_000_000
	if *algoName != "ideal" {
		limit = 10_000
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
	case rate <= 0 || origin <= 0:
		return usageError(stderr, "plan", "-rate and -origin must be positive")
	}
	pl := &planner{algo: *algoName, known: map[[2]int]float64{}}
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

// moved returns the fraction of keys that move from n to m nodes.
func (pl *planner) moved(n, m int) (float64, error) {
	if f, ok := pl.known[[2]int{n, m}]; ok {
		return f, nil
	}
	var f float64
	switch pl.algo {
	case "ideal":
		f = float64(abs(m-n)) / float64(max(n, m))
	case modNName:
		f = modNMoved(n, m)
	default:
		pl.prog.set("measuring %s %d -> %d", pl.algo, n, m)
		a, err := pl.build(synthNodes(n))
		if err != nil {
			return 0, err
		}
		b, err := pl.build(synthNodes(m))
		if err != nil {
			return 0, err
		}
		d, err := chash.Diff(a, b)
		if err != nil {
			return 0, err
		}
		f = d.Moved
	}
	pl.known[[2]int{n, m}] = f
	return f, nil
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
	steps, err := pl.steps(from, to, step, effect)
	if err != nil {
		return nil, err
	}
	rep.Steps = steps
	moved, err := pl.moved(from, to)
	if err != nil {
		return nil, err
	}
	rep.AtOnce = effect("at once", from, to, moved)
	rep.ModN = effect("mod-N", from, to, modNMoved(from, to))
	// The largest step whose every step fits the origin.
	for s := min(abs(to-from), 1000); s >= 1 && rep.SafeStep == 0; s-- {
		steps, err := pl.steps(from, to, s, effect)
		if err != nil {
			return nil, err
		}
		peak, over := 0.0, false
		for _, st := range steps {
			peak, over = max(peak, st.OriginLoad), over || st.Over
		}
		if !over {
			rep.SafeStep, rep.SafePeak = s, peak
		}
	}
	return rep, nil
}

// steps returns the plan from -> to, step nodes at a time (the last step
// may be smaller).
func (pl *planner) steps(from, to, step int, effect func(string, int, int, float64) planStep) ([]planStep, error) {
	var out []planStep
	for n := from; n != to; {
		m := n + step
		if to < from {
			m = n - step
		}
		if (m-to)*(n-to) <= 0 { // passed or reached the target
			m = to
		}
		moved, err := pl.moved(n, m)
		if err != nil {
			return nil, err
		}
		out = append(out, effect(fmt.Sprint(len(out)+1), n, m, moved))
		n = m
	}
	return out, nil
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
	if rep.SafeStep == 0 {
		fmt.Fprintf(w, "No step size keeps the origin within %s/s: warm new nodes before they take traffic.\n", commas(int64(rep.Origin)))
	} else {
		nodes := "nodes"
		if rep.SafeStep == 1 {
			nodes = "node"
		}
		fmt.Fprintf(w, "Largest step within %s/s: %d %s at a time (peak %s/s).\n",
			commas(int64(rep.Origin)), rep.SafeStep, nodes, commas(int64(rep.SafePeak+0.5)))
	}
	fmt.Fprintf(w, "Model: hit rate right after a step = %.1f%% x (1 - moved); origin load = rate x (1 - hit rate).\n", 100*rep.Hit)
}
