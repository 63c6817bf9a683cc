package chash

import (
	"fmt"
	"strings"
)

// Algorithm names a placement algorithm, so that a service can choose one
// from configuration with [ParseAlgorithm] and [New].
type Algorithm uint8

// The algorithms. The zero Algorithm is not valid.
const (
	AlgorithmRing           Algorithm = iota + 1 // ring with virtual nodes: NewRing
	AlgorithmRendezvous                          // highest random weight: NewRendezvous
	AlgorithmJump                                // Lamping & Veach jump hash: NewJump
	AlgorithmMaglev                              // Maglev lookup table: NewMaglev
	AlgorithmBounded                             // bounded-load partitions: NewBounded
	AlgorithmJumpBack                            // Ertl's JumpBackHash: NewJumpBack
	AlgorithmMemento                             // MementoHash: NewMemento
	AlgorithmAnchor                              // AnchorHash: NewAnchor
	AlgorithmDx                                  // DxHash: NewDx
	AlgorithmBinomial                            // BinomialHash: NewBinomial
	AlgorithmFlip                                // FlipHash: NewFlip
	AlgorithmJumpBackAnchor                      // hash4j's JumpBackAnchor: NewJumpBackAnchor
	AlgorithmChooseK                             // ConsistentChooseK: NewChooseK
)

var algorithmNames = [...]string{
	AlgorithmRing:           "ring",
	AlgorithmRendezvous:     "rendezvous",
	AlgorithmJump:           "jump",
	AlgorithmMaglev:         "maglev",
	AlgorithmBounded:        "bounded",
	AlgorithmJumpBack:       "jumpback",
	AlgorithmMemento:        "memento",
	AlgorithmAnchor:         "anchor",
	AlgorithmDx:             "dx",
	AlgorithmBinomial:       "binomial",
	AlgorithmFlip:           "flip",
	AlgorithmJumpBackAnchor: "jumpbackanchor",
	AlgorithmChooseK:        "choosek",
}

// Algorithms lists every algorithm, in the order of the constants.
func Algorithms() []Algorithm {
	return []Algorithm{
		AlgorithmRing, AlgorithmRendezvous, AlgorithmJump, AlgorithmMaglev, AlgorithmBounded, AlgorithmJumpBack,
		AlgorithmMemento, AlgorithmAnchor, AlgorithmDx, AlgorithmBinomial, AlgorithmFlip, AlgorithmJumpBackAnchor,
		AlgorithmChooseK,
	}
}

// String returns the algorithm's name as ParseAlgorithm accepts it, such as
// "ring", or "Algorithm(N)" for an unknown value.
func (a Algorithm) String() string {
	if a > 0 && int(a) < len(algorithmNames) {
		return algorithmNames[a]
	}
	return fmt.Sprintf("Algorithm(%d)", a)
}

// Positional reports whether a's placement depends on the order of its
// nodes: node i is bucket i, as in jump, JumpBackHash, BinomialHash and
// FlipHash. Such a placement can lose only its last node without moving
// keys between the nodes that stay, and a reordered list moves nearly
// every key; code that builds placers from a list whose order it does not
// control (a resolver, a client's server map) must refuse a positional
// algorithm or number the nodes stably itself. See also [IsPositional],
// and [Algorithm.Stateful] for the algorithms that can lose any node.
func (a Algorithm) Positional() bool {
	switch a {
	case AlgorithmJump, AlgorithmJumpBack, AlgorithmBinomial, AlgorithmFlip:
		return true
	}
	return false
}

// Weighted reports whether a honours node weights: ring, rendezvous,
// maglev and bounded. The others place keys on numbered buckets of equal
// share and refuse unequal weights with ErrInvalidWeight.
func (a Algorithm) Weighted() bool {
	switch a {
	case AlgorithmRing, AlgorithmRendezvous, AlgorithmMaglev, AlgorithmBounded:
		return true
	}
	return false
}

// Stateful reports whether a keeps its members in numbered slots, as
// jump does, but lets any member leave: memento, anchor, dx,
// jumpbackanchor and choosek. The order given to the constructor numbers
// the slots; Remove and [Derive] keep every other member in its slot, so
// only the departed member's keys move. The placement is therefore a
// function of the slots (and, for some, of the order of removals: see
// [Algorithm.HistoryDependent]), not of the member set: a placer built
// afresh from a list that lacks a departed member renumbers the members
// after it and moves most keys. Code that follows a changing membership
// must derive each placer from the last with Derive, and processes that
// must agree must share the state (each type's Engine, read back with its
// From constructor) or apply the same changes from the same start. Such
// an algorithm is not positional ([Algorithm.Positional]).
func (a Algorithm) Stateful() bool {
	switch a {
	case AlgorithmMemento, AlgorithmAnchor, AlgorithmDx, AlgorithmJumpBackAnchor, AlgorithmChooseK:
		return true
	}
	return false
}

// HistoryDependent reports whether a stateful algorithm's placement also
// depends on the order in which members were removed: memento, anchor and
// jumpbackanchor, whose engines remember each removal and its
// replacement. Two processes that remove the same members in different
// orders then disagree on the departed members' keys, so they must share
// the engine's state rather than each apply the changes it sees. Dx and
// choosek, given the same members in the same slots, place every key alike
// whatever the order of removals. Algorithms that are not stateful report
// false.
func (a Algorithm) HistoryDependent() bool {
	switch a {
	case AlgorithmMemento, AlgorithmAnchor, AlgorithmJumpBackAnchor:
		return true
	}
	return false
}

// IsPositional reports whether p's placement depends on the order of its
// nodes (see [Algorithm.Positional]): whether p, seen through a Holder, a
// Zoned, a Migration's target or any placer with a Load() Placer method,
// has a method Positional() bool that says so. Jump, JumpBack, Binomial
// and Flip do, and so do compat's placers of server lists read in order;
// a placer of another package declares itself the same way. A nil placer
// is not positional.
func IsPositional(p Placer) bool {
	return declares(p, func(p Placer) (bool, bool) {
		q, ok := p.(interface{ Positional() bool })
		return ok && q.Positional(), ok
	})
}

// IsStateful reports whether p keeps its members in numbered slots that a
// membership change must derive from the last placer (see
// [Algorithm.Stateful]): whether p, seen as [IsPositional] sees it, has a
// method Stateful() bool that says so, as Memento, Anchor, Dx,
// JumpBackAnchor and ChooseK do. A nil placer is not stateful.
func IsStateful(p Placer) bool {
	return declares(p, func(p Placer) (bool, bool) {
		q, ok := p.(interface{ Stateful() bool })
		return ok && q.Stateful(), ok
	})
}

// declares reports what the first placer that answers says, from p through
// the placers it serves (see served, a Migration's target included).
// answer reports whether a placer declares the property, and what it
// declares.
func declares(p Placer, answer func(Placer) (value, ok bool)) bool {
	for depth := 0; depth < maxHolderDepth && !isNil(p); depth++ {
		if v, ok := answer(p); ok {
			return v
		}
		var wraps bool
		if p, wraps = served(p, true); !wraps {
			return false
		}
	}
	return false
}

// served returns the placer p serves and true: a view's current placer (a
// Holder's, a watcher's: any Load() Placer, nil if Load panics), a
// Zoned's, and with target a Migration's target; or p and false when p
// serves no other placer.
func served(p Placer, target bool) (Placer, bool) {
	switch q := p.(type) {
	case loader:
		l, ok := loadSafely(q)
		if !ok {
			return nil, true
		}
		return l, true
	case *Zoned:
		return q.p, true
	case *Migration:
		if target {
			return q.to, true
		}
	}
	return p, false
}

// ParseAlgorithm returns the algorithm named s, in any case: one of the
// names [Algorithm.String] gives ("ring", "rendezvous", "jump", "maglev",
// "bounded", "jumpback", "memento", "anchor", "dx", "binomial", "flip",
// "jumpbackanchor", "choosek"), or "hrw" for rendezvous.
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
	return 0, fmt.Errorf("%w: %q (want one of %s)", ErrUnknownAlgorithm, s, strings.Join(algorithmNames[1:], ", "))
}

// New builds a placer of algorithm a. Options that do not apply to a are
// ignored, so one option list can configure any algorithm.
func New(a Algorithm, nodes []Node, opts ...Option) (Placer, error) {
	switch a {
	case AlgorithmRing:
		return placer(NewRing(nodes, opts...))
	case AlgorithmRendezvous:
		return placer(NewRendezvous(nodes, opts...))
	case AlgorithmJump:
		return placer(NewJump(nodes, opts...))
	case AlgorithmMaglev:
		return placer(NewMaglev(nodes, opts...))
	case AlgorithmBounded:
		return placer(NewBounded(nodes, opts...))
	case AlgorithmJumpBack:
		return placer(NewJumpBack(nodes, opts...))
	case AlgorithmMemento:
		return placer(NewMemento(nodes, opts...))
	case AlgorithmAnchor:
		return placer(NewAnchor(nodes, opts...))
	case AlgorithmDx:
		return placer(NewDx(nodes, opts...))
	case AlgorithmBinomial:
		return placer(NewBinomial(nodes, opts...))
	case AlgorithmFlip:
		return placer(NewFlip(nodes, opts...))
	case AlgorithmJumpBackAnchor:
		return placer(NewJumpBackAnchor(nodes, opts...))
	case AlgorithmChooseK:
		return placer(NewChooseK(nodes, opts...))
	}
	return nil, fmt.Errorf("%w: %v", ErrUnknownAlgorithm, a)
}

// placer returns a constructor's result as a Placer, and a nil Placer, not
// a typed nil, with an error.
func placer[P Placer](p P, err error) (Placer, error) {
	if err != nil {
		return nil, err
	}
	return p, nil
}
