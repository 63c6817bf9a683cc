package chash

import (
	"encoding"
	"fmt"
	"math/bits"
	"slices"
	"strconv"
	"strings"

	"github.com/keyplace/chash/internal/digest"
	"github.com/keyplace/chash/internal/place"
)

// This file holds what the placers that can lose any member (Memento,
// Anchor and Dx) share: the text form of their engines' states, their
// membership changes and their top-k.

// maxEngineBuckets bounds the buckets of an Anchor or Dx engine and the
// removed buckets of a Memento engine, so that a state read from a file
// or a server cannot ask for unbounded memory: 1<<24.
const maxEngineBuckets = 1 << 24

// formatState writes a state as name:n/list, the list comma-separated,
// with every run of three or more entries that step by +1 or -1 written as
// first-last.
func formatState(name string, n uint32, list []uint32) []byte {
	b := make([]byte, 0, len(name)+12+4*len(list))
	b = append(b, name...)
	b = append(b, ':')
	b = strconv.AppendUint(b, uint64(n), 10)
	b = append(b, '/')
	for i := 0; i < len(list); {
		j := i + 1
		if j < len(list) {
			step := int64(list[j]) - int64(list[i])
			if step == 1 || step == -1 {
				for j+1 < len(list) && int64(list[j+1])-int64(list[j]) == step {
					j++
				}
				j++
			}
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendUint(b, uint64(list[i]), 10)
		if j-i >= 3 {
			b = append(b, '-')
			b = strconv.AppendUint(b, uint64(list[j-1]), 10)
		} else {
			j = i + 1
		}
		i = j
	}
	return b
}

// parseState reads name:n/list as formatState writes it (a run may be
// given in either direction, and single entries need not be merged), with
// n at most maxN. Every entry must be below n and the list no longer than
// maxEngineBuckets; the caller checks the rest. Errors wrap ErrInvalidState.
func parseState(text []byte, name string, maxN uint64) (uint32, []uint32, error) {
	s := string(text)
	rest, ok := strings.CutPrefix(s, name+":")
	if !ok {
		return 0, nil, fmt.Errorf("%w: %.40q does not start with %q", ErrInvalidState, s, name+":")
	}
	num, list, ok := strings.Cut(rest, "/")
	if !ok {
		return 0, nil, fmt.Errorf("%w: %.40q has no '/'", ErrInvalidState, s)
	}
	n, err := strconv.ParseUint(num, 10, 32)
	if err != nil || n > maxN {
		return 0, nil, fmt.Errorf("%w: bucket count %.20q: want 0 to %d", ErrInvalidState, num, maxN)
	}
	var out []uint32
	for list != "" {
		var item string
		item, list, _ = strings.Cut(list, ",")
		lo, hi, isRun := strings.Cut(item, "-")
		a, err1 := strconv.ParseUint(lo, 10, 32)
		b := a
		var err2 error
		if isRun {
			b, err2 = strconv.ParseUint(hi, 10, 32)
		}
		if err1 != nil || err2 != nil || a >= n || b >= n {
			return 0, nil, fmt.Errorf("%w: entry %.20q: want a bucket below %d, or a run of them", ErrInvalidState, item, n)
		}
		count := max(a, b) - min(a, b) + 1
		if uint64(len(out))+count > maxEngineBuckets {
			return 0, nil, fmt.Errorf("%w: more than %d entries", ErrTooLarge, maxEngineBuckets)
		}
		for v := a; ; {
			out = append(out, uint32(v))
			if v == b {
				break
			}
			if a < b {
				v++
			} else {
				v--
			}
		}
	}
	return uint32(n), out, nil
}

// checkDistinct reports the first entry of list that repeats, for a state
// whose entries must differ.
func checkDistinct(list []uint32, n uint32) error {
	seen := make([]uint64, (uint64(n)+63)/64)
	for _, b := range list {
		if seen[b/64]&(1<<(b%64)) != 0 {
			return fmt.Errorf("%w: bucket %d is listed twice", ErrInvalidState, b)
		}
		seen[b/64] |= 1 << (b % 64)
	}
	return nil
}

// fastMod is x mod d for 32-bit x and d > 0 by Lemire's method ("Faster
// Remainder by Direct Computation", Software: Practice and Experience,
// 2019), with m = fastModM(d): two multiplications instead of a division.
func fastMod(x uint32, m uint64, d uint32) uint32 {
	hi, _ := bits.Mul64(m*uint64(x), uint64(d))
	return uint32(hi)
}

// fastModM is the multiplier fastMod takes for divisor d: ⌈2⁶⁴/d⌉, which
// wraps to 0 for d = 1.
func fastModM(d uint32) uint64 { return ^uint64(0)/uint64(d) + 1 }

// slotted is what the membership changes of Memento, Anchor and Dx need of
// their engines: each keeps its members in a list indexed by bucket, with
// the zero Node in the buckets that are not working.
type slotted interface {
	// remove takes bucket b out of the working set; b is working and not
	// the last one.
	remove(b int)
	// add brings a bucket into the working set and returns it, or fails
	// when the engine is full.
	add() (int, error)
	// working returns the number of working buckets.
	working() int
}

// membership is a node list indexed by bucket, with its index by ID. The
// list ends at the highest working bucket: the engine never returns a
// bucket beyond it.
type membership struct {
	nodes []Node // by bucket; vacant buckets hold the zero Node
	index map[string]int
}

func newMembership(nodes []Node) membership {
	m := membership{nodes: slices.Clone(nodes), index: make(map[string]int, len(nodes))}
	for b, n := range nodes {
		if n.ID != "" {
			m.index[n.ID] = b
		}
	}
	return m
}

// members returns the working nodes in bucket order.
func members(nodes []Node, n int) []Node {
	out := make([]Node, 0, n)
	for _, x := range nodes {
		if x.ID != "" {
			out = append(out, x)
		}
	}
	return out
}

// removeIDs removes the members with the given IDs from e and m, in the
// order given. It fails with ErrUnknownNode for an ID that is not a
// member and ErrNoNodes if none would remain.
func (m *membership) removeIDs(e slotted, ids []string) error {
	for _, id := range ids {
		b, ok := m.index[id]
		if !ok {
			return fmt.Errorf("%w: %q", ErrUnknownNode, id)
		}
		if e.working() == 1 {
			return fmt.Errorf("%w: removing the last member, %q", ErrNoNodes, id)
		}
		e.remove(b)
		m.nodes[b] = Node{}
		delete(m.index, id)
	}
	for len(m.nodes) > 0 && m.nodes[len(m.nodes)-1].ID == "" {
		m.nodes = m.nodes[:len(m.nodes)-1] // no lookup returns a vacant bucket
	}
	return nil
}

// addNodes adds nodes, already checked, to e and m in the order given, each
// in the bucket e.add returns.
func (m *membership) addNodes(e slotted, nodes []Node) error {
	for _, n := range nodes {
		b, err := e.add()
		if err != nil {
			return err
		}
		for len(m.nodes) <= b {
			m.nodes = append(m.nodes, Node{})
		}
		m.nodes[b] = n
		m.index[n.ID] = b
	}
	return nil
}

// checkAdded validates nodes to add to the members of m: the rules of
// every constructor, over the members and the new nodes together, and
// equal weights. It returns the new nodes with their effective weights.
func (m *membership) checkAdded(nodes []Node) ([]Node, error) {
	all := append(members(m.nodes, len(m.index)), nodes...)
	ns, err := checkNodes(all, false)
	if err != nil {
		return nil, err
	}
	if err := equalWeights(ns); err != nil {
		return nil, err
	}
	return ns[len(ns)-len(nodes):], nil
}

// derive moves m and e to the member set nodes, as Derive does for
// Memento, Anchor and Dx: members keep their buckets; the nodes that join,
// in ascending ID order, first take the buckets of the members that leave,
// in ascending bucket order, as Replace would; the members still to leave
// are then removed in descending bucket order, or the nodes still to join
// added as Add does. The result depends on m, e and the set of nodes, not
// on their order.
func (m *membership) derive(e slotted, nodes []Node) error {
	ns, err := checkNodes(nodes, true) // by ID
	if err != nil {
		return err
	}
	if err := equalWeights(ns); err != nil {
		return err
	}
	if w := members(m.nodes, 1); len(w) > 0 && w[0].Weight != ns[0].Weight {
		return fmt.Errorf("%w: nodes of weight %v given to a placer of weight %v: the members' weights must stay equal", ErrInvalidWeight, ns[0].Weight, w[0].Weight)
	}
	in := make(map[string]bool, len(ns))
	var joining []Node
	for _, n := range ns {
		in[n.ID] = true
		if _, ok := m.index[n.ID]; !ok {
			joining = append(joining, n)
		}
	}
	var leaving []int // ascending bucket order
	for b, n := range m.nodes {
		if n.ID != "" && !in[n.ID] {
			leaving = append(leaving, b)
		}
	}
	for len(joining) > 0 && len(leaving) > 0 {
		b := leaving[0]
		delete(m.index, m.nodes[b].ID)
		m.nodes[b], m.index[joining[0].ID] = joining[0], b
		joining, leaving = joining[1:], leaving[1:]
	}
	ids := make([]string, len(leaving))
	for i, b := range leaving {
		ids[len(ids)-1-i] = m.nodes[b].ID
	}
	if err := m.removeIDs(e, ids); err != nil {
		return err
	}
	return m.addNodes(e, joining)
}

// replace puts n in the bucket of the member with ID id, after the checks
// of Jump.Replace.
func (m *membership) replace(id string, n Node) error {
	b, ok := m.index[id]
	if !ok {
		return fmt.Errorf("%w: %q", ErrUnknownNode, id)
	}
	rest := members(m.nodes, len(m.index))
	for i := range rest {
		if rest[i].ID == id {
			rest[i] = n
		}
	}
	ns, err := checkNodes(rest, false)
	if err != nil {
		return err
	}
	if err := equalWeights(ns); err != nil {
		return err
	}
	if n.Weight == 0 {
		n.Weight = 1
	}
	delete(m.index, id)
	m.nodes[b], m.index[n.ID] = n, b
	return nil
}

// topDraws is how many choices appendDrawn draws at random before it
// walks the buckets in order; tries is how many draws one choice may take.
const (
	topDraws = 16
	topTries = 8
)

// appendDrawn is the top-k of Memento, Anchor and Dx, whose members sit in
// nodes by bucket with vacant buckets between them: m members in all, and
// first the bucket of the key's hash h. Choice i (1 <= i < 16) is the
// first of up to 8 draws, draw(mix64(h + j·φ)) for j = 1, 2, ... counted
// over all choices, that is not chosen yet; each draw is uniform over the
// working buckets, so each choice is uniform over those not chosen. If
// every draw repeats a choice, the choice is the next working bucket not
// chosen after the last draw, cyclically. Past the 16th choice the rest
// follow in bucket order from a hashed start. Cost: O(k) draws for k <= 16
// and O(len(nodes)) for more; nothing is allocated when dst has room.
func appendDrawn(dst, nodes []Node, m, first int, h uint64, k int, draw func(uint64) int) []Node {
	k = place.ClampK(k, m)
	if k == 0 {
		return dst
	}
	var c drawnSet
	c.add(first)
	dst = place.Append(dst, &nodes[first])
	j, last := uint64(0), first
	for i := 1; i < k && i < topDraws; i++ {
		b := -1
		for t := 0; t < topTries && b < 0; t++ {
			j++
			if x := draw(mix64(h + j*phi)); !c.has(x) {
				b = x
			} else {
				last = x
			}
		}
		if b < 0 {
			b = last
			for c.has(b) || nodes[b].ID == "" {
				b = (b + 1) % len(nodes)
			}
		}
		c.add(b)
		dst = place.Append(dst, &nodes[b])
		last = b
	}
	if k <= topDraws {
		return dst
	}
	b := int(mix64(h) % uint64(len(nodes)))
	for i := topDraws; i < k; b = (b + 1) % len(nodes) {
		if nodes[b].ID != "" && !c.has(b) {
			dst = place.Append(dst, &nodes[b])
			i++
		}
	}
	return dst
}

// drawnSet holds the first topDraws buckets a top-k has chosen, on the
// stack.
type drawnSet struct {
	b [topDraws]int
	m int
}

func (c *drawnSet) add(b int) {
	if c.m < topDraws {
		c.b[c.m] = b
		c.m++
	}
}

func (c *drawnSet) has(b int) bool {
	for _, x := range c.b[:c.m] {
		if x == b {
			return true
		}
	}
	return false
}

// fingerprintEngine is the fingerprint of a placer that can lose any
// member: its engine's state, its members in bucket order and its Hasher.
func fingerprintEngine(name string, state encoding.TextMarshaler, nodes []Node, h hasher) string {
	text, err := state.MarshalText()
	if err != nil {
		return FingerprintNone
	}
	d := digest.New().Str(name).Str(string(text))
	return digestAll(d, nodes, h).Sum(name)
}
