package goredis_test

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/adapters/goredis"
	"github.com/redis/go-redis/v9"
)

func TestNewConsistentHashErrors(t *testing.T) {
	cases := []struct {
		name string
		a    chash.Algorithm
		opts []chash.Option
		want error
	}{
		{"zero algorithm", 0, nil, chash.ErrUnknownAlgorithm},
		{"unknown algorithm", 99, nil, chash.ErrUnknownAlgorithm},
		{"bad option", chash.AlgorithmRing, []chash.Option{chash.WithVnodes(-1)}, chash.ErrInvalidOption},
		{"nil hasher", chash.AlgorithmRing, []chash.Option{chash.WithHasher(nil)}, chash.ErrInvalidOption},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fn, err := goredis.NewConsistentHash(c.a, c.opts...)
			if !errors.Is(err, c.want) || fn != nil {
				t.Fatalf("NewConsistentHash error = %v, want %v", err, c.want)
			}
			t.Log(err)
		})
	}
}

// TestNoShards covers what the Ring passes when every shard is down, and
// shard names chash cannot take: no panic, Get returns "".
func TestNoShards(t *testing.T) {
	fn, err := goredis.NewConsistentHash(chash.AlgorithmRing)
	if err != nil {
		t.Fatal(err)
	}
	for _, shards := range [][]string{nil, {}, {"a", ""}, {"a", "a"}} {
		h := fn(shards)
		if got := h.Get("key"); got != "" {
			t.Fatalf("shards %q: Get = %q, want \"\"", shards, got)
		}
		err := h.(goredis.Hash).Err()
		if err == nil {
			t.Fatalf("shards %q: no Err", shards)
		}
		t.Logf("shards %q: %v", shards, err)
	}
	if !errors.Is(fn(nil).(goredis.Hash).Err(), chash.ErrNoNodes) {
		t.Fatal("empty list: Err does not wrap chash.ErrNoNodes")
	}
	var zero goredis.Hash
	if zero.Get("key") != "" || zero.Placer() != nil || zero.Err() != nil {
		t.Fatal("zero Hash is not empty")
	}
}

func TestGet(t *testing.T) {
	for _, a := range []chash.Algorithm{chash.AlgorithmRing} {
		h := goredis.New(a, []string{"shard1", "shard2", "shard3"})
		if h.Err() != nil {
			t.Fatal(h.Err())
		}
		counts := map[string]int{}
		const n = 100_000
		for i := range n {
			key := fmt.Sprintf("key:%d", i)
			got := h.Get(key)
			if got != h.Placer().LookupString(key).ID {
				t.Fatalf("%v: Get(%q) = %q, placer says otherwise", a, key, got)
			}
			counts[got]++
		}
		for s, c := range counts {
			if f := float64(c) / n; math.Abs(f-1.0/3) > 0.05 {
				t.Errorf("%v: shard %s got %.3f of the keys, want 1/3 ± 0.05", a, s, f)
			}
		}
		if len(counts) != 3 {
			t.Errorf("%v: keys on %d shards, want 3", a, len(counts))
		}
	}
}

func TestGetAllocs(t *testing.T) {
	h := goredis.New(chash.AlgorithmRing, []string{"shard1", "shard2", "shard3"})
	var s string
	if allocs := testing.AllocsPerRun(1000, func() { s = h.Get("user:12345:profile") }); allocs != 0 {
		t.Fatalf("Get allocates %v times per call, want 0", allocs)
	}
	_ = s
}

func ExampleNewConsistentHash() {
	newHash, err := goredis.NewConsistentHash(chash.AlgorithmRing)
	if err != nil {
		fmt.Println(err)
		return
	}
	rdb := redis.NewRing(&redis.RingOptions{
		Addrs:             map[string]string{"shard1": "10.0.0.1:6379", "shard2": "10.0.0.2:6379"},
		NewConsistentHash: newHash,
	})
	defer rdb.Close()

	// The shard a key lives on, without contacting a server.
	h := newHash([]string{"shard1", "shard2", "shard3"})
	fmt.Println(h.Get("user:42") != "")

	// No shards (all down): no shard, no panic.
	fmt.Printf("%q\n", newHash(nil).Get("user:42"))

	_, err = goredis.NewConsistentHash(chash.AlgorithmRing, chash.WithVnodes(0))
	fmt.Println(err)
	// Output:
	// true
	// ""
	// goredis: chash: invalid option: WithVnodes(0): want 1 to 65536
}

// FuzzNew feeds arbitrary shard lists (comma-separated) and keys: the Hash
// must never panic and must return one of the shards or "".
func FuzzNew(f *testing.F) {
	f.Add("shard1,shard2,shard3", "key", uint8(chash.AlgorithmRing))
	f.Add("", "key", uint8(chash.AlgorithmRing))
	f.Add("a,a", "{tag}x", uint8(0))
	f.Add("a,,b", "", uint8(200))
	f.Fuzz(func(t *testing.T, list, key string, a uint8) {
		var shards []string
		if list != "" {
			shards = strings.Split(list, ",")
		}
		h := goredis.New(chash.Algorithm(a), shards)
		got := h.Get(key)
		if (got == "") != (h.Err() != nil) {
			t.Fatalf("Get(%q) = %q with Err %v", key, got, h.Err())
		}
		if got != "" && !slices.Contains(shards, got) {
			t.Fatalf("Get(%q) = %q, not one of %q", key, got, shards)
		}
	})
}
