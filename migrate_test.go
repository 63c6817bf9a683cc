package chash_test

import (
	"fmt"
	"testing"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/chashtest"
	"github.com/keyplace/chash/compat"
	"github.com/keyplace/chash/internal/conformance"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMigrationRoute(t *testing.T) {
	servers := conformance.NamedNodes(5, func(i int) string { return fmt.Sprintf("10.0.0.%d:11211", i) })
	from, err := compat.NewGomemcache(servers)
	require.NoError(t, err)
	to, err := chash.NewRing(servers)
	require.NoError(t, err)
	m, err := chash.NewMigration(from, to)
	require.NoError(t, err)
	moved := 0
	const keys = 50000
	for i := 0; i < keys; i++ {
		key := fmt.Sprintf("k%d", i)
		r := m.RouteString(key)
		require.Equal(t, r, m.Route([]byte(key)))
		require.Equal(t, to.LookupString(key), r.Owner)
		require.Equal(t, from.LookupString(key), r.Fallback)
		require.Equal(t, r.Owner.ID != r.Fallback.ID, r.Moved)
		require.Equal(t, r.Owner, m.LookupString(key))
		if r.Moved {
			moved++
		}
	}
	mv, err := m.Movement()
	require.NoError(t, err)
	assert.InDelta(t, mv.Moved, float64(moved)/keys, 0.01)
	assert.InDelta(t, 0.8, mv.Moved, 0.02, "CRC-32 mod 5 to a ring agree on 1/5 of keys")
	chashtest.CheckPlacer(t, m)
	assert.Same(t, from, m.From())
	assert.Same(t, to, m.To())
	if testing.CoverMode() == "" {
		key := []byte("user:1")
		assert.Zero(t, testing.AllocsPerRun(100, func() { m.Route(key); m.RouteString("user:1") }))
	}
}

// TestContractMigration runs the contract on a Migration between two
// rendezvous placements of the same nodes (seeds 1 and 0), with
// rendezvous's bounds: a Migration places as its target does.
func TestContractMigration(t *testing.T) {
	s := rendezvousSpec()
	migrating := func(to chash.Placer, err error) (chash.Placer, error) {
		if err != nil {
			return nil, err
		}
		from, err := chash.NewRendezvous(to.Nodes(), chash.WithHasher(chash.XXHashSeed(1)))
		if err != nil {
			return nil, err
		}
		return conformance.AsPlacer(chash.NewMigration(from, to))
	}
	s.New = func(nodes []chash.Node) (chash.Placer, error) { return migrating(chash.NewRendezvous(nodes)) }
	s.NewScaled = nil
	s.Add, s.Remove = nil, nil
	s.Derive = false // Derive does not know a Migration
	s.Zero = &chash.Migration{}
	s.Wrap = func(p chash.Placer) (chash.Placer, error) {
		from, err := chash.NewRendezvous(chashtest.Nodes(10))
		if err != nil {
			return nil, err
		}
		return conformance.AsPlacer(chash.NewMigration(from, p))
	}
	s.Variants = []func() (chash.Placer, error){
		// Another source, the same target: the same placement.
		func() (chash.Placer, error) {
			from, err := chash.NewJump(chashtest.Nodes(10))
			if err != nil {
				return nil, err
			}
			to, err := chash.NewRendezvous(chashtest.Nodes(10))
			if err != nil {
				return nil, err
			}
			return conformance.AsPlacer(chash.NewMigration(from, to))
		},
		// Another target: another placement.
		func() (chash.Placer, error) { return migrating(chash.NewMaglev(chashtest.Nodes(10))) },
	}
	chashtest.TestPlacer(t, s)
}

func TestMigrationNil(t *testing.T) {
	r, err := chash.NewRing([]chash.Node{{ID: "a"}})
	require.NoError(t, err)
	var typedNil *chash.Ring
	for _, c := range [][2]chash.Placer{{nil, r}, {r, nil}, {typedNil, r}, {r, typedNil}} {
		_, err := chash.NewMigration(c[0], c[1])
		assert.ErrorIs(t, err, chash.ErrNilPlacer)
		// The message names the types, not the values: printing the
		// other placer raced with a live one (a member.Watcher) under
		// -race in chashtest's NilPlacer case, and copied its structure.
		assert.Contains(t, err.Error(), "*chash.Ring")
	}
}

func BenchmarkMigrationRoute(b *testing.B) {
	servers := conformance.NamedNodes(8, func(i int) string { return fmt.Sprintf("10.0.0.%d:11211", i) })
	from, err := compat.NewGomemcache(servers)
	require.NoError(b, err)
	to, err := chash.NewRing(servers)
	require.NoError(b, err)
	m, err := chash.NewMigration(from, to)
	require.NoError(b, err)
	_, ss := conformance.BenchKeys(13)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		r := m.RouteString(ss[i&(len(ss)-1)])
		sinkNode = r.Owner
	}
}

// During a rollout from gomemcache's ServerList to a ring, read the new
// owner first and fall back to the old one.
func ExampleNewMigration() {
	servers := []chash.Node{{ID: "10.0.0.1:11211"}, {ID: "10.0.0.2:11211"}, {ID: "10.0.0.3:11211"}}
	from, err := compat.NewGomemcache(servers)
	if err != nil {
		panic(err)
	}
	to, err := chash.NewRing(servers)
	if err != nil {
		panic(err)
	}
	m, err := chash.NewMigration(from, to)
	if err != nil {
		panic(err)
	}
	for _, key := range []string{"user:1", "user:2", "user:3"} {
		r := m.RouteString(key)
		fmt.Println(key, r.Owner.ID, r.Fallback.ID, r.Moved)
	}
	// Output:
	// user:1 10.0.0.2:11211 10.0.0.1:11211 true
	// user:2 10.0.0.3:11211 10.0.0.2:11211 true
	// user:3 10.0.0.3:11211 10.0.0.1:11211 true
}
