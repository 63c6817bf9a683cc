package chash

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"slices"

	"github.com/cespare/xxhash/v2"
	"github.com/keyplace/chash/internal/place"
)

// maglevProbes is how many table entries AppendTopK probes before it takes
// the remaining nodes in ID order. It is fixed, not a function of k, so that
// top-k lists are prefixes of each other; 28 is the budget earlier versions
// used for k = 3, which keeps every top-3 list they returned.
const maglevProbes = 28

// Salts that derive a second, independent-looking value from one hash.
const (
	maglevSkipSalt = 0x6d61676c65762d73 // a node's skip, from its ID hash
	maglevTopKSalt = 0x6d61676c65762d6b // a key's probe stride, from its hash
)

// Maglev is a Maglev lookup table (Eisenbud et al., "Maglev: A Fast and
// Reliable Software Network Load Balancer", NSDI 2016): a table of M
// entries, M prime, each naming a node. A key belongs to the node in entry
// ⌊h·M / 2⁶⁴⌋ of its 64-bit hash h (a multiply-shift reduction, part of the
// placement: it reads the hash's high bits and avoids a division).
//
// Population follows the paper. Node i has offset = h(ID) mod M and
// skip = mix64(h(ID) ^ salt) mod (M-1) + 1, so its preference list
// (offset + j·skip) mod M visits every entry once; nodes, in ascending ID
// order, take turns claiming the first entry of their list not yet taken
// until the table is full. Equal weights give entry counts that differ by
// at most one. With unequal weights the turns follow stride scheduling:
// every node takes one turn in the first round, then a node's turns come
// every maxWeight/weight (in 32.32 fixed point, capped at 2²⁴) units of
// virtual time, ties going to the lower ID, so each node's entry count is
// within two of M·weight/Σweight. A node always has at least one entry.
//
// Removing or adding one of n nodes moves that node's keys plus a small
// fraction of the others' (an entry a departed node held goes to whichever
// node reaches it first, which shifts later claims): measured over 100,000
// keys at M = 65537, 0.2% to 0.55% of all keys at n = 10 and 0.5% to 0.7%
// at n = 100; at M = 655373, 0.1% to 0.2% at n = 100. The tests hold it
// under 0.8%. Choose M ≥ 100 × nodes: entry counts then differ by at most
// 1% between equal nodes, weights resolve to 1%, and the collateral stays
// low; at M = 10 × nodes it reaches 3% to 4%.
//
// Lookups cost one hash and one table read: O(1), allocation-free. The
// table takes 1 byte per entry for up to 256 nodes, 2 up to 65,536 and 3
// beyond (64 KiB at the default size and up to 256 nodes). Building costs
// O(M log M) time in practice and O(M + N) memory; see NewMaglev.
//
// A Maglev is immutable and safe for concurrent use; Add and Remove derive
// new tables. Nodes are reported in ascending ID order. The zero Maglev,
// like a nil *Maglev, is empty: lookups return the zero Node, Len is 0, and
// Add builds a table with the default options.
type Maglev struct {
	nodes []Node       // members, ascending by ID
	perms []maglevPerm // each node's offset and skip, parallel to nodes
	// table holds size entries of width bytes, little-endian, plus three
	// bytes of padding so that every entry can be read with one 4-byte load.
	table []byte
	size  uint64
	width uint64
	mask  uint32
	cfg   config
}

// maglevPerm is a node's preference list: entry j is (offset + j·skip) mod M.
type maglevPerm struct{ offset, skip uint32 }

var _ Placer = (*Maglev)(nil)

// NewMaglev builds a Maglev table of the given nodes. It uses WithHasher
// and WithTableSize (default 65537; a prime, at least the number of nodes)
// and ignores the other options. It fails if nodes is empty, an ID is empty
// or repeated, a weight is negative, NaN or infinite, or the table is
// smaller than the node count (ErrInvalidOption).
//
// Building walks each node's preference list past taken entries, about
// (M/2)·ln M probes of an M-bit bitmap, and claims the last √M entries by
// their rank in each list, √M multiplications at most per entry: O(M log M)
// in practice, plus O(log N) per entry when weights differ. It allocates the
// table, the bitmap and O(N) of per-node state, never an N × M matrix
// (benchmarks/BENCHMARKS.md, BenchmarkMaglevBuild, has the time and bytes).
func NewMaglev(nodes []Node, opts ...Option) (*Maglev, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	ns, err := checkNodes(nodes, true)
	if err != nil {
		return nil, err
	}
	return buildMaglev(cfg, ns, nil)
}

// buildMaglev builds the table of nodes (sorted by ID); perms, if not nil,
// holds their offsets and skips.
func buildMaglev(cfg config, nodes []Node, perms []maglevPerm) (*Maglev, error) {
	m := cfg.tableSize
	if m < len(nodes) {
		return nil, fmt.Errorf("%w: table size %d is smaller than the %d nodes (want a prime of at least 100 × nodes)",
			ErrInvalidOption, m, len(nodes))
	}
	if perms == nil {
		perms = make([]maglevPerm, len(nodes))
		for i, n := range nodes {
			perms[i] = cfg.maglevPerm(n.ID)
		}
	}
	g := &Maglev{nodes: nodes, perms: perms, size: uint64(m), cfg: cfg}
	switch {
	case len(nodes) <= 1<<8:
		g.width, g.mask = 1, 0xff
	case len(nodes) <= 1<<16:
		g.width, g.mask = 2, 0xffff
	default:
		g.width, g.mask = 3, 0xffffff
	}
	g.table = make([]byte, uint64(m)*g.width+3)
	if err := g.fill(); err != nil {
		return nil, err
	}
	return g, nil
}

// maglevPerm returns the preference list of the node with the given ID.
func (c config) maglevPerm(id string) maglevPerm {
	h, m := c.hasher.sumString(id), uint64(c.tableSize)
	return maglevPerm{offset: uint32(h % m), skip: uint32(mix64(h^maglevSkipSalt)%(m-1) + 1)}
}

// at returns the index of the node in entry i.
func (g *Maglev) at(i uint64) int {
	return int(binary.LittleEndian.Uint32(g.table[i*g.width:]) & g.mask)
}

func (g *Maglev) set(i uint64, node int) {
	e := g.table[i*g.width:]
	switch g.width {
	case 1:
		e[0] = byte(node)
	case 2:
		binary.LittleEndian.PutUint16(e, uint16(node))
	default:
		e[0], e[1], e[2] = byte(node), byte(node>>8), byte(node>>16)
	}
}

// slot maps a hash to a table entry.
func (g *Maglev) slot(h uint64) uint64 {
	hi, _ := bits.Mul64(h, g.size)
	return hi
}

// Lookup returns the node in the table entry of key's hash.
func (g *Maglev) Lookup(key []byte) Node {
	if g.empty() {
		return Node{}
	}
	return g.nodes[g.index(key)]
}

// LookupString is Lookup for a string key.
func (g *Maglev) LookupString(key string) Node {
	if g.empty() {
		return Node{}
	}
	return g.nodes[g.indexString(key)]
}

// index and indexString are the lookups' work, kept out of Lookup and
// LookupString so that those stay within the inliner's budget (see
// Rendezvous.index). The default hash is called directly, since hasher.sum
// is not inlined.
func (g *Maglev) index(key []byte) int {
	var h uint64
	if g.cfg.hasher.ext == nil {
		h = xxhash.Sum64(key)
	} else {
		h = g.cfg.hasher.ext.Sum64(key)
	}
	return int(g.at(g.slot(h)))
}

func (g *Maglev) indexString(key string) int {
	var h uint64
	if g.cfg.hasher.ext == nil {
		h = xxhash.Sum64String(key)
	} else {
		h = g.cfg.hasher.ext.Sum64String(key)
	}
	return int(g.at(g.slot(h)))
}

// AppendTopK appends up to k distinct nodes for key. The first is Lookup's
// node, from entry s = ⌊h·M / 2⁶⁴⌋. The others come from probing entries
// s + j·t mod M for j = 1, 2, ..., with a stride t in [1, M-1] derived from
// mix64(h ^ salt), skipping nodes already chosen: each probe reads a
// pseudo-random entry, so a node is a secondary choice about in proportion
// to its entries, whatever the first choice was. After maglevProbes (28)
// probes any nodes still missing are taken in ID order from a position
// derived from the hash. The budget does not depend on k, so every key has
// one preference order and asking for more nodes never reorders the first
// ones. Cost: at most 28 probes, and O(k²) comparisons.
func (g *Maglev) AppendTopK(dst []Node, key []byte, k int) []Node {
	if g.empty() {
		return dst
	}
	return g.appendTopK(dst, g.cfg.hasher.sum(key), k)
}

// AppendTopKString is AppendTopK for a string key.
func (g *Maglev) AppendTopKString(dst []Node, key string, k int) []Node {
	if g.empty() {
		return dst
	}
	return g.appendTopK(dst, g.cfg.hasher.sumString(key), k)
}

func (g *Maglev) appendTopK(dst []Node, h uint64, k int) []Node {
	k = place.ClampK(k, len(g.nodes))
	if k == 0 {
		return dst
	}
	start := len(dst)
	seen := place.NewPicked(len(g.nodes), k)
	s := g.slot(h)
	first := g.at(s)
	take(seen, first, "", nil)
	dst = place.Append(dst, &g.nodes[first])
	h2 := mix64(h ^ maglevTopKSalt)
	stride, _ := bits.Mul64(h2, g.size-1)
	stride++
	for probes := maglevProbes; probes > 0 && len(dst)-start < k; probes-- {
		if s += stride; s >= g.size {
			s -= g.size
		}
		if j := g.at(s); take(seen, j, g.nodes[j].ID, dst[start:]) {
			dst = place.Append(dst, &g.nodes[j])
		}
	}
	i, _ := bits.Mul64(mix64(h2), uint64(len(g.nodes)))
	for len(dst)-start < k {
		if n := &g.nodes[i]; take(seen, int(i), n.ID, dst[start:]) {
			dst = place.Append(dst, n)
		}
		if i++; i == uint64(len(g.nodes)) {
			i = 0
		}
	}
	seen.Release()
	return dst
}

// Nodes returns the members in ascending ID order.
func (g *Maglev) Nodes() []Node {
	if g == nil {
		return nil
	}
	return slices.Clone(g.nodes)
}

// Len returns the number of members.
func (g *Maglev) Len() int {
	if g == nil {
		return 0
	}
	return len(g.nodes)
}

// TableSize returns the number of table entries, M.
func (g *Maglev) TableSize() int {
	if g == nil {
		return 0
	}
	return int(g.size)
}

// Entries returns how many table entries each node holds, in the order of
// Nodes: a node receives Entries/TableSize of the keys. It costs O(M).
func (g *Maglev) Entries() []int {
	if g.empty() {
		return nil
	}
	out := make([]int, len(g.nodes))
	for i := uint64(0); i < g.size; i++ {
		out[g.at(i)]++
	}
	return out
}

// Add returns a table with the given nodes added, as NewMaglev would build
// it from the combined membership. The members' offsets and skips are
// reused, but every entry is claimed anew: the cost is that of a build. g
// is unchanged.
func (g *Maglev) Add(nodes ...Node) (*Maglev, error) {
	if g.empty() {
		return NewMaglev(nodes)
	}
	all, err := checkNodes(append(slices.Clone(g.nodes), nodes...), true)
	if err != nil {
		return nil, err
	}
	return g.derive(all)
}

// Remove returns a table without the nodes with the given IDs, as
// NewMaglev would build it from the remaining membership, at the cost of a
// build less the hashing of IDs. It fails with ErrUnknownNode if an ID is
// not a member, and with ErrNoNodes if no node would remain. g is
// unchanged.
func (g *Maglev) Remove(ids ...string) (*Maglev, error) {
	if g.empty() {
		return nil, removeFromEmpty(ids)
	}
	rest, err := without(g.nodes, ids)
	if err != nil {
		return nil, err
	}
	return g.derive(rest)
}

// derive builds the table of nodes (sorted by ID), reusing the offsets and
// skips of the nodes g already has.
func (g *Maglev) derive(nodes []Node) (*Maglev, error) {
	perms := make([]maglevPerm, len(nodes))
	for i, n := range nodes {
		if j := indexOf(g.nodes, n.ID); j >= 0 {
			perms[i] = g.perms[j]
		} else {
			perms[i] = g.cfg.maglevPerm(n.ID)
		}
	}
	return buildMaglev(g.cfg, nodes, perms)
}

// turns yields the order in which nodes claim entries.
type turns struct {
	n      int
	cur    int      // round robin, when all weights are equal
	stride []uint64 // per node: virtual time between turns, 32.32
	pass   []uint64 // per node: virtual time of its next turn
	heap   []int32  // node indices, a min-heap by (pass, index)
}

func newTurns(nodes []Node) *turns {
	t := &turns{n: len(nodes)}
	ws := summarize(nodes)
	maxw := ws.max
	if ws.equal {
		return t
	}
	t.stride, t.pass, t.heap = make([]uint64, len(nodes)), make([]uint64, len(nodes)), make([]int32, len(nodes))
	for i, n := range nodes {
		// maxw/w is in [1, ∞]; capping it at 2²⁴ keeps passes below 2⁵⁷.
		t.stride[i] = uint64(math.Round(min(maxw/n.Weight, 1<<24) * (1 << 32)))
		t.heap[i] = int32(i) // all passes are 0: sorted by index is a heap
	}
	return t
}

func (t *turns) next() int {
	if t.heap == nil {
		i := t.cur
		if t.cur++; t.cur == t.n {
			t.cur = 0
		}
		return i
	}
	top := int(t.heap[0])
	t.pass[top] += t.stride[top]
	t.down()
	return top
}

func (t *turns) less(a, b int32) bool {
	return t.pass[a] < t.pass[b] || t.pass[a] == t.pass[b] && a < b
}

// down restores the heap after its root's pass grew.
func (t *turns) down() {
	h, i := t.heap, 0
	for {
		c := 2*i + 1
		if c >= len(h) {
			return
		}
		if c+1 < len(h) && t.less(h[c+1], h[c]) {
			c++
		}
		if !t.less(h[c], h[i]) {
			return
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
}

// fill claims every entry of the table, the nodes taking turns, each
// walking its preference list past entries already taken (a bitmap of M
// bits, which stays in cache).
//
// Walks get long as the table fills: with F entries free, a claim probes
// about M/F entries, and over half of all probes fall in the last √M
// claims. So once √M entries or fewer are free, a claim takes instead the
// free entry of least rank in the node's list, rank((offset + j·skip) mod M)
// = j, found as (e − offset)·skip⁻¹ mod M for each free entry e: F
// independent multiplications instead of M/F dependent probes. That is the
// entry the walk would find, since every entry of the list before the
// node's position is taken. In an A/B run at M = 65537 this made builds of
// 10 to 1,000 nodes 20–25% faster; switching at 2√M free entries was
// slower, and at √M/2 within 2% (the fastest of 300 builds of 1,000 nodes). (An earlier version switched at M/(2N)
// free entries, too late to save time.)
//
// Nodes with the same offset and skip (IDs whose hashes collide, which an
// attacker can make at will since xxhash64 is invertible) share one
// position in their common list: each would otherwise walk past every
// entry the others took, O(N·M) in all. Sharing gives the same table, as
// every entry between a node's own position and the shared one is taken.
// Other crafted lists could still make the walks long, so the probes are
// bounded: a build that needs more than M·(2·log₂M + 64) fails with
// ErrTooLarge rather than running for minutes. The ranked claims cost at
// most √M each, O(M) in all.
func (g *Maglev) fill() error {
	size, perms := g.size, g.perms
	group := permGroups(perms)
	next := make([]uint32, len(perms))
	for i, p := range perms {
		next[group[i]] = p.offset
	}
	budget := size * uint64(2*bits.Len64(size)+64)
	full := make([]uint64, (size+63)/64)
	t := newTurns(g.nodes)
	walked := size - uint64(math.Sqrt(float64(size))) // √M < M for M >= 2
	for filled := uint64(0); filled < walked; filled++ {
		i := t.next()
		gi := group[i]
		s, gap := uint64(next[gi]), size-uint64(perms[i].skip)
		// The walk finds a free entry within size probes (it visits every
		// entry, and one is free), so checking the budget once an entry
		// bounds the total at budget + size, and keeps the check out of
		// the probe loop.
		probes := uint64(0)
		for full[s/64]&(1<<(s%64)) != 0 {
			s = probeStep(s, gap, size)
			probes++
		}
		if probes > budget {
			return fmt.Errorf("%w: a Maglev table of %d nodes needs more than %d probes to fill: node IDs whose hashes collide (use WithHasher(XXHashSeed(secret)) where IDs come from untrusted sources)",
				ErrTooLarge, len(perms), size*uint64(2*bits.Len64(size)+64))
		}
		budget -= probes
		full[s/64] |= 1 << (s % 64)
		g.set(s, i)
		next[gi] = uint32(probeStep(s, gap, size))
	}
	g.claimRanked(full, t)
	return nil
}

// claimRanked claims the entries still free in full, each going to the
// next node in turn as the free entry of least rank in its preference list
// (see fill).
func (g *Maglev) claimRanked(full []uint64, t *turns) {
	size := g.size
	var free []uint32
	for w, bs := range full {
		for bs := ^bs; bs != 0; bs &= bs - 1 {
			if e := uint64(w)*64 + uint64(bits.TrailingZeros64(bs)); e < size {
				free = append(free, uint32(e))
			}
		}
	}
	// A rank is a product below 2M² < 2⁴⁹, reduced mod M by Barrett's
	// method with µ = ⌊(2⁶⁴−1)/M⌋: the quotient's estimate is low by at
	// most one, which the last subtraction corrects.
	mu := math.MaxUint64 / size
	inv := make([]uint32, len(g.perms)) // skip⁻¹ mod M, 0 until needed
	for len(free) > 0 {
		i := t.next()
		p := g.perms[i]
		if inv[i] == 0 {
			inv[i] = uint32(modInverse(uint64(p.skip), size))
		}
		v := uint64(inv[i])
		best, bestRank := 0, size
		for k, e := range free {
			a := (uint64(e) + size - uint64(p.offset)) * v
			q, _ := bits.Mul64(a, mu)
			rank := a - q*size
			if rank >= size {
				rank -= size
			}
			if rank < bestRank {
				best, bestRank = k, rank
			}
		}
		g.set(uint64(free[best]), i)
		free[best] = free[len(free)-1]
		free = free[:len(free)-1]
	}
}

// modInverse returns a⁻¹ mod m for a prime m and 0 < a < m, by the
// extended Euclidean algorithm.
func modInverse(a, m uint64) uint64 {
	t, nt := int64(0), int64(1)
	r, nr := int64(m), int64(a)
	for nr != 0 {
		q := r / nr
		t, nt = nt, t-q*nt
		r, nr = nr, r-q*nr
	}
	if t < 0 {
		t += int64(m)
	}
	return uint64(t)
}

// permGroups returns, for each node, the index of the first node with the
// same offset and skip.
func permGroups(perms []maglevPerm) []int32 {
	group := make([]int32, len(perms))
	first := make(map[maglevPerm]int32, len(perms))
	for i, p := range perms {
		j, ok := first[p]
		if !ok {
			j = int32(i)
			first[p] = j
		}
		group[i] = j
	}
	return group
}

// empty reports whether g is nil or the zero Maglev, which have no members.
func (g *Maglev) empty() bool { return g == nil || len(g.nodes) == 0 }

// probeStep returns the entry after s in a preference list whose skip is
// size - gap, (s + skip) mod size, for s < size and 0 < gap < size < 2^63.
// It has no branch: the walk's positions are load addresses, which the
// compiler does not move conditionally, and a branch on the wrap, taken
// for about half the probes of a random skip, mispredicts.
func probeStep(s, gap, size uint64) uint64 {
	d := s - gap
	return d + size&uint64(int64(d)>>63)
}
