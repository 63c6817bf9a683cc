package chash_test

import (
	"testing"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/chashtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHolderZero(t *testing.T) {
	var h chash.Holder
	assert.Nil(t, h.Load())
	assert.Equal(t, chash.Node{}, h.LookupString("k"))
	assert.Equal(t, chash.Node{}, h.Lookup([]byte("k")))
	assert.Empty(t, h.AppendTopKString(nil, "k", 3))
	assert.Empty(t, h.AppendTopK(nil, []byte("k"), 3))
	assert.Nil(t, h.Nodes())
	assert.Zero(t, h.Len())
}

func TestHolderSwap(t *testing.T) {
	a, err := chash.NewRing(chashtest.Nodes(3))
	require.NoError(t, err)
	b, err := a.Add(chash.Node{ID: "new"})
	require.NoError(t, err)
	h := chash.NewHolder(a)
	assert.Equal(t, a.LookupString("k"), h.LookupString("k"))
	assert.Equal(t, 3, h.Len())
	assert.Same(t, a, h.Swap(b))
	assert.Equal(t, 4, h.Len())
	assert.Equal(t, b.Nodes(), h.Nodes())
	assert.Equal(t, b.AppendTopKString(nil, "k", 2), h.AppendTopKString(nil, "k", 2))
	h.Store(nil)
	assert.Nil(t, h.Load())
	assert.Nil(t, h.Swap(a))
	assert.Same(t, a, h.Load())
}

func TestHolderAllocs(t *testing.T) {
	r, err := chash.NewRing(chashtest.Nodes(8))
	require.NoError(t, err)
	h := chash.NewHolder(r)
	key := []byte("user:1:profile")
	buf := make([]chash.Node, 0, 3)
	assert.Zero(t, testing.AllocsPerRun(100, func() { _ = h.Lookup(key) }))
	assert.Zero(t, testing.AllocsPerRun(100, func() { _ = h.LookupString("user:1:profile") }))
	assert.Zero(t, testing.AllocsPerRun(100, func() { buf = h.AppendTopK(buf[:0], key, 3) }))
	assert.Zero(t, testing.AllocsPerRun(100, func() { buf = h.AppendTopKString(buf[:0], "k", 3) }))
}
