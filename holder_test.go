package chash_test

import (
	"testing"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/chashtest"
	"github.com/keyplace/chash/internal/conformance"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestContractHolder runs the contract on a Holder holding a rendezvous
// placer, with rendezvous's bounds: a Holder places as what it holds.
func TestContractHolder(t *testing.T) {
	s := rendezvousSpec()
	s.New = holding(s.New)
	s.Add = holdingAdd(s.Add)
	s.Remove = holdingRemove(s.Remove)
	for i, v := range s.Variants {
		s.Variants[i] = func() (chash.Placer, error) {
			return holding(func([]chash.Node) (chash.Placer, error) { return v() })(nil)
		}
	}
	s.Zero = &chash.Holder{}
	// A nil *Holder reads as empty, but storing into it panics.
	s.NilPanics = []string{"Store", "Swap"}
	chashtest.TestPlacer(t, s)
}

// holding wraps a constructor's placer in a Holder.
func holding(f func([]chash.Node) (chash.Placer, error)) func([]chash.Node) (chash.Placer, error) {
	return func(nodes []chash.Node) (chash.Placer, error) {
		p, err := f(nodes)
		if err != nil {
			return nil, err
		}
		return chash.NewHolder(p), nil
	}
}

func holdingAdd(f func(chash.Placer, chash.Node) (chash.Placer, error)) func(chash.Placer, chash.Node) (chash.Placer, error) {
	return func(p chash.Placer, n chash.Node) (chash.Placer, error) {
		q, err := f(p.(*chash.Holder).Load(), n)
		return conformance.AsPlacer(chash.NewHolder(q), err)
	}
}

func holdingRemove(f func(chash.Placer, string) (chash.Placer, error)) func(chash.Placer, string) (chash.Placer, error) {
	return func(p chash.Placer, id string) (chash.Placer, error) {
		q, err := f(p.(*chash.Holder).Load(), id)
		return conformance.AsPlacer(chash.NewHolder(q), err)
	}
}

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
