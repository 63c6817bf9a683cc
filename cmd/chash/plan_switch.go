package main

import (
	"fmt"
	"io"

	"github.com/keyplace/chash"
)

// switchReport is chash plan -switch-to: the cost of changing placement at
// a fixed node count, and how a migration with fallback reads absorbs it.
type switchReport struct {
	From     string   `json:"from_algorithm"`
	To       string   `json:"to_algorithm"`
	Nodes    int      `json:"nodes"`
	Rate     float64  `json:"rate"`
	Hit      float64  `json:"hit_rate"`
	Origin   float64  `json:"origin_capacity"`
	Moved    float64  `json:"moved"`
	Exact    bool     `json:"exact"`
	AtOnce   planStep `json:"at_once"`
	Fallback struct {
		HitRate    float64 `json:"hit_rate"`
		OriginLoad float64 `json:"origin_load"`
		Over       bool    `json:"over_capacity"`
		// ExtraReads is the cache reads per second that miss on the new
		// owner and go to the old one, right after the switch; back-fill
		// brings it to zero as keys are read once.
		ExtraReads float64 `json:"extra_reads"`
	} `json:"with_fallback"`
}

// planSwitch measures switching nodes node-0 ... from placement a to b.
func planSwitch(a, b algo, nodes int, rate, hit, origin float64) (*switchReport, error) {
	ns := synthNodes(nodes)
	pa, err := a.build(ns)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", a.name, err)
	}
	pb, err := b.build(ns)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", b.name, err)
	}
	m, err := chash.DiffSummary(pa, pb)
	if err != nil {
		return nil, err
	}
	rep := &switchReport{From: a.name, To: b.name, Nodes: nodes, Rate: rate, Hit: hit, Origin: origin, Moved: m.Moved, Exact: m.Exact}
	h := hit * (1 - m.Moved)
	rep.AtOnce = planStep{From: nodes, To: nodes, Moved: m.Moved, HitRate: h, OriginLoad: rate * (1 - h)}
	rep.AtOnce.Over = rep.AtOnce.OriginLoad > origin
	// With the fallback a moved key that the old owner holds is still a
	// hit: the origin sees what it saw before, and moved keys cost a
	// second cache read until they are back-filled.
	rep.Fallback.HitRate = hit
	rep.Fallback.OriginLoad = rate * (1 - hit)
	rep.Fallback.Over = rep.Fallback.OriginLoad > origin
	rep.Fallback.ExtraReads = rate * m.Moved
	return rep, nil
}

func (rep *switchReport) write(w io.Writer) {
	how := "measured exactly"
	if !rep.Exact {
		how = "estimated from sampled keys"
	}
	fmt.Fprintf(w, "switch %d nodes from %s to %s (movement %s)\n", rep.Nodes, rep.From, rep.To, how)
	fmt.Fprintf(w, "%s requests/s, %.1f%% hits: the origin serves %s of its %s requests/s\n\n",
		commas(int64(rep.Rate)), 100*rep.Hit, commas(int64(rep.Rate*(1-rep.Hit))), commas(int64(rep.Origin)))
	t := newTable("", ">keys moved", ">hit rate", ">origin load", "")
	over := func(load float64, o bool) string {
		if o {
			return fmt.Sprintf("OVER %.2fx", load/rep.Origin)
		}
		return ""
	}
	t.add("switch at once", percent(rep.Moved), fmt.Sprintf("%.1f%%", 100*rep.AtOnce.HitRate), commas(int64(rep.AtOnce.OriginLoad+0.5))+"/s", over(rep.AtOnce.OriginLoad, rep.AtOnce.Over))
	t.add("with fallback reads", percent(rep.Moved), fmt.Sprintf("%.1f%%", 100*rep.Fallback.HitRate), commas(int64(rep.Fallback.OriginLoad+0.5))+"/s", over(rep.Fallback.OriginLoad, rep.Fallback.Over))
	t.write(w)
	fmt.Fprintf(w, "\nWith fallback reads (chash.Migration; gomemcache.NewMigration), moved keys are read from their old\n"+
		"owner on a miss: up to %s extra cache reads/s right after the switch, falling as back-fill warms the new owners.\n",
		commas(int64(rep.Fallback.ExtraReads+0.5)))
	fmt.Fprintf(w, "Model: hit rate right after the switch = %.1f%% x (1 - moved) without the fallback, %.1f%% with it.\n", 100*rep.Hit, 100*rep.Hit)
}

func runPlanSwitch(fromAlgo, toAlgo string, nodes int, rate, hit, origin float64, lib libFlags, asJSON bool, stdout, stderr io.Writer) int {
	switch {
	case fromAlgo == "ideal":
		return usageError(stderr, "plan", "-switch-to needs -algo naming the placement in use (gomemcache, goredis, ring, ...)")
	case nodes < 1 || nodes > maxMeasuredNodes:
		return usageError(stderr, "plan", "-from %d: want a node count from 1 to %s", nodes, commas(maxMeasuredNodes))
	case !(rate >= 1 && rate <= maxRate) || !(origin >= 1 && origin <= maxRate):
		return usageError(stderr, "plan", "-rate %v -origin %v: want 1 to 1000G requests/s", rate, origin)
	}
	opts, err := lib.options()
	if err != nil {
		return usageError(stderr, "plan", "%v", err)
	}
	a, err := findAlgo(fromAlgo, opts)
	if err != nil {
		return usageError(stderr, "plan", "-algo: %v", err)
	}
	b, err := findAlgo(toAlgo, opts)
	if err != nil {
		return usageError(stderr, "plan", "-switch-to: %v", err)
	}
	prog := startProgress(stderr)
	prog.set("comparing placements")
	rep, err := planSwitch(a, b, nodes, rate, hit, origin)
	prog.finish()
	if err != nil {
		fmt.Fprintf(stderr, "chash plan: %v\n", err)
		return exitFail
	}
	if asJSON {
		return writeJSON(stdout, rep)
	}
	rep.write(stdout)
	return exitOK
}
