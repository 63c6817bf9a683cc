package gomemcache_test

import (
	"testing"

	"github.com/bradfitz/gomemcache/memcache"
	"github.com/keyplace/chash/adapters/gomemcache"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Switching a client from gomemcache's ServerList to a Selector with
// WithServerList finds every key on real servers; switching straight to
// the ring finds about 1/n.
func TestIntegrationServerListZeroMove(t *testing.T) {
	servers := memcachedServers(t)
	keys := testKeys(keyCount() / 5)
	fill(t, memcache.New(servers...), keys)

	same, err := gomemcache.New(servers, gomemcache.WithServerList())
	require.NoError(t, err)
	ring, err := gomemcache.New(servers)
	require.NoError(t, err)
	rate := func(hit []bool) float64 {
		n := 0
		for _, h := range hit {
			if h {
				n++
			}
		}
		return float64(n) / float64(len(hit))
	}
	sameRate := rate(readBack(t, memcache.NewFromSelector(same), keys))
	ringRate := rate(readBack(t, memcache.NewFromSelector(ring), keys))
	t.Logf("after switching from ServerList: WithServerList finds %.2f%% of %d keys, the ring %.2f%%", 100*sameRate, len(keys), 100*ringRate)
	assert.Equal(t, 1.0, sameRate)
	assert.InDelta(t, 1.0/5, ringRate, 0.05)
}
