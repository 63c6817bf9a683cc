package member_test

import (
	"errors"
	"fmt"
	"math/rand"
	"testing"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/member"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func nodes(n int, weight float64) []chash.Node {
	out := make([]chash.Node, n)
	for i := range out {
		out[i] = chash.Node{ID: fmt.Sprintf("m%04d", i), Weight: weight}
	}
	return out
}

// counting returns a builder that counts its calls.
func counting(b member.Builder, calls *int) member.Builder {
	return func(n []chash.Node) (chash.Placer, error) { *calls++; return b(n) }
}

func ring(n []chash.Node) (chash.Placer, error)   { return chash.NewRing(n) }
func jump(n []chash.Node) (chash.Placer, error)   { return chash.NewJump(n) }
func maglev(n []chash.Node) (chash.Placer, error) { return chash.NewMaglev(n) }

// The cases: one member a placer refuses (a ring weight of
// 200000 or 1e12, a rendezvous weight above 2^100, unequal weights under
// jump) is left out, everyone else placed, and the search costs about
// log2(n) builds, not n.
func TestPlaceRefused(t *testing.T) {
	for _, c := range []struct {
		name   string
		build  member.Builder
		weight float64
	}{
		{"ring 200000", ring, 200000},
		{"ring 1e12", ring, 1e12},
		{"rendezvous 2^101", func(n []chash.Node) (chash.Placer, error) { return chash.NewRendezvous(n) }, 0x1p101},
		{"jump unequal", jump, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			ns := nodes(1000, 1)
			ns[500].Weight = c.weight
			var calls int
			p, refused, err := member.Place(counting(c.build, &calls), ns)
			require.NoError(t, err)
			assert.Equal(t, 999, p.Len())
			require.Len(t, refused, 1)
			assert.Equal(t, "m0500", refused[0].Member.ID)
			assert.ErrorIs(t, refused[0].Err, member.ErrRefused)
			assert.LessOrEqual(t, calls, 14, "builds: 1 + ceil(log2 1000) + the node alone + the last")
			t.Logf("%d builds", calls)
		})
	}
}

// Every process leaves out the same members, whatever order they come
// in: placement depends on the member set only.
func TestPlaceDeterministic(t *testing.T) {
	ns := nodes(200, 1)
	rng := rand.New(rand.NewSource(1))
	for i := range ns {
		ns[i].Weight = float64(1 + rng.Intn(3)) // jump refuses all but one weight
	}
	first, refused, err := member.Place(jump, ns)
	require.NoError(t, err)
	assert.Equal(t, 200, first.Len()+len(refused))
	for range 5 {
		rng.Shuffle(len(ns), func(i, j int) { ns[i], ns[j] = ns[j], ns[i] })
		p, r, err := member.Place(jump, ns)
		require.NoError(t, err)
		assert.Equal(t, chash.Fingerprint(first), chash.Fingerprint(p))
		assert.Equal(t, len(refused), len(r))
	}
	// The first member in ID order sets the weight kept.
	assert.Equal(t, first.Nodes()[0].ID, "m0000")
}

// Refusing everyone, panicking and returning nothing all end in
// ErrNoMembers, never in a nil placer with a nil error.
func TestPlaceNothing(t *testing.T) {
	_, _, err := member.Place(ring, nil)
	assert.ErrorIs(t, err, member.ErrNoMembers)
	_, refused, err := member.Place(ring, nodes(3, 1e12))
	assert.ErrorIs(t, err, member.ErrNoMembers)
	assert.ErrorIs(t, err, chash.ErrNoNodes)
	assert.Len(t, refused, 3)
	_, _, err = member.Place(func([]chash.Node) (chash.Placer, error) { panic("boom") }, nodes(3, 1))
	assert.ErrorIs(t, err, member.ErrNoMembers)
	_, _, err = member.Place(func([]chash.Node) (chash.Placer, error) { return (*chash.Ring)(nil), nil }, nodes(3, 1))
	assert.ErrorIs(t, err, member.ErrNoMembers)
	_, _, err = member.Place(func([]chash.Node) (chash.Placer, error) { return nil, errors.New("no") }, nodes(3, 1))
	assert.ErrorIs(t, err, member.ErrNoMembers)
}

// Many refused members cost O(k log n) builds, not a build per member of
// a rebuild per refusal: half of 1,000 refused by jump.
func TestPlaceManyRefused(t *testing.T) {
	ns := nodes(1000, 1)
	for i := 1; i < len(ns); i += 2 {
		ns[i].Weight = 2
	}
	var calls int
	p, refused, err := member.Place(counting(jump, &calls), ns)
	require.NoError(t, err)
	assert.Equal(t, 500, p.Len())
	assert.Len(t, refused, 500)
	assert.Less(t, calls, 500*13, "at most 1 + log2(n) + 1 builds a refusal")
	t.Logf("%d builds for 500 refusals", calls)
}

func BenchmarkPlace(b *testing.B) {
	ns := nodes(1000, 1)
	b.Run("maglev/none-refused", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			if _, _, err := member.Place(maglev, ns); err != nil {
				b.Fatal(err)
			}
		}
	})
	bad := append(nodes(999, 1), chash.Node{ID: "zz", Weight: 1e12})
	b.Run("ring/one-refused", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			if _, _, err := member.Place(ring, bad); err != nil {
				b.Fatal(err)
			}
		}
	})
}
