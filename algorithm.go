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
