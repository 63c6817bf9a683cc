// Package chash places keys on nodes: it decides which node, shard or backend
// owns a key, with the algorithms a service usually reaches for (a ring with
// virtual nodes, rendezvous hashing, jump hash, Maglev and bounded-load
// hashing) behind one [Placer] interface.
//
// Every placer is an immutable value. Lookups never allocate, take no lock and
// are safe for concurrent use; a membership change derives a new placer, and a
// [Holder] swaps the current one atomically while requests keep reading it.
//
// Placement is deterministic: placers built from the same nodes, options and
// [Hasher] place every key identically in every process and on every platform,
// whatever order the nodes were given in (for [Jump], the order is the bucket
// numbering).
package chash

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Node is a member of a placement: a node, shard or backend.
type Node struct {
	// ID is the node's stable identity and the only part of it that is
	// hashed for placement. It need not be an address: naming nodes by a
	// logical ID lets a replacement machine take over the same keys.
	ID string
	// Weight is the node's relative capacity: a node of weight 2 receives
	// about twice the keys of a node of weight 1. Zero means 1. Negative,
	// NaN and infinite weights are rejected by every constructor.
	Weight float64
	// Zone names the node's failure domain (a rack, zone or region),
	// compared exactly; empty means the node is a domain of its own. It
	// never changes which node owns a key: only zone-aware replica lists
	// ([Zoned]), subsets ([Shuffle]) and the [ShardMap] read it.
	Zone string
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

// Errors returned by the constructors, wrapped with detail. Test for them
// with [errors.Is].
var (
	// ErrNoNodes reports an empty node list.
	ErrNoNodes = errors.New("chash: no nodes")
	// ErrEmptyID reports a node whose ID is the empty string.
	ErrEmptyID = errors.New("chash: empty node ID")
	// ErrDuplicateID reports two nodes with the same ID.
	ErrDuplicateID = errors.New("chash: duplicate node ID")
	// ErrInvalidWeight reports a negative, NaN or infinite weight, or a
	// weight an algorithm cannot honour (Jump accepts only equal weights).
	ErrInvalidWeight = errors.New("chash: invalid weight")
	// ErrInvalidOption reports an option given a value outside its range.
	ErrInvalidOption = errors.New("chash: invalid option")
	// ErrTooLarge reports a structure that would exceed the library's size
	// limits (for example a ring of more than 1<<24 points).
	ErrTooLarge = errors.New("chash: too large")
	// ErrUnknownAlgorithm reports an Algorithm value or name that this
	// version of the package does not provide.
	ErrUnknownAlgorithm = errors.New("chash: unknown algorithm")
	// ErrUnknownNode reports a node ID that is not a member.
	ErrUnknownNode = errors.New("chash: unknown node")
	// ErrNotLast reports an attempt to remove a Jump node that is not the last
	// bucket. Jump numbers its nodes 0 to n-1 and can only drop bucket n-1:
	// removing a node in the middle would renumber every bucket after it and
	// move most of their keys. Replace the node in place with [Jump.Replace],
	// or build a new Jump if a full reshuffle is acceptable.
	ErrNotLast = errors.New("chash: jump can remove only the last node")
	// ErrOverloaded reports that an acquire found every node at its load bound.
	// A single goroutine never sees it; concurrent acquires can, transiently,
	// and the caller may retry or shed the request.
	ErrOverloaded = errors.New("chash: every node is at its load bound")
)

// Algorithm names a placement algorithm, so that a service can choose one
// from configuration with [ParseAlgorithm] and [New].
type Algorithm uint8

// The algorithms. The zero Algorithm is not valid.
const (
	AlgorithmRing       Algorithm = iota + 1 // ring with virtual nodes: NewRing
	AlgorithmRendezvous                      // highest random weight: NewRendezvous
	AlgorithmJump                            // Lamping & Veach jump hash: NewJump
	AlgorithmMaglev                          // Maglev lookup table: NewMaglev
	AlgorithmBounded                         // bounded-load partitions: NewBounded
)

var algorithmNames = [...]string{
	AlgorithmRing:       "ring",
	AlgorithmRendezvous: "rendezvous",
	AlgorithmJump:       "jump",
	AlgorithmMaglev:     "maglev",
	AlgorithmBounded:    "bounded",
}

// Algorithms lists every algorithm, in the order of the constants.
func Algorithms() []Algorithm {
	return []Algorithm{AlgorithmRing, AlgorithmRendezvous, AlgorithmJump, AlgorithmMaglev, AlgorithmBounded}
}

// String returns the algorithm's name as ParseAlgorithm accepts it, such as
// "ring", or "Algorithm(N)" for an unknown value.
func (a Algorithm) String() string {
	if a > 0 && int(a) < len(algorithmNames) {
		return algorithmNames[a]
	}
	return fmt.Sprintf("Algorithm(%d)", a)
}

// ParseAlgorithm returns the algorithm named s: "ring", "rendezvous" (or
// "hrw"), "jump", "maglev" or "bounded", in any case.
func ParseAlgorithm(s string) (Algorithm, error) {
	name := strings.ToLower(strings.TrimSpace(s))
	if name == "hrw" {
		return AlgorithmRendezvous, nil
	}
	for _, a := range Algorithms() {
		if a.String() == name {
			return a, nil
		}
	}
	return 0, fmt.Errorf("%w: %q (want one of ring, rendezvous, jump, maglev, bounded)", ErrUnknownAlgorithm, s)
}

// New builds a placer of algorithm a. Options that do not apply to a are
// ignored, so one option list can configure any algorithm.
func New(a Algorithm, nodes []Node, opts ...Option) (Placer, error) {
	// Each case returns through its own variable so that a nil pointer is
	// never wrapped in a non-nil Placer.
	switch a {
	case AlgorithmRing:
		p, err := NewRing(nodes, opts...)
		if err != nil {
			return nil, err
		}
		return p, nil
	case AlgorithmRendezvous:
		p, err := NewRendezvous(nodes, opts...)
		if err != nil {
			return nil, err
		}
		return p, nil
	case AlgorithmJump:
		p, err := NewJump(nodes, opts...)
		if err != nil {
			return nil, err
		}
		return p, nil
	case AlgorithmMaglev:
		p, err := NewMaglev(nodes, opts...)
		if err != nil {
			return nil, err
		}
		return p, nil
	case AlgorithmBounded:
		p, err := NewBounded(nodes, opts...)
		if err != nil {
			return nil, err
		}
		return p, nil
	}
	return nil, fmt.Errorf("%w: %v", ErrUnknownAlgorithm, a)
}

// Option configures a constructor. Options are validated when they are
// applied: a constructor given an out-of-range value returns an error that
// wraps ErrInvalidOption. An option that does not apply to an algorithm is
// ignored by it.
type Option func(*config) error

// config holds every option's value; zero fields mean "the default".
type config struct {
	hasher     hasher
	vnodes     int
	tableSize  int
	partitions int
	loadFactor float64
	ketama     KetamaVariant
}

func newConfig(opts []Option) (config, error) {
	c := config{hasher: defaultHasher}
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(&c); err != nil {
			return config{}, err
		}
	}
	return c, nil
}

// WithHasher sets the 64-bit hash applied to keys and node IDs. The default
// is [XXHash], xxhash64 with seed 0. A nil Hasher is an error. Every client
// that must agree on placement must use the same Hasher.
func WithHasher(h Hasher) Option {
	return func(c *config) error {
		if h == nil {
			return fmt.Errorf("%w: WithHasher(nil)", ErrInvalidOption)
		}
		c.hasher = newHasher(h)
		return nil
	}
}

// WithVnodes sets the ring's points per unit of weight, from 1 to 1<<16.
// The default is 160: the load's coefficient of variation is about
// 1/sqrt(vnodes), so 160 points give about 8%. Only the ring uses it.
func WithVnodes(n int) Option {
	return func(c *config) error {
		if n < 1 || n > 1<<16 {
			return fmt.Errorf("%w: WithVnodes(%d): want 1 to 65536", ErrInvalidOption, n)
		}
		c.vnodes = n
		return nil
	}
}

// WithTableSize sets Maglev's lookup table size: a prime, at least the
// number of nodes, at most 1<<24. The default is 65537. Only Maglev uses it.
func WithTableSize(m int) Option {
	return func(c *config) error {
		if m < 2 || m > 1<<24 || !isPrime(m) {
			return fmt.Errorf("%w: WithTableSize(%d): want a prime from 2 to 16777216", ErrInvalidOption, m)
		}
		c.tableSize = m
		return nil
	}
}

// WithPartitions sets the number of partitions keys are hashed into by the
// bounded-load placer, from 1 to 1<<24. Only Bounded uses it; its
// constructor documents the default.
func WithPartitions(n int) Option {
	return func(c *config) error {
		if n < 1 || n > 1<<24 {
			return fmt.Errorf("%w: WithPartitions(%d): want 1 to 16777216", ErrInvalidOption, n)
		}
		c.partitions = n
		return nil
	}
}

// WithLoadFactor sets the bounded-load factor c: no node holds more than
// about c times its fair share. It must be finite and greater than 1; the
// default is 1.25. Only Bounded and the balancer use it.
func WithLoadFactor(f float64) Option {
	return func(c *config) error {
		if !(f > 1) || math.IsInf(f, 0) {
			return fmt.Errorf("%w: WithLoadFactor(%v): want a finite value > 1", ErrInvalidOption, f)
		}
		c.loadFactor = f
		return nil
	}
}

// isPrime reports whether n is prime, by trial division (n <= 1<<24 here).
func isPrime(n int) bool {
	if n < 2 {
		return false
	}
	for d := 2; d*d <= n; d++ {
		if n%d == 0 {
			return false
		}
	}
	return true
}

// checkNodes validates nodes and returns a copy with every zero weight
// replaced by 1. If sorted is set the copy is in ascending ID order, which
// makes every structure built from it independent of the caller's order.
func checkNodes(nodes []Node, sorted bool) ([]Node, error) {
	if len(nodes) == 0 {
		return nil, ErrNoNodes
	}
	out := make([]Node, len(nodes))
	for i, n := range nodes {
		switch {
		case n.ID == "":
			return nil, fmt.Errorf("%w: node %d", ErrEmptyID, i)
		case n.Weight < 0 || math.IsNaN(n.Weight) || math.IsInf(n.Weight, 0):
			return nil, fmt.Errorf("%w: node %q has weight %v", ErrInvalidWeight, n.ID, n.Weight)
		case n.Weight == 0:
			n.Weight = 1
		}
		out[i] = n
	}
	byID := out
	if !sorted {
		byID = slices.Clone(out)
	}
	slices.SortFunc(byID, func(a, b Node) int { return cmp.Compare(a.ID, b.ID) })
	for i := 1; i < len(byID); i++ {
		if byID[i].ID == byID[i-1].ID {
			return nil, fmt.Errorf("%w: %q", ErrDuplicateID, byID[i].ID)
		}
	}
	return out, nil
}

// indexOf returns the position of the node with the given ID in nodes,
// which are sorted by ID, or -1.
func indexOf(nodes []Node, id string) int {
	i, ok := slices.BinarySearchFunc(nodes, id, func(n Node, id string) int { return cmp.Compare(n.ID, id) })
	if !ok {
		return -1
	}
	return i
}

// without returns nodes (sorted by ID) less the nodes with the given
// IDs, for the Remove methods. It fails with ErrUnknownNode if an ID is not
// a member, and with ErrNoNodes if no node would remain.
func without(nodes []Node, ids []string) ([]Node, error) {
	gone := make(map[string]bool, len(ids))
	for _, id := range ids {
		if indexOf(nodes, id) < 0 {
			return nil, fmt.Errorf("%w: %q", ErrUnknownNode, id)
		}
		gone[id] = true
	}
	rest := make([]Node, 0, len(nodes))
	for _, n := range nodes {
		if !gone[n.ID] {
			rest = append(rest, n)
		}
	}
	if len(rest) == 0 {
		return nil, fmt.Errorf("%w: removing %d of %d nodes", ErrNoNodes, len(gone), len(nodes))
	}
	return rest, nil
}

// absent reports whether no node in chosen has the given ID; AppendTopK
// implementations use it to keep their k nodes distinct.
func absent(chosen []Node, id string) bool {
	for i := range chosen {
		if chosen[i].ID == id {
			return false
		}
	}
	return true
}

// clampK returns how many nodes AppendTopK should append for k and n members.
func clampK(k, n int) int {
	if k <= 0 {
		return 0
	}
	return min(k, n)
}
