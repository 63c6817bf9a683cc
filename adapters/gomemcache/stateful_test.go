package gomemcache_test

import (
	"fmt"
	"testing"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/adapters/gomemcache"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// owners returns the server of each key under p.
func owners(p chash.Placer, keys []string) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = p.LookupString(k).ID
	}
	return out
}

// With a stateful algorithm (memento, anchor, dx, jumpbackanchor,
// choosek), SetServers derives each placer from the last: the middle one
// of five servers leaves and only its keys move; a new order of the list
// moves nothing; a server joins and takes about a sixth of the keys, all
// from the others; and a client given the fleet's placer with SetPlacer
// places every key as the one that made the changes.
func TestStatefulSetServers(t *testing.T) {
	s := addrs(6)
	keys := make([]string, 20_000)
	if testing.Short() {
		keys = keys[:5_000]
	}
	for i := range keys {
		keys[i] = fmt.Sprintf("user:%d", i)
	}
	for _, a := range chash.Algorithms() {
		if !a.Stateful() {
			continue
		}
		t.Run(a.String(), func(t *testing.T) {
			// Room for the sixth server: an anchor holds only as many as
			// its first list by default.
			sel, err := gomemcache.New(s[:5], gomemcache.WithAlgorithm(a), gomemcache.WithPlacerOptions(chash.WithCapacity(8)))
			require.NoError(t, err)
			before := owners(sel.Placer(), keys)
			middle := []string{s[4], s[0], s[3], s[1]} // s[2] leaves; the rest in a new order
			mv, err := sel.DryRun(middle...)
			require.NoError(t, err)
			require.NoError(t, sel.SetServers(middle...))
			after := owners(sel.Placer(), keys)
			moved := 0
			for i := range keys {
				if before[i] == s[2] {
					moved++
					require.NotEqual(t, s[2], after[i])
				} else {
					require.Equal(t, before[i], after[i], "key %q moved between servers that stay", keys[i])
				}
			}
			assert.InDelta(t, 0.2, float64(moved)/float64(len(keys)), 0.02, "the middle server's share")
			assert.InDelta(t, float64(moved)/float64(len(keys)), mv.Moved, 0.02, "DryRun measured the change SetServers made")

			require.NoError(t, sel.SetServers(append(middle, s[5])...))
			joined := owners(sel.Placer(), keys)
			moved = 0
			for i := range keys {
				if joined[i] != after[i] {
					moved++
					require.Equal(t, s[5], joined[i], "key %q moved to an old server", keys[i])
				}
			}
			assert.InDelta(t, 0.2, float64(moved)/float64(len(keys)), 0.02, "the new server's share of five")

			late := new(gomemcache.Selector)
			require.NoError(t, late.SetPlacer(fleetPlacer(t, sel.Placer())))
			assert.Equal(t, joined, owners(late.Placer(), keys), "a client given the fleet's state")
		})
	}
}

// fleetPlacer rebuilds p from its members and its engine's state, as a
// client that starts late would from what the fleet publishes.
func fleetPlacer(t *testing.T, p chash.Placer) chash.Placer {
	t.Helper()
	var q chash.Placer
	var err error
	switch p := p.(type) {
	case *chash.Memento:
		e0 := p.Engine()
		text, _ := e0.MarshalText()
		var e chash.MementoEngine
		require.NoError(t, e.UnmarshalText(text))
		q, err = chash.NewMementoFrom(e, p.Nodes())
	case *chash.Anchor:
		e0 := p.Engine()
		text, _ := e0.MarshalText()
		var e chash.AnchorEngine
		require.NoError(t, e.UnmarshalText(text))
		q, err = chash.NewAnchorFrom(e, p.Nodes())
	case *chash.Dx:
		e0 := p.Engine()
		text, _ := e0.MarshalText()
		var e chash.DxEngine
		require.NoError(t, e.UnmarshalText(text))
		q, err = chash.NewDxFrom(e, p.Nodes())
	case *chash.JumpBackAnchor:
		e0 := p.Engine()
		state, _ := e0.MarshalBinary()
		var e chash.JumpBackAnchorEngine
		require.NoError(t, e.UnmarshalBinary(state))
		q, err = chash.NewJumpBackAnchorFrom(e, p.Nodes())
	case *chash.ChooseK:
		e0 := p.Engine()
		state, _ := e0.MarshalBinary()
		var e chash.ChooseKEngine
		require.NoError(t, e.UnmarshalBinary(state))
		q, err = chash.NewChooseKFrom(e, p.Nodes())
	default:
		t.Fatalf("%T is not stateful", p)
	}
	require.NoError(t, err)
	return q
}

// The errors of SetPlacer.
func TestSetPlacerErrors(t *testing.T) {
	sel := new(gomemcache.Selector)
	assert.ErrorIs(t, sel.SetPlacer(nil), gomemcache.ErrNoServers)
	assert.ErrorIs(t, sel.SetPlacer((*chash.Memento)(nil)), gomemcache.ErrNoServers)
	bad, err := chash.NewMemento([]chash.Node{{ID: "no-port"}})
	require.NoError(t, err)
	assert.ErrorIs(t, sel.SetPlacer(bad), gomemcache.ErrBadAddress)
	assert.Nil(t, sel.Placer(), "a refused placer changes nothing")
	list, err := gomemcache.New(addrs(2), gomemcache.WithServerList())
	require.NoError(t, err)
	ok, err := chash.NewMemento([]chash.Node{{ID: addrs(1)[0]}})
	require.NoError(t, err)
	assert.ErrorIs(t, list.SetPlacer(ok), chash.ErrInvalidOption)
}
