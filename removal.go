package chash

import (
	"fmt"
	"math/bits"
	"slices"
	"strconv"
	"strings"

	"github.com/keyplace/chash/internal/digest"
	"github.com/keyplace/chash/internal/place"
)

// This file holds what the placers that number their members by bucket
// and can lose any of them (Memento, Anchor, Dx, JumpBackAnchor and
// ChooseK) share: the bound on their engines, the text form of the
// states of the first three, their membership changes (slots), the draws
// and order of their top-k lists, and their fingerprint.

// maxBuckets bounds the buckets of every engine of these placers (an
// Anchor's capacity, a Dx array, a JumpBackAnchor range, ChooseK slots,
// the removals a Memento remembers), so that a state read from a file or
// a server cannot ask for unbounded memory: place.MaxPoints, 1<<24, the
// bound of every other structure sized from configuration.
const maxBuckets = place.MaxPoints

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
// maxBuckets; the caller checks the rest. Errors wrap ErrInvalidState.
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
		if uint64(len(out))+count > maxBuckets {
			return 0, nil, fmt.Errorf("%w: more than %d entries", ErrTooLarge, maxBuckets)
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

// slotEngine is what the membership changes of the placers that number
// their members by bucket and can lose any of them (Memento, Anchor, Dx,
// JumpBackAnchor and ChooseK) need of their engines, through a pointer.
type slotEngine[E any] interface {
	*E
	// Len returns the number of working buckets.
	Len() int
	// Working reports whether bucket b works.
	Working(b int) bool
	// Clone returns a copy that shares no storage with the engine.
	Clone() E
	// add brings a bucket into work and returns it, or fails when the
	// engine is full.
	add() (int, error)
	// remove takes working bucket b, not the last working one, out of
	// work.
	remove(b int)
}

// slots is what each of those placers holds: its engine, its members by
// bucket and its options. The placers embed it and keep their lookups and
// top-k lists in their own files; the membership changes, the same for
// all five, are its methods here. A slots value is never changed once a
// placer holds it: a change works on a copy (see edit).
type slots[E any, PE slotEngine[E]] struct {
	e     E
	nodes []Node // by bucket, up to the highest working one; the zero Node in the others
	cfg   config
}

// engine returns s's engine as the interface its methods need.
func (s *slots[E, PE]) engine() PE { return &s.e }

// members returns the members in bucket order.
func (s *slots[E, PE]) members() []Node { return members(s.nodes, s.engine().Len()) }

// members returns the working nodes of a list by bucket, n of them, in
// bucket order.
func members(nodes []Node, n int) []Node {
	out := make([]Node, 0, n)
	for _, x := range nodes {
		if x.ID != "" {
			out = append(out, x)
		}
	}
	return out
}

// newSlots returns the slots of engine e, which it keeps, whose working
// buckets hold nodes in ascending order: what every constructor of these
// placers does once it has its engine. It fails as NewJump does for
// nodes, and with ErrInvalidState if their number is not e.Len().
func newSlots[E any, PE slotEngine[E]](e E, nodes []Node, cfg config) (slots[E, PE], error) {
	ns, err := checkNodes(nodes, false)
	if err != nil {
		return slots[E, PE]{}, err
	}
	if err := equalWeights(ns); err != nil {
		return slots[E, PE]{}, err
	}
	s := slots[E, PE]{e: e, nodes: make([]Node, 0, len(ns)), cfg: cfg}
	eng := s.engine()
	if len(ns) != eng.Len() {
		return slots[E, PE]{}, fmt.Errorf("%w: the state has %d working buckets and %d nodes are given", ErrInvalidState, eng.Len(), len(ns))
	}
	for b, i := 0, 0; i < len(ns); b++ {
		if eng.Working(b) {
			s.nodes = append(s.nodes, ns[i])
			i++
		} else {
			s.nodes = append(s.nodes, Node{})
		}
	}
	return s, nil
}

// added, removed, replaced and derived return a copy of s changed as the
// placers' Add, Remove, Replace and Derive say; s is unchanged.
func (s *slots[E, PE]) added(nodes []Node) (slots[E, PE], error) {
	return s.change(func(c *edit[E, PE]) error { return c.add(nodes) })
}

func (s *slots[E, PE]) removed(ids []string) (slots[E, PE], error) {
	return s.change(func(c *edit[E, PE]) error { return c.remove(ids) })
}

func (s *slots[E, PE]) replaced(id string, n Node) (slots[E, PE], error) {
	return s.change(func(c *edit[E, PE]) error { return c.replace(id, n) })
}

func (s *slots[E, PE]) derived(nodes []Node) (slots[E, PE], error) {
	return s.change(func(c *edit[E, PE]) error { return c.derive(nodes) })
}

// change returns a copy of s changed by f.
func (s *slots[E, PE]) change(f func(*edit[E, PE]) error) (slots[E, PE], error) {
	c := &edit[E, PE]{
		slots: slots[E, PE]{e: s.engine().Clone(), nodes: slices.Clone(s.nodes), cfg: s.cfg},
		index: make(map[string]int, len(s.nodes)),
	}
	for b, n := range s.nodes {
		if n.ID != "" {
			c.index[n.ID] = b
		}
	}
	if err := f(c); err != nil {
		return slots[E, PE]{}, err
	}
	return c.slots, nil
}

// edit is a copy of a placer's slots being changed, with each member's
// bucket by ID.
type edit[E any, PE slotEngine[E]] struct {
	slots[E, PE]
	index map[string]int
}

// batchRemover is an engine whose state does not depend on the order of
// removals, and that removes many buckets at once faster than one by one
// (ChooseK's sorted vacant list).
type batchRemover interface{ removeAll(bs []int) }

// remove removes the members with the given IDs, in the order given. It
// fails with ErrUnknownNode for an ID that is not a member and ErrNoNodes
// if none would remain.
func (c *edit[E, PE]) remove(ids []string) error {
	e := c.engine()
	batch, isBatch := any(e).(batchRemover)
	var bs []int
	for _, id := range ids {
		b, ok := c.index[id]
		if !ok {
			return fmt.Errorf("%w: %q", ErrUnknownNode, id)
		}
		if len(c.index) == 1 {
			return fmt.Errorf("%w: removing the last member, %q", ErrNoNodes, id)
		}
		if isBatch {
			bs = append(bs, b)
		} else {
			e.remove(b)
		}
		c.nodes[b] = Node{}
		delete(c.index, id)
	}
	if isBatch && len(bs) > 0 {
		batch.removeAll(bs)
	}
	for len(c.nodes) > 0 && c.nodes[len(c.nodes)-1].ID == "" {
		c.nodes = c.nodes[:len(c.nodes)-1] // no lookup returns a vacant bucket
	}
	return nil
}

// add adds nodes in the order given, each in the bucket the engine's add
// returns, after the checks of every constructor over the members and
// the new nodes together (equal weights included).
func (c *edit[E, PE]) add(nodes []Node) error {
	all := append(members(c.nodes, len(c.index)), nodes...)
	ns, err := checkNodes(all, false)
	if err != nil {
		return err
	}
	if err := equalWeights(ns); err != nil {
		return err
	}
	return c.addChecked(ns[len(ns)-len(nodes):])
}

// addChecked is add for nodes already checked.
func (c *edit[E, PE]) addChecked(nodes []Node) error {
	e := c.engine()
	for _, n := range nodes {
		b, err := e.add()
		if err != nil {
			return err
		}
		for len(c.nodes) <= b {
			c.nodes = append(c.nodes, Node{})
		}
		c.nodes[b] = n
		c.index[n.ID] = b
	}
	return nil
}

// replace puts n in the bucket of the member with ID id, after the checks
// of Jump.Replace; the engine is unchanged.
func (c *edit[E, PE]) replace(id string, n Node) error {
	b, ok := c.index[id]
	if !ok {
		return fmt.Errorf("%w: %q", ErrUnknownNode, id)
	}
	rest := members(c.nodes, len(c.index))
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
	delete(c.index, id)
	c.nodes[b], c.index[n.ID] = n, b
	return nil
}

// derive moves the copy to the member set nodes, as Derive does for every
// placer of this kind: members keep their buckets; the nodes that join,
// in ascending ID order, first take the buckets of the members that
// leave, in ascending bucket order, as Replace would (the engine is
// unchanged by those); the members still to leave are then removed in
// descending bucket order, or the nodes still to join added as Add does.
// The result depends on the placer and the set of nodes, not on their
// order.
func (c *edit[E, PE]) derive(nodes []Node) error {
	ns, err := checkNodes(nodes, true) // by ID
	if err != nil {
		return err
	}
	if err := equalWeights(ns); err != nil {
		return err
	}
	if w := members(c.nodes, 1); len(w) > 0 && w[0].Weight != ns[0].Weight {
		return fmt.Errorf("%w: nodes of weight %v given to a placer of weight %v: the members' weights must stay equal", ErrInvalidWeight, ns[0].Weight, w[0].Weight)
	}
	in := make(map[string]bool, len(ns))
	var joining []Node
	for _, n := range ns {
		in[n.ID] = true
		if _, ok := c.index[n.ID]; !ok {
			joining = append(joining, n)
		}
	}
	var leaving []int // ascending bucket order
	for b, n := range c.nodes {
		if n.ID != "" && !in[n.ID] {
			leaving = append(leaving, b)
		}
	}
	for len(joining) > 0 && len(leaving) > 0 {
		b := leaving[0]
		delete(c.index, c.nodes[b].ID)
		c.nodes[b], c.index[joining[0].ID] = joining[0], b
		joining, leaving = joining[1:], leaving[1:]
	}
	ids := make([]string, len(leaving))
	for i, b := range leaving {
		ids[len(ids)-1-i] = c.nodes[b].ID
	}
	if err := c.remove(ids); err != nil {
		return err
	}
	return c.addChecked(joining)
}

// wrap returns p, or nil and err if err is not nil: the placers' Add,
// Remove and Replace return their changed slots through it.
func wrap[P any](p *P, err error) (*P, error) {
	if err != nil {
		return nil, err
	}
	return p, nil
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
// follow in bucket order from a hashed start (appendInOrder). Cost: O(k)
// draws for k <= 16 and O(len(nodes)) for more; nothing is allocated when
// dst has room.
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
	return appendInOrder(dst, nodes, len(nodes), int(mix64(h)%uint64(len(nodes))), k-topDraws, &c)
}

// appendInOrder ends a top-k list: it appends the next k members of
// nodes, a list by bucket over size buckets (those past its end vacant),
// taken in bucket order from bucket start on, cyclically, skipping those
// in chosen. The caller knows that k more are there. O(size).
func appendInOrder(dst, nodes []Node, size, start, k int, chosen *drawnSet) []Node {
	for b := start; k > 0; b++ {
		if b == size {
			b = 0
		}
		if b < len(nodes) && nodes[b].ID != "" && !chosen.has(b) {
			dst = place.Append(dst, &nodes[b])
			k--
		}
	}
	return dst
}

// maxDrawn is how many buckets a drawnSet holds: the most that any of
// these placers draws at random before it takes the rest in order
// (JumpBackAnchor's first choice and its 32 draws).
const maxDrawn = 33

// drawnSet holds, on the stack, the buckets a top-k list has drawn: up
// to maxDrawn; more are not remembered.
type drawnSet struct {
	b [maxDrawn]int32
	m int
}

func (c *drawnSet) add(b int) {
	if c.m < maxDrawn {
		c.b[c.m] = int32(b)
		c.m++
	}
}

func (c *drawnSet) has(b int) bool {
	for _, x := range c.b[:c.m] {
		if int(x) == b {
			return true
		}
	}
	return false
}

// fingerprintSlots is the fingerprint of a placer that can lose any
// member: its engine's state (the bytes its engine marshals to), its
// members in bucket order and its Hasher.
func fingerprintSlots(name string, state []byte, nodes []Node, h hasher) string {
	d := digest.New().Str(name).Str(string(state))
	return digestAll(d, nodes, h).Sum(name)
}
