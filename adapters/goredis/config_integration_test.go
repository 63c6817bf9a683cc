package goredis_test

import (
	"context"
	"testing"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/adapters/goredis"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Keys written by a Ring with go-redis's default placement are all found by
// a Ring configured with the zero Config, on real servers; a Ring switched
// straight to chash's ring finds about 1/n of them.
func TestIntegrationConfigZeroMove(t *testing.T) {
	shards := redisAddrs(t)
	keys := redisKeys(20_000)
	plain := redis.NewRing(&redis.RingOptions{Addrs: shards})
	t.Cleanup(func() { plain.Close() })
	pipelined(t, plain, keys, func(p redis.Pipeliner, k string) redis.Cmder { return p.Set(context.Background(), k, k, 0) })

	hits := func(c goredis.Config) float64 {
		opt := &redis.RingOptions{Addrs: shards}
		require.NoError(t, c.Apply(opt))
		rdb := redis.NewRing(opt)
		t.Cleanup(func() { rdb.Close() })
		found := 0
		for i, cmd := range pipelined(t, rdb, keys, func(p redis.Pipeliner, k string) redis.Cmder { return p.Get(context.Background(), k) }) {
			if v, err := cmd.(*redis.StringCmd).Result(); err == nil && v == keys[i] {
				found++
			}
		}
		return float64(found) / float64(len(keys))
	}
	same, ring := hits(goredis.Config{}), hits(goredis.Config{Algorithm: chash.AlgorithmRing})
	t.Logf("after switching from go-redis's default: the zero Config finds %.2f%% of %d keys, chash's ring %.2f%%", 100*same, len(keys), 100*ring)
	assert.Equal(t, 1.0, same)
	assert.InDelta(t, 1.0/float64(len(shards)), ring, 0.05)
}
