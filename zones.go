package chash

import (
	"fmt"
	"sync"

	"github.com/keyplace/chash/internal/place"
)

// Zoned wraps a Placer so that its replica lists cross failure domains:
// AppendTopK returns nodes in as many distinct zones ([Node.Zone]) as it can
// before it repeats one. A node with an empty Zone is a domain of its own.
//
// The list is chosen greedily from the wrapped placer's own preference
// order: the first node is the wrapped placer's Lookup, then each next
// preferred node whose zone is not yet in the list, until the list spans
// every zone; after that the remaining places are filled in preference
// order. With z zones and k <= z the k nodes are therefore in k zones, and
// each is the most preferred node of its zone, so a list changes only when
// a node in it leaves or a node preferred to one of them joins.
// Placement is otherwise the wrapped placer's: Lookup, LookupString, Nodes
// and Len are passed through unchanged.
//
// Zone-aware lists are opt-in: the constructors never read Zone, and a plain
// placer's AppendTopK ignores it. Wrap the placer whose lists should cross
// zones, and keep the Zoned in a [Holder] if membership changes.
//
// Shares: the first node of every list is owned in proportion to node
// weight, as without zones. A zone can hold at most one node of a list while
// zones are left, so with k = z every zone holds exactly 1/z of the
// replicas whatever its weight; with k < z and zones of equal weight each
// zone holds k/z. Unequal zones with 1 < k < z get their zones in the order
// of a weighted draw without replacement (for Rendezvous and Ring), which
// gives heavy zones slightly less than a proportional share.
//
// Cost: a Ring is walked once, taking nodes of new zones as it goes (with
// evenly filled zones about 5.5 distinct nodes for 3 of 3 zones). A
// Rendezvous of equal weights with k <= z <= 64 scores each node once,
// keeping each zone's best, as its plain top-k does. At 64 nodes in 3
// zones both measured within 2x of their plain top-3 (Ring 0.5 to 2.4x on
// a loaded machine, Rendezvous 0.7 to 1.1x). Other placers, and these with
// more than 64 zones, unequal rendezvous weights or k > z, are asked
// through AppendTopK for 2k candidates, and for twice as many each time
// those do not reach k zones (or all zones, when k > z); with 3 even
// zones and k = 3 about a quarter of the calls need the second request,
// and this path measured 2 to 7 times plain top-3. A small zone among
// large ones makes lists longer to find. Every path decides each
// candidate in O(1) for lists longer than 32 (bitmaps of the zones and
// nodes taken), so that a list of every node costs what the wrapped
// placer's own does, O(n log n) at most: at 4,000 nodes in 3 zones the
// ring's took 0.17 ms, 1.6x the plain ring's list. No path allocates when
// dst has room for k more nodes: the general path's candidates go to a
// scratch buffer kept in a sync.Pool. A Zoned is immutable and safe for
// concurrent use. The zero Zoned and a nil *Zoned have no members: Lookup
// returns the zero Node and AppendTopK appends nothing.
type Zoned struct {
	p       Placer
	walk    zoneLister        // p's own zone-aware walk, if it has one
	rank    zoneRanker        // or its one-pass ranking
	domain  []uint32          // each node's domain number, in Nodes order
	index   map[string]uint32 // each node's place in Nodes, by ID
	n       int
	domains int
	scratch sync.Pool // *[]Node of capacity n
}

var _ Placer = (*Zoned)(nil)

// NewZoned returns the zone-aware view of p, reading the zones of p's
// members once: O(n) with a map of zone names. It fails with
// ErrInvalidOption if p is a view whose members change, a Placer with a
// Load() Placer method (a *Holder, a membership watcher, a status
// tracker): a Zoned of it would keep its first members for good, so wrap
// each placer it serves instead, from its view hook; with ErrNilPlacer if
// p is nil or a nil pointer, and with ErrNoNodes if it has no members.
func NewZoned(p Placer) (*Zoned, error) {
	if isNil(p) {
		return nil, fmt.Errorf("%w: NewZoned(%T)", ErrNilPlacer, p)
	}
	if _, ok := p.(loader); ok {
		return nil, fmt.Errorf("%w: NewZoned of a %T, whose members change: wrap each placer it serves (from its view hook, or NewZoned(p.Load())) instead", ErrInvalidOption, p)
	}
	nodes := p.Nodes()
	if len(nodes) == 0 {
		return nil, fmt.Errorf("%w: NewZoned of an empty placer", ErrNoNodes)
	}
	z := &Zoned{p: p, n: len(nodes)}
	z.domain, z.domains = domainNumbers(nodes)
	z.index = make(map[string]uint32, len(nodes))
	for i := range nodes {
		z.index[nodes[i].ID] = uint32(i)
	}
	z.walk, _ = p.(zoneLister)
	z.rank, _ = p.(zoneRanker)
	return z, nil
}

// domainNumbers numbers the failure domains of nodes from 0, in order of
// first appearance, and returns each node's number and their count: a
// non-empty zone is a domain, and so is each node without one.
func domainNumbers(nodes []Node) ([]uint32, int) {
	ids := map[string]uint32{}
	out := make([]uint32, len(nodes))
	for i, n := range nodes {
		key := "zone:" + n.Zone
		if n.Zone == "" {
			key = "node:" + n.ID
		}
		d, ok := ids[key]
		if !ok {
			d = uint32(len(ids))
			ids[key] = d
		}
		out[i] = d
	}
	return out, len(ids)
}

// Placer returns the wrapped placer, nil for an empty Zoned.
func (z *Zoned) Placer() Placer {
	if z == nil {
		return nil
	}
	return z.p
}

// Zones returns the number of failure domains among the members.
func (z *Zoned) Zones() int {
	if z == nil {
		return 0
	}
	return z.domains
}

// Lookup returns the wrapped placer's node for key.
func (z *Zoned) Lookup(key []byte) Node {
	if z == nil || z.p == nil {
		return Node{}
	}
	return z.p.Lookup(key)
}

// LookupString is Lookup for a string key.
func (z *Zoned) LookupString(key string) Node {
	if z == nil || z.p == nil {
		return Node{}
	}
	return z.p.LookupString(key)
}

// Nodes returns the wrapped placer's members, in its order.
func (z *Zoned) Nodes() []Node {
	if z == nil || z.p == nil {
		return nil
	}
	return z.p.Nodes()
}

// Len returns the number of members.
func (z *Zoned) Len() int {
	if z == nil {
		return 0
	}
	return z.n
}

// AppendTopK appends up to k distinct nodes for key, spanning as many zones
// as possible before repeating one, in preference order; the first is the
// node Lookup returns. See [Zoned] for the choice and its cost.
func (z *Zoned) AppendTopK(dst []Node, key []byte, k int) []Node {
	return z.appendTopK(dst, zkey{b: key}, k)
}

// AppendTopKString is AppendTopK for a string key.
func (z *Zoned) AppendTopKString(dst []Node, key string, k int) []Node {
	return z.appendTopK(dst, zkey{s: key, str: true}, k)
}

// zkey is a key of either type, so that one selection serves both.
type zkey struct {
	b   []byte
	s   string
	str bool
}

func (z *Zoned) candidates(dst []Node, key zkey, m int) []Node {
	if key.str {
		return z.p.AppendTopKString(dst, key.s, m)
	}
	return z.p.AppendTopK(dst, key.b, m)
}

func (z *Zoned) appendTopK(dst []Node, key zkey, k int) []Node {
	k = place.ClampK(k, z.Len())
	if k == 0 {
		return dst
	}
	if k == 1 {
		return z.candidates(dst, key, k)
	}
	if z.walk != nil {
		if out, ok := z.walk.appendZoned(dst, key, k, z.domain, z.domains); ok {
			return out
		}
	}
	if z.rank != nil {
		if out, ok := z.rank.appendZonedRanked(dst, key, k, z.domain, z.domains); ok {
			return out
		}
	}
	buf, _ := z.scratch.Get().(*[]Node)
	if buf == nil {
		s := make([]Node, 0, z.n)
		buf = &s
	}
	start, used := len(dst), 0
	for m := min(2*k, z.n); ; m = min(2*m, z.n) {
		cand := z.candidates((*buf)[:0], key, m)
		used = len(cand)
		var ok bool
		if dst, ok = z.pick(dst, cand, k); ok || m == z.n || len(cand) < m {
			break
		}
		dst = dst[:start]
	}
	clear((*buf)[:used]) // the pool must not keep ID strings alive
	z.scratch.Put(buf)
	return dst
}

// pick appends to dst the zone-aware choice of k nodes from the
// candidates, which are a prefix of the preference order. It reports
// whether the prefix was long enough to decide the choice: it is when k
// nodes of distinct zones were found, or every zone was reached (the rest
// is then filled from the prefix, which holds at least k nodes).
func (z *Zoned) pick(dst, cand []Node, k int) ([]Node, bool) {
	// Short lists compare names; long ones look each candidate's index
	// and domain up, for the bitmaps.
	long := k > place.BigK
	t := newTaken(z.n, z.domains, k, long)
	defer t.release()
	where := func(n *Node) (int, uint32) {
		if !long {
			return 0, 0
		}
		i, ok := z.index[n.ID]
		if !ok {
			return 0, 0 // not a member: cannot happen with a placer that keeps the contract
		}
		return int(i), z.domain[i]
	}
	start, covered := len(dst), 0
	for i := range cand {
		if covered == z.domains || len(dst)-start == k {
			break
		}
		if j, d := where(&cand[i]); t.zone(dst[start:], &cand[i], j, d) {
			dst = place.Append(dst, &cand[i])
			covered++
		}
	}
	if len(dst)-start == k {
		return dst, true
	}
	if covered < z.domains || len(cand) < k {
		return dst, false
	}
	for i := range cand {
		if len(dst)-start == k {
			break
		}
		if j, _ := where(&cand[i]); t.node(dst[start:], &cand[i], j) {
			dst = place.Append(dst, &cand[i])
		}
	}
	return dst, true
}

// taken records the domains and nodes a zone-aware list holds so far.
// Domains are a bit mask when the caller numbers them and there are at
// most 64; short lists (k up to place.BigK) otherwise compare zone names
// and IDs over the list, as plain top-k walks do; longer lists keep
// bitmaps of domains and of nodes, so that a list of every node decides
// each candidate in O(1) rather than O(k).
type taken struct {
	mask  uint64       // domains taken, with at most 64 domains
	few   bool         // at most 64 domains
	zones place.Picked // domains taken, with more
	nodes place.Picked // nodes taken, by index
}

// newTaken returns the record for a list of k of n nodes in the given
// number of domains. numbered says whether the caller has each node's
// index and domain number at hand; without them short lists compare names.
func newTaken(n, domains, k int, numbered bool) taken {
	t := taken{nodes: place.NewPicked(n, k)}
	switch {
	case numbered && domains <= 64:
		t.few = true
	case numbered:
		t.zones = place.NewPicked(domains, k)
	}
	return t
}

func (t *taken) release() {
	t.zones.Release()
	t.nodes.Release()
}

// zone reports whether node n, at index i in domain d, is in a domain the
// list chosen does not hold yet, and records it if so.
func (t *taken) zone(chosen []Node, n *Node, i int, d uint32) bool {
	switch {
	case t.few:
		bit := uint64(1) << d
		if t.mask&bit != 0 {
			return false
		}
		t.mask |= bit
	case t.zones.Scans():
		if !zoneNew(chosen, n.Zone) || n.Zone == "" && !absent(chosen, n.ID) {
			return false
		}
	default:
		if !t.zones.Take(int(d)) {
			return false
		}
	}
	if !t.nodes.Scans() {
		t.nodes.Take(i)
	}
	return true
}

// node reports whether node n, at index i, is not in chosen, and records
// it.
func (t *taken) node(chosen []Node, n *Node, i int) bool {
	return take(t.nodes, i, n.ID, chosen)
}

// zoneNew reports whether no node in chosen is in zone; a node without a
// zone is a domain of its own, so the empty zone is always new.
func zoneNew(chosen []Node, zone string) bool {
	if zone == "" {
		return true
	}
	for i := range chosen {
		if chosen[i].Zone == zone {
			return false
		}
	}
	return true
}
