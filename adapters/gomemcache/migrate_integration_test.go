package gomemcache_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/bradfitz/gomemcache/memcache"
	"github.com/keyplace/chash/adapters/gomemcache"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cacheAside is a read-through cache client: get a key, and on a miss
// "load" it and set it.
type cacheAside struct {
	get func(key string) (*memcache.Item, error)
	set func(item *memcache.Item) error
}

const migrationWindows = 10

// hitCurve replays reads (key indexes) through c from 8 goroutines, each
// serving the reads of one key in eight, and
// returns the hit rate of each tenth of the reads, in order, and of the
// first read of each key (which no earlier miss can have refilled).
func hitCurve(t *testing.T, c cacheAside, keys []string, reads []int) (curve []float64, first float64) {
	t.Helper()
	hits := make([]bool, len(reads))
	const workers = 8
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each key's reads stay in one goroutine, in order, so its
			// first read really comes first.
			for i := range reads {
				if reads[i]%workers != w {
					continue
				}
				key := keys[reads[i]]
				_, err := c.get(key)
				switch {
				case err == nil:
					hits[i] = true
				case errors.Is(err, memcache.ErrCacheMiss):
					if err := c.set(&memcache.Item{Key: key, Value: []byte(key)}); err != nil {
						errs[w] = err
						return
					}
				default:
					errs[w] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	curve = make([]float64, migrationWindows)
	per := len(reads) / migrationWindows
	for i, h := range hits[:per*migrationWindows] {
		if h {
			curve[i/per] += 1 / float64(per)
		}
	}
	seen := make([]bool, len(keys))
	firsts, firstHits := 0, 0
	for i, k := range reads {
		if !seen[k] {
			seen[k] = true
			firsts++
			if hits[i] {
				firstHits++
			}
		}
	}
	return curve, float64(firstHits) / float64(firsts)
}

func formatCurve(c []float64) string {
	var b strings.Builder
	for _, x := range c {
		fmt.Fprintf(&b, " %5.1f%%", 100*x)
	}
	return b.String()
}

// TestIntegrationMigration switches five real memcached servers from
// gomemcache's ServerList to a chash ring while a read-through client keeps
// reading, with and without the Migration's fallback read to the old
// owner, and prints both hit-rate curves over the reads after the switch.
func TestIntegrationMigration(t *testing.T) {
	servers := memcachedServers(t)
	keys := testKeys(keyCount() / 10)
	rng := rand.New(rand.NewPCG(1, 2))
	reads := make([]int, 2*len(keys))
	for i := range reads {
		reads[i] = rng.IntN(len(keys))
	}
	// Before the switch: ServerList holds 15 keys in 16 (a 94% hit rate).
	warm := func() {
		list := memcache.New(servers...)
		require.NoError(t, list.FlushAll())
		var cached []string
		for i, k := range keys {
			if i%16 != 15 {
				cached = append(cached, k)
			}
		}
		fill(t, list, cached)
	}
	from, err := gomemcache.New(servers, gomemcache.WithServerList())
	require.NoError(t, err)
	to, err := gomemcache.New(servers)
	require.NoError(t, err)

	warm()
	ring := memcache.NewFromSelector(to)
	without, withoutFirst := hitCurve(t, cacheAside{get: ring.Get, set: ring.Set}, keys, reads)

	warm()
	m, err := gomemcache.NewMigration(from, to, true)
	require.NoError(t, err)
	with, withFirst := hitCurve(t, cacheAside{get: m.Get, set: m.Set}, keys, reads)
	st := m.Stats()

	t.Logf("hit rate per tenth of %d reads over %d keys after switching 5 servers from ServerList (94%% of keys cached) to a ring:", len(reads), len(keys))
	t.Logf("  without fallback:        %s", formatCurve(without))
	t.Logf("  with fallback+back-fill: %s", formatCurve(with))
	t.Logf("  first read of each key:  without %.1f%%, with %.1f%%", 100*withoutFirst, 100*withFirst)
	t.Logf("  migration stats: %+v", st)

	// Exactly the cached keys that ServerList and the ring both put on one
	// server are found on a first read without the fallback.
	stay := 0
	for i, k := range keys {
		if i%16 != 15 && from.Placer().LookupString(k) == to.Placer().LookupString(k) {
			stay++
		}
	}
	t.Logf("  cached keys that did not move: %.1f%%", 100*float64(stay)/float64(len(keys)))
	assert.InDelta(t, float64(stay)/float64(len(keys)), withoutFirst, 0.01)
	assert.InDelta(t, 0.94/5, withoutFirst, 0.04, "without the fallback a key's first read hits about 1/n of the old rate")
	assert.InDelta(t, 0.94, withFirst, 0.03, "with it, about the old hit rate")
	assert.Less(t, without[0], 0.4)
	for i, x := range with {
		assert.Greater(t, x, 0.9, "with the fallback, tenth %d keeps about the old hit rate", i)
		assert.Greater(t, x, without[i], "tenth %d", i)
	}
	assert.Greater(t, without[migrationWindows-1], without[0], "without the fallback the hit rate recovers as misses refill")
	assert.Greater(t, st.FallbackHits, int64(0))
	// Concurrent reads of one key may both fall back; the second Add loses.
	assert.InDelta(t, st.FallbackHits, st.Backfills, float64(st.FallbackHits)/100, "fallback hits back-filled")
}

// The Migration reads through only for keys that moved, and writes delete
// the old copy.
func TestIntegrationMigrationWrites(t *testing.T) {
	servers := memcachedServers(t)
	from, err := gomemcache.New(servers, gomemcache.WithServerList())
	require.NoError(t, err)
	to, err := gomemcache.New(servers)
	require.NoError(t, err)
	m, err := gomemcache.NewMigration(from, to, false)
	require.NoError(t, err)
	old := memcache.NewFromSelector(from)
	var moved, stayed string
	for i := 0; moved == "" || stayed == ""; i++ {
		k := fmt.Sprintf("w%d", i)
		if m.Route(k).Moved {
			moved = k
		} else {
			stayed = k
		}
	}
	require.NoError(t, old.Set(&memcache.Item{Key: moved, Value: []byte("old")}))
	it, err := m.Get(moved)
	require.NoError(t, err)
	assert.Equal(t, "old", string(it.Value))
	_, err = to.PickServer(moved)
	require.NoError(t, err)
	_, err = memcache.NewFromSelector(to).Get(moved)
	assert.ErrorIs(t, err, memcache.ErrCacheMiss, "no back-fill asked for")

	require.NoError(t, m.Set(&memcache.Item{Key: moved, Value: []byte("new")}))
	_, err = old.Get(moved)
	assert.ErrorIs(t, err, memcache.ErrCacheMiss, "Set deletes the old copy")
	it, err = m.Get(moved)
	require.NoError(t, err)
	assert.Equal(t, "new", string(it.Value))
	require.NoError(t, m.Delete(moved))
	_, err = m.Get(moved)
	assert.ErrorIs(t, err, memcache.ErrCacheMiss)
	assert.ErrorIs(t, m.Delete(stayed), memcache.ErrCacheMiss)
	_, err = gomemcache.NewMigration(from, nil, false)
	assert.ErrorIs(t, err, gomemcache.ErrNoServers)
}
