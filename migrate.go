package chash

import (
	"fmt"
)

// Migration serves two placements while a fleet moves from one to the
// other, typically from a compatibility placer (the placement the fleet's
// caches are warm under) to a consistent one. The new placement owns every
// key; the old one says where the key lived before, so that a cache client
// can read through to the old owner when the new one misses, and optionally
// write the value back to the new owner (back-fill). Once the new owners
// are warm, or the old entries have expired, the client drops the
// Migration and uses the new placer alone.
//
// A Migration is a Placer that places as the new placement does (so it can
// sit in a Holder, and Diff and Shares describe the target), plus Route,
// which also names the fallback. Route does not allocate when neither
// placer's Lookup does. A Migration is immutable and safe for concurrent
// use. The zero Migration and a nil *Migration place no key: lookups return
// the zero Node, Route the zero Route and Len 0 (build one with
// NewMigration).
type Migration struct {
	from, to Placer
}

var _ Placer = (*Migration)(nil)

// Route is where a key lives during a migration.
type Route struct {
	// Owner is the key's node in the new placement: read it first, and
	// write it.
	Owner Node
	// Fallback is the key's node in the old placement: where to read on a
	// miss, when Moved is set. It equals Owner when the key did not move.
	Fallback Node
	// Moved is set when the two placements disagree on the key.
	Moved bool
}

// NewMigration returns a migration from placement from to placement to.
// It fails, wrapping ErrNilPlacer, if either is nil.
func NewMigration(from, to Placer) (*Migration, error) {
	if isNil(from) || isNil(to) {
		// Types only: printing a placer's value would copy its whole
		// structure into the message, and read a live one (a watcher
		// that swaps views) without synchronisation.
		return nil, fmt.Errorf("%w: NewMigration(%T, %T)", ErrNilPlacer, from, to)
	}
	return &Migration{from: from, to: to}, nil
}

// Route returns key's owner in the new placement and its fallback in the
// old one: two lookups.
func (m *Migration) Route(key []byte) Route {
	if m.empty() {
		return Route{}
	}
	r := Route{Owner: m.to.Lookup(key), Fallback: m.from.Lookup(key)}
	r.Moved = r.Owner.ID != r.Fallback.ID
	return r
}

// RouteString is Route for a string key, without copying it.
func (m *Migration) RouteString(key string) Route {
	if m.empty() {
		return Route{}
	}
	r := Route{Owner: m.to.LookupString(key), Fallback: m.from.LookupString(key)}
	r.Moved = r.Owner.ID != r.Fallback.ID
	return r
}

// From returns the old placement.
func (m *Migration) From() Placer {
	if m.empty() {
		return nil
	}
	return m.from
}

// To returns the new placement.
func (m *Migration) To() Placer {
	if m.empty() {
		return nil
	}
	return m.to
}

// Movement returns the share of keys whose owner changes (their reads
// depend on the fallback until the new owner is filled): Diff(from, to).
func (m *Migration) Movement() (Movement, error) { return Diff(m.From(), m.To()) }

// Lookup returns key's owner in the new placement.
func (m *Migration) Lookup(key []byte) Node {
	if m.empty() {
		return Node{}
	}
	return m.to.Lookup(key)
}

// LookupString is Lookup for a string key, without copying it.
func (m *Migration) LookupString(key string) Node {
	if m.empty() {
		return Node{}
	}
	return m.to.LookupString(key)
}

// AppendTopK is the new placement's AppendTopK.
func (m *Migration) AppendTopK(dst []Node, key []byte, k int) []Node {
	if m.empty() {
		return dst
	}
	return m.to.AppendTopK(dst, key, k)
}

// AppendTopKString is AppendTopK for a string key, without copying it.
func (m *Migration) AppendTopKString(dst []Node, key string, k int) []Node {
	if m.empty() {
		return dst
	}
	return m.to.AppendTopKString(dst, key, k)
}

// Nodes returns the new placement's nodes.
func (m *Migration) Nodes() []Node {
	if m.empty() {
		return nil
	}
	return m.to.Nodes()
}

// Len returns the new placement's number of nodes.
func (m *Migration) Len() int {
	if m.empty() {
		return 0
	}
	return m.to.Len()
}

// empty reports whether m is nil or the zero Migration, which place no key.
func (m *Migration) empty() bool { return m == nil || m.to == nil }
