package conformance

import (
	"slices"
	"testing"

	"github.com/keyplace/chash"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ketamaSpec is the loosest spec the suite is run with: a ketama ring,
// whose collateral (0.08) once let a placer that moves nothing pass add.
var ketamaSpec = Spec{MaxCV: 0.12, ShareTol: 0.3, Collateral: 0.08}

// TestAddCatchesStuckPlacer builds a ketama ring that ignores the added
// node, so no key moves: the add check must fail it, and pass a ring that
// does add the node.
func TestAddCatchesStuckPlacer(t *testing.T) {
	opt := chash.WithKetama(chash.KetamaLibmemcached)
	ring := func(nodes []chash.Node) chash.Placer {
		r, err := chash.NewRing(nodes, opt)
		require.NoError(t, err)
		return r
	}
	nodes := Nodes(10)
	before := Owners(ring(nodes))
	stuck := Owners(ring(slices.Clone(nodes))) // "node-10" ignored
	moved, collateral := Moves(before, stuck, "node-10")
	require.Zero(t, moved)
	assert.Error(t, checkShare(ketamaSpec, "add", moved-collateral, 11))

	after := Owners(ring(append(slices.Clone(nodes), chash.Node{ID: "node-10"})))
	moved, collateral = Moves(before, after, "node-10")
	t.Logf("ketama 10 -> 11: moved %.4f, collateral %.4f", moved, collateral)
	assert.NoError(t, checkShare(ketamaSpec, "add", moved-collateral, 11))
}

// TestRemoveBoundsMoved: the remove check fails when the removed node's
// share is far from 1/10, and passes at 1/10.
func TestRemoveBoundsMoved(t *testing.T) {
	assert.NoError(t, checkShare(ketamaSpec, "remove", 0.1, 10))
	assert.NoError(t, checkShare(ketamaSpec, "remove", 0.125, 10))
	assert.Error(t, checkShare(ketamaSpec, "remove", 0.2, 10))
	assert.Error(t, checkShare(ketamaSpec, "remove", 0.05, 10))
	assert.Error(t, checkShare(Spec{ShareTol: 0.05, MaxCV: 0.02}, "remove", 0.108, 10))
	assert.NoError(t, checkShare(Spec{ShareTol: 0.05, MaxCV: 0.05}, "remove", 0.108, 10), "2·MaxCV widens ShareTol")
}
