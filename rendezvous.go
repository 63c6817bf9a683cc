package chash

import (
	"fmt"
	"math"
	"slices"
)

// Rendezvous weights are bounded so that every score and pruning bound is a
// normal float64: 2^-100 to 2^100, about 7.9e-31 to 1.3e30.
const (
	minRendezvousWeight = 0x1p-100
	maxRendezvousWeight = 0x1p100
)

// topBatch is how many candidates AppendTopK selects per pass over the
// nodes; its array lives on the stack.
const topBatch = 16

// Rendezvous places keys by highest random weight (Thaler and Ravishankar,
// "Using name-based mappings to increase hit rates", IEEE/ACM ToN 1998):
// every node scores every key, and the best score wins.
//
// A node's score for a key is derived from two 64-bit values, the key's
// hash h and the node's ID hash s, by m = mix64(h ^ s). When all weights are
// equal the highest m wins. Otherwise the scores are weighted by the
// logarithmic method (weighted HRW; Ceph's straw2): with u = (⌊m/2^24⌋ +
// 0.5)/2^40, uniform in (0, 1), the node with the highest ln(u)/weight wins,
// which is the order of -weight/ln(u). Each node then wins with probability
// weight/Σweight. Equal scores fall to the higher m, then to the lower ID,
// so every ranking is a strict total order.
//
// The two paths rank equal-weight nodes identically: u is non-decreasing in
// m, and on u's grid of 2^-40 the logarithm (computed by this package with
// every rounding explicit, so that scores are bit-identical on every
// platform) is strictly increasing. Because a pair of nodes is always
// ranked the same way whatever the other members are, adding a node moves
// only the keys it wins, removing one moves only its keys, and changing one
// node's weight moves keys only to or from it: exactly, with no collateral
// moves. Two nodes whose ID hashes collide are ranked the same for every
// key, and the one with the higher ID never owns a key.
//
// Lookup is O(n) for n nodes: with equal weights one mix64 and one compare
// per node (19 instructions, measured at about 2 ns per node on a shared
// 2-core server). Unequal weights add a logarithm only for nodes that might
// win: a bound from ln(u) <= u-1 skips it for the rest, so 1,000 weighted
// nodes cost about 1.5 times 1,000 equal ones. Measured beside the O(1)
// lookups of Ring, Maglev and Jump, rendezvous is as fast at 8 nodes, about
// 5 times slower at 64 and 50 to 70 times slower at 1,000 (2 to 2.5 µs).
// It is the right choice up to about a hundred nodes, or beyond that when
// exact weights, zero collateral movement or ranked replicas matter more
// than microseconds per lookup. Memory is 32 bytes per node beside the IDs,
// 40 with unequal weights.
//
// A Rendezvous is immutable and safe for concurrent use; Add and Remove
// derive new ones. Nodes are reported in ascending ID order. The zero
// Rendezvous, like a nil *Rendezvous, is empty: lookups return the zero
// Node, Len is 0, and Add builds a placer with the default options.
type Rendezvous struct {
	nodes []Node    // ascending by ID
	seeds []uint64  // seeds[i] is the hash of nodes[i].ID
	invw  []float64 // 1/weight per node; nil when all weights are equal
	// collide is set when two IDs hash alike: their nodes are then not
	// independent draws, so Shares and Diff sample rather than use the
	// closed forms.
	collide bool
	cfg     config
}

var _ Placer = (*Rendezvous)(nil)

// NewRendezvous builds a rendezvous placer of the given nodes. It uses
// WithHasher and ignores the other options. It fails if nodes is empty, an
// ID is empty or repeated, or a weight is negative, NaN, infinite or
// outside 2^-100 to 2^100 (a zero weight means 1). Building costs one hash
// per node and a sort by ID.
func NewRendezvous(nodes []Node, opts ...Option) (*Rendezvous, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	ns, err := checkNodes(nodes, true)
	if err != nil {
		return nil, err
	}
	return newRendezvous(cfg, ns)
}

// newRendezvous builds the placer of nodes, which checkNodes has sorted.
func newRendezvous(cfg config, nodes []Node) (*Rendezvous, error) {
	r := &Rendezvous{nodes: nodes, seeds: make([]uint64, len(nodes)), cfg: cfg}
	equal := true
	for i, n := range nodes {
		if n.Weight < minRendezvousWeight || n.Weight > maxRendezvousWeight {
			return nil, fmt.Errorf("%w: node %q has weight %v: rendezvous accepts 2^-100 to 2^100", ErrInvalidWeight, n.ID, n.Weight)
		}
		r.seeds[i] = cfg.hasher.sumString(n.ID)
		equal = equal && n.Weight == nodes[0].Weight
	}
	sorted := slices.Clone(r.seeds)
	slices.Sort(sorted)
	r.collide = len(slices.Compact(sorted)) < len(r.seeds)
	if !equal {
		r.invw = make([]float64, len(nodes))
		for i, n := range nodes {
			r.invw[i] = 1 / n.Weight
		}
	}
	return r, nil
}

// Lookup returns the node with the best score for key.
func (r *Rendezvous) Lookup(key []byte) Node {
	if r.empty() {
		return Node{}
	}
	return r.nodes[r.pick(r.cfg.hasher.sum(key))]
}

// LookupString is Lookup for a string key.
func (r *Rendezvous) LookupString(key string) Node {
	if r.empty() {
		return Node{}
	}
	return r.nodes[r.pick(r.cfg.hasher.sumString(key))]
}

// AppendTopK appends the k nodes with the best scores for key, best first.
// It keeps the best candidates in a sorted array of up to 16 on the stack
// rather than sorting all n scores: k <= 16 costs one pass, O(n), and larger
// k one pass per 16 nodes, O(n·⌈k/16⌉). It does not allocate when dst has
// room for k more nodes.
func (r *Rendezvous) AppendTopK(dst []Node, key []byte, k int) []Node {
	if r.empty() {
		return dst
	}
	return r.appendTopK(dst, r.cfg.hasher.sum(key), k)
}

// AppendTopKString is AppendTopK for a string key.
func (r *Rendezvous) AppendTopKString(dst []Node, key string, k int) []Node {
	if r.empty() {
		return dst
	}
	return r.appendTopK(dst, r.cfg.hasher.sumString(key), k)
}

// pick returns the index of the best node for the key hash h.
func (r *Rendezvous) pick(h uint64) int {
	if r.invw != nil {
		return r.pickWeighted(h)
	}
	seeds := r.seeds
	best, bi := mix64(h^seeds[0]), 0
	for i := 1; i < len(seeds); i++ {
		// Strictly greater: on equal values (colliding ID hashes) the
		// lower ID keeps the key.
		if m := mix64(h ^ seeds[i]); m > best {
			best, bi = m, i
		}
	}
	return bi
}

func (r *Rendezvous) pickWeighted(h uint64) int {
	best := candidate{v: math.Inf(-1)}
	cut := math.Inf(-1)
	invw := r.invw[:len(r.seeds)]
	for i, s := range r.seeds {
		m := mix64(h ^ s)
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

func (r *Rendezvous) appendTopK(dst []Node, h uint64, k int) []Node {
	k = clampK(k, len(r.nodes))
	var top [topBatch]candidate
	// Each pass selects the best candidates ranked after floor, the last
	// one appended; the first pass's floor beats every real candidate.
	floor := candidate{v: math.Inf(1)}
	for k > 0 {
		b := min(k, topBatch)
		r.selectTop(h, top[:b], floor)
		for _, c := range top[:b] {
			dst = append(dst, r.nodes[c.i])
		}
		floor = top[b-1]
		k -= b
	}
	return dst
}

// selectTop fills top with the best len(top) candidates ranked after floor,
// best first, by insertion into the sorted array.
func (r *Rendezvous) selectTop(h uint64, top []candidate, floor candidate) {
	if r.invw != nil {
		r.selectTopWeighted(h, top, floor)
		return
	}
	n := 0
	var worst uint64 // top[n-1].m once top is full
	for i, s := range r.seeds {
		m := mix64(h ^ s)
		// Nodes come in ID order, so on equal m the one already kept
		// ranks first.
		if n == len(top) && m <= worst {
			continue
		}
		c := candidate{m: m, i: i}
		if !floor.beats(c) {
			continue
		}
		n = insert(top, n, c)
		worst = top[n-1].m
	}
}

func (r *Rendezvous) selectTopWeighted(h uint64, top []candidate, floor candidate) {
	n := 0
	cut := math.Inf(-1)
	invw := r.invw[:len(r.seeds)]
	for i, s := range r.seeds {
		c := candidate{m: mix64(h ^ s), i: i}
		u := unit(c.m)
		if (u-1)*invw[i] < cut {
			continue
		}
		c.v = logUnit(u) * invw[i]
		if n == len(top) && !c.beats(top[n-1]) || !floor.beats(c) {
			continue
		}
		if n = insert(top, n, c); n == len(top) {
			cut = pruneBound(top[n-1].v)
		}
	}
}

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

// Nodes returns the members in ascending ID order.
func (r *Rendezvous) Nodes() []Node {
	if r == nil {
		return nil
	}
	return slices.Clone(r.nodes)
}

// Len returns the number of members.
func (r *Rendezvous) Len() int {
	if r == nil {
		return 0
	}
	return len(r.nodes)
}

// Add returns a placer with the given nodes added, as NewRendezvous would
// build it from the combined membership: O(n log n). Only keys that the new
// nodes win move, all to them. r is unchanged.
func (r *Rendezvous) Add(nodes ...Node) (*Rendezvous, error) {
	if r.empty() {
		return NewRendezvous(nodes)
	}
	all, err := checkNodes(append(slices.Clone(r.nodes), nodes...), true)
	if err != nil {
		return nil, err
	}
	return newRendezvous(r.cfg, all)
}

// Remove returns a placer without the nodes with the given IDs, as
// NewRendezvous would build it from the remaining membership: O(n). Only
// the removed nodes' keys move. It fails with ErrUnknownNode if an ID is not
// a member, and with ErrNoNodes if no node would remain. r is unchanged.
func (r *Rendezvous) Remove(ids ...string) (*Rendezvous, error) {
	if r.empty() {
		return nil, removeFromEmpty(ids)
	}
	rest, err := without(r.nodes, ids)
	if err != nil {
		return nil, err
	}
	return newRendezvous(r.cfg, rest)
}

// empty reports whether r is nil or the zero Rendezvous, which have no members.
func (r *Rendezvous) empty() bool { return r == nil || len(r.nodes) == 0 }
