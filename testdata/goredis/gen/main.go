// Command gen writes ../vectors.tsv: the shard a go-redis v9 Ring (default
// ConsistentHash) routes each key to, by asking the Ring itself with
// GetShardClientForKey. No server is contacted: the heartbeat is set far
// beyond the run, so every shard stays up. Run from this directory:
//
//	go run . > ../vectors.tsv
package main

import (
	"fmt"
	"os"
	"time"

	"github.com/keyplace/chash/testdata/internal/vectors"
	"github.com/redis/go-redis/v9"
)

func main() {
	sets := vectors.StandardSets(func(i int) string { return fmt.Sprintf("shard-%d", i) }, false)
	rings := map[string]*redis.Ring{}
	addrOf := map[string]map[string]string{} // set -> address -> shard name
	for _, s := range sets {
		addrs := map[string]string{}
		addrOf[s.Name] = map[string]string{}
		for i, id := range s.IDs {
			addr := fmt.Sprintf("127.0.0.1:%d", 7001+i)
			addrs[id] = addr
			addrOf[s.Name][addr] = id
		}
		rings[s.Name] = redis.NewRing(&redis.RingOptions{Addrs: addrs, HeartbeatFrequency: time.Hour})
	}
	err := vectors.Write(os.Stdout, "go-redis v9.18.0 Ring, default hash; shard names hashed, shard i at 127.0.0.1:7000+i.\nColumns: the index in each set of the shard Ring.GetShardClientForKey returns.", sets, vectors.Keys(2000, true),
		func(s vectors.Set, key string) (string, error) {
			c, err := rings[s.Name].GetShardClientForKey(key)
			if err != nil {
				return "", err
			}
			return addrOf[s.Name][c.Options().Addr], nil
		})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
