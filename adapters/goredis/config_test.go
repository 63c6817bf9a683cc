package goredis_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/adapters/goredis"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func fleet(n int) map[string]string {
	out := map[string]string{}
	for i := 1; i <= n; i++ {
		out[fmt.Sprintf("shard%d", i)] = fmt.Sprintf("127.0.0.1:%d", 7000+i)
	}
	return out
}

// The zero Config routes every key, hash tags included, to the shard
// go-redis's own default routes it to.
func TestConfigZeroMove(t *testing.T) {
	addrs := fleet(8)
	plain := redis.NewRing(&redis.RingOptions{Addrs: addrs, HeartbeatFrequency: time.Hour})
	defer plain.Close()
	opt := &redis.RingOptions{Addrs: addrs, HeartbeatFrequency: time.Hour}
	require.NoError(t, goredis.Config{}.Apply(opt))
	ours := redis.NewRing(opt)
	defer ours.Close()
	for i := 0; i < 20000; i++ {
		key := fmt.Sprintf("key-%d", i)
		if i%10 == 0 {
			key = fmt.Sprintf("{user%d}:cart", i)
		}
		want, err := plain.GetShardClientForKey(key)
		require.NoError(t, err)
		got, err := ours.GetShardClientForKey(key)
		require.NoError(t, err)
		require.Equal(t, want.Options().Addr, got.Options().Addr, key)
	}
}

func TestConfigWeights(t *testing.T) {
	addrs := fleet(4)
	c := goredis.Config{Algorithm: chash.AlgorithmRendezvous, Weights: map[string]float64{"shard1": 3}}
	p, err := c.Placer([]string{"shard1", "shard2", "shard3", "shard4"})
	require.NoError(t, err)
	own, err := chash.Shares(p)
	require.NoError(t, err)
	assert.InDelta(t, 0.5, own.Shares[0].Fraction, 0.01, "%+v", own)
	_, err = c.NewConsistentHash(addrs)
	require.NoError(t, err)
	_, err = goredis.Config{Weights: map[string]float64{"shard1": 3}}.NewConsistentHash(addrs)
	assert.ErrorIs(t, err, chash.ErrInvalidOption, "go-redis's default has no weights")
}

// A Maglev table too small for the fleet is a configuration error, not
// "all ring shards are down".
func TestConfigValidatesFleet(t *testing.T) {
	c := goredis.Config{Algorithm: chash.AlgorithmMaglev, Options: []chash.Option{chash.WithTableSize(7)}}
	_, err := c.NewConsistentHash(fleet(3))
	require.NoError(t, err)
	_, err = c.NewConsistentHash(fleet(10))
	assert.ErrorIs(t, err, chash.ErrInvalidOption)
	_, err = goredis.Config{}.NewConsistentHash(nil)
	assert.ErrorIs(t, err, goredis.ErrNoShards)
}

func TestConfigJump(t *testing.T) {
	_, err := goredis.Config{Algorithm: chash.AlgorithmJump}.NewConsistentHash(fleet(3))
	assert.ErrorIs(t, err, chash.ErrInvalidOption)
	c := goredis.Config{Algorithm: chash.AlgorithmJump, Reshuffle: true}
	f, err := c.NewConsistentHash(fleet(3))
	require.NoError(t, err)
	// Numbered by name, whatever order go-redis passes the shards in.
	a, b := f([]string{"shard1", "shard2", "shard3"}), f([]string{"shard3", "shard1", "shard2"})
	for i := 0; i < 1000; i++ {
		require.Equal(t, a.Get(fmt.Sprint(i)), b.Get(fmt.Sprint(i)))
	}
}

func TestConfigDryRun(t *testing.T) {
	m, err := goredis.Config{}.DryRun(fleet(3), fleet(4))
	require.NoError(t, err)
	assert.InDelta(t, 0.25, m.Moved, 0.01, "go-redis default from 3 to 4 shards")
	ring := goredis.Config{Algorithm: chash.AlgorithmRing}
	m, err = ring.DryRun(fleet(3), fleet(4))
	require.NoError(t, err)
	assert.InDelta(t, 0.25, m.Moved, 0.05)
	// Leaving go-redis's default for chash's ring over the same shards.
	old, err := goredis.Config{}.Placer([]string{"shard1", "shard2", "shard3", "shard4"})
	require.NoError(t, err)
	next, err := ring.Placer([]string{"shard1", "shard2", "shard3", "shard4"})
	require.NoError(t, err)
	m, err = chash.Diff(old, next)
	require.NoError(t, err)
	assert.InDelta(t, 0.75, m.Moved, 0.02)
	_, err = ring.DryRun(nil, fleet(2))
	assert.ErrorIs(t, err, goredis.ErrNoShards)
}

// A positional algorithm (jump, jumpback) numbers shards by position, and
// go-redis hands the Hash its live shards in map order: without Reshuffle
// both are refused, by Config and by NewConsistentHash; with it the shards
// are numbered by name, so two map orders of one fleet agree on every key.
func TestConfigPositionalRefused(t *testing.T) {
	shards := []string{"shard1", "shard2", "shard3", "shard4"}
	reordered := []string{"shard3", "shard1", "shard4", "shard2"}
	for _, a := range chash.Algorithms() {
		if !a.Positional() {
			continue
		}
		t.Run(a.String(), func(t *testing.T) {
			_, err := goredis.Config{Algorithm: a}.Placer(shards)
			require.ErrorIs(t, err, chash.ErrInvalidOption)
			assert.Contains(t, err.Error(), "Reshuffle")
			_, err = goredis.Config{Algorithm: a}.NewConsistentHash(fleet(4))
			assert.ErrorIs(t, err, chash.ErrInvalidOption)
			_, err = goredis.NewConsistentHash(a)
			assert.ErrorIs(t, err, chash.ErrInvalidOption)
			h := goredis.New(a, shards)
			assert.ErrorIs(t, h.Err(), chash.ErrInvalidOption)
			assert.Equal(t, "", h.Get("key"))

			f, err := goredis.Config{Algorithm: a, Reshuffle: true}.NewConsistentHash(fleet(4))
			require.NoError(t, err)
			x, y := f(shards), f(reordered)
			differ := 0
			for i := range 10000 {
				if k := fmt.Sprint("key-", i); x.Get(k) != y.Get(k) {
					differ++
				}
			}
			assert.Zero(t, differ, "keys two map orders of one fleet place differently")
		})
	}
}

// dx and choosek keep their slots numbered by name over the whole fleet:
// a shard going down moves only its keys, whatever order go-redis passes
// the live shards in and whatever order they went down in; memento,
// anchor and jumpbackanchor, whose placement depends on that order, are
// refused, as every stateful algorithm is where the fleet is not known.
func TestConfigStateful(t *testing.T) {
	keys := make([]string, 20_000)
	if testing.Short() {
		keys = keys[:5_000]
	}
	for i := range keys {
		keys[i] = fmt.Sprint("key-", i)
	}
	get := func(h redis.ConsistentHash) []string {
		out := make([]string, len(keys))
		for i, k := range keys {
			out[i] = h.Get(k)
		}
		return out
	}
	for _, a := range chash.Algorithms() {
		if !a.Stateful() {
			continue
		}
		t.Run(a.String(), func(t *testing.T) {
			_, err := goredis.NewConsistentHash(a)
			require.ErrorIs(t, err, chash.ErrInvalidOption)
			assert.ErrorIs(t, goredis.New(a, []string{"shard1"}).Err(), chash.ErrInvalidOption)
			f, err := goredis.Config{Algorithm: a}.NewConsistentHash(fleet(6))
			if a.HistoryDependent() {
				require.ErrorIs(t, err, chash.ErrInvalidOption)
				assert.Contains(t, err.Error(), "dx or choosek")
				return
			}
			require.NoError(t, err)
			up := get(f([]string{"shard4", "shard1", "shard6", "shard2", "shard5", "shard3"}))
			down := get(f([]string{"shard6", "shard5", "shard4", "shard2", "shard1"}))
			moved := 0
			for i := range keys {
				if up[i] == "shard3" {
					moved++
					require.NotEqual(t, "shard3", down[i])
				} else {
					require.Equal(t, up[i], down[i], "key %q moved between shards that stayed up", keys[i])
				}
			}
			assert.InDelta(t, 1.0/6, float64(moved)/float64(len(keys)), 0.02)
			// Two shards down, in either order of going down: one placement.
			assert.Equal(t, get(f([]string{"shard1", "shard2", "shard4", "shard6"})), get(f([]string{"shard6", "shard4", "shard2", "shard1"})))
			assert.ErrorIs(t, f(nil).(goredis.Hash).Err(), chash.ErrNoNodes)
			m, err := goredis.Config{Algorithm: a}.DryRun(fleet(6), fleet(5))
			require.NoError(t, err)
			assert.InDelta(t, 1.0/6, m.Moved, 0.03, "shard6 leaves the fleet")
		})
	}
}
