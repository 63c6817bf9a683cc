package goredis_test

// Integration tests against real Redis servers: the ones .ci/services.sh
// starts, named by CHASH_REDIS (at least four comma-separated addresses).
// Without it they skip, unless CI is set, where they fail.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/adapters/goredis"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

func redisAddrs(t *testing.T) map[string]string {
	t.Helper()
	env := os.Getenv("CHASH_REDIS")
	if env == "" {
		if ci := os.Getenv("CI"); ci != "" && ci != "false" && ci != "0" {
			t.Fatal("CI is set but CHASH_REDIS is not: the integration tests need the servers `eval \"$(.ci/services.sh start)\"` starts")
		}
		t.Skip("CHASH_REDIS is not set: skipping the test against real Redis servers " +
			"(run `eval \"$(.ci/services.sh start)\"` from the repository root first; see README.md)")
	}
	list := strings.Split(env, ",")
	if len(list) < 4 {
		t.Fatalf("CHASH_REDIS=%q: want at least 4 addresses", env)
	}
	shards := map[string]string{}
	for i, addr := range list[:4] {
		c := redis.NewClient(&redis.Options{Addr: addr})
		err := c.FlushDB(context.Background()).Err()
		c.Close()
		if err != nil {
			t.Fatalf("redis server %s from CHASH_REDIS: %v", addr, err)
		}
		shards[fmt.Sprintf("shard%d", i+1)] = addr
	}
	return shards
}

// only returns the first n shards: shard1 to shardn.
func only(shards map[string]string, n int) map[string]string {
	out := map[string]string{}
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("shard%d", i)
		out[name] = shards[name]
	}
	return out
}

func names(shards map[string]string) []string {
	var out []string
	for name := range shards {
		out = append(out, name)
	}
	return out
}

func newRing(t *testing.T, shards map[string]string) (*redis.Ring, func([]string) redis.ConsistentHash) {
	t.Helper()
	return newRingOpts(t, &redis.RingOptions{Addrs: shards})
}

func newRingOpts(t *testing.T, opt *redis.RingOptions) (*redis.Ring, func([]string) redis.ConsistentHash) {
	t.Helper()
	newHash, err := goredis.NewConsistentHash(chash.AlgorithmRing)
	if err != nil {
		t.Fatal(err)
	}
	opt.NewConsistentHash = newHash
	rdb := redis.NewRing(opt)
	t.Cleanup(func() { rdb.Close() })
	return rdb, newHash
}

func redisKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("chash:key:%06d", i)
	}
	return keys
}

// pipelined runs op on every key through the Ring, 1000 keys a pipeline.
func pipelined(t *testing.T, rdb *redis.Ring, keys []string, op func(redis.Pipeliner, string) redis.Cmder) []redis.Cmder {
	t.Helper()
	ctx := context.Background()
	var out []redis.Cmder
	for lo := 0; lo < len(keys); lo += 1000 {
		pipe := rdb.Pipeline()
		for _, k := range keys[lo:min(lo+1000, len(keys))] {
			out = append(out, op(pipe, k))
		}
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			t.Fatalf("pipeline: %v", err)
		}
	}
	return out
}

// TestIntegrationRingAddShard writes keys through a three-shard Ring, adds
// a fourth shard and reads them back: exactly the keys that did not move
// are found, about 3/4 of them.
func TestIntegrationRingAddShard(t *testing.T) {
	shards := redisAddrs(t)
	n := 100_000
	if testing.Short() {
		n = 20_000
	}
	keys := redisKeys(n)
	rdb, newHash := newRing(t, only(shards, 3))
	pipelined(t, rdb, keys, func(p redis.Pipeliner, k string) redis.Cmder { return p.Set(context.Background(), k, k, 0) })

	rdb.SetAddrs(shards)
	if rdb.Len() != 4 {
		t.Fatalf("ring has %d shards after SetAddrs, want 4", rdb.Len())
	}
	before, after := newHash(names(only(shards, 3))), newHash(names(shards))
	cmds := pipelined(t, rdb, keys, func(p redis.Pipeliner, k string) redis.Cmder { return p.Get(context.Background(), k) })
	found := 0
	for i, c := range cmds {
		v, err := c.(*redis.StringCmd).Result()
		stayed := before.Get(keys[i]) == after.Get(keys[i])
		switch {
		case err == nil && v == keys[i] && stayed:
			found++
		case errors.Is(err, redis.Nil) && !stayed:
		default:
			t.Fatalf("key %s: value %q, error %v, but moved=%v", keys[i], v, err, !stayed)
		}
	}
	f := float64(found) / float64(n)
	t.Logf("go-redis Ring with chash ring, 3->4 shards: %d of %d keys still found (%.2f%%)", found, n, 100*f)
	if math.Abs(f-0.75) > 0.05 {
		t.Errorf("fraction found %.4f, want 3/4 ± 0.05", f)
	}
}

// TestIntegrationRingServesWhileChanging keeps requests running while the
// Ring's shards change.
//
// Placement changes that close no client (adding a shard, renaming one)
// must not fail a single request. Removing a shard makes go-redis close
// its client, which fails the commands already routed to it (with
// redis.ErrClosed, net.ErrClosed or, in go-redis v9.18, "connection
// marked for handoff"); those are counted and must stay rare.
func TestIntegrationRingServesWhileChanging(t *testing.T) {
	shards := redisAddrs(t)
	renamed := only(shards, 3)
	renamed["shard4b"] = shards["shard4"]

	t.Run("add and rename", func(t *testing.T) {
		rdb, _ := newRing(t, only(shards, 3))
		served, failed := serveWhile(t, rdb, func(i int) {
			if i%2 == 0 {
				rdb.SetAddrs(only(shards, 4))
			} else {
				rdb.SetAddrs(renamed)
			}
		})
		t.Logf("%d set+get pairs during 40 placement changes, %d failed", served, failed)
		if failed != 0 {
			t.Fatalf("%d requests failed", failed)
		}
	})
	t.Run("add and remove", func(t *testing.T) {
		rdb, _ := newRing(t, only(shards, 3))
		served, failed := serveWhile(t, rdb, func(i int) { rdb.SetAddrs(only(shards, 3+i%2)) })
		t.Logf("%d set+get pairs during 40 shard additions and removals, %d failed on a closing shard", served, failed)
		if served == 0 || failed > served/10 {
			t.Fatalf("%d pairs served, %d failed: the ring did not keep serving", served, failed)
		}
	})
}

// closingShard reports whether err is one of the errors go-redis returns
// for a command caught by the closing of a removed shard's client. The
// last is go-redis's internal pool.ErrInvalidStateTransition, which a
// connection in use while its pool closes can report; being internal, it
// is matched by its text.
func closingShard(err error) bool {
	return errors.Is(err, redis.ErrClosed) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, maintnotifications.ErrConnectionMarkedForHandoff) ||
		strings.Contains(err.Error(), "invalid state transition")
}

// serveWhile runs set+get pairs from 8 goroutines while change(0..39)
// runs, 5 ms apart. It fails the test on any error other than a miss or a
// closing shard's, and returns the pairs served and the ones that failed
// on a closing shard.
func serveWhile(t *testing.T, rdb *redis.Ring, change func(i int)) (served, failed int) {
	t.Helper()
	keys := redisKeys(1000)
	ctx := context.Background()
	const workers = 8
	var wg sync.WaitGroup
	done := make(chan struct{})
	errs := make([]error, workers)
	var ok, closing [workers]int
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				k := keys[(i*workers+w)%len(keys)]
				err := rdb.Set(ctx, k, k, 0).Err()
				if err == nil {
					err = rdb.Get(ctx, k).Err()
				}
				switch {
				case err == nil || errors.Is(err, redis.Nil):
					ok[w]++
				case closingShard(err):
					closing[w]++
				default:
					errs[w] = fmt.Errorf("request %d for %s: %w", i, k, err)
					return
				}
			}
		}()
	}
	for i := range 40 {
		change(i)
		time.Sleep(5 * time.Millisecond)
	}
	close(done)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	for w := range workers {
		served += ok[w]
		failed += closing[w]
	}
	return served, failed
}

// TestIntegrationRingBadShards covers a shard at a closed port, a
// malformed address and no shards at all: errors, no panics.
func TestIntegrationRingBadShards(t *testing.T) {
	shards := redisAddrs(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedPort := l.Addr().String()
	l.Close()
	ctx := context.Background()

	// Fail fast: one dial, no retries.
	fast := func(addrs map[string]string, heartbeat time.Duration) *redis.RingOptions {
		return &redis.RingOptions{Addrs: addrs, HeartbeatFrequency: heartbeat, MaxRetries: -1, DialerRetries: 1, DialerRetryTimeout: time.Millisecond}
	}

	t.Run("closed port", func(t *testing.T) {
		// A heartbeat too slow to notice the dead shard within the test.
		rdb, newHash := newRingOpts(t, fast(map[string]string{"live": shards["shard1"], "dead": closedPort}, time.Hour))
		h := newHash([]string{"live", "dead"})
		var live, dead int
		var deadErr error
		for _, k := range redisKeys(50) {
			err := rdb.Set(ctx, k, k, 0).Err()
			if h.Get(k) == "dead" {
				dead++
				deadErr = err
				if !errors.Is(err, syscall.ECONNREFUSED) {
					t.Fatalf("set %s on the closed port: %v, want connection refused", k, err)
				}
			} else if live++; err != nil {
				t.Fatalf("set %s on the live shard: %v", k, err)
			}
		}
		if live == 0 || dead == 0 {
			t.Fatalf("%d keys live, %d dead: want some of each", live, dead)
		}
		t.Logf("%d keys on the closed port fail with: %v", dead, deadErr)
	})
	t.Run("closed port failover", func(t *testing.T) {
		// The Ring's heartbeat votes the dead shard out and asks for a hash
		// of the live shards only: then every key is served.
		rdb, _ := newRingOpts(t, fast(map[string]string{"live": shards["shard1"], "dead": closedPort}, 20*time.Millisecond))
		deadline := time.Now().Add(5 * time.Second)
		for rdb.Len() != 1 {
			if time.Now().After(deadline) {
				t.Fatalf("the Ring still has %d live shards", rdb.Len())
			}
			time.Sleep(10 * time.Millisecond)
		}
		for _, k := range redisKeys(100) {
			if err := rdb.Set(ctx, k, k, 0).Err(); err != nil {
				t.Fatalf("set %s after failover: %v", k, err)
			}
		}
	})
	t.Run("malformed address", func(t *testing.T) {
		rdb, _ := newRingOpts(t, fast(map[string]string{"bad": "127.0.0.1"}, time.Hour))
		err := rdb.Set(ctx, "k", "v", 0).Err()
		if err == nil {
			t.Fatal("set on a shard with a malformed address succeeded")
		}
		t.Logf("malformed address: %v", err)
	})
	t.Run("no shards", func(t *testing.T) {
		rdb, _ := newRing(t, map[string]string{})
		err := rdb.Set(ctx, "k", "v", 0).Err()
		if err == nil || !strings.Contains(err.Error(), "shards are down") {
			t.Fatalf("set on an empty ring: %v, want all ring shards are down", err)
		}
		t.Logf("no shards: %v", err)
	})
}
