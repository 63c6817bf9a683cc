package main

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/keyplace/chash"
)

// diffHelp is diff's help; it names SampleKeys, so it is built at run
// time.
func diffHelp() string {
	return fmt.Sprintf(`usage: chash diff [flags] OLD NEW
       chash diff [flags] -old LIST -new LIST

What moves when placement changes from the OLD membership to the NEW one:
the fraction of keys that change node, each node's share before and after,
and the flows of keys from node to node, largest first. Flows are listed
when OLD nodes x NEW nodes is at most %s; beyond that the other figures
are still computed (and as exact as the first line says), without them.

The first line of the output says how the fractions were found:
  exact over the whole hash space   ring, maglev, bounded: from the
      structure itself (ring points, table slots, partitions), which
      assigns every hash value, so no keys are placed.
  exact by closed form              rendezvous, jump: from the node
      counts and weights alone, by the formulas for independent uniform
      hashes (Lamping and Veach's for jump). No keys are placed; any real
      key set differs from these fractions only by its sampling noise.
  estimated from %s sampled keys
      anything else (mod-N, a rendezvous node whose weight changes):
      fixed keys placed by both memberships.

OLD and NEW are files with one node ID a line, optionally followed by
whitespace and a weight (a number >= 0), then a zone; blank lines, text
from a # and a UTF-8 byte order mark at the start are ignored. An ID
cannot hold "=", "," or a non-printing character, so "a=2" is an error,
not a node named "a=2", and a zone cannot hold a non-printing character;
errors give the file and line. LIST is IDs separated by commas,
each optionally followed by =weight.

-json prints one object; every fraction is a number from 0 to 1:
  algorithm                 name
  old_nodes, new_nodes      member counts
  exact                     true unless sampled
  method                    "hash_space", "closed_form" or "sampled"
  samples                   keys placed; 0 unless sampled
  moved                     fraction of keys that change node
  moved_between_kept_nodes  of those, moved between nodes in both
  shares                    [{"id", "old", "new"}]: every node of either
                            membership, in natural ID order
  flows_listed              false when the memberships are too large
                            to list flows (see above): flows is then []
  flows                     [{"from", "to", "fraction"}]: every flow of
                            moved keys, largest first

examples:
  chash diff old.txt new.txt
  chash diff -old a,b,c -new a,b,c,d
  chash diff -algo ring -vnodes 1000 -old a,b=2 -new a,b=2,c -json
  chash diff -algo gomemcache -new-algo ring servers.txt servers.txt

flags:
`, commas(maxFlowPairs), commas(chash.SampleKeys))
}

// maxFlowPairs bounds OLD nodes x NEW nodes for listing flows: Diff's
// flows can number as many, and a closed form's do.
const maxFlowPairs = 1 << 22

type diffShare struct {
	ID  string  `json:"id"`
	Old float64 `json:"old"`
	New float64 `json:"new"`
}

type diffFlow struct {
	From     string  `json:"from"`
	To       string  `json:"to"`
	Fraction float64 `json:"fraction"`
}

// How a diff's fractions were found: diffReport.Method.
const (
	methodSpace  = "hash_space"
	methodClosed = "closed_form"
	methodSample = "sampled"
)

type diffReport struct {
	Algorithm string      `json:"algorithm"`
	OldNodes  int         `json:"old_nodes"`
	NewNodes  int         `json:"new_nodes"`
	Exact     bool        `json:"exact"`
	Method    string      `json:"method"`
	Samples   int         `json:"samples"`
	Moved     float64     `json:"moved"`
	Between   float64     `json:"moved_between_kept_nodes"`
	Shares    []diffShare `json:"shares"`
	Listed    bool        `json:"flows_listed"`
	Flows     []diffFlow  `json:"flows"`
}

// diffFlags are diff's command line.
type diffFlags struct {
	algo, newAlgo, old, new string
	top                     int
	json                    bool
	lib                     libFlags
}

func newDiffFlags(stderr io.Writer) (*flag.FlagSet, *diffFlags) {
	fs := newFlags("diff", stderr)
	f := &diffFlags{}
	fs.StringVar(&f.algo, "algo", "ring", "mod-N, an algorithm of the library (ring, ...) or a system's placement (gomemcache, goredis, nginx-consistent, ...)")
	fs.StringVar(&f.newAlgo, "new-algo", "", "place NEW with this algorithm instead of -algo: the cost of switching placement")
	fs.StringVar(&f.old, "old", "", "old membership as a list, instead of a file")
	fs.StringVar(&f.new, "new", "", "new membership as a list, instead of a file")
	fs.IntVar(&f.top, "top", 20, "flows to show, 0 or more (0: all; -json shows all)")
	fs.BoolVar(&f.json, "json", false, "print JSON")
	f.lib.register(fs)
	return fs, f
}

func runDiff(args []string, stdout, stderr io.Writer) int {
	fs, f := newDiffFlags(stderr)
	var pos []string
	if code, stop := parse(fs, args, diffHelp(), stdout, &pos); stop {
		return code
	}
	if f.top < 0 {
		return usageError(stderr, "diff", "-top %d: want 0 or more", f.top)
	}
	old, new, err := memberships(pos, f.old, f.new)
	if err != nil {
		return usageError(stderr, "diff", "%v", err)
	}
	opts, err := f.lib.options()
	if err != nil {
		return usageError(stderr, "diff", "%v", err)
	}
	a, err := findAlgo(f.algo, opts)
	if err != nil {
		return usageError(stderr, "diff", "-algo: %v", err)
	}
	b := a
	if f.newAlgo != "" {
		if b, err = findAlgo(f.newAlgo, opts); err != nil {
			return usageError(stderr, "diff", "-new-algo: %v", err)
		}
	}
	// Builds of large memberships take seconds (bounded-load placement of
	// 20,000 nodes): the progress line covers them too.
	prog := startProgress(stderr)
	prog.set("building the old placement (%s nodes)", commas(int64(len(old))))
	pa, err := a.buildFor(old, max(len(old), len(new)))
	if err != nil {
		prog.finish()
		return usageError(stderr, "diff", "old membership: %v", err)
	}
	prog.set("building the new placement (%s nodes)", commas(int64(len(new))))
	pb, err := b.build(new)
	if b.name == a.name {
		pb, err = a.next(pa, new)
	}
	if err != nil {
		prog.finish()
		return usageError(stderr, "diff", "new membership: %v", err)
	}
	prog.set("comparing placements")
	name := a.name
	if b.name != a.name {
		name = a.name + " -> " + b.name
	}
	rep, err := newDiffReport(name, pa, pb)
	prog.finish()
	if err != nil {
		fmt.Fprintf(stderr, "chash diff: %v\n", err)
		return exitFail
	}
	if f.json {
		return writeJSON(stdout, rep)
	}
	rep.write(stdout, f.top)
	return exitOK
}

// memberships reads the old and new node lists from two files or from
// the -old and -new lists.
func memberships(files []string, oldList, newList string) (old, new []chash.Node, err error) {
	lists := oldList != "" || newList != ""
	switch {
	case lists && (oldList == "" || newList == ""):
		return nil, nil, fmt.Errorf("give both -old and -new")
	case lists && len(files) > 0:
		return nil, nil, fmt.Errorf("give two files or -old and -new, not both")
	case lists:
		if old, err = parseList(oldList); err != nil {
			return nil, nil, fmt.Errorf("-old: %v", err)
		}
		if new, err = parseList(newList); err != nil {
			return nil, nil, fmt.Errorf("-new: %v", err)
		}
		return old, new, nil
	case len(files) != 2:
		return nil, nil, fmt.Errorf("want two membership files, OLD and NEW (chash diff -h for help)")
	}
	if old, err = readMembers(files[0]); err != nil {
		return nil, nil, err
	}
	if new, err = readMembers(files[1]); err != nil {
		return nil, nil, err
	}
	return old, new, nil
}

// newDiffReport measures a -> b: the figures from DiffSummary, and the
// flows from Diff where there are few enough node pairs to list them.
func newDiffReport(algo string, a, b chash.Placer) (*diffReport, error) {
	sum, err := chash.DiffSummary(a, b)
	if err != nil {
		return nil, err
	}
	rep := &diffReport{Algorithm: algo, OldNodes: a.Len(), NewNodes: b.Len(), Exact: sum.Exact, Samples: sum.Samples,
		Moved: sum.Moved, Between: sum.Between, Method: method(a, sum.Exact), Flows: []diffFlow{}}
	for _, n := range sum.Nodes {
		rep.Shares = append(rep.Shares, diffShare{ID: n.ID, Old: n.Old, New: n.New})
	}
	slices.SortFunc(rep.Shares, func(x, y diffShare) int { return naturalCompare(x.ID, y.ID) })
	if int64(a.Len())*int64(b.Len()) > maxFlowPairs {
		return rep, nil
	}
	m, err := chash.Diff(a, b)
	if err != nil {
		return nil, err
	}
	rep.Listed = true
	for _, f := range m.Flows {
		if f.From != f.To {
			rep.Flows = append(rep.Flows, diffFlow{From: f.From, To: f.To, Fraction: f.Fraction})
		}
	}
	return rep, nil
}

// method says how Diff found m: rendezvous and jump placers have closed
// forms, the others an exact structure or samples.
func method(p chash.Placer, exact bool) string {
	if !exact {
		return methodSample
	}
	switch p.(type) {
	case *chash.Rendezvous, *chash.Jump:
		return methodClosed
	}
	return methodSpace
}

func (rep *diffReport) write(w io.Writer, top int) {
	how := "exact over the whole hash space"
	switch rep.Method {
	case methodClosed:
		how = "exact by closed form (see chash diff -h)"
	case methodSample:
		how = fmt.Sprintf("estimated from %s sampled keys", commas(int64(rep.Samples)))
	}
	fmt.Fprintf(w, "%s, %d -> %d nodes: %s\n", rep.Algorithm, rep.OldNodes, rep.NewNodes, how)
	fmt.Fprintf(w, "moved: %s of keys; between nodes in both memberships: %s\n\n", percent(rep.Moved), percent(rep.Between))
	t := newTable("node", ">old share", ">new share", ">change")
	for _, s := range rep.Shares {
		old, new := percent(s.Old), percent(s.New)
		if s.Old == 0 {
			old = "-"
		}
		if s.New == 0 {
			new = "-"
		}
		t.add(s.ID, old, new, fmt.Sprintf("%+.2f%%", 100*(s.New-s.Old)))
	}
	t.write(w)
	if !rep.Listed {
		how := "exact"
		if !rep.Exact {
			how = "estimated as stated"
		}
		fmt.Fprintf(w, "\nflows not listed: %s x %s node pairs (over %s); the figures above are %s\n",
			commas(int64(rep.OldNodes)), commas(int64(rep.NewNodes)), commas(maxFlowPairs), how)
		return
	}
	flows := rep.Flows
	if top > 0 && len(flows) > top {
		flows = flows[:top]
	}
	if len(flows) == 0 {
		return
	}
	fmt.Fprintf(w, "\nflows of moved keys, largest first (%d of %d)\n\n", len(flows), len(rep.Flows))
	t = newTable("from", "to", ">share of keys")
	for _, f := range flows {
		t.add(f.From, f.To, fmt.Sprintf("%.3f%%", 100*f.Fraction))
	}
	t.write(w)
}

// naturalCompare orders IDs with their digit runs compared as numbers, so
// node-2 comes before node-10.
func naturalCompare(a, b string) int {
	for a != "" && b != "" {
		da, db := digits(a), digits(b)
		if da > 0 && db > 0 {
			na, nb := a[:da], b[:db]
			for len(na) > 1 && na[0] == '0' {
				na = na[1:]
			}
			for len(nb) > 1 && nb[0] == '0' {
				nb = nb[1:]
			}
			if c := len(na) - len(nb); c != 0 {
				return c
			}
			if c := strings.Compare(na, nb); c != 0 {
				return c
			}
			a, b = a[da:], b[db:]
			continue
		}
		if a[0] != b[0] {
			return int(a[0]) - int(b[0])
		}
		a, b = a[1:], b[1:]
	}
	return len(a) - len(b)
}

func digits(s string) int {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}
