package member

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/internal/place"
)

// Builder makes the placer of a view from its nodes, ascending by ID (for
// chash.NewJump that order is the bucket numbering). Any algorithm and
// options work, for example
//
//	func(nodes []chash.Node) (chash.Placer, error) {
//		return chash.NewMaglev(nodes, chash.WithTableSize(65537))
//	}
//
// or Spec.Builder. A Builder must be deterministic and monotone: given the
// same nodes it succeeds or fails alike in every process, and a set of
// nodes it refuses stays refused when nodes are added (the chash
// constructors are: they refuse a weight out of range, unequal weights
// under jump, more nodes than a table has room for). Place relies on it to
// find the members to leave out, in every process alike.
type Builder func(nodes []chash.Node) (chash.Placer, error)

// Refusal is a member a placer refused, and why.
type Refusal struct {
	Member Member
	// Err wraps ErrRefused and the builder's error.
	Err error
}

// Place builds a placer of nodes with build, leaving out the nodes it
// refuses, and returns it with the refused nodes (in ID order) and why.
// nodes must have distinct IDs; Place sorts a copy by ID. It fails with
// ErrNoMembers only when no node can be placed.
//
// Every process given the same nodes and a deterministic, monotone
// Builder (see Builder) leaves out the same nodes: the members are taken
// in ID order, each kept unless the builder refuses it together with the
// ones kept before it. Finding them costs one build when none is refused
// and at most 1 + ⌈log₂ n⌉ builds for each node refused (a binary search
// for the first prefix of the remaining nodes that fails), never a build
// per node. A panicking builder counts as refusing; a builder that returns
// a nil or empty placer without an error refuses with chash.ErrNoNodes.
func Place(build Builder, nodes []chash.Node) (chash.Placer, []Refusal, error) {
	sorted := slices.Clone(nodes)
	slices.SortFunc(sorted, func(a, b chash.Node) int { return cmp.Compare(a.ID, b.ID) })
	return newPlacement(build).place(sorted)
}

// placement finds the placeable members of a sequence of member sets with
// one builder, remembering the nodes it refuses alone: those are refused
// in every set (the builder is monotone), so a later set leaves them out
// without searching again.
type placement struct {
	build  Builder
	alone  map[chash.Node]error // nodes the builder refuses on their own
	builds int                  // builds attempted, for the figures
}

// maxRemembered bounds the nodes a placement remembers, so that a hostile
// stream of refused members cannot grow it without end.
const maxRemembered = 4096

func newPlacement(build Builder) *placement {
	return &placement{build: build, alone: map[chash.Node]error{}}
}

// place builds a placer of sorted (ascending by ID), leaving out what the
// builder refuses.
func (pl *placement) place(sorted []chash.Node) (chash.Placer, []Refusal, error) {
	var refused []Refusal
	keep := sorted
	if len(pl.alone) > 0 {
		keep = make([]chash.Node, 0, len(sorted))
		for _, n := range sorted {
			if err, ok := pl.alone[n]; ok {
				refused = append(refused, refusal(n, err))
			} else {
				keep = append(keep, n)
			}
		}
	}
	p, err := pl.try(keep)
	if err != nil && len(keep) > 0 {
		var more []Refusal
		p, more, err = pl.search(keep, err)
		refused = append(refused, more...)
		slices.SortFunc(refused, func(a, b Refusal) int { return cmp.Compare(a.Member.ID, b.Member.ID) })
	}
	if err != nil {
		if !errors.Is(err, ErrNoMembers) {
			err = fmt.Errorf("%w: %w", ErrNoMembers, err)
		}
		return nil, refused, err
	}
	return p, refused, nil
}

// search finds, in ID order, the nodes of sorted the builder refuses
// together with the ones kept before them (see Place), knowing that
// sorted as a whole fails with failure.
func (pl *placement) search(sorted []chash.Node, failure error) (chash.Placer, []Refusal, error) {
	var refused []Refusal
	var kept []chash.Node
	rest := sorted
	for len(rest) > 0 {
		if len(refused) > 0 {
			p, err := pl.try(slices.Concat(kept, rest))
			if err == nil {
				return p, refused, nil
			}
			failure = err
		}
		// kept + rest[:lo] builds (or is empty); kept + rest[:hi] fails
		// with failure.
		lo, hi := 0, len(rest)
		for hi-lo > 1 {
			mid := lo + (hi-lo)/2
			if _, err := pl.try(slices.Concat(kept, rest[:mid])); err == nil {
				lo = mid
			} else {
				hi, failure = mid, err
			}
		}
		culprit := rest[lo]
		if len(kept)+lo > 0 {
			// Refused alone as well? Then in every set: remember it.
			if _, err := pl.try([]chash.Node{culprit}); err != nil {
				failure = err
				pl.remember(culprit, err)
			}
		} else {
			pl.remember(culprit, failure)
		}
		refused = append(refused, refusal(culprit, failure))
		kept = slices.Concat(kept, rest[:lo])
		rest = rest[lo+1:]
	}
	if len(kept) == 0 {
		return nil, refused, fmt.Errorf("%w: all %d refused", ErrNoMembers, len(refused))
	}
	p, err := pl.try(kept)
	if err != nil { // only a builder that is not deterministic gets here
		return nil, refused, fmt.Errorf("%w: %w", ErrNoMembers, err)
	}
	return p, refused, nil
}

// remember records a node the builder refuses on its own.
func (pl *placement) remember(n chash.Node, err error) {
	if len(pl.alone) >= maxRemembered {
		clear(pl.alone)
	}
	pl.alone[n] = err
}

// try builds a placer of nodes, turning a panic, a nil placer or an empty
// one into an error.
func (pl *placement) try(nodes []chash.Node) (p chash.Placer, err error) {
	if len(nodes) == 0 {
		return nil, ErrNoMembers
	}
	pl.builds++
	defer func() {
		if r := recover(); r != nil {
			p, err = nil, fmt.Errorf("member: builder panicked: %v", r)
		}
	}()
	p, err = pl.build(nodes)
	switch {
	case err != nil:
		return nil, err
	case place.IsNil(p) || p.Len() == 0:
		return nil, fmt.Errorf("%w: the builder returned an empty placer", chash.ErrNoNodes)
	}
	return p, nil
}

func refusal(n chash.Node, err error) Refusal {
	return Refusal{Member: FromNode(n), Err: fmt.Errorf("%w: %q (weight %v): %w", ErrRefused, n.ID, n.Weight, err)}
}
