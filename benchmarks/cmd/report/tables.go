package main

import (
	"bytes"
	"fmt"
	"math"

	"github.com/keyplace/chash/benchmarks"
)

var (
	nodeCounts = []int{8, 64, 1000}
	keySizes   = []int{13, 80}
)

func name(kind string, s benchmarks.Subject, n, size int) string {
	if size == 0 {
		return fmt.Sprintf("%s/%s/%s/nodes=%d", kind, s.Family, s.Name, n)
	}
	return fmt.Sprintf("%s/%s/%s/nodes=%d/key=%d", kind, s.Family, s.Name, n, size)
}

func label(s benchmarks.Subject) string {
	if s.Ours {
		return "**chash**"
	}
	return s.Name
}

// dur formats nanoseconds with three significant digits.
func dur(ns float64) string {
	switch {
	case ns >= 1e9:
		return fmt.Sprintf("%.3g s", ns/1e9)
	case ns >= 1e6:
		return fmt.Sprintf("%.3g ms", ns/1e6)
	case ns >= 1e3:
		return fmt.Sprintf("%.3g µs", ns/1e3)
	}
	return fmt.Sprintf("%.3g ns", ns)
}

func size(bytes float64) string {
	switch {
	case bytes >= 1<<20:
		return fmt.Sprintf("%.3g MiB", bytes/(1<<20))
	case bytes >= 1<<10:
		return fmt.Sprintf("%.3g KiB", bytes/(1<<10))
	}
	return fmt.Sprintf("%.0f B", bytes)
}

func ratio(x float64) string {
	if x < 0.1 {
		return fmt.Sprintf("%.3f×", x)
	}
	return fmt.Sprintf("%.2f×", x)
}

// cmpRatio returns the "ours/peer" cell for benchmark kind.
func (r *report) cmpRatio(kind string, ours, peer benchmarks.Subject, n, size int) string {
	a, ok1 := r.cmp.ns(name(kind, ours, n, size))
	p, ok2 := r.cmp.ns(name(kind, peer, n, size))
	x, _ := r.cmp.rel(name(kind, ours, n, size), name(kind, peer, n, size))
	if !ok1 || !ok2 {
		return "–"
	}
	return fmt.Sprintf("**%s** (%s / %s)", ratio(x), dur(a), dur(p))
}

func (r *report) allocs(kind string, s benchmarks.Subject, n, size int) string {
	a, ok := r.cmp.get(name(kind, s, n, size), "allocs/op")
	if !ok {
		return "–"
	}
	return fmt.Sprintf("%.0f", a)
}

// families returns, per family, our subject (if this version has the
// algorithm) and the peers.
func (r *report) families() []family {
	var fs []family
	for _, fam := range []string{"ring", "rendezvous", "jump", "maglev", "bounded"} {
		f := family{name: fam}
		for _, s := range r.subjects {
			switch {
			case s.Family != fam:
			case s.Ours:
				f.ours, f.has = s, true
			default:
				f.peers = append(f.peers, s)
			}
		}
		fs = append(fs, f)
	}
	return fs
}

type family struct {
	name  string
	ours  benchmarks.Subject
	has   bool
	peers []benchmarks.Subject
}

func (r *report) headline(b *bytes.Buffer) {
	b.WriteString("## Headline: chash / peer, same algorithm, 64 nodes\n\n")
	b.WriteString("| family | peer | lookup, 13-byte keys | lookup, 80-byte keys | allocs/op chash : peer | top-3 list, 13-byte keys | build time | build bytes |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|\n")
	for _, f := range r.families() {
		switch {
		case !f.has:
			fmt.Fprintf(b, "| %s | | *not in this build of chash yet* | | | | | |\n", f.name)
			continue
		case len(f.peers) == 0:
			fmt.Fprintf(b, "| %s | *none served by the Go module proxy* | | | | | | |\n", f.name)
			continue
		}
		for _, p := range f.peers {
			top := "*peer has none*"
			if _, ok := r.cmp.ns(name("TopK3", p, 64, 13)); ok {
				top = r.cmpRatio("TopK3", f.ours, p, 64, 13)
			}
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s : %s | %s | %s | %s |\n", f.name, p.Name,
				r.cmpRatio("Lookup", f.ours, p, 64, 13), r.cmpRatio("Lookup", f.ours, p, 64, 80),
				r.allocs("Lookup", f.ours, 64, 13), r.allocs("Lookup", p, 64, 13), top,
				r.cmpRatio("Build", f.ours, p, 64, 0), r.buildBytes(f.ours, p, 64))
		}
	}
	b.WriteString("\n")
}

func (r *report) buildBytes(ours, peer benchmarks.Subject, n int) string {
	a, ok1 := r.cmp.get(name("Build", ours, n, 0), "B/op")
	p, ok2 := r.cmp.get(name("Build", peer, n, 0), "B/op")
	if !ok1 || !ok2 || p == 0 {
		return "–"
	}
	return fmt.Sprintf("**%s** (%s / %s)", ratio(a/p), size(a), size(p))
}

func (r *report) lookupTable(b *bytes.Buffer) {
	b.WriteString("## Lookup, every library (comparison harness)\n\n")
	b.WriteString("ns/op, with allocs/op where not 0; last column: ratio to the bare xxhash of the key in the same harness.\n\n")
	b.WriteString("| family | library |")
	for _, n := range nodeCounts {
		for _, s := range keySizes {
			fmt.Fprintf(b, " %d nodes, %d B |", n, s)
		}
	}
	b.WriteString(" × hash, 64 nodes, 13 B |\n|---|---|" + rep("---:|", len(nodeCounts)*len(keySizes)+1) + "\n")
	const hash = "Lookup/hash/xxhash/nodes=64/key=13"
	for _, s := range r.subjects {
		fmt.Fprintf(b, "| %s | %s |", s.Family, label(s))
		for _, n := range nodeCounts {
			for _, k := range keySizes {
				b.WriteString(" " + r.cell("Lookup", s, n, k) + " |")
			}
		}
		if x, ok := r.cmp.rel(name("Lookup", s, 64, 13), hash); ok {
			fmt.Fprintf(b, " %s |\n", ratio(x))
		} else {
			b.WriteString(" – |\n")
		}
	}
	b.WriteString("\n")
}

// cell is "ns" or "ns, N allocs".
func (r *report) cell(kind string, s benchmarks.Subject, n, size int) string {
	nm := name(kind, s, n, size)
	v, ok := r.cmp.ns(nm)
	if !ok {
		return "–"
	}
	if a, _ := r.cmp.get(nm, "allocs/op"); a > 0 {
		return fmt.Sprintf("%s, %.0f allocs", dur(v), a)
	}
	return dur(v)
}

func rep(s string, n int) string {
	out := ""
	for i := 0; i < n; i++ {
		out += s
	}
	return out
}

func (r *report) topKTable(b *bytes.Buffer) {
	b.WriteString("## Top-3 replica lists\n\n")
	b.WriteString("chash appends into a reused buffer (`AppendTopKString(buf[:0], key, 3)`); stathat's `GetN` and serialx's `GetNodes`\n")
	b.WriteString("return a new slice each call, as their APIs require. The other peers have no replica list.\n\n")
	b.WriteString("| family | library |")
	for _, n := range nodeCounts {
		for _, s := range keySizes {
			fmt.Fprintf(b, " %d nodes, %d B |", n, s)
		}
	}
	b.WriteString("\n|---|---|" + rep("---:|", len(nodeCounts)*len(keySizes)) + "\n")
	for _, s := range r.subjects {
		if _, ok := r.cmp.ns(name("TopK3", s, 64, 13)); !ok {
			continue
		}
		fmt.Fprintf(b, "| %s | %s |", s.Family, label(s))
		for _, n := range nodeCounts {
			for _, k := range keySizes {
				b.WriteString(" " + r.cell("TopK3", s, n, k) + " |")
			}
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
}

func (r *report) buildTable(b *bytes.Buffer) {
	b.WriteString("## Build\n\n")
	b.WriteString("Building from a list of node names: time, bytes and allocations per build.\n\n")
	b.WriteString("| family | library | 64 nodes | 64 nodes, bytes | 1,000 nodes | 1,000 nodes, bytes |\n|---|---|---:|---:|---:|---:|\n")
	for _, s := range r.subjects {
		if s.Family == "hash" {
			continue
		}
		fmt.Fprintf(b, "| %s | %s |", s.Family, label(s))
		for _, n := range []int{64, 1000} {
			nm := name("Build", s, n, 0)
			v, ok := r.cmp.ns(nm)
			if !ok {
				b.WriteString(" – | – |")
				continue
			}
			by, _ := r.cmp.get(nm, "B/op")
			al, _ := r.cmp.get(nm, "allocs/op")
			fmt.Fprintf(b, " %s | %s in %.0f allocs |", dur(v), size(by), al)
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
}

// worstRatio returns the largest ours/peer ns ratio of kind over node
// counts and key sizes, and where it occurs.
func (r *report) worstRatio(kind string, ours, peer benchmarks.Subject) (float64, string) {
	worst, at := math.NaN(), ""
	for _, n := range nodeCounts {
		for _, k := range keySizes {
			x, ok := r.cmp.rel(name(kind, ours, n, k), name(kind, peer, n, k))
			if ok && (math.IsNaN(worst) || x > worst) {
				worst, at = x, fmt.Sprintf("%d nodes, %d-byte keys", n, k)
			}
		}
	}
	return worst, at
}

func (r *report) quality(b *bytes.Buffer, keys int) {
	fmt.Fprintf(b, "## Quality over the same %s keys\n\n", thousands(keys))
	fmt.Fprintf(b, "%d nodes; then node-%d added; then node-%d removed (the last node, so that jump is measured on the change\n", benchmarks.QualityNodes, benchmarks.QualityNodes, benchmarks.QualityNodes-1)
	b.WriteString("it supports). Every membership is built from scratch. Collateral: keys moved between two nodes that were neither\n")
	b.WriteString("added nor removed. Peak/mean includes sampling noise of about 2% per node.\n\n")
	ks := benchmarks.QualityKeys(keys)
	var rows []benchmarks.Quality
	for _, s := range r.subjects {
		if s.Family != "hash" {
			rows = append(rows, benchmarks.MeasureQuality(s, ks))
		}
	}
	b.WriteString(benchmarks.QualityTable(rows) + "\n")
}

func (r *report) findings(b *bytes.Buffer) {
	b.WriteString("## Findings: inputs services meet\n\n")
	b.WriteString("Each probe runs guarded (panics recovered, 5 s timeout). A node list of 8 for removals; `node-10` is the unknown ID.\n\n")
	var rows []benchmarks.Findings
	for _, s := range r.subjects {
		if s.Family != "hash" {
			rows = append(rows, benchmarks.Probe(s))
		}
	}
	b.WriteString(benchmarks.FindingsTable(rows) + "\n")
}

func (r *report) setup(b *bytes.Buffer) {
	b.WriteString("## Libraries and settings\n\n")
	b.WriteString("Peers that take a hash function are given the same xxhash as chash; the others use their documented default, as noted.\n")
	b.WriteString("Rings are all built with 160 points per node and Maglev tables with 65,537 entries, chash's defaults.\n\n")
	b.WriteString("| family | library | module | settings |\n|---|---|---|---|\n")
	for _, s := range r.subjects {
		fmt.Fprintf(b, "| %s | %s | `%s` | %s |\n", s.Family, label(s), s.Module, s.Setup)
	}
	var missing []string
	for _, f := range r.families() {
		if !f.has {
			missing = append(missing, f.name)
		}
	}
	b.WriteString("\nNot served by the Go module proxy, so not compared: `github.com/dgryski/go-maglev`, `github.com/buraksezer/consistent`,\n")
	b.WriteString("`github.com/lafikl/consistent` (bounded loads), `github.com/lithammer/go-jump-consistent-hash`.\n")
	if len(missing) > 0 {
		fmt.Fprintf(b, "Not yet in this build of chash: %v.\n", missing)
	}
}

// thousands formats n with comma separators.
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// formTable compares chash's two single-node lookups (BenchmarkLookupForm)
// with the fastest peer of the family, where the run has them: the Node
// that Lookup returns by value, and LookupIndexString's index into the
// caller's own slice.
func (r *report) formTable(b *bytes.Buffer) {
	if _, ok := r.cmp.ns("LookupForm/jump/node/nodes=8/key=13"); !ok {
		return
	}
	b.WriteString("## The Node a lookup returns, against an index\n\n")
	b.WriteString("`BenchmarkLookupForm`: `LookupString(key).ID` returns a `Node` (five words, which Go copies through memory\n")
	b.WriteString("even when one field is read), `ids[LookupIndexString(key)]` an index into the caller's own slice, as go-jump\n")
	b.WriteString("does. Same keys and harness as the lookup table; the peer is the family's fastest in this run.\n\n")
	b.WriteString("| family | nodes | key | Node | index | index / Node | peer | Node / peer | index / peer |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---|---:|---:|\n")
	for _, f := range r.families() {
		if !f.has {
			continue
		}
		for _, n := range nodeCounts {
			for _, k := range keySizes {
				node, ok1 := r.cmp.ns(fmt.Sprintf("LookupForm/%s/node/nodes=%d/key=%d", f.name, n, k))
				index, ok2 := r.cmp.ns(fmt.Sprintf("LookupForm/%s/index/nodes=%d/key=%d", f.name, n, k))
				if !ok1 || !ok2 {
					continue
				}
				peer, pv := "–", math.NaN()
				for _, p := range f.peers {
					if v, ok := r.cmp.ns(name("Lookup", p, n, k)); ok && (math.IsNaN(pv) || v < pv) {
						peer, pv = p.Name, v
					}
				}
				fmt.Fprintf(b, "| %s | %d | %d B | %s | %s | %s | %s | %s | %s |\n", f.name, n, k, dur(node), dur(index),
					ratio(index/node), peer, ratioOr(node/pv), ratioOr(index/pv))
			}
		}
	}
	b.WriteString("\n")
}

func ratioOr(x float64) string {
	if math.IsNaN(x) {
		return "–"
	}
	return ratio(x)
}

// interleaved returns BenchmarkInterleaved's fastest-interval ratio of
// chash to peer for kind (Lookup or Build) at n nodes and key size (0 for
// builds), with the two times.
func (r *report) interleaved(kind string, peer benchmarks.Subject, n, size int) (x, ours, theirs float64, ok bool) {
	nm := fmt.Sprintf("Interleaved/%s/%s/%s/nodes=%d", kind, peer.Family, peer.Name, n)
	if size > 0 {
		nm += fmt.Sprintf("/key=%d", size)
	}
	x, ok = r.cmp.get(nm, "ratio-min")
	ours, _ = r.cmp.get(nm, "chash-ns")
	theirs, _ = r.cmp.get(nm, "peer-ns")
	return x, ours, theirs, ok
}

// worstInterleaved is worstRatio over BenchmarkInterleaved's lookups.
func (r *report) worstInterleaved(peer benchmarks.Subject) (float64, string) {
	worst, at := math.NaN(), ""
	for _, n := range nodeCounts {
		for _, k := range keySizes {
			if x, _, _, ok := r.interleaved("Lookup", peer, n, k); ok && (math.IsNaN(worst) || x > worst) {
				worst, at = x, fmt.Sprintf("%d nodes, %d-byte keys", n, k)
			}
		}
	}
	return worst, at
}

// interleavedTable shows BenchmarkInterleaved: chash and each peer timed
// in alternating short intervals, the fastest of each.
func (r *report) interleavedTable(b *bytes.Buffer) {
	if _, ok := r.cmp.ns("Interleaved/Lookup/jump/go-jump/nodes=8/key=13"); !ok {
		return
	}
	b.WriteString("## chash / peer in alternating short intervals\n\n")
	b.WriteString("`BenchmarkInterleaved`, run once after the passes: one interval of chash and one of the peer (4,096 lookups,\n")
	b.WriteString("or one build), in alternating order, 4 rounds of every pair (1 of builds) in each of 25 passes over all pairs, so\n")
	b.WriteString("that each pair is sampled across the minutes the benchmark takes. A preemption or other work on a shared machine\n")
	b.WriteString("only makes an interval longer, so the fastest intervals are the least disturbed, and each cell is the quotient\n")
	b.WriteString("of the two fastest (chash's time / the peer's beside it); the median of the per-round ratios is in the\n")
	b.WriteString("benchstat block. These are the figures the targets of issue 33 are judged by, as the passes of 300 ms are noisier.\n\n")
	b.WriteString("| family | peer |")
	for _, n := range nodeCounts {
		for _, k := range keySizes {
			fmt.Fprintf(b, " %d nodes, %d B |", n, k)
		}
	}
	b.WriteString(" build, 64 nodes | build, 1,000 nodes |\n|---|---|" + rep("---:|", len(nodeCounts)*len(keySizes)+2) + "\n")
	for _, f := range r.families() {
		if !f.has {
			continue
		}
		for _, p := range f.peers {
			fmt.Fprintf(b, "| %s | %s |", f.name, p.Name)
			for _, n := range nodeCounts {
				for _, k := range keySizes {
					b.WriteString(" " + r.interleavedCell("Lookup", p, n, k) + " |")
				}
			}
			for _, n := range []int{64, 1000} {
				b.WriteString(" " + r.interleavedCell("Build", p, n, 0) + " |")
			}
			b.WriteString("\n")
		}
	}
	b.WriteString("\n")
}

func (r *report) interleavedCell(kind string, p benchmarks.Subject, n, size int) string {
	x, a, c, ok := r.interleaved(kind, p, n, size)
	if !ok {
		return "–"
	}
	return fmt.Sprintf("**%s** (%s / %s)", ratio(x), dur(a), dur(c))
}
