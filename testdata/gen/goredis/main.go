// Command gen writes ../../goredis/vectors.tsv: the shard a go-redis v9 Ring (default
// ConsistentHash) stores each key on. It starts ten redis-server instances
// on 127.0.0.1:7001-7010 (Debian's redis-server package), writes every key
// through a Ring per set, and records the shard whose server holds it,
// which must also be the shard Ring.GetShardClientForKey names. Run from
// this directory:
//
//	go run . > ../../goredis/vectors.tsv
package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"time"

	"github.com/keyplace/chash/testdata/gen/internal/vectors"
	"github.com/redis/go-redis/v9"
)

func addr(i int) string { return fmt.Sprintf("127.0.0.1:%d", 7000+i) }

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx := context.Background()
	servers := map[string]*redis.Client{}
	for i := 1; i <= 10; i++ {
		cmd := exec.Command("redis-server", "--bind", "127.0.0.1", "--port", strconv.Itoa(7000+i), "--save", "", "--appendonly", "no")
		if err := cmd.Start(); err != nil {
			return err
		}
		defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
		if err := waitPort(addr(i)); err != nil {
			return err
		}
		servers[addr(i)] = redis.NewClient(&redis.Options{Addr: addr(i)})
	}
	sets := vectors.StandardSets(func(i int) string { return fmt.Sprintf("shard-%d", i) }, false)
	keys := vectors.Keys(2000, true)
	placed := map[string]map[string]string{} // set -> key -> shard
	for _, s := range sets {
		got, err := place(ctx, s, keys, servers)
		if err != nil {
			return fmt.Errorf("set %s: %w", s.Name, err)
		}
		placed[s.Name] = got
	}
	return vectors.Write(os.Stdout, "go-redis v9.18.0 Ring, default hash, over real redis-server instances; shard names hashed, shard i at 127.0.0.1:7000+i.\nColumns: the index in each set of the shard whose server holds the key after Ring.Set.", sets, keys,
		func(s vectors.Set, key string) (string, error) { return placed[s.Name][key], nil })
}

// place writes every key through a Ring over the set's shards and returns
// the shard each key landed on.
func place(ctx context.Context, s vectors.Set, keys []string, servers map[string]*redis.Client) (map[string]string, error) {
	addrs := map[string]string{}
	nameOf := map[string]string{}
	for i, id := range s.IDs {
		addrs[id] = addr(i + 1)
		nameOf[addr(i+1)] = id
	}
	for _, c := range servers {
		if err := c.FlushAll(ctx).Err(); err != nil {
			return nil, err
		}
	}
	ring := redis.NewRing(&redis.RingOptions{Addrs: addrs, HeartbeatFrequency: time.Hour})
	defer ring.Close()
	for _, k := range keys {
		if err := ring.Set(ctx, k, "v", 0).Err(); err != nil {
			return nil, err
		}
	}
	out := map[string]string{}
	for _, k := range keys {
		for a, c := range servers {
			n, err := c.Exists(ctx, k).Result()
			if err != nil {
				return nil, err
			}
			if n == 1 {
				if out[k] != "" {
					return nil, fmt.Errorf("key %q on two servers", k)
				}
				out[k] = nameOf[a]
			}
		}
		c, err := ring.GetShardClientForKey(k)
		if err != nil {
			return nil, err
		}
		if want := nameOf[c.Options().Addr]; out[k] != want {
			return nil, fmt.Errorf("key %q stored on shard %q, GetShardClientForKey says %q", k, out[k], want)
		}
	}
	return out, nil
}

func waitPort(a string) error {
	for i := 0; i < 100; i++ {
		if c, err := net.Dial("tcp", a); err == nil {
			return c.Close()
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("redis-server on %s did not start", a)
}
