package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/keyplace/chash"
)

const diffHelp = `usage: chash diff [flags] OLD NEW
       chash diff [flags] -old LIST -new LIST

What moves when placement changes from the OLD membership to the NEW one:
the fraction of keys that change node, each node's share before and after,
and the flows of keys from node to node, largest first. Exact for the ring
(computed over the whole hash space); other algorithms are sampled, and the
output says so.

OLD and NEW are files with one node ID a line, optionally followed by
whitespace and a weight; blank lines and text from a # are ignored. LIST is
IDs separated by commas, each optionally followed by =weight.

examples:
  chash diff old.txt new.txt
  chash diff -old a,b,c -new a,b,c,d
  chash diff -algo ring -vnodes 1000 -old a,b=2 -new a,b=2,c -json
  chash diff -algo gomemcache -new-algo ring servers.txt servers.txt

flags:
`

type diffShare struct {
	ID  string  `json:"id"`
	Old float64 `json:"old"`
	New float64 `json:"new"`
}

type diffReport struct {
	Algorithm string       `json:"algorithm"`
	OldNodes  int          `json:"old_nodes"`
	NewNodes  int          `json:"new_nodes"`
	Exact     bool         `json:"exact"`
	Samples   int          `json:"samples,omitempty"`
	Moved     float64      `json:"moved"`
	Between   float64      `json:"moved_between_kept_nodes"`
	Shares    []diffShare  `json:"shares"`
	Flows     []chash.Flow `json:"flows"`
}

func runDiff(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("diff", stderr)
	algoName := fs.String("algo", "ring", "mod-N, an algorithm of this build (ring, ...) or a system's placement (gomemcache, goredis, nginx-consistent, ...)")
	newAlgo := fs.String("new-algo", "", "place NEW with this algorithm instead of -algo: the cost of switching placement")
	oldList := fs.String("old", "", "old membership as a list, instead of a file")
	newList := fs.String("new", "", "new membership as a list, instead of a file")
	top := fs.Int("top", 20, "flows to show; 0 for all (-json shows all)")
	asJSON := fs.Bool("json", false, "print JSON")
	var lib libFlags
	lib.register(fs)
	var pos []string
	if code, stop := parse(fs, args, diffHelp, stdout, &pos); stop {
		return code
	}
	old, new, err := memberships(pos, *oldList, *newList)
	if err != nil {
		return usageError(stderr, "diff", "%v", err)
	}
	if *top < 0 {
		return usageError(stderr, "diff", "-top %d: want 0 or more", *top)
	}
	opts, err := lib.options()
	if err != nil {
		return usageError(stderr, "diff", "%v", err)
	}
	a, err := findAlgo(*algoName, opts)
	if err != nil {
		return usageError(stderr, "diff", "-algo: %v", err)
	}
	pa, err := a.build(old)
	if err != nil {
		return usageError(stderr, "diff", "old membership: %v", err)
	}
	b := a
	if *newAlgo != "" {
		if b, err = findAlgo(*newAlgo, opts); err != nil {
			return usageError(stderr, "diff", "-new-algo: %v", err)
		}
	}
	pb, err := b.build(new)
	if err != nil {
		return usageError(stderr, "diff", "new membership: %v", err)
	}
	prog := startProgress(stderr)
	prog.set("comparing placements")
	m, err := chash.Diff(pa, pb)
	prog.finish()
	if err != nil {
		fmt.Fprintf(stderr, "chash diff: %v\n", err)
		return exitFail
	}
	name := a.name
	if b.name != a.name {
		name = a.name + " -> " + b.name
	}
	rep := newDiffReport(name, pa, pb, m)
	if *asJSON {
		return writeJSON(stdout, rep)
	}
	rep.write(stdout, *top)
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

func newDiffReport(algo string, a, b chash.Placer, m chash.Movement) *diffReport {
	rep := &diffReport{Algorithm: algo, OldNodes: a.Len(), NewNodes: b.Len(), Exact: m.Exact, Samples: m.Samples, Moved: m.Moved}
	shares := map[string]*diffShare{}
	share := func(id string) *diffShare {
		if shares[id] == nil {
			shares[id] = &diffShare{ID: id}
		}
		return shares[id]
	}
	inOld, inNew := map[string]bool{}, map[string]bool{}
	for _, n := range a.Nodes() {
		inOld[n.ID] = true
		share(n.ID)
	}
	for _, n := range b.Nodes() {
		inNew[n.ID] = true
		share(n.ID)
	}
	rep.Flows = []chash.Flow{}
	for _, f := range m.Flows {
		share(f.From).Old += f.Fraction
		share(f.To).New += f.Fraction
		if f.From == f.To {
			continue
		}
		rep.Flows = append(rep.Flows, f)
		if inNew[f.From] && inOld[f.To] {
			rep.Between += f.Fraction
		}
	}
	for _, s := range shares {
		rep.Shares = append(rep.Shares, *s)
	}
	slices.SortFunc(rep.Shares, func(x, y diffShare) int { return naturalCompare(x.ID, y.ID) })
	return rep
}

func (rep *diffReport) write(w io.Writer, top int) {
	how := "exact over the whole hash space"
	if !rep.Exact {
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
