package chash

import "fmt"

// Bounded is not built yet; NewBounded returns an error.
type Bounded struct{ Ring }

// NewBounded is not built yet and always fails.
func NewBounded(nodes []Node, opts ...Option) (*Bounded, error) {
	return nil, fmt.Errorf("%w: bounded is not built yet", ErrUnknownAlgorithm)
}
