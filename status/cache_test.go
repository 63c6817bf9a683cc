package status

import (
	"testing"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/chashtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Shares are computed once per fingerprint: the same placer, or another
// that places alike, reuses them; a change computes them anew.
func TestSharesCachedPerFingerprint(t *testing.T) {
	ring, err := chash.NewRing(chashtest.Nodes(20))
	require.NoError(t, err)
	holder := chash.NewHolder(ring)
	h, err := NewHandler(holder)
	require.NoError(t, err)
	_, first := h.snapshot()
	_, again := h.snapshot()
	assert.Same(t, first, again, "same placer")

	twin, err := chash.NewRing(chashtest.Nodes(20))
	require.NoError(t, err)
	holder.Store(twin)
	_, same := h.snapshot()
	assert.Same(t, first, same, "a placer with the same fingerprint")
	rows := first.staticRows()
	assert.Len(t, rows, 20)
	assert.Equal(t, &rows[0], &first.staticRows()[0], "rows rendered once")

	grown, err := ring.Add(chash.Node{ID: "node-20"})
	require.NoError(t, err)
	holder.Store(grown)
	_, next := h.snapshot()
	assert.NotSame(t, first, next)
	assert.Len(t, next.nodes, 21)
}
