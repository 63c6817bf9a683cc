package chash

import "fmt"

// Jump is not built yet; NewJump returns an error.
type Jump struct{ Ring }

// NewJump is not built yet and always fails.
func NewJump(nodes []Node, opts ...Option) (*Jump, error) {
	return nil, fmt.Errorf("%w: jump is not built yet", ErrUnknownAlgorithm)
}
