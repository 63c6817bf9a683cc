package chash_test

import (
	"testing"

	"github.com/keyplace/chash"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// emptyPlacers are the zero value and the nil pointer of every placer: all
// must behave as empty, never panic.
func emptyPlacers() map[string]chash.Placer {
	return map[string]chash.Placer{
		"zero Ring": &chash.Ring{}, "nil Ring": (*chash.Ring)(nil),
		"zero Rendezvous": &chash.Rendezvous{}, "nil Rendezvous": (*chash.Rendezvous)(nil),
		"zero Jump": &chash.Jump{}, "nil Jump": (*chash.Jump)(nil),
		"zero Maglev": &chash.Maglev{}, "nil Maglev": (*chash.Maglev)(nil),
		"zero Bounded": &chash.Bounded{}, "nil Bounded": (*chash.Bounded)(nil),
		"zero Holder": &chash.Holder{}, "nil Holder": (*chash.Holder)(nil),
	}
}

func TestEmptyPlacersBehaveAsEmpty(t *testing.T) {
	for name, p := range emptyPlacers() {
		assert.Equal(t, chash.Node{}, p.Lookup([]byte("k")), name)
		assert.Equal(t, chash.Node{}, p.LookupString("k"), name)
		assert.Empty(t, p.AppendTopK(nil, []byte("k"), 3), name)
		assert.Empty(t, p.AppendTopKString(nil, "k", 3), name)
		assert.Empty(t, p.Nodes(), name)
		assert.Zero(t, p.Len(), name)
		_, err := chash.Diff(p, p)
		assert.ErrorIs(t, err, chash.ErrNoNodes, name)
		_, err = chash.Shares(p)
		assert.ErrorIs(t, err, chash.ErrNoNodes, name)
	}
}

func TestZeroPlacersDeriveWithDefaults(t *testing.T) {
	nodes := []chash.Node{{ID: "a"}, {ID: "b"}}
	want, err := chash.NewRing(nodes)
	require.NoError(t, err)
	got, err := (&chash.Ring{}).Add(nodes...)
	require.NoError(t, err)
	m, err := chash.Diff(want, got)
	require.NoError(t, err)
	assert.Zero(t, m.Moved)
	_, err = (*chash.Ring)(nil).Remove("a")
	assert.ErrorIs(t, err, chash.ErrUnknownNode)

	_, err = (*chash.Maglev)(nil).Add(nodes...)
	assert.NoError(t, err)
	_, err = (&chash.Rendezvous{}).Add(nodes...)
	assert.NoError(t, err)
	_, err = (&chash.Jump{}).Replace("a", chash.Node{ID: "c"})
	assert.ErrorIs(t, err, chash.ErrUnknownNode)
	var b chash.Bounded
	assert.Equal(t, -1, b.PartitionString("k"))
	assert.Zero(t, b.Partitions())
	assert.Zero(t, b.Capacity("a"))
	assert.Equal(t, chash.Node{}, b.Owner(0))
	var g *chash.Maglev
	assert.Zero(t, g.TableSize())
	assert.Nil(t, g.Entries())
}

// The result of a failed constructor, stored without checking its error,
// empties a Holder instead of crashing the next lookup.
func TestHolderIgnoresTypedNil(t *testing.T) {
	good, err := chash.NewRing([]chash.Node{{ID: "a"}})
	require.NoError(t, err)
	bad, err := good.Add(chash.Node{ID: "a"}) // duplicate: bad is a nil *Ring
	require.ErrorIs(t, err, chash.ErrDuplicateID)

	h := chash.NewHolder(good)
	h.Store(bad)
	assert.Nil(t, h.Load(), "a typed nil is stored as nil")
	assert.Equal(t, chash.Node{}, h.LookupString("k"))
	assert.Nil(t, chash.NewHolder(bad).Load())
	h.Store(good)
	assert.Same(t, good, h.Swap(bad), "Swap returns the previous placer")
	assert.Zero(t, h.Len())
	_, err = chash.Diff(h, good)
	assert.ErrorIs(t, err, chash.ErrNoNodes)
}
