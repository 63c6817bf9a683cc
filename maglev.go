package chash

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"slices"
)

// DefaultTableSize is Maglev's lookup table size unless WithTableSize says
// otherwise: the prime 65537.
const DefaultTableSize = 65537

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
// fraction of others (each node's preferences shift slightly): measured
// over 100,000 keys with M = 65537, 0.2% to 0.3% of all keys at n = 10 and
// about 1% at n = 100. Choose M ≥ 100 × nodes: entry counts then differ by
// at most 1% between equal nodes, weights resolve to 1%, and the
// collateral stays low; it grows as M/n shrinks.
//
// Lookups cost one hash and one table read: O(1), allocation-free. The
// table takes 1 byte per entry for up to 256 nodes, 2 up to 65,536 and 3
// beyond (64 KiB at the default size and up to 256 nodes). Building costs
// O(M log M) time in the worst case and O(M + N) memory; see NewMaglev.
//
// A Maglev is immutable and safe for concurrent use; Add and Remove derive
// new tables. Nodes are reported in ascending ID order. The zero Maglev is
// not usable: build one with NewMaglev.
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
// Building takes O(M log(M/E) + N·E) time for N nodes, where E ≈ M/(2N) is
// the number of entries still empty when the build switches to ranking
// them directly (the naive fill spends most of its probes on the last few
// empty entries); with unequal weights each turn adds O(log N). Memory is
// the table, an M-bit bitmap and at most 2 bytes per entry of temporary
// ranking lists: O(M + N). At M = 65537 a build takes well under 10 ms.
func NewMaglev(nodes []Node, opts ...Option) (*Maglev, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	if cfg.tableSize == 0 {
		cfg.tableSize = DefaultTableSize
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
	g.fill()
	return g, nil
}

// maglevPerm returns the preference list of the node with the given ID.
func (c config) maglevPerm(id string) maglevPerm {
	h, m := c.hasher.sumString(id), uint64(c.tableSize)
	skip := uint64(1)
	if m > 2 {
		skip = mix64(h^maglevSkipSalt)%(m-1) + 1
	}
	return maglevPerm{offset: uint32(h % m), skip: uint32(skip)}
}

// at returns the index of the node in entry i.
func (g *Maglev) at(i uint64) int {
	return int(binary.LittleEndian.Uint32(g.table[i*g.width:]) & g.mask)
}

func (g *Maglev) set(i uint64, node int) {
	for b := uint64(0); b < g.width; b++ {
		g.table[i*g.width+b] = byte(node >> (8 * b))
	}
}

// slot maps a hash to a table entry.
func (g *Maglev) slot(h uint64) uint64 {
	hi, _ := bits.Mul64(h, g.size)
	return hi
}

// Lookup returns the node in the table entry of key's hash.
func (g *Maglev) Lookup(key []byte) Node {
	return g.nodes[g.at(g.slot(g.cfg.hasher.sum(key)))]
}

// LookupString is Lookup for a string key.
func (g *Maglev) LookupString(key string) Node {
	return g.nodes[g.at(g.slot(g.cfg.hasher.sumString(key)))]
}

// AppendTopK appends up to k distinct nodes for key. The first is Lookup's
// node, from entry s = ⌊h·M / 2⁶⁴⌋. The others come from probing entries
// s + j·t mod M for j = 1, 2, ..., with a stride t in [1, M-1] derived from
// mix64(h ^ salt), skipping nodes already chosen: each probe reads a
// pseudo-random entry, so a node is a secondary choice about in proportion
// to its entries, whatever the first choice was. After 4k+16 probes any
// nodes still missing are taken in ID order from a position derived from
// the hash, so k distinct nodes always come back. Cost: O(k²) comparisons.
func (g *Maglev) AppendTopK(dst []Node, key []byte, k int) []Node {
	return g.appendTopK(dst, g.cfg.hasher.sum(key), k)
}

// AppendTopKString is AppendTopK for a string key.
func (g *Maglev) AppendTopKString(dst []Node, key string, k int) []Node {
	return g.appendTopK(dst, g.cfg.hasher.sumString(key), k)
}

func (g *Maglev) appendTopK(dst []Node, h uint64, k int) []Node {
	k = clampK(k, len(g.nodes))
	if k == 0 {
		return dst
	}
	start := len(dst)
	s := g.slot(h)
	dst = append(dst, g.nodes[g.at(s)])
	h2 := mix64(h ^ maglevTopKSalt)
	stride, _ := bits.Mul64(h2, g.size-1)
	stride++
	for probes := 4*k + 16; probes > 0 && len(dst)-start < k; probes-- {
		if s += stride; s >= g.size {
			s -= g.size
		}
		if n := &g.nodes[g.at(s)]; absent(dst[start:], n.ID) {
			dst = append(dst, *n)
		}
	}
	i, _ := bits.Mul64(mix64(h2), uint64(len(g.nodes)))
	for len(dst)-start < k {
		if n := &g.nodes[i]; absent(dst[start:], n.ID) {
			dst = append(dst, *n)
		}
		if i++; i == uint64(len(g.nodes)) {
			i = 0
		}
	}
	return dst
}

// Nodes returns the members in ascending ID order.
func (g *Maglev) Nodes() []Node { return slices.Clone(g.nodes) }

// Len returns the number of members.
func (g *Maglev) Len() int { return len(g.nodes) }

// TableSize returns the number of table entries, M.
func (g *Maglev) TableSize() int { return int(g.size) }

// Entries returns how many table entries each node holds, in the order of
// Nodes: a node receives Entries/TableSize of the keys. It costs O(M).
func (g *Maglev) Entries() []int {
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
	gone := make(map[string]bool, len(ids))
	for _, id := range ids {
		if indexOf(g.nodes, id) < 0 {
			return nil, fmt.Errorf("%w: %q", ErrUnknownNode, id)
		}
		gone[id] = true
	}
	var rest []Node
	for _, n := range g.nodes {
		if !gone[n.ID] {
			rest = append(rest, n)
		}
	}
	if len(rest) == 0 {
		return nil, fmt.Errorf("%w: removing %d of %d nodes", ErrNoNodes, len(ids), len(g.nodes))
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

// fill claims every entry of the table, the nodes taking turns.
func (g *Maglev) fill() {
	f := newFiller(g.perms, g.size)
	t := newTurns(g.nodes)
	for f.filled < g.size {
		i := t.next()
		g.set(f.claim(i), i)
	}
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
	maxw, equal := 0.0, true
	for _, n := range nodes {
		maxw = max(maxw, n.Weight)
		equal = equal && n.Weight == nodes[0].Weight
	}
	if equal {
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

// filler claims table entries for nodes in turn. Most entries are claimed
// as in the paper, by walking a node's preference list past taken entries.
// That walk costs M/E probes per claim once E entries are left, so the last
// E ≈ M/(2N) entries are claimed differently, with the same result: the
// remaining empty entries are ranked once for every node by their position
// in its list, (entry - offset)·skip⁻¹ mod M, and a node's next claim is
// the first entry of its ranking still empty. Every entry before a node's
// walk position is taken, so that is exactly the entry the walk would find.
type filler struct {
	size, recip uint64 // recip = ⌊(2⁶⁴-1)/size⌋, for mod
	perms       []maglevPerm
	next        []uint32 // per node: the next entry of its list to try
	full        []uint64 // bitmap of taken entries
	filled      uint64
	rankAt      uint64   // fill count at which entries are ranked
	ranked      []uint32 // per node: the empty entries, in its list order
	cursor      []int32  // per node: its position in ranked
	empty       int      // entries ranked per node
}

func newFiller(perms []maglevPerm, size uint64) *filler {
	f := &filler{size: size, recip: ^uint64(0) / size, perms: perms, rankAt: size}
	f.next = make([]uint32, len(perms))
	for i, p := range perms {
		f.next[i] = p.offset
	}
	f.full = make([]uint64, (size+63)/64)
	if e := size / uint64(2*len(perms)); e >= 16 {
		f.rankAt = size - e
	}
	return f
}

func (f *filler) taken(s uint64) bool { return f.full[s/64]&(1<<(s%64)) != 0 }

func (f *filler) take(s uint64) uint64 {
	f.full[s/64] |= 1 << (s % 64)
	f.filled++
	return s
}

// claim takes node i's next preferred empty entry and returns it.
func (f *filler) claim(i int) uint64 {
	if f.filled >= f.rankAt {
		return f.claimRanked(i)
	}
	s, skip := uint64(f.next[i]), uint64(f.perms[i].skip)
	for f.taken(s) {
		if s += skip; s >= f.size {
			s -= f.size
		}
	}
	next := s + skip
	if next >= f.size {
		next -= f.size
	}
	f.next[i] = uint32(next)
	return f.take(s)
}

func (f *filler) claimRanked(i int) uint64 {
	if f.ranked == nil {
		f.rank()
	}
	list := f.ranked[i*f.empty : (i+1)*f.empty]
	c := f.cursor[i]
	for f.taken(uint64(list[c])) {
		c++
	}
	f.cursor[i] = c + 1
	return f.take(uint64(list[c]))
}

// rank lists, for every node, the empty entries in its preference order.
func (f *filler) rank() {
	var empty []uint32
	for w, word := range f.full {
		for free := ^word; free != 0; free &= free - 1 {
			if s := uint64(w*64 + bits.TrailingZeros64(free)); s < f.size {
				empty = append(empty, uint32(s))
			}
		}
	}
	e := len(empty)
	f.empty = e
	f.ranked = make([]uint32, len(f.perms)*e)
	f.cursor = make([]int32, len(f.perms))
	keys, sorted := make([]uint64, e), make([]uint64, e)
	shift := uint(bits.Len64(f.size/uint64(e)) - 1) // about e buckets
	counts := make([]int32, (f.size-1)>>shift+2)
	for i, p := range f.perms {
		inv := modInverse(uint64(p.skip), f.size)
		for k, s := range empty {
			pos := f.mod((uint64(s) + f.size - uint64(p.offset)) * inv)
			keys[k] = pos<<32 | uint64(s)
		}
		sortKeys(keys, sorted, counts, shift+32)
		out := f.ranked[i*e : (i+1)*e]
		for k, key := range sorted {
			out[k] = uint32(key)
		}
	}
}

// mod returns x mod size, for x < 2⁶⁴, without a division.
func (f *filler) mod(x uint64) uint64 {
	q, _ := bits.Mul64(x, f.recip)
	r := x - q*f.size
	if r >= f.size {
		r -= f.size
	}
	return r
}

// sortKeys sorts distinct keys into out: a counting sort on key>>shift,
// then an insertion sort, which has about one key per bucket to order.
func sortKeys(keys, out []uint64, counts []int32, shift uint) {
	clear(counts)
	for _, k := range keys {
		counts[k>>shift+1]++
	}
	for b := 1; b < len(counts); b++ {
		counts[b] += counts[b-1]
	}
	for _, k := range keys {
		b := k >> shift
		out[counts[b]] = k
		counts[b]++
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
}

// modInverse returns a⁻¹ mod m for a coprime to m (extended Euclid).
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
