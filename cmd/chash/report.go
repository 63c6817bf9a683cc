package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/shardmap"
)

const reportHelp = `usage: chash report diff [diff flags] [-o FILE] OLD NEW
       chash report plan [plan flags] [-o FILE]
       chash report shardmap [-size BYTES] [-steps N] [-o FILE] OLD NEW

chash report writes what diff, plan or shardmap plan measure as one
self-contained HTML file, to read in a browser or attach to a change
request: no script, no fonts or images from elsewhere; its charts are
inline SVG.

  diff      each node's share before and after, as paired bars; the flows
            of moved keys, largest first, and for up to 24 nodes on each
            side the whole from -> to matrix.
  plan      keys moved, hit rate and origin load at each step, without and
            with fallback reads (a migration that reads a moved key from
            its old owner on a miss: the hit rate holds, at the cost of
            extra cache reads right after the step), as charts and a table.
  shardmap  replicas, primaries and bytes per node before and after, and
            the plan's steps (the first -steps of them).

Every number in the page is the command's: diff's, plan's and shardmap
plan's -json objects are the "diff", "plan" and "shardmap.plan" members of
the report's own -json, and each figure in the HTML carries the path of its
value there (data-p) and the value itself (data-v). -json prints that object
instead of the HTML:
  kind            "diff", "plan" or "shardmap"
  diff            chash diff -json
  plan            chash plan -json
  with_fallback   plan's steps with fallback reads: [{step, hit_rate,
                  origin_load, over_capacity, extra_reads}]
  shardmap        {old_version, new_version, partitions, replicas,
                  partition_bytes, plan (chash shardmap plan -json), nodes:
                  [{id, zone, old_weight, new_weight, old_replicas,
                  new_replicas, old_primaries, new_primaries, old_bytes,
                  new_bytes, adds, removes, promotions}]}

examples:
  chash report diff -o diff.html old.txt new.txt
  chash report plan -algo ring -from 20 -to 30 -step 2 -o plan.html
  chash report shardmap -size 2G -o moves.html map.json map2.json

flags:
`

// maxPartitionBytes bounds -size so that bytes summed over up to 2^24
// replicas stay within an int64.
const maxPartitionBytes = 250e9

// report is the data of an HTML report, and its -json.
type report struct {
	Kind     string          `json:"kind"`
	Diff     *diffReport     `json:"diff,omitempty"`
	Plan     *planReport     `json:"plan,omitempty"`
	Fallback []fallbackStep  `json:"with_fallback,omitempty"`
	ShardMap *shardMapReport `json:"shardmap,omitempty"`
}

// fallbackStep is a plan step made with fallback reads: a moved key that
// its old owner still holds is a hit, so the origin sees what it saw
// before the step, and each read of a moved key costs a second cache read
// until it is back-filled (plan -switch-to's model, per step).
type fallbackStep struct {
	N          int     `json:"step"`
	HitRate    float64 `json:"hit_rate"`
	OriginLoad float64 `json:"origin_load"`
	Over       bool    `json:"over_capacity"`
	ExtraReads float64 `json:"extra_reads"`
}

type shardMapReport struct {
	OldVersion uint64         `json:"old_version"`
	NewVersion uint64         `json:"new_version"`
	Partitions int            `json:"partitions"`
	Replicas   int            `json:"replicas"`
	Bytes      int64          `json:"partition_bytes"`
	Plan       shardmap.Plan  `json:"plan"`
	Nodes      []mapNodeShift `json:"nodes"`
}

// mapNodeShift is one node's replicas before and after a shard map plan.
type mapNodeShift struct {
	ID           string  `json:"id"`
	Zone         string  `json:"zone"`
	OldWeight    float64 `json:"old_weight"`
	NewWeight    float64 `json:"new_weight"`
	OldReplicas  int     `json:"old_replicas"`
	NewReplicas  int     `json:"new_replicas"`
	OldPrimaries int     `json:"old_primaries"`
	NewPrimaries int     `json:"new_primaries"`
	OldBytes     int64   `json:"old_bytes"`
	NewBytes     int64   `json:"new_bytes"`
	Adds         int     `json:"adds"`
	Removes      int     `json:"removes"`
	Promotions   int     `json:"promotions"`
}

func runReport(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || isHelp(args[0]) {
		fmt.Fprint(stdout, reportHelp)
		return exitOK
	}
	switch args[0] {
	case "diff":
		return reportDiff(args[1:], stdout, stderr)
	case "plan":
		return reportPlan(args[1:], stdout, stderr)
	case "shardmap":
		return reportShardMap(args[1:], stdout, stderr)
	}
	return usageError(stderr, "report", "unknown report %q: want diff, plan or shardmap (chash report -h for help)", args[0])
}

// rename makes fs, built for another command, report errors as
// "chash report NAME".
func rename(fs *flag.FlagSet, name string) { fs.Init("chash report "+name, flag.ContinueOnError) }

func reportDiff(args []string, stdout, stderr io.Writer) int {
	fs, f := newDiffFlags(stderr)
	rename(fs, "diff")
	out := fs.String("o", "", "write the report to this file instead of stdout")
	var pos []string
	if code, stop := parse(fs, args, reportHelp, stdout, &pos); stop {
		return code
	}
	if f.top < 0 {
		return usageError(stderr, "report diff", "-top %d: want 0 or more", f.top)
	}
	old, new, err := memberships(pos, f.old, f.new)
	if err != nil {
		return usageError(stderr, "report diff", "%v", err)
	}
	opts, err := f.lib.options()
	if err != nil {
		return usageError(stderr, "report diff", "%v", err)
	}
	a, err := findAlgo(f.algo, opts)
	if err != nil {
		return usageError(stderr, "report diff", "-algo: %v", err)
	}
	b := a
	if f.newAlgo != "" {
		if b, err = findAlgo(f.newAlgo, opts); err != nil {
			return usageError(stderr, "report diff", "-new-algo: %v", err)
		}
	}
	pa, err := a.buildFor(old, max(len(old), len(new)))
	if err != nil {
		return usageError(stderr, "report diff", "old membership: %v", err)
	}
	pb, err := b.build(new)
	if b.name == a.name {
		pb, err = a.next(pa, new)
	}
	if err != nil {
		return usageError(stderr, "report diff", "new membership: %v", err)
	}
	name := a.name
	if b.name != a.name {
		name = a.name + " -> " + b.name
	}
	rep, err := newDiffReport(name, pa, pb)
	if err != nil {
		fmt.Fprintf(stderr, "chash report diff: %v\n", err)
		return exitFail
	}
	return emitReport(&report{Kind: "diff", Diff: rep}, f.json, *out, f.top, stdout, stderr)
}

func reportPlan(args []string, stdout, stderr io.Writer) int {
	fs, f := newPlanFlags(stderr)
	rename(fs, "plan")
	out := fs.String("o", "", "write the report to this file instead of stdout")
	var pos []string
	if code, stop := parse(fs, args, reportHelp, stdout, &pos); stop {
		return code
	}
	if len(pos) > 0 {
		return usageError(stderr, "report plan", "unexpected argument %q", pos[0])
	}
	if f.switchTo != "" {
		return usageError(stderr, "report plan", "-switch-to: a report plans a resize; chash plan -switch-to prints a switch")
	}
	if err := f.check(); err != nil {
		return usageError(stderr, "report plan", "%v", err)
	}
	pl, err := newPlanner(f)
	if err != nil {
		return usageError(stderr, "report plan", "%v", err)
	}
	pl.prog = startProgress(stderr)
	rep, err := pl.plan(f.from, f.to, f.step, float64(f.rate), float64(f.hit), float64(f.origin))
	pl.prog.finish()
	if err != nil {
		fmt.Fprintf(stderr, "chash report plan: %v\n", err)
		return exitFail
	}
	return emitReport(&report{Kind: "plan", Plan: rep, Fallback: withFallback(rep)}, f.json, *out, 0, stdout, stderr)
}

// withFallback returns rep's steps made with fallback reads.
func withFallback(rep *planReport) []fallbackStep {
	out := make([]fallbackStep, len(rep.Steps))
	for i, s := range rep.Steps {
		out[i] = fallbackStep{N: s.N, HitRate: rep.Hit, OriginLoad: rep.Steady, Over: over(rep.Steady, rep.Origin), ExtraReads: rep.Rate * s.Moved}
	}
	return out
}

func reportShardMap(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("report shardmap", stderr)
	var size quantity
	fs.Var(&size, "size", "bytes in each partition (such as 2G), 0 to 250G, for the bytes per node and moved")
	steps := fs.Int("steps", 1000, "plan steps to list, 0 or more (0: none; -json lists all)")
	asJSON := fs.Bool("json", false, "print the report's data as JSON instead of HTML")
	out := fs.String("o", "", "write the report to this file instead of stdout")
	var pos []string
	if code, stop := parse(fs, args, reportHelp, stdout, &pos); stop {
		return code
	}
	switch {
	case len(pos) != 2:
		return usageError(stderr, "report shardmap", "want two shard map files, OLD and NEW")
	case *steps < 0:
		return usageError(stderr, "report shardmap", "-steps %d: want 0 or more", *steps)
	case !(size >= 0 && size <= maxPartitionBytes) || size != quantity(int64(size)):
		return usageError(stderr, "report shardmap", "-size %v: want a whole number of bytes from 0 to 250G", float64(size))
	}
	old, err := readMap(pos[0])
	if err != nil {
		return usageError(stderr, "report shardmap", "%v", err)
	}
	m, err := readMap(pos[1])
	if err != nil {
		return usageError(stderr, "report shardmap", "%v", err)
	}
	rep, err := newShardMapReport(old, m, int64(size))
	if err != nil {
		fmt.Fprintf(stderr, "chash report shardmap: %v\n", err)
		return exitFail
	}
	return emitReport(&report{Kind: "shardmap", ShardMap: rep}, *asJSON, *out, *steps, stdout, stderr)
}

// newShardMapReport plans old -> m as chash shardmap plan does, and counts
// each node's replicas, primaries and bytes in both maps.
func newShardMapReport(old, m *shardmap.Map, size int64) (*shardMapReport, error) {
	var sizes []shardmap.PartitionSize
	if size > 0 {
		sizes = make([]shardmap.PartitionSize, old.Partitions())
		for i := range sizes {
			sizes[i].Bytes = size
		}
	}
	pl, err := shardmap.PlanMoves(old, m, sizes)
	if err != nil {
		return nil, err
	}
	rep := &shardMapReport{OldVersion: old.Version(), NewVersion: m.Version(), Partitions: m.Partitions(), Replicas: m.Replicas(), Bytes: size, Plan: pl}
	idx := map[string]int{}
	node := func(n chash.Node) *mapNodeShift {
		i, ok := idx[n.ID]
		if !ok {
			i = len(rep.Nodes)
			idx[n.ID] = i
			rep.Nodes = append(rep.Nodes, mapNodeShift{ID: n.ID, Zone: n.Zone})
		}
		return &rep.Nodes[i]
	}
	for _, n := range old.Members() {
		node(n).OldWeight = n.Weight
	}
	for _, n := range m.Members() {
		s := node(n)
		s.NewWeight, s.Zone = n.Weight, n.Zone
	}
	count := func(mp *shardmap.Map, replicas, primaries func(*mapNodeShift) *int) {
		buf := make([]chash.Node, 0, mp.Replicas())
		for p := range mp.Partitions() {
			buf = mp.AppendReplicas(buf[:0], p)
			for j, n := range buf {
				s := &rep.Nodes[idx[n.ID]]
				*replicas(s)++
				if j == 0 {
					*primaries(s)++
				}
			}
		}
	}
	count(old, func(s *mapNodeShift) *int { return &s.OldReplicas }, func(s *mapNodeShift) *int { return &s.OldPrimaries })
	count(m, func(s *mapNodeShift) *int { return &s.NewReplicas }, func(s *mapNodeShift) *int { return &s.NewPrimaries })
	for i := range rep.Nodes {
		s := &rep.Nodes[i]
		s.OldBytes, s.NewBytes = int64(s.OldReplicas)*size, int64(s.NewReplicas)*size
	}
	for _, st := range pl.Steps {
		i, ok := idx[st.Node]
		if !ok {
			continue
		}
		switch st.Kind {
		case shardmap.StepAdd:
			rep.Nodes[i].Adds++
		case shardmap.StepRemove:
			rep.Nodes[i].Removes++
		case shardmap.StepPromote:
			rep.Nodes[i].Promotions++
		}
	}
	slices.SortFunc(rep.Nodes, func(a, b mapNodeShift) int { return naturalCompare(a.ID, b.ID) })
	return rep, nil
}

// emitReport writes rep as JSON or HTML to out, or to stdout if out is
// empty. limit caps the flows (diff) or steps (shardmap) listed.
func emitReport(rep *report, asJSON bool, out string, limit int, stdout, stderr io.Writer) int {
	w := stdout
	var f *os.File
	if out != "" {
		var err error
		if f, err = os.Create(out); err != nil {
			fmt.Fprintf(stderr, "chash report %s: %v\n", rep.Kind, err)
			return exitFail
		}
		w = f
	}
	code := exitOK
	if asJSON {
		code = writeJSON(w, rep)
	} else if err := writeReportHTML(w, rep, limit); err != nil {
		fmt.Fprintf(stderr, "chash report %s: %v\n", rep.Kind, err)
		code = exitFail
	}
	if f != nil {
		if err := f.Close(); err != nil && code == exitOK {
			fmt.Fprintf(stderr, "chash report %s: %v\n", rep.Kind, err)
			code = exitFail
		}
	}
	return code
}
