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

// With jump, SetServers refuses what would renumber the buckets, and
// allows it with WithReshuffle.
func TestJumpReorderRefused(t *testing.T) {
	s := addrs(5)
	sel, err := gomemcache.New(s, gomemcache.WithAlgorithm(chash.AlgorithmJump))
	require.NoError(t, err)
	err = sel.SetServers(s[4], s[3], s[2], s[1], s[0])
	assert.ErrorIs(t, err, gomemcache.ErrReorder)
	err = sel.SetServers(s[0], s[1], s[3], s[4])
	assert.ErrorIs(t, err, gomemcache.ErrReorder)
	assert.ErrorIs(t, err, chash.ErrNotLast)
	mv, err := sel.DryRun(s[0], s[1], s[3], s[4])
	require.NoError(t, err)
	assert.Greater(t, mv.Moved, 0.5, "removing the middle of five servers from jump")
	require.NoError(t, sel.SetServers(append(s, addrs(6)[5])...), "appending")
	require.NoError(t, sel.SetServers(s[:4]...), "dropping from the end")

	free, err := gomemcache.New(s, gomemcache.WithAlgorithm(chash.AlgorithmJump), gomemcache.WithReshuffle())
	require.NoError(t, err)
	require.NoError(t, free.SetServers(s[4], s[3], s[2], s[1], s[0]))
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
