package gomemcache_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/bradfitz/gomemcache/memcache"
	"github.com/keyplace/chash"
	"github.com/keyplace/chash/adapters/gomemcache"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func addrs(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("127.0.0.1:%d", 31001+i)
	}
	return out
}

// WithServerList picks, key for key, the server gomemcache's own
// ServerList picks, repeats and long keys included.
func TestServerListZeroMove(t *testing.T) {
	for _, servers := range [][]string{addrs(1), addrs(3), addrs(5), append(addrs(3), addrs(2)...)} {
		var ref memcache.ServerList
		require.NoError(t, ref.SetServers(servers...))
		sel, err := gomemcache.New(servers, gomemcache.WithServerList())
		require.NoError(t, err)
		for i := 0; i < 20000; i++ {
			key := fmt.Sprintf("key-%d", i)
			if i%1000 == 0 {
				key = fmt.Sprintf("%0300d", i)
			}
			want, err := ref.PickServer(key)
			require.NoError(t, err)
			got, err := sel.PickServer(key)
			require.NoError(t, err)
			require.Equal(t, want.String(), got.String(), "servers %v key %q", servers, key)
		}
	}
}

func TestServerListOptionConflicts(t *testing.T) {
	for _, opt := range []gomemcache.Option{
		gomemcache.WithAlgorithm(chash.AlgorithmRing),
		gomemcache.WithWeights(map[string]float64{"127.0.0.1:31001": 2}),
		gomemcache.WithPlacerOptions(chash.WithVnodes(10)),
	} {
		_, err := gomemcache.New(addrs(3), gomemcache.WithServerList(), opt)
		assert.ErrorIs(t, err, chash.ErrInvalidOption)
	}
}

// With a positional algorithm (jump, jumpback: Algorithm.Positional),
// SetServers refuses what would renumber the buckets, and allows it with
// WithReshuffle.
func TestPositionalReorderRefused(t *testing.T) {
	s := addrs(5)
	for _, a := range chash.Algorithms() {
		if !a.Positional() {
			continue
		}
		t.Run(a.String(), func(t *testing.T) {
			sel, err := gomemcache.New(s, gomemcache.WithAlgorithm(a))
			require.NoError(t, err)
			reordered := []string{s[1], s[2], s[3], s[4], s[0]}
			mv, err := sel.DryRun(reordered...)
			require.NoError(t, err)
			t.Logf("%v: a new order of 5 servers would move %.1f%% of keys", a, 100*mv.Moved)
			assert.Greater(t, mv.Moved, 0.99)
			err = sel.SetServers(reordered...)
			assert.ErrorIs(t, err, gomemcache.ErrReorder)
			middle := []string{s[0], s[1], s[3], s[4]}
			err = sel.SetServers(middle...)
			assert.ErrorIs(t, err, gomemcache.ErrReorder)
			assert.ErrorIs(t, err, chash.ErrNotLast)
			assert.Equal(t, s[2], sel.Placer().Nodes()[2].ID, "a refused change changes nothing")
			mv, err = sel.DryRun(middle...)
			require.NoError(t, err)
			assert.Greater(t, mv.Moved, 0.4, "removing the middle of five servers")
			t.Logf("%v: removing the middle of 5 servers would move %.1f%% of keys", a, 100*mv.Moved)
			require.NoError(t, sel.SetServers(append(s, addrs(6)[5])...), "appending")
			require.NoError(t, sel.SetServers(s[:4]...), "dropping from the end")

			free, err := gomemcache.New(s, gomemcache.WithAlgorithm(a), gomemcache.WithReshuffle())
			require.NoError(t, err)
			require.NoError(t, free.SetServers(reordered...))
		})
	}
	// Other algorithms take any order.
	ring, err := gomemcache.New(s)
	require.NoError(t, err)
	require.NoError(t, ring.SetServers(s[4], s[3], s[2], s[1], s[0]))
}

// DryRun measures a change without making it.
func TestDryRun(t *testing.T) {
	s := addrs(6)
	list, err := gomemcache.New(s[:5], gomemcache.WithServerList())
	require.NoError(t, err)
	mv, err := list.DryRun(s...)
	require.NoError(t, err)
	assert.InDelta(t, 5.0/6, mv.Moved, 0.01, "CRC-32 mod n from 5 to 6 servers")
	before, _ := list.PickServer("k")
	after, _ := list.PickServer("k")
	assert.Equal(t, before, after)
	assert.Equal(t, 5, list.Placer().Len(), "DryRun changed nothing")

	ring, err := gomemcache.New(s[:5])
	require.NoError(t, err)
	mv, err = ring.DryRun(s...)
	require.NoError(t, err)
	assert.InDelta(t, 1.0/6, mv.Moved, 0.03, "ring from 5 to 6 servers")

	_, err = ring.DryRun()
	assert.True(t, errors.Is(err, gomemcache.ErrNoServers), "%v", err)
	var zero gomemcache.Selector
	_, err = zero.DryRun(s...)
	assert.True(t, errors.Is(err, gomemcache.ErrNoServers), "%v", err)
}
