package chash

import "errors"

// Errors returned by the constructors and functions of this module (its
// other packages add their own), wrapped with detail. Test for them
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
	// ErrNilPlacer reports a nil Placer, or a typed nil such as the *Ring
	// of a failed constructor, given where a placer is required: to
	// NewZoned, NewMigration, Derive, balance.New and every other function
	// that takes one.
	ErrNilPlacer = errors.New("chash: nil placer")
	// ErrInvalidState reports a placement state that cannot be restored:
	// truncated or corrupted bytes or text, a bucket out of range or given
	// twice, or a state whose number of working buckets differs from the
	// number of nodes given with it.
	ErrInvalidState = errors.New("chash: invalid state")
	// ErrNotLast reports an attempt to remove a Jump node that is not the last
	// bucket. Jump numbers its nodes 0 to n-1 and can only drop bucket n-1:
	// removing a node in the middle would renumber every bucket after it and
	// move most of their keys. Replace the node in place with [Jump.Replace],
	// or build a new Jump if a full reshuffle is acceptable.
	ErrNotLast = errors.New("chash: jump can remove only the last node")
)
