package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/keyplace/chash"
)

const compareHelp = `usage: chash compare [flags]   (also: chash [flags])

For mod-N hashing and every algorithm of the library, at -nodes nodes
(weighted by -weights; an algorithm that takes no weights is skipped):
  peak/mean, CV   load balance: each node's keys over -keys keys against its
                  fair count; the ideal row is a random placement of the
                  same keys, the sampling noise to compare with
  moved +1/-1     fraction of the keys that change node when node-N joins
                  and when the last node leaves
  lookup          time of one Lookup over the keys (median of chunks)
  memory          heap the structure retains, measured around its build
Then the ring's balance against its points per node, from exact arc shares.
Rendezvous looks a key up in O(nodes): at thousands of nodes, fewer -keys
keep the run short (10000 nodes and 1M keys take minutes).

-json prints one object: nodes, keys, weights, ideal_peak_to_mean, ideal_cv,
ideal_moved_add, ideal_moved_remove; algorithms, each {algorithm, skipped,
peak_to_mean, cv, moved_add, moved_remove, lookup_ns, memory_bytes}; and
ring_points, each {points, cv, peak_to_mean,
seeds, seed_mean_cv, seed_p10_cv, seed_p90_cv, theory_cv}.

examples:
  chash
  chash compare -nodes 100 -keys 200k
  chash compare -nodes 5000 -keys 200k -weights 1,2,4 -partitions 131072
  chash compare -points 1,10,100,1000,10000 -json

flags:
`

type compareRow struct {
	Algorithm string `json:"algorithm"`
	// Skipped says why the algorithm was not measured (it takes no
	// weights), with every figure 0.
	Skipped     string  `json:"skipped,omitempty"`
	PeakToMean  float64 `json:"peak_to_mean"`
	CV          float64 `json:"cv"`
	MovedAdd    float64 `json:"moved_add"`
	MovedRemove float64 `json:"moved_remove"`
	LookupNs    float64 `json:"lookup_ns"`
	MemoryBytes int64   `json:"memory_bytes"`
}

type pointsRow struct {
	Points     int     `json:"points"`
	CV         float64 `json:"cv"`
	PeakToMean float64 `json:"peak_to_mean"`
	Seeds      int     `json:"seeds"`
	SeedMean   float64 `json:"seed_mean_cv"`
	SeedP10    float64 `json:"seed_p10_cv"`
	SeedP90    float64 `json:"seed_p90_cv"`
	Theory     float64 `json:"theory_cv"`
}

type compareReport struct {
	Nodes   int          `json:"nodes"`
	Keys    int          `json:"keys"`
	Weights []float64    `json:"weights,omitempty"`
	Rows    []compareRow `json:"algorithms"`
	// IdealPeak and IdealCV are the balance of an ideal placement sampled
	// with the same keys: each key on a node drawn at random in proportion
	// to its weight, so that the algorithms' figures, also counted over
	// the keys, compare with the sampling noise and not with 1 and 0.
	IdealPeak   float64     `json:"ideal_peak_to_mean"`
	IdealCV     float64     `json:"ideal_cv"`
	IdealAdd    float64     `json:"ideal_moved_add"`
	IdealRemove float64     `json:"ideal_moved_remove"`
	RingPoints  []pointsRow `json:"ring_points,omitempty"`
}

// Limits of a comparison. maxRingPoints is the library's own bound on a
// ring (beyond it NewRing fails with ErrTooLarge); checking it here lets a
// comparison that could not finish fail at once instead of after the
// algorithms are measured.
const (
	maxCompareNodes = 10_000
	maxKeys         = 100_000_000
	maxPointsFlag   = 1 << 16
	maxRingPoints   = 1 << 24
)

// compareFlags are compare's command line.
type compareFlags struct {
	nodes   int
	keys    quantity
	points  string
	weights string
	json    bool
	lib     libFlags
}

func newCompareFlags(stderr io.Writer) (*flag.FlagSet, *compareFlags) {
	fs := newFlags("compare", stderr)
	f := &compareFlags{keys: 1_000_000}
	fs.IntVar(&f.nodes, "nodes", 10, "number of nodes, 2 to 10000")
	fs.Var(&f.keys, "keys", "number of keys placed, a whole number from 1 to 100M (200k and 1M work)")
	fs.StringVar(&f.points, "points", "1,10,100,1000", "ring points per node for the balance table, each 1 to 65536 and\n"+
		"nodes x points at most 16,777,216; empty for none")
	fs.StringVar(&f.weights, "weights", "", "node weights W1,W2,... given to the nodes in turn (node i gets\n"+
		"W[i mod len]); empty for equal weights")
	fs.BoolVar(&f.json, "json", false, "print JSON")
	f.lib.register(fs)
	return fs, f
}

// parseWeights parses -weights: positive finite numbers, comma-separated.
func parseWeights(s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		v, err := strconv.ParseFloat(f, 64)
		if err != nil || !(v > 0) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("want positive finite weights, comma-separated")
		}
		out = append(out, v)
	}
	return out, nil
}

// check reports the first flag out of its range, and returns the points.
func (f *compareFlags) check() ([]int, error) {
	if f.nodes < 2 || f.nodes > maxCompareNodes {
		return nil, fmt.Errorf("-nodes %d: want 2 to %d", f.nodes, maxCompareNodes)
	}
	if f.keys < 1 || f.keys > maxKeys || f.keys != quantity(math.Trunc(float64(f.keys))) {
		return nil, fmt.Errorf("-keys %v: want a whole number from 1 to 100M", float64(f.keys))
	}
	pts, err := parsePoints(f.points)
	if err != nil {
		return nil, fmt.Errorf("-points %q: %v", f.points, err)
	}
	for _, v := range pts {
		if f.nodes*v > maxRingPoints {
			return nil, fmt.Errorf("-points %d at %d nodes: a ring of %s points; want nodes x points at most %s",
				v, f.nodes, commas(int64(f.nodes*v)), commas(maxRingPoints))
		}
	}
	return pts, nil
}

func runCompare(args []string, stdout, stderr io.Writer) int {
	fs, f := newCompareFlags(stderr)
	var pos []string
	if code, stop := parse(fs, args, compareHelp, stdout, &pos); stop {
		return code
	}
	if len(pos) > 0 {
		return usageError(stderr, "compare", "unexpected argument %q", pos[0])
	}
	pts, err := f.check()
	if err != nil {
		return usageError(stderr, "compare", "%v", err)
	}
	weights, err := parseWeights(f.weights)
	if err != nil {
		return usageError(stderr, "compare", "-weights %q: %v", f.weights, err)
	}
	opts, err := f.lib.options()
	if err != nil {
		return usageError(stderr, "compare", "%v", err)
	}
	if err := preflight(f.nodes, weights, opts); err != nil {
		return usageError(stderr, "compare", "%v", err)
	}
	prog := startProgress(stderr)
	rep, err := compare(f.nodes, int(f.keys), pts, weights, f.lib.seed, opts, prog)
	prog.finish()
	if err != nil {
		fmt.Fprintf(stderr, "chash compare: %v\n", err)
		return exitFail
	}
	if f.json {
		return writeJSON(stdout, rep)
	}
	rep.write(stdout)
	return exitOK
}

// preflight builds every algorithm at the largest membership a comparison
// measures, n+1 nodes, so that a size the library rejects (such as -vnodes
// times the nodes beyond the ring's limit) is bad input, reported before
// any work. An algorithm that takes no weights is skipped, not an error.
func preflight(n int, weights []float64, opts []chash.Option) error {
	for _, a := range algorithms(opts) {
		if _, err := a.build(weighted(synthNodes(n+1), weights)); err != nil && !unweighted(err, weights) {
			return fmt.Errorf("%s of %d nodes: %v", a.name, n+1, err)
		}
	}
	return nil
}

// weighted gives nodes the weights in turn: node i gets weights[i mod
// len]. No weights leaves them equal.
func weighted(nodes []chash.Node, weights []float64) []chash.Node {
	if len(weights) > 0 {
		for i := range nodes {
			nodes[i].Weight = weights[i%len(weights)]
		}
	}
	return nodes
}

// unweighted reports whether err is an algorithm's refusal of unequal
// weights, which a comparison shows as a skipped row.
func unweighted(err error, weights []float64) bool {
	return len(weights) > 1 && errors.Is(err, chash.ErrInvalidWeight)
}

func parsePoints(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		v, err := strconv.Atoi(f)
		if err != nil || v < 1 || v > 1<<16 {
			return nil, fmt.Errorf("want points per node from 1 to 65536, comma-separated")
		}
		out = append(out, v)
	}
	return out, nil
}

func writeJSON(w io.Writer, v any) int {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return exitFail
	}
	return exitOK
}

func compare(n, numKeys int, points []int, weights []float64, seed uint64, opts []chash.Option, prog *progress) (*compareReport, error) {
	nodes := weighted(synthNodes(n), weights)
	rep := &compareReport{Nodes: n, Keys: numKeys, Weights: weights, IdealAdd: 1 / float64(n+1), IdealRemove: 1 / float64(n)}
	if len(weights) > 0 {
		// The node that joins has weight weights[n mod len], the one
		// that leaves weights[(n-1) mod len].
		var total float64
		for _, node := range nodes {
			total += node.Weight
		}
		add, last := weights[n%len(weights)], nodes[n-1].Weight
		rep.IdealAdd, rep.IdealRemove = add/(total+add), last/total
	}
	prog.set("generating %s keys", commas(int64(numKeys)))
	ks := makeKeys(numKeys)
	owners := make([]string, numKeys)
	rep.IdealPeak, rep.IdealCV = idealBalance(nodes, numKeys)
	algos := algorithms(opts)
	for i, a := range algos {
		prog.set("measuring %s (%d of %d)", a.name, i+1, len(algos))
		row, err := measure(a, nodes, weights, ks, owners)
		if unweighted(err, weights) {
			rep.Rows = append(rep.Rows, compareRow{Algorithm: a.name, Skipped: "takes no weights"})
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", a.name, err)
		}
		rep.Rows = append(rep.Rows, row)
	}
	for _, v := range points {
		prog.set("ring balance at %d points a node", v)
		row, err := ringPoints(n, v, seed)
		if err != nil {
			return nil, err
		}
		rep.RingPoints = append(rep.RingPoints, row)
	}
	return rep, nil
}

// keySet holds keys back to back: key i is data[off[i]:off[i+1]].
type keySet struct {
	data []byte
	off  []int
}

// makeKeys returns key-0 ... key-(n-1).
func makeKeys(n int) keySet {
	ks := keySet{data: make([]byte, 0, n*12), off: make([]int, 1, n+1)}
	for i := range n {
		ks.data = strconv.AppendInt(append(ks.data, "key-"...), int64(i), 10)
		ks.off = append(ks.off, len(ks.data))
	}
	return ks
}

func (ks keySet) len() int        { return len(ks.off) - 1 }
func (ks keySet) at(i int) []byte { return ks.data[ks.off[i]:ks.off[i+1]] }

// measure fills one row; owners is scratch space of one string a key.
func measure(a algo, nodes []chash.Node, weights []float64, ks keySet, owners []string) (compareRow, error) {
	row := compareRow{Algorithm: a.name}
	p, mem, err := buildMeasured(a, nodes) // with room for the node the add column adds
	if err != nil {
		return row, err
	}
	row.MemoryBytes = mem
	for i := range min(ks.len(), 10000) { // warm the caches and branch predictors
		owners[i] = p.Lookup(ks.at(i)).ID
	}
	row.LookupNs = timeLookups(p, ks, owners)
	row.PeakToMean, row.CV = balance(nodes, owners[:ks.len()])
	extra := weighted([]chash.Node{{ID: "node-" + strconv.Itoa(len(nodes))}}, nil)[0]
	if len(weights) > 0 {
		extra.Weight = weights[len(nodes)%len(weights)]
	}
	if row.MovedAdd, err = movedOver(a, p, append(slices.Clone(nodes), extra), ks, owners); err != nil {
		return row, err
	}
	row.MovedRemove, err = movedOver(a, p, nodes[:len(nodes)-1], ks, owners)
	return row, err
}

// timeLookups places every key, filling owners, and returns the median
// over chunks of the keys of the mean ns a Lookup: a shared machine's
// bursts of other work then do not count.
func timeLookups(p chash.Placer, ks keySet, owners []string) float64 {
	const chunk = 1 << 14
	var per []float64
	for lo := 0; lo < ks.len(); lo += chunk {
		hi := min(lo+chunk, ks.len())
		start := time.Now()
		for i := lo; i < hi; i++ {
			owners[i] = p.Lookup(ks.at(i)).ID
		}
		per = append(per, float64(time.Since(start).Nanoseconds())/float64(hi-lo))
	}
	slices.Sort(per)
	return per[len(per)/2]
}

// buildMeasured builds a placer and reports the heap it retains. A small
// structure is built again, up to 256 times, and the total divided, so that
// the collector's noise of a few hundred bytes does not swamp it.
func buildMeasured(a algo, nodes []chash.Node) (chash.Placer, int64, error) {
	p, err := a.buildFor(nodes, len(nodes)+1)
	if err != nil {
		return nil, 0, err
	}
	one, err := heapOf(a, nodes, 1)
	if err != nil {
		return nil, 0, err
	}
	if copies := min(256, (1<<20)/max(one, 1)); copies > 1 {
		total, err := heapOf(a, nodes, copies)
		return p, total / copies, err
	}
	return p, one, nil
}

// heapOf returns the heap retained by copies placers of nodes.
func heapOf(a algo, nodes []chash.Node, copies int64) (int64, error) {
	keep := make([]chash.Placer, copies)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range keep {
		p, err := a.buildFor(nodes, len(nodes)+1)
		if err != nil {
			return 0, err
		}
		keep[i] = p
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(keep)
	return max(0, int64(after.HeapAlloc)-int64(before.HeapAlloc)), nil
}

// balance returns the peak and the coefficient of variation of each node's
// keys against its fair count, the keys times its share of the weight.
func balance(nodes []chash.Node, owners []string) (peak, cv float64) {
	count := make(map[string]int, len(nodes))
	for _, o := range owners {
		count[o]++
	}
	counts := make([]int, len(nodes))
	for i, n := range nodes {
		counts[i] = count[n.ID]
	}
	return loadBalance(nodes, counts, len(owners))
}

// loadBalance returns the largest ratio of counts[i] to node i's fair
// count, and the root mean square of (ratio − 1).
func loadBalance(nodes []chash.Node, counts []int, keys int) (peak, cv float64) {
	var total float64
	for _, n := range nodes {
		total += max(n.Weight, 0) + boolTo(n.Weight == 0)
	}
	var sq float64
	for i, n := range nodes {
		w := n.Weight
		if w == 0 {
			w = 1
		}
		r := float64(counts[i]) / (float64(keys) * w / total)
		peak = max(peak, r)
		sq += (r - 1) * (r - 1)
	}
	return peak, math.Sqrt(sq / float64(len(nodes)))
}

func boolTo(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// idealBalance samples an ideal placement of keys: each key on a node
// drawn at random (SplitMix64 from a fixed seed) in proportion to its
// weight, and returns its balance as balance does.
func idealBalance(nodes []chash.Node, keys int) (peak, cv float64) {
	cum := make([]float64, len(nodes))
	var total float64
	for i, n := range nodes {
		w := n.Weight
		if w == 0 {
			w = 1
		}
		total += w
		cum[i] = total
	}
	counts := make([]int, len(nodes))
	state := uint64(0x5eed)
	for range keys {
		state += 0x9e3779b97f4a7c15
		z := state
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		z ^= z >> 31
		x := float64(z>>11) / (1 << 53) * total
		i, _ := slices.BinarySearch(cum, x)
		counts[min(i, len(nodes)-1)]++
	}
	return loadBalance(nodes, counts, keys)
}

// movedOver returns the fraction of the keys that a's placer of nodes,
// after from (see algo.next), places elsewhere than owners.
func movedOver(a algo, from chash.Placer, nodes []chash.Node, ks keySet, owners []string) (float64, error) {
	p, err := a.next(from, nodes)
	if err != nil {
		return 0, err
	}
	moved := 0
	for i := range ks.len() {
		if p.Lookup(ks.at(i)).ID != owners[i] {
			moved++
		}
	}
	return float64(moved) / float64(ks.len()), nil
}

// ringPoints measures the ring's exact balance at v points a node, for the
// given seed and across other seeds.
func ringPoints(n, v int, seed uint64) (pointsRow, error) {
	row := pointsRow{Points: v, Theory: math.Sqrt(float64(n-1) / float64(n*v+1))}
	// About 4M points of seeds in all, 10 to 100 of them.
	row.Seeds = min(100, max(10, 4_000_000/(n*v)))
	cvs := make([]float64, 0, row.Seeds)
	for s := 0; s <= row.Seeds; s++ {
		r, err := chash.NewRing(synthNodes(n), chash.WithVnodes(v), chash.WithHasher(chash.XXHashSeed(seed+uint64(s))))
		if err != nil {
			return row, err
		}
		o, err := chash.Shares(r)
		if err != nil {
			return row, err
		}
		if s == 0 {
			row.CV, row.PeakToMean = o.CV(), o.Peak()
			continue
		}
		cvs = append(cvs, o.CV())
	}
	slices.Sort(cvs)
	var sum float64
	for _, c := range cvs {
		sum += c
	}
	row.Seeds = len(cvs)
	row.SeedMean = sum / float64(len(cvs))
	row.SeedP10, row.SeedP90 = cvs[len(cvs)/10], cvs[len(cvs)*9/10]
	return row, nil
}

func (rep *compareReport) write(w io.Writer) {
	fmt.Fprintf(w, "%d nodes, %s keys: load and movement counted over the keys\n\n", rep.Nodes, commas(int64(rep.Keys)))
	t := newTable("algorithm", ">peak/mean", ">CV", ">moved +1", ">moved -1", ">lookup", ">memory")
	for _, r := range rep.Rows {
		if r.Skipped != "" {
			t.add(r.Algorithm, "", "", "", "", "", r.Skipped)
			continue
		}
		t.add(r.Algorithm, fmt.Sprintf("%.3f", r.PeakToMean), fmt.Sprintf("%.3f", r.CV), percent(r.MovedAdd),
			percent(r.MovedRemove), fmt.Sprintf("%.0f ns", r.LookupNs), bytesize(r.MemoryBytes))
	}
	t.add("ideal", fmt.Sprintf("%.3f", rep.IdealPeak), fmt.Sprintf("%.3f", rep.IdealCV), percent(rep.IdealAdd), percent(rep.IdealRemove), "", "")
	t.write(w)
	fmt.Fprintf(w, "\nmoved +1: keys that change node when node-%d joins; moved -1: when node-%d leaves.\n", rep.Nodes, rep.Nodes-1)
	fmt.Fprintln(w, "peak/mean, CV: each node's keys against its fair count (its share of the weight); ideal: a")
	fmt.Fprintln(w, "placement drawn at random with the same keys, the sampling noise the others are measured against.")
	fmt.Fprintln(w, "lookup: ns a Lookup over the keys, measured now; memory: heap the structure retains.")
	if len(rep.RingPoints) == 0 {
		return
	}
	fmt.Fprintf(w, "\nring balance against points per node, %d nodes, from exact arc shares\n\n", rep.Nodes)
	t = newTable(">points", ">CV", ">peak/mean", ">seeds", ">mean CV", ">10%-90%", ">theory")
	for _, r := range rep.RingPoints {
		t.add(strconv.Itoa(r.Points), fmt.Sprintf("%.3f", r.CV), fmt.Sprintf("%.3f", r.PeakToMean), strconv.Itoa(r.Seeds),
			fmt.Sprintf("%.3f", r.SeedMean), fmt.Sprintf("%.3f-%.3f", r.SeedP10, r.SeedP90), fmt.Sprintf("%.3f", r.Theory))
	}
	t.write(w)
	fmt.Fprintf(w, "\nCV and peak/mean: this ring (node-0 ... node-%d). Over seeds: the same ring under other\n", rep.Nodes-1)
	fmt.Fprintln(w, "hash seeds, whose CVs vary this much by chance. theory: sqrt((n-1)/(n*points+1)).")
}
