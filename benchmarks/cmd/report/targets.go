package main

import (
	"bytes"
	"fmt"
	"math"
	"strings"

	"github.com/keyplace/chash/benchmarks"
)

// status is "met" or how far the figure is from its bound (lower is
// better for every target here).
func status(got, bound float64) string {
	if math.IsNaN(got) {
		return "not measured"
	}
	if got <= bound {
		return "met"
	}
	return fmt.Sprintf("**missed** by %.0f%%", 100*(got/bound-1))
}

func (r *report) targets(b *bytes.Buffer) {
	b.WriteString("## Targets\n\n| target | measured | status |\n|---|---|---|\n")
	r.allocTarget(b)
	r.peerTarget(b)
	r.hashTarget(b, "ring", "ring (160 points) at 64 nodes at most 2× the bare hash", 2)
	r.hashTarget(b, "maglev", "maglev at 64 nodes at most 1.3× the bare hash", 1.3)
	r.floorRow(b, 1.3)
	r.jumpTarget(b)
	r.rendezvousTarget(b)
	r.ringBuildTarget(b)
	r.topKTarget(b)
	b.WriteString("\n")
}

func (r *report) allocTarget(b *bytes.Buffer) {
	worst, n := r.root.maxOver("Lookup/", "allocs/op")
	for _, f := range r.families() {
		if f.has {
			for _, kind := range []string{"Lookup/", "TopK3/"} {
				w, m := r.cmp.maxOver(kind+f.name+"/chash/", "allocs/op")
				worst, n = max(worst, w), n+m
			}
		}
	}
	st := "met"
	switch {
	case n == 0:
		st = "not measured"
	case worst > 0:
		st = fmt.Sprintf("**missed**: %.0f allocs/op", worst)
	}
	fmt.Fprintf(b, "| 0 allocs/op on every lookup path, every algorithm, every key length | at most %.0f allocs/op over %d benchmarks; `TestLookupsDoNotAllocate` checks 1, 13, 80 and 1,000-byte keys | %s |\n",
		worst, n, st)
}

// peerTarget writes one row per family: our worst lookup ratio to each
// peer over node counts and key sizes.
func (r *report) peerTarget(b *bytes.Buffer) {
	for _, f := range r.families() {
		if !f.has || len(f.peers) == 0 {
			continue
		}
		var parts []string
		worst := math.NaN()
		for _, p := range f.peers {
			w, at := r.worstRatio("Lookup", f.ours, p)
			if math.IsNaN(w) {
				continue
			}
			if math.IsNaN(worst) || w > worst {
				worst = w
			}
			parts = append(parts, fmt.Sprintf("vs %s: worst %s (%s)", p.Name, ratio(w), at))
		}
		fmt.Fprintf(b, "| %s faster than every %s peer (lookup ratio < 1 at 8, 64, 1,000 nodes, 13- and 80-byte keys) | %s | %s |\n",
			f.name, f.name, strings.Join(parts, "; "), status(worst, 0.9999))
	}
}

// hashTarget compares the library's own lookup benchmarks with its
// BenchmarkHash of the same key size and key type, at 64 nodes.
func (r *report) hashTarget(b *bytes.Buffer, algo, what string, bound float64) {
	var parts []string
	worst := math.NaN()
	for _, k := range keySizes {
		for _, path := range [][2]string{{"Lookup", "bytes"}, {"LookupString", "string"}} {
			vn, hn := fmt.Sprintf("Lookup/%s/nodes=64/key=%d/%s", algo, k, path[0]), fmt.Sprintf("Hash/key=%d/%s", k, path[1])
			v, _ := r.root.ns(vn)
			h, _ := r.root.ns(hn)
			x, ok := r.root.rel(vn, hn)
			if !ok {
				continue
			}
			if math.IsNaN(worst) || x > worst {
				worst = x
			}
			parts = append(parts, fmt.Sprintf("%d B %s: %s (%s / %s)", k, path[0], ratio(x), dur(v), dur(h)))
		}
	}
	if len(parts) == 0 {
		parts = []string{"not in this build"}
	}
	fmt.Fprintf(b, "| %s | %s | %s |\n", what, strings.Join(parts, "; "), status(worst, bound))
}

// floorRow shows the floor of a table lookup (the root BenchmarkHash's
// table case: hash, one table read, the Node copy, through an interface)
// against the bare hash: a ×hash target below it cannot be met on the
// machine of the run.
func (r *report) floorRow(b *bytes.Buffer, bound float64) {
	var parts []string
	floor := math.NaN()
	for _, k := range keySizes {
		vn, hn := fmt.Sprintf("Hash/key=%d/table", k), fmt.Sprintf("Hash/key=%d/string", k)
		v, _ := r.root.ns(vn)
		h, _ := r.root.ns(hn)
		x, ok := r.root.rel(vn, hn)
		if !ok {
			continue
		}
		if math.IsNaN(floor) || x < floor {
			floor = x
		}
		parts = append(parts, fmt.Sprintf("%d B: %s (%s / %s)", k, ratio(x), dur(v), dur(h)))
	}
	if len(parts) == 0 {
		return
	}
	verdict := fmt.Sprintf("the %v× bound is above it", bound)
	if floor > bound {
		verdict = fmt.Sprintf("**the %v× bound is below it**: out of reach on this machine for any table placer", bound)
	}
	fmt.Fprintf(b, "| the floor of a table lookup: hash, one read of a 65,537-entry table and the Node copy, through an interface (no placer) | %s | %s |\n",
		strings.Join(parts, "; "), verdict)
}

// rendezvousTarget is issue 33's bound for rendezvous lookups: at most
// 0.6× go-rendezvous at every node count and key length.
func (r *report) rendezvousTarget(b *bytes.Buffer) {
	for _, f := range r.families() {
		if f.name != "rendezvous" || !f.has {
			continue
		}
		for _, p := range f.peers {
			if p.Name != "go-rendezvous" {
				continue
			}
			worst, at := r.worstRatio("Lookup", f.ours, p)
			msg := fmt.Sprintf("passes: worst %s (%s)", ratio(worst), at)
			if iw, iat := r.worstInterleaved(p); !math.IsNaN(iw) {
				msg += fmt.Sprintf("; interleaved intervals: worst %s (%s)", ratio(iw), iat)
				worst = iw
			}
			fmt.Fprintf(b, "| rendezvous at most 0.6× go-rendezvous (8, 64 and 1,000 nodes, 13- and 80-byte keys) | %s | %s |\n",
				msg, status(worst, 0.6))
		}
	}
}

// ringBuildTarget is issue 33's bound for ring builds: at most 0.7×
// groupcache's at 64 and 1,000 nodes, both with 160 points a node.
func (r *report) ringBuildTarget(b *bytes.Buffer) {
	for _, f := range r.families() {
		if f.name != "ring" || !f.has {
			continue
		}
		for _, p := range f.peers {
			if p.Name != "groupcache" {
				continue
			}
			var parts []string
			worst, iworst := math.NaN(), math.NaN()
			for _, n := range []int{64, 1000} {
				x, ok := r.cmp.rel(name("Build", f.ours, n, 0), name("Build", p, n, 0))
				if !ok {
					continue
				}
				if math.IsNaN(worst) || x > worst {
					worst = x
				}
				a, _ := r.cmp.ns(name("Build", f.ours, n, 0))
				g, _ := r.cmp.ns(name("Build", p, n, 0))
				part := fmt.Sprintf("%s nodes: passes %s (%s / %s)", thousands(n), ratio(x), dur(a), dur(g))
				if ix, ia, ig, ok := r.interleaved("Build", p, n, 0); ok {
					part += fmt.Sprintf(", interleaved %s (%s / %s)", ratio(ix), dur(ia), dur(ig))
					if math.IsNaN(iworst) || ix > iworst {
						iworst = ix
					}
				}
				parts = append(parts, part)
			}
			if !math.IsNaN(iworst) {
				worst = iworst
			}
			if len(parts) == 0 {
				parts = []string{"not measured"}
			}
			fmt.Fprintf(b, "| ring build at most 0.7× groupcache's (160 points a node in both) at 64 and 1,000 nodes | %s | %s |\n",
				strings.Join(parts, "; "), status(worst, 0.7))
		}
	}
}

func (r *report) jumpTarget(b *bytes.Buffer) {
	for _, f := range r.families() {
		if f.name != "jump" {
			continue
		}
		msg, worst := "not in this build", math.NaN()
		for _, p := range f.peers {
			if f.has && p.Name == "go-jump" {
				var at string
				worst, at = r.worstRatio("Lookup", f.ours, p)
				msg = fmt.Sprintf("chash / (go-jump + xxhash), passes: worst %s (%s)", ratio(worst), at)
				if iw, iat := r.worstInterleaved(p); !math.IsNaN(iw) {
					msg += fmt.Sprintf("; interleaved intervals: worst %s (%s)", ratio(iw), iat)
					worst = iw
				}
			}
		}
		fmt.Fprintf(b, "| jump at most 0.9× go-jump plus the same xxhash | %s | %s |\n", msg, status(worst, 0.9))
	}
	r.jumpBackTarget(b)
	r.jumpBackHashTarget(b)
}

// jumpBackHashTarget averages JumpBackHash with the hash of a 13-byte key
// over the root BenchmarkJumpBackHash's bucket counts, against the hash
// alone (bound 1.4×), beside its floor: the hash and one SplitMix64 step.
func (r *report) jumpBackHashTarget(b *bytes.Buffer) {
	h, ok := r.root.ns("JumpBackHash/hash/key=13")
	if !ok {
		return
	}
	var parts []string
	sum, n := 0.0, 0
	for _, buckets := range []int{10, 64, 1000, 1_000_000} {
		x, ok := r.root.rel(fmt.Sprintf("JumpBackHash/jumpback+hash/buckets=%d/key=13", buckets), "JumpBackHash/hash/key=13")
		if !ok {
			continue
		}
		sum += x
		n++
		parts = append(parts, fmt.Sprintf("%d buckets %s", buckets, ratio(x)))
	}
	if n == 0 {
		return
	}
	avg := sum / float64(n)
	msg := fmt.Sprintf("average %s (%s; hash %s)", ratio(avg), strings.Join(parts, ", "), dur(h))
	st := status(avg, 1.4)
	var why string // the first floor above the bound, if the bound is missed
	if f, ok := r.root.rel("JumpBackHash/hash+splitmix/key=13", "JumpBackHash/hash/key=13"); ok {
		msg += fmt.Sprintf("; floor, the hash and the one SplitMix64 step hash4j's algorithm starts with: %s", ratio(f))
		if f > 1.4 && avg > 1.4 {
			why = "the hash and that SplitMix64 step alone are above 1.4×"
		}
	}
	if f, ok := r.root.rel("JumpBackHash/firststep+hash/buckets=64/key=13", "JumpBackHash/hash/key=13"); ok {
		msg += fmt.Sprintf("; the first step alone, written into the loop with no call, at 64 buckets (where no key retries): %s", ratio(f))
		if f > 1.4 && avg > 1.4 && why == "" {
			why = "the algorithm's first step alone is above 1.4×"
		}
	}
	if why != "" {
		st += ": out of reach on this machine, as " + why
	}
	fmt.Fprintf(b, "| JumpBackHash with the hash of a 13-byte key at most 1.4× the hash alone, averaged over 10, 64, 1,000 and 10⁶ buckets | %s | %s |\n", msg, st)
}

// jumpBackTarget compares JumpBackHash with JumpHash on pre-hashed keys
// (the root BenchmarkJumpBackHash): at least 4× faster at 1,000 buckets
// and 10× at 10⁶. The placers' lookups, where the hash of the key is a
// large part of both, are shown beside.
func (r *report) jumpBackTarget(b *bytes.Buffer) {
	for _, t := range []struct {
		buckets int
		bound   float64
	}{{1000, 4}, {1_000_000, 10}} {
		x, ok := r.root.rel(fmt.Sprintf("JumpBackHash/jump/buckets=%d", t.buckets), fmt.Sprintf("JumpBackHash/jumpback/buckets=%d", t.buckets))
		if !ok {
			continue
		}
		msg := fmt.Sprintf("JumpHash / JumpBackHash: %.1f×", x)
		if t.buckets == 1000 {
			msg += r.jumpBackLookups()
		}
		st := "met"
		if x < t.bound {
			st = fmt.Sprintf("**missed**: %.1f×, short of %v× by %.0f%%", x, t.bound, 100*(1-x/t.bound))
		}
		// The first step with no call bounds what any hash4j-compatible
		// JumpBackHash can cost, whatever the bucket count.
		if f, ok := r.root.rel(fmt.Sprintf("JumpBackHash/jump/buckets=%d", t.buckets), "JumpBackHash/firststep/buckets=64"); ok && t.buckets > 1000 {
			msg += fmt.Sprintf("; JumpHash / the first step alone, inlined with no call: %.1f×", f)
			if x < t.bound && f < t.bound {
				st += ": out of reach on this machine, as even the inlined first step is not that much faster"
			}
		}
		fmt.Fprintf(b, "| JumpBackHash at %s buckets at least %v× faster than JumpHash (pre-hashed keys) | %s | %s |\n",
			thousands(t.buckets), t.bound, msg, st)
	}
}

// jumpBackLookups describes the jumpback and jump placers' lookups at
// 1,000 nodes in the comparison harness, hash included.
func (r *report) jumpBackLookups() string {
	var jump, back benchmarks.Subject
	for _, s := range r.subjects {
		if s.Ours && s.Family == "jump" {
			jump = s
		}
		if s.Ours && s.Family == "jumpback" {
			back = s
		}
	}
	if !jump.Ours || !back.Ours {
		return ""
	}
	var parts []string
	for _, k := range keySizes {
		if x, ok := r.cmp.rel(name("Lookup", jump, 1000, k), name("Lookup", back, 1000, k)); ok {
			parts = append(parts, fmt.Sprintf("%.1f× with %d-byte keys", x, k))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "; the placers' lookups, hash included: " + strings.Join(parts, ", ")
}

// topKTarget compares each of our algorithms' top-3 at 64 nodes with the
// fastest peer replica list at the same key size: one row per algorithm.
func (r *report) topKTarget(b *bytes.Buffer) {
	for _, f := range r.families() {
		if !f.has {
			continue
		}
		var parts []string
		worst := math.NaN()
		for _, k := range keySizes {
			best, bestPeer := r.fastestPeerTopK(k)
			v, ok := r.cmp.ns(name("TopK3", f.ours, 64, k))
			if !ok || bestPeer.Name == "" {
				continue
			}
			bestName := bestPeer.Name
			a, _ := r.cmp.get(name("TopK3", f.ours, 64, k), "allocs/op")
			x, _ := r.cmp.rel(name("TopK3", bestPeer, 64, k), name("TopK3", f.ours, 64, k))
			speedup := x
			parts = append(parts, fmt.Sprintf("%d B: %.1f× faster than %s (%s / %s), %.0f allocs", k, speedup, bestName, dur(v), dur(best), a))
			if a > 0 {
				speedup = 0
			}
			if math.IsNaN(worst) || speedup < worst {
				worst = speedup
			}
		}
		st := "not measured"
		switch {
		case worst >= 3:
			st = "met"
		case worst == 0:
			st = "**missed**: allocates"
		case worst < 3:
			st = fmt.Sprintf("**missed**: %.1f×, short of 3× by %.0f%%", worst, 100*(1-worst/3))
		}
		fmt.Fprintf(b, "| %s top-3 at 64 nodes at least 3× faster than the fastest peer replica list, 0 allocs | %s | %s |\n",
			f.name, strings.Join(parts, "; "), st)
	}
}

// fastestPeerTopK returns the fastest peer replica list at 64 nodes.
func (r *report) fastestPeerTopK(size int) (float64, benchmarks.Subject) {
	best, bestPeer := math.Inf(1), benchmarks.Subject{}
	for _, s := range r.subjects {
		if v, ok := r.cmp.ns(name("TopK3", s, 64, size)); ok && !s.Ours && v < best {
			best, bestPeer = v, s
		}
	}
	return best, bestPeer
}
