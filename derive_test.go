package chash_test

import (
	"testing"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/chashtest"
	"github.com/keyplace/chash/internal/conformance"
	"github.com/keyplace/chash/internal/measure"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// For Jump, Derive treats nodes as a set and keeps every member's bucket.
func TestDeriveJumpKeepsBuckets(t *testing.T) {
	j, err := chash.NewJump([]chash.Node{{ID: "a"}, {ID: "b"}, {ID: "c"}, {ID: "d"}})
	require.NoError(t, err)
	cases := []struct {
		name  string
		nodes []chash.Node
		want  []string
	}{
		{"any order", []chash.Node{{ID: "d"}, {ID: "c"}, {ID: "b"}, {ID: "a"}}, []string{"a", "b", "c", "d"}},
		{"append", []chash.Node{{ID: "e"}, {ID: "a"}, {ID: "b"}, {ID: "c"}, {ID: "d"}, {ID: "f"}}, []string{"a", "b", "c", "d", "e", "f"}},
		{"replace in the middle", []chash.Node{{ID: "a"}, {ID: "x"}, {ID: "c"}, {ID: "d"}}, []string{"a", "x", "c", "d"}},
		{"remove the last", []chash.Node{{ID: "a"}, {ID: "b"}, {ID: "c"}}, []string{"a", "b", "c"}},
		{"remove the last two, replace one", []chash.Node{{ID: "y"}, {ID: "b"}, {ID: "c"}}, []string{"y", "b", "c"}},
	}
	for _, tc := range cases {
		q, err := chash.Derive(j, tc.nodes)
		require.NoError(t, err, tc.name)
		assert.Equal(t, tc.want, measure.IDs(q.Nodes()), tc.name)
	}
	_, err = chash.Derive(j, []chash.Node{{ID: "a"}, {ID: "c"}, {ID: "d"}})
	assert.ErrorIs(t, err, chash.ErrNotLast)
	_, err = chash.Derive(j, []chash.Node{{ID: "a"}, {ID: "b", Weight: 2}, {ID: "c"}, {ID: "d"}})
	assert.ErrorIs(t, err, chash.ErrInvalidWeight)
}

type foreign struct{ chash.Placer }

func TestDeriveErrors(t *testing.T) {
	r, err := chash.NewRing([]chash.Node{{ID: "a"}})
	require.NoError(t, err)
	_, err = chash.Derive(foreign{r}, []chash.Node{{ID: "b"}})
	assert.ErrorIs(t, err, chash.ErrUnknownAlgorithm)
	_, err = chash.Derive(nil, []chash.Node{{ID: "b"}})
	assert.ErrorIs(t, err, chash.ErrNilPlacer)
	_, err = chash.Derive((*chash.Ring)(nil), []chash.Node{{ID: "b"}})
	assert.ErrorIs(t, err, chash.ErrNilPlacer)
	_, err = chash.Derive(&chash.Holder{}, []chash.Node{{ID: "b"}})
	assert.ErrorIs(t, err, chash.ErrNilPlacer)
	_, err = chash.Derive(r, []chash.Node{{ID: "b"}, {ID: "b"}})
	assert.ErrorIs(t, err, chash.ErrDuplicateID)
	// The zero value of a placer derives with the default options.
	q, err := chash.Derive(&chash.Maglev{}, []chash.Node{{ID: "b"}})
	require.NoError(t, err)
	assert.Equal(t, chash.DefaultTableSize, q.(*chash.Maglev).TableSize())
}

// A Holder that holds a Holder derives from the placer inside both, as
// Fingerprint reads through it (found by chashtest's Derive case on a
// Holder, which derives through a Holder of the placer under test).
func TestDeriveNestedHolder(t *testing.T) {
	r, err := chash.NewRing(chashtest.Nodes(3))
	require.NoError(t, err)
	q, err := chash.Derive(chash.NewHolder(chash.NewHolder(r)), chashtest.Nodes(4))
	require.NoError(t, err)
	want, err := chash.NewRing(chashtest.Nodes(4))
	require.NoError(t, err)
	assert.Equal(t, chash.Fingerprint(want), chash.Fingerprint(q))
	self := new(chash.Holder)
	self.Store(self)
	_, err = chash.Derive(self, chashtest.Nodes(4))
	assert.Error(t, err, "a Holder that holds itself")
}

// Options survive a derivation.
func TestDeriveKeepsOptions(t *testing.T) {
	nodes := []chash.Node{{ID: "a"}, {ID: "b"}}
	opts := []chash.Option{chash.WithHasher(chash.XXHashSeed(9)), chash.WithVnodes(10), chash.WithTableSize(1009), chash.WithPartitions(64), chash.WithCapacity(4)}
	for _, a := range chash.Algorithms() {
		p, err := chash.New(a, nodes, opts...)
		require.NoError(t, err)
		next := append(nodes, chash.Node{ID: "c"})
		want, err := chash.New(a, next, opts...)
		require.NoError(t, err)
		got, err := chash.Derive(p, next)
		require.NoError(t, err)
		if d, ok := got.(*chash.Dx); ok {
			// A new Dx member takes the first free place of a fixed
			// sequence, not the next: compare with the same places.
			want, err = chash.NewDxFrom(d.Engine(), d.Nodes(), opts...)
			require.NoError(t, err)
		}
		// Equal fingerprints: the same placement (Diff would sample the
		// keys of most algorithms, at a cost the test need not pay).
		assert.Equal(t, chash.Fingerprint(want), chash.Fingerprint(got), a)
		buf := make([]chash.Node, 0, 3)
		for _, k := range []string{"x", "y", "z", "w"} {
			assert.Equal(t, want.AppendTopKString(nil, k, 3), got.AppendTopKString(buf[:0], k, 3), "%v %s", a, k)
		}
	}
}

// FuzzDerive: Derive from any placer to any node list gives what the
// constructor gives for that list, or an error, never a panic.
func FuzzDerive(f *testing.F) {
	f.Add(uint8(1), "a,b,c", []byte{0, 0, 0}, "a,c,d", []byte{1, 4, 0}, "k")
	f.Add(uint8(3), "a,b,c,d", []byte{}, "a,x,c", []byte{}, "")
	f.Add(uint8(5), "n", []byte{2}, "n,m", []byte{9, 1}, "key")
	f.Fuzz(func(t *testing.T, alg uint8, olds string, ow []byte, news string, nw []byte, key string) {
		a := chash.Algorithms()[int(alg)%len(chash.Algorithms())]
		opts := []chash.Option{chash.WithTableSize(1009), chash.WithPartitions(256), chash.WithVnodes(20)}
		p, err := chash.New(a, conformance.FuzzNodes(olds, ow), opts...)
		if err != nil {
			return
		}
		next := conformance.FuzzNodes(news, nw)
		q, err := chash.Derive(p, next)
		if err != nil {
			require.Nil(t, q)
			return
		}
		chashtest.CheckTopK(t, q, key, 4)
		if a.Positional() || a.Stateful() {
			return // bucket order follows p, not next
		}
		want, err := chash.New(a, next, opts...)
		require.NoError(t, err, "Derive succeeded where New fails")
		require.Equal(t, want.AppendTopKString(nil, key, 3), q.AppendTopKString(nil, key, 3))
	})
}

func TestDeriveZoned(t *testing.T) {
	nodes := []chash.Node{{ID: "a", Zone: "z1"}, {ID: "b", Zone: "z1"}, {ID: "c", Zone: "z2"}}
	r, err := chash.NewRing(nodes)
	require.NoError(t, err)
	z, err := chash.NewZoned(r)
	require.NoError(t, err)
	next := append(nodes, chash.Node{ID: "d", Zone: "z3"})
	got, err := chash.Derive(z, next)
	require.NoError(t, err)
	want, err := chash.NewRing(next)
	require.NoError(t, err)
	wz, err := chash.NewZoned(want)
	require.NoError(t, err)
	for _, k := range chashtest.Keys(500) {
		require.Equal(t, wz.AppendTopKString(nil, k, 3), got.AppendTopKString(nil, k, 3), k)
	}
}
