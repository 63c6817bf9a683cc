package main

import (
	"bytes"
	"fmt"

	"github.com/keyplace/chash"
)

// rootTable shows the library's own benchmarks as ratios to its
// BenchmarkHash of the same key size: the hash is the physical floor.
func (r *report) rootTable(b *bytes.Buffer) {
	b.WriteString("## Every lookup path against the bare hash (the library's own benchmarks)\n\n")
	b.WriteString("`go test -bench 'Hash|Lookup'` at the repository root, direct calls through the `Placer` interface. Each cell:\n")
	b.WriteString("ns/op and the ratio to `xxhash.Sum64` (bytes paths) or `Sum64String` (string paths) of the same keys.\n\n")
	b.WriteString("| algorithm | nodes | key | Lookup | LookupString | AppendTopK k=3 | AppendTopKString k=3 |\n|---|---:|---:|---:|---:|---:|---:|\n")
	for _, k := range keySizes {
		hb, _ := r.root.ns(fmt.Sprintf("Hash/key=%d/bytes", k))
		hs, _ := r.root.ns(fmt.Sprintf("Hash/key=%d/string", k))
		fmt.Fprintf(b, "| *xxhash* | | %d B | %s | %s | | |\n", k, dur(hb), dur(hs))
	}
	for _, a := range chash.Algorithms() {
		for _, n := range nodeCounts {
			for _, k := range keySizes {
				base := fmt.Sprintf("Lookup/%v/nodes=%d/key=%d/", a, n, k)
				if _, ok := r.root.ns(base + "Lookup"); !ok {
					continue
				}
				hb, hs := fmt.Sprintf("Hash/key=%d/bytes", k), fmt.Sprintf("Hash/key=%d/string", k)
				fmt.Fprintf(b, "| %v | %d | %d B | %s | %s | %s | %s |\n", a, n, k,
					r.rootCell(base+"Lookup", hb), r.rootCell(base+"LookupString", hs),
					r.rootCell(base+"AppendTopK3", hb), r.rootCell(base+"AppendTopKString3", hs))
			}
		}
	}
	b.WriteString("\n")
}

func (r *report) rootCell(name, hash string) string {
	v, ok := r.root.ns(name)
	x, ok2 := r.root.rel(name, hash)
	if !ok || !ok2 {
		return "–"
	}
	s := fmt.Sprintf("%s (%s)", dur(v), ratio(x))
	if a, _ := r.root.get(name, "allocs/op"); a > 0 {
		s += fmt.Sprintf(", **%.0f allocs**", a)
	}
	return s
}

// parallelTable shows reads through a Holder with and without a goroutine
// swapping the placer, and peers' lookups from every P at once.
func (r *report) parallelTable(b *bytes.Buffer) {
	b.WriteString("## Parallel lookups\n\n")
	b.WriteString("Library benchmark `BenchmarkParallelLookup`: `b.RunParallel` lookups through a `Holder`, 64 nodes, 13-byte keys,\n")
	b.WriteString("alone and while another goroutine stores a 64- and a 65-node placer in turn. ns/op is wall time per lookup over\n")
	b.WriteString("all Ps. Reads take no lock, so swapping should cost nothing beyond the swapper's own CPU time.\n\n")
	b.WriteString("| algorithm | steady | swapping | swapping / steady | swaps/s |\n|---|---:|---:|---:|---:|\n")
	for _, a := range chash.Algorithms() {
		base := fmt.Sprintf("ParallelLookup/%v/nodes=64/key=13/", a)
		st, ok1 := r.root.ns(base + "steady")
		sw, ok2 := r.root.ns(base + "swapping")
		if !ok1 || !ok2 {
			continue
		}
		rate, _ := r.root.get(base+"swapping", "swaps/s")
		fmt.Fprintf(b, "| %v | %s | %s | %s | %.0f |\n", a, dur(st), dur(sw), ratio(sw/st), rate)
	}
	b.WriteString("\nComparison harness, every library, 64 nodes, 13-byte keys: a lock taken on every lookup shows as a small\n")
	b.WriteString("speed-up (or a slow-down) over the serial figure.\n\n")
	b.WriteString("| family | library | serial | parallel | speed-up |\n|---|---|---:|---:|---:|\n")
	for _, s := range r.subjects {
		se, ok1 := r.cmp.ns(name("Lookup", s, 64, 13))
		pa, ok2 := r.cmp.ns(name("ParallelLookup", s, 64, 13))
		if !ok1 || !ok2 {
			continue
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s |\n", s.Family, label(s), dur(se), dur(pa), ratio(se/pa))
	}
	b.WriteString("\n")
}
