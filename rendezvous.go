package chash

import "fmt"

// Rendezvous is not built yet; NewRendezvous returns an error.
type Rendezvous struct{ Ring }

// NewRendezvous is not built yet and always fails.
func NewRendezvous(nodes []Node, opts ...Option) (*Rendezvous, error) {
	return nil, fmt.Errorf("%w: rendezvous is not built yet", ErrUnknownAlgorithm)
}
