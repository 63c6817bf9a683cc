package balance

import "github.com/keyplace/chash"

// Stats is a snapshot of a balancer's load, for export (see the expvar
// example). Counts are read one at a time, not under a lock, so a
// snapshot taken while requests run is consistent per field, not across
// fields.
type Stats struct {
	// InFlight is the number of leases acquired and not yet released,
	// including leases on nodes that have left the membership.
	InFlight int64
	// Nodes are the current members, in the placer's Nodes() order.
	Nodes []NodeStats
	// Spills is the sum of the nodes' Spilled counts.
	Spills uint64
	// Overloads counts the acquires that returned ErrOverloaded.
	Overloads uint64
	// HotKeys are the keys the WithHotKeys detector reports hot now, the
	// hottest first; nil without one.
	HotKeys []HotKey
}

// NodeStats is one member's part of a Stats. The counts are cumulative
// since the node joined; a node that stays across SetPlacer keeps them.
type NodeStats struct {
	chash.Node
	// InFlight is the number of leases on the node not yet released.
	InFlight int64
	// Away counts the acquires served here for keys whose first choice
	// is another node: the locality cost of choices, spreading and spills.
	Away uint64
	// Spilled counts the acquires served here because the load bound
	// refused the key's candidates.
	Spilled uint64
	// Spread counts the acquires of hot keys served here, on any of
	// their replicas.
	Spread uint64
}

// Stats returns a snapshot of the balancer's load. It costs O(Len) atomic
// loads plus the detector's report, allocates the snapshot, and is safe
// to call at any time (every second is cheap). The zero Balancer reports
// no nodes.
func (b *Balancer) Stats() Stats {
	s := Stats{InFlight: b.total.Load(), Overloads: b.overloads.Load()}
	m := b.cur.Load()
	if m == nil {
		return s
	}
	s.Nodes = make([]NodeStats, len(m.nodes))
	for i, n := range m.nodes {
		c := m.loads[i]
		s.Nodes[i] = NodeStats{Node: n, InFlight: c.n.Load(), Away: c.away.Load(), Spilled: c.spilled.Load(), Spread: c.spread.Load()}
		s.Spills += s.Nodes[i].Spilled
	}
	if m.hot != nil {
		s.HotKeys = m.hot.AppendHot(nil)
	}
	return s
}
