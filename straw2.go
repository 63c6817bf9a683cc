package chash

import (
	"math"
	"slices"

	"github.com/keyplace/chash/internal/place"
)

// straw2 ranks nodes for a 64-bit hash by highest random weight with the
// logarithmic weighting of Ceph's straw2 (see Rendezvous for the scheme and
// why it is exact). Rendezvous ranks nodes for a key's hash, Bounded for a
// partition's; both go through this one scorer, so they share one score,
// one tie rule (higher score, then higher m, then lower index) and one
// top-k selector.
type straw2 struct {
	seeds []uint64  // seeds[i] is the hash of node i's ID
	invw  []float64 // per node, the inverse of its weight; nil when all are equal
	// collide is set when two IDs hash alike: their nodes are then ranked
	// together for every hash, not as independent draws.
	collide bool
}

// newStraw2 hashes the nodes' IDs and inverts their weights: 1/w, or, if
// relative is set, 1/(w/max) so that any positive finite weights work.
func newStraw2(h hasher, nodes []Node, relative bool) straw2 {
	s := straw2{seeds: make([]uint64, len(nodes))}
	for i, n := range nodes {
		s.seeds[i] = h.sumString(n.ID)
	}
	s.collide = collide(s.seeds)
	if len(nodes) >= wideMin && len(nodes) < 2*wideMin {
		mulChains() // best8 scores a few nodes with the faster multiply
	}
	if ws := summarize(nodes); !ws.equal {
		s.invw = make([]float64, len(nodes))
		for i, n := range nodes {
			if relative {
				s.invw[i] = 1 / (n.Weight / ws.max)
			} else {
				s.invw[i] = 1 / n.Weight
			}
		}
	}
	return s
}

// collide reports whether two of seeds are equal.
func collide(seeds []uint64) bool {
	sorted := slices.Clone(seeds)
	slices.Sort(sorted)
	return len(slices.Compact(sorted)) < len(seeds)
}

// topBatch is how many candidates appendTop selects per pass over the
// nodes; its array lives on the stack.
const topBatch = 16

// best returns the index of the node that ranks first for h. A lookup of
// up to wideChunk nodes on the wide path calls the kernel from here, with
// no frame between: going through bestWide cost 2 ns more at 8 nodes (the
// fastest of 15 interleaved rounds, 9.1 against 7.2 ns). Rendezvous's
// lookups do the same themselves, with the hash.
func (s *straw2) best(h uint64) int {
	if s.oneCall() {
		_, bi := best8(h, s.seeds, nil, false)
		return int(bi)
	}
	return s.bestSlow(h)
}

// oneCall reports whether one kernel call ranks s's nodes.
func (s *straw2) oneCall() bool { return s.wide() && len(s.seeds) <= wideChunk }

// wide reports whether the wide path ranks s's nodes (see straw2_wide.go).
func (s *straw2) wide() bool {
	return wide && s.invw == nil && !s.collide && len(s.seeds) >= wideMin
}

// bestSlow is best for weights, colliding IDs, few or very many nodes, or
// a CPU without the kernels.
func (s *straw2) bestSlow(h uint64) int {
	if s.invw != nil {
		return s.bestWeighted(h)
	}
	if s.wide() {
		return bestWide(h, s.seeds)
	}
	// The first movesFirst nodes keep the best with conditional moves; past
	// them a node beats the best so rarely (1/i for node i) that a branch
	// that skips it is cheaper than two moves per node: 12% faster at
	// 1,000 nodes with 13-byte keys in an A/B run, and the same below 64.
	seeds := s.seeds
	head := seeds[:min(len(seeds), movesFirst)]
	best, bi := mix64(h^head[0]), 0
	for i := 1; i < len(head); i++ {
		// Strictly greater: on equal values (colliding ID hashes) the
		// lower index keeps the key.
		if m := mix64(h ^ head[i]); m > best {
			best, bi = m, i
		}
	}
	for i := len(head); i < len(seeds); i++ {
		m := mix64(h ^ seeds[i])
		if m <= best {
			continue
		}
		best, bi = m, i
	}
	return bi
}

// movesFirst is how many nodes best and best3 rank with conditional moves
// alone before they branch past the nodes that cannot place.
const movesFirst = 64

func (s *straw2) bestWeighted(h uint64) int {
	best := candidate{v: math.Inf(-1)}
	cut := math.Inf(-1)
	invw := s.invw[:len(s.seeds)]
	for i, seed := range s.seeds {
		m := mix64(h ^ seed)
		u := unit(m)
		if (u-1)*invw[i] < cut {
			continue // cannot beat best: see pruneBound
		}
		c := candidate{v: logUnit(u) * invw[i], m: m, i: i}
		if c.beats(best) {
			best, cut = c, pruneBound(c.v)
		}
	}
	return best.i
}

// rankOpen fills top with the len(top) nodes that rank first for h, best
// first (fewer if there are fewer nodes), and returns the index of the best
// node that is not full, or -1 if every node is full: one pass serves the
// bounded-load assignment and its stored alternates.
func (s *straw2) rankOpen(h uint64, full []bool, top []candidate) (best int) {
	bestOpen := candidate{v: math.Inf(-1), i: -1}
	n := 0
	// A node can be skipped when it can neither enter top nor beat the
	// best open node: below both cuts (see pruneBound).
	cutTop, cutOpen := math.Inf(-1), math.Inf(-1)
	for i, seed := range s.seeds {
		c := candidate{m: mix64(h ^ seed), i: i}
		if s.invw != nil {
			u := unit(c.m)
			if b := (u - 1) * s.invw[i]; b < cutTop && b < cutOpen {
				continue
			}
			c.v = logUnit(u) * s.invw[i]
		}
		if !full[i] && (bestOpen.i < 0 || c.beats(bestOpen)) {
			bestOpen = c
			if s.invw != nil {
				cutOpen = pruneBound(c.v)
			}
		}
		if n < len(top) || c.beats(top[n-1]) {
			if n = insert(top, n, c); n == len(top) && s.invw != nil {
				cutTop = pruneBound(top[n-1].v)
			}
		}
	}
	return bestOpen.i
}

// appendTop appends the k nodes that rank first for h, best first, leaving
// out node skip (-1 for none). It keeps the best candidates in a sorted
// array of topBatch on the stack rather than sorting all n scores: k <= 16
// costs one pass, O(n), and larger k one pass per 16 nodes, O(n·⌈k/16⌉).
func (s *straw2) appendTop(dst []Node, nodes []Node, h uint64, k, skip int) []Node {
	if k > bigK {
		return s.appendSorted(dst, nodes, h, k, skip)
	}
	if 0 < k && k <= fewK && s.invw == nil {
		return s.appendFew(dst, nodes, h, k, skip)
	}
	var top [topBatch]candidate
	// Each pass selects the best candidates ranked after floor, the last
	// one appended; the first pass's floor beats every real candidate.
	floor := candidate{v: math.Inf(1)}
	for k > 0 {
		b := min(k, topBatch)
		got := s.selectTop(h, top[:b], floor, skip)
		for _, c := range top[:got] {
			dst = place.Append(dst, &nodes[c.i])
		}
		if got < b {
			break
		}
		floor = top[b-1]
		k -= b
	}
	return dst
}

// fewK is the largest k that appendFew serves.
const fewK = 4

// appendFew is appendTop for equal weights and k <= fewK, the common
// replica counts: the scores are integers, so the best k are kept by plain
// comparisons in a small array, and most nodes cost one comparison with
// the k-th best. The order is selectTop's: higher m first, and on equal m
// the lower index, since nodes are met in index order and an equal score
// never displaces an earlier one.
func (s *straw2) appendFew(dst []Node, nodes []Node, h uint64, k, skip int) []Node {
	if k == 1 && skip < 0 {
		return place.Append(dst, &nodes[s.best(h)])
	}
	// A top-2 or top-3 fills three slots, then best3 ranks the remaining
	// nodes; a top-2 is the first two of them.
	three := k == 2 || k == 3
	if three && skip < 0 && s.wide() {
		best := top3Wide(h, s.seeds)
		for _, i := range best[:k] {
			dst = place.Append(dst, &nodes[i])
		}
		return dst
	}
	var top [fewK]uint64
	var idx [fewK]int
	want := k
	if three {
		want = 3
	}
	n, i := 0, 0
	for ; i < len(s.seeds) && !(three && n == 3); i++ {
		m := mix64(h ^ s.seeds[i])
		if n == want && m <= top[want-1] || i == skip {
			continue
		}
		j := min(n, want-1)
		for ; j > 0 && m > top[j-1]; j-- {
			top[j], idx[j] = top[j-1], idx[j-1]
		}
		top[j], idx[j] = m, i
		n = min(n+1, want)
	}
	if three && n == 3 {
		s.best3(h, i, skip, &top, &idx)
	}
	for _, i := range idx[:min(n, k)] {
		dst = place.Append(dst, &nodes[i])
	}
	return dst
}

// best3 goes on with appendFew's best three (top and idx, sorted) from
// node i: a node that beats slot j moves it down one. Up to node
// movesFirst every node costs the same conditional moves, where a branch
// would mispredict for most of the nodes that place (3/i of node i);
// past it, the branch skips the many that cannot.
func (s *straw2) best3(h uint64, i, skip int, top *[fewK]uint64, idx *[fewK]int) {
	seeds := s.seeds
	t0, t1, t2 := top[0], top[1], top[2]
	i0, i1, i2 := idx[0], idx[1], idx[2]
	for ; i < min(len(seeds), movesFirst); i++ {
		m := mix64(h ^ seeds[i])
		if i == skip {
			continue
		}
		// In this order each step reads the slot above before the step
		// after it moves that slot: strictly greater keeps the earlier
		// of two equal scores first.
		if m > t2 {
			t2, i2 = m, i
		}
		if m > t1 {
			t2, i2, t1, i1 = t1, i1, m, i
		}
		if m > t0 {
			t1, i1, t0, i0 = t0, i0, m, i
		}
	}
	for ; i < len(seeds); i++ {
		m := mix64(h ^ seeds[i])
		if m <= t2 || i == skip {
			continue
		}
		t2, i2 = m, i
		if m > t1 {
			t2, i2, t1, i1 = t1, i1, m, i
		}
		if m > t0 {
			t1, i1, t0, i0 = t0, i0, m, i
		}
	}
	top[0], top[1], top[2] = t0, t1, t2
	idx[0], idx[1], idx[2] = i0, i1, i2
}

// appendSorted is appendTop for large k: it scores every node into a
// pooled buffer and sorts it, O(n log n) instead of O(n·k/16).
func (s *straw2) appendSorted(dst []Node, nodes []Node, h uint64, k, skip int) []Node {
	buf := candidates.Get().(*[]candidate)
	all := (*buf)[:0]
	for i, seed := range s.seeds {
		if i == skip {
			continue
		}
		c := candidate{m: mix64(h ^ seed), i: i}
		if s.invw != nil {
			c.v = logUnit(unit(c.m)) * s.invw[i]
		}
		all = append(all, c)
	}
	slices.SortFunc(all, func(a, b candidate) int {
		if a.beats(b) {
			return -1
		}
		return 1 // candidates are never equal: their indexes differ
	})
	for _, c := range all[:min(k, len(all))] {
		dst = place.Append(dst, &nodes[c.i])
	}
	*buf = all
	candidates.Put(buf)
	return dst
}

// selectTop fills top with the best candidates ranked after floor, best
// first, by insertion into the sorted array, and returns how many it
// found (fewer than len(top) only when the nodes run out).
func (s *straw2) selectTop(h uint64, top []candidate, floor candidate, skip int) int {
	n := 0
	cut := math.Inf(-1)
	for i := range s.seeds {
		if i == skip {
			continue
		}
		var c candidate
		if s.invw == nil {
			c = candidate{m: mix64(h ^ s.seeds[i]), i: i}
		} else {
			c = candidate{m: mix64(h ^ s.seeds[i]), i: i}
			u := unit(c.m)
			if (u-1)*s.invw[i] < cut {
				continue
			}
			c.v = logUnit(u) * s.invw[i]
		}
		if n == len(top) && !c.beats(top[n-1]) || !floor.beats(c) {
			continue
		}
		if n = insert(top, n, c); n == len(top) && s.invw != nil {
			cut = pruneBound(top[n-1].v)
		}
	}
	return n
}

// candidate is a node's score for one key. With equal weights v is 0 and
// the ranking is by m alone.
type candidate struct {
	v float64 // ln(u)/weight, in (-∞, 0)
	m uint64  // mix64(key hash ^ node hash)
	i int     // index into nodes
}

// beats reports whether a ranks before b: by v, then m, then lower ID.
func (a candidate) beats(b candidate) bool {
	if a.v != b.v {
		return a.v > b.v
	}
	if a.m != b.m {
		return a.m > b.m
	}
	return a.i < b.i
}

// pruneBound returns a cut below which a node's (u-1)/weight proves that
// its score v = ln(u)/weight is below best. Since ln(u) <= u-1 < 0, v <=
// (u-1)/weight up to rounding; logUnit's relative error is below 2^-49, so
// a margin of 2^-40 keeps the proof sound. Weights are bounded so that no
// value here is subnormal or infinite.
func pruneBound(best float64) float64 { return best * (1 + 0x1p-40) }

// insert puts c, which beats top[n-1] if top is full, into its place among
// the first n candidates of top, dropping the last if top is full, and
// returns the new count.
func insert(top []candidate, n int, c candidate) int {
	if n == len(top) {
		n--
	}
	j := n
	for ; j > 0 && c.beats(top[j-1]); j-- {
		top[j] = top[j-1]
	}
	top[j] = c
	return n + 1
}

// unit maps m to u = (⌊m/2^24⌋ + 0.5)/2^40, exactly: uniform in (0, 1),
// non-decreasing in m, on a grid coarse enough for logUnit to be strictly
// increasing on it.
func unit(m uint64) float64 { return (float64(int64(m>>24)) + 0.5) * 0x1p-40 }

// logUnit returns ln(u) for u in (0, 1) with relative error below 2^-49
// (the worst seen against math.Log over millions of grid points is
// 2^-50.6).
// It is written out rather than calling math.Log because math.Log differs
// by platform in the last bit (assembly on amd64, fused multiply-adds
// elsewhere), and placement must not: each product is rounded explicitly by
// a float64 conversion, which the Go specification says prevents fusion.
//
// With u = 2^e·f and f in [√½, √2), ln(u) = e·ln2 + ln(f), and ln(f) =
// 2s·Σ z^j/(2j+1) with s = (f-1)/(f+1) and z = s² <= 0.0295: ten terms,
// evaluated by Estrin's scheme for a short dependency chain, leave a
// truncation error near 2^-55. Adjacent grid values of u differ in
// logarithm by at least 2^-40 relative, thousands of times the error, so
// the result is strictly increasing on the grid.
func logUnit(u float64) float64 {
	b := math.Float64bits(u)
	e := int(b>>52) - 1023
	f := math.Float64frombits(b&(1<<52-1) | 1023<<52) // in [1, 2)
	if f > math.Sqrt2 {
		f, e = f*0.5, e+1
	}
	s := (f - 1) / (f + 1)
	z := float64(s * s)
	z2 := float64(z * z)
	z4 := float64(z2 * z2)
	p01 := 1 + float64(z*(1.0/3))
	p23 := 1.0/5 + float64(z*(1.0/7))
	p45 := 1.0/9 + float64(z*(1.0/11))
	p67 := 1.0/13 + float64(z*(1.0/15))
	p89 := 1.0/17 + float64(z*(1.0/19))
	p03 := p01 + float64(z2*p23)
	p47 := p45 + float64(z2*p67)
	p := p03 + float64(z4*(p47+float64(z4*p89)))
	return float64(float64(e)*math.Ln2) + float64(2*s*p)
}
