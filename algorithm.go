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
	AlgorithmRing       Algorithm = iota + 1 // ring with virtual nodes: NewRing
	AlgorithmRendezvous                      // highest random weight: NewRendezvous
	AlgorithmJump                            // Lamping & Veach jump hash: NewJump
	AlgorithmMaglev                          // Maglev lookup table: NewMaglev
	AlgorithmBounded                         // bounded-load partitions: NewBounded
	AlgorithmJumpBack                        // Ertl's JumpBackHash: NewJumpBack
)

var algorithmNames = [...]string{
	AlgorithmRing:       "ring",
	AlgorithmRendezvous: "rendezvous",
	AlgorithmJump:       "jump",
	AlgorithmMaglev:     "maglev",
	AlgorithmBounded:    "bounded",
	AlgorithmJumpBack:   "jumpback",
}

// Algorithms lists every algorithm, in the order of the constants.
func Algorithms() []Algorithm {
	return []Algorithm{AlgorithmRing, AlgorithmRendezvous, AlgorithmJump, AlgorithmMaglev, AlgorithmBounded, AlgorithmJumpBack}
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
// nodes: node i is bucket i, as in jump and JumpBackHash. Such a placement
// can lose only its last node without moving keys between the nodes that
// stay, and a reordered list moves nearly every key; code that builds
// placers from a list whose order it does not control (a resolver, a
// client's server map) must refuse a positional algorithm or number the
// nodes stably itself. See also [IsPositional].
func (a Algorithm) Positional() bool {
	return a == AlgorithmJump || a == AlgorithmJumpBack
}

// IsPositional reports whether p's placement depends on the order of its
// nodes (see [Algorithm.Positional]): a Jump or JumpBack, seen through a
// Holder, a Zoned, a Migration's target or any placer with a Load() Placer
// method, or a placer of another package whose method Positional() bool
// says so. A nil placer is not positional.
func IsPositional(p Placer) bool {
	for depth := 0; depth < maxHolderDepth && !isNil(p); depth++ {
		switch q := p.(type) {
		case *Jump, *JumpBack:
			return true
		case *Zoned:
			p = q.p
		case *Migration:
			p = q.to
		case loader:
			var ok bool
			if p, ok = loadSafely(q); !ok {
				return false
			}
		case interface{ Positional() bool }:
			return q.Positional()
		default:
			return false
		}
	}
	return false
}

// ParseAlgorithm returns the algorithm named s: "ring", "rendezvous" (or
// "hrw"), "jump", "maglev", "bounded" or "jumpback", in any case.
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
	return 0, fmt.Errorf("%w: %q (want one of ring, rendezvous, jump, maglev, bounded, jumpback)", ErrUnknownAlgorithm, s)
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
