package chash

import "fmt"

// Maglev is not built yet; NewMaglev returns an error.
type Maglev struct{ Ring }

// NewMaglev is not built yet and always fails.
func NewMaglev(nodes []Node, opts ...Option) (*Maglev, error) {
	return nil, fmt.Errorf("%w: maglev is not built yet", ErrUnknownAlgorithm)
}
