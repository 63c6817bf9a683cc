package chash

import (
	"fmt"
	"slices"

	"github.com/keyplace/chash/internal/place"
)

// Shuffle gives each tenant its own stable subset of the nodes (shuffle
// sharding): a tenant whose traffic takes its nodes down takes down only its
// subset, and with n nodes and subsets of size s two tenants share their
// whole subset with probability 1/C(n, s) (one in 75 million for 5 of 100
// nodes), so almost every other tenant keeps a healthy node.
//
// A tenant's subset is the zone-aware top-size list of the tenant's ID
// under rendezvous hashing of all the nodes ([Zoned] over [Rendezvous]): it
// spans as many zones as it can, each node weighted by its weight.
// Because rendezvous ranks every pair of nodes the same way whatever the
// other members, adding a node changes only the subsets the new node enters,
// each by that node and the one it displaces; removing a node changes only
// the subsets that held it, each by that node and its replacement.
//
// A Shuffle is immutable and safe for concurrent use; AppendSubset does not
// allocate when dst has room for size more nodes and costs one rendezvous
// top-k over all nodes, O(n). Build a new Shuffle when membership changes.
// The zero Shuffle and a nil *Shuffle have no nodes and give empty
// subsets.
type Shuffle struct {
	zoned *Zoned
	opts  []Option
}

// NewShuffle builds tenant subsets over nodes. It uses WithHasher, for the
// subsets and for the placers of Placer, and fails as NewRendezvous does.
func NewShuffle(nodes []Node, opts ...Option) (*Shuffle, error) {
	r, err := NewRendezvous(nodes, opts...)
	if err != nil {
		return nil, err
	}
	z, err := NewZoned(r)
	if err != nil {
		return nil, err
	}
	return &Shuffle{zoned: z, opts: slices.Clone(opts)}, nil
}

// AppendSubset appends tenant's subset of size nodes (all of them if size
// exceeds Len, none if size <= 0) to dst, in preference order.
func (s *Shuffle) AppendSubset(dst []Node, tenant string, size int) []Node {
	return s.subsets().AppendTopKString(dst, tenant, size)
}

// subsets returns the zone-aware placer whose lists are the subsets: nil,
// which is empty, for a nil or zero Shuffle.
func (s *Shuffle) subsets() *Zoned {
	if s == nil {
		return nil
	}
	return s.zoned
}

// Subset returns tenant's subset of size nodes in a new slice.
func (s *Shuffle) Subset(tenant string, size int) []Node {
	return s.AppendSubset(make([]Node, 0, place.ClampK(size, s.Len())), tenant, size)
}

// Placer returns a placer for tenant's keys over its subset: rendezvous
// hashing of the subset, zone-aware for replicas. It costs a subset and a
// rendezvous build, O(n + size·log size); callers that place many keys for
// a tenant should keep it. It fails with ErrInvalidOption if size < 1.
func (s *Shuffle) Placer(tenant string, size int) (*Zoned, error) {
	if size < 1 {
		return nil, fmt.Errorf("%w: Shuffle.Placer(%q, %d): want size >= 1", ErrInvalidOption, tenant, size)
	}
	var opts []Option
	if s != nil {
		opts = s.opts
	}
	r, err := NewRendezvous(s.Subset(tenant, size), opts...)
	if err != nil {
		return nil, err
	}
	return NewZoned(r)
}

// Zones returns the number of failure domains among the nodes.
func (s *Shuffle) Zones() int { return s.subsets().Zones() }

// Nodes returns all the nodes in ascending ID order.
func (s *Shuffle) Nodes() []Node { return s.subsets().Nodes() }

// Len returns the number of nodes.
func (s *Shuffle) Len() int { return s.subsets().Len() }
