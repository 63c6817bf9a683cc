package chash

import "github.com/keyplace/chash/internal/place"

// Node is a member of a placement: a node, shard or backend. The zero Node,
// with no ID, is what empty placers return; constructors reject it.
type Node struct {
	// ID is the node's stable identity and the only part of it that is
	// hashed for placement. It need not be an address: naming nodes by a
	// logical ID lets a replacement machine take over the same keys.
	ID string
	// Weight is the node's relative capacity: a node of weight 2 receives
	// about twice the keys of a node of weight 1. Zero means 1 (a shard
	// map alone reads it as drained). Negative, NaN and infinite weights
	// are rejected by every constructor.
	Weight float64
	// Zone names the node's failure domain (a rack, zone or region),
	// compared exactly; empty means the node is a domain of its own. It
	// never changes which node owns a key: only zone-aware replica lists
	// ([Zoned]), subsets ([Shuffle]) and shard maps (package shardmap) read it.
	Zone string `json:",omitempty"`
}

// Placer maps keys to nodes. Every method is safe for concurrent use, and
// the lookup methods do not allocate (AppendTopK and AppendTopKString do not
// allocate when dst has room for k more nodes).
//
// Nodes returned by a Placer carry their effective weight: a weight given as
// 0 is reported as 1.
type Placer interface {
	// Lookup returns the node that owns key.
	Lookup(key []byte) Node
	// LookupString is Lookup for a string key, without copying it.
	LookupString(key string) Node
	// AppendTopK appends to dst up to k distinct nodes for key in order of
	// preference and returns the extended slice. The first node appended is
	// always the one Lookup returns. If k exceeds Len, Len nodes are
	// appended; if k <= 0, none are.
	AppendTopK(dst []Node, key []byte, k int) []Node
	// AppendTopKString is AppendTopK for a string key, without copying it.
	AppendTopKString(dst []Node, key string, k int) []Node
	// Nodes returns a copy of the members. Each algorithm documents the
	// order; for all but Jump it is ascending by ID.
	Nodes() []Node
	// Len returns the number of members.
	Len() int
}

// isNil reports whether p is nil or holds a nil pointer: see place.IsNil.
func isNil(p Placer) bool { return place.IsNil(p) }
