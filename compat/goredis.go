package compat

import (
	"bytes"
	"slices"
	"strings"

	"github.com/cespare/xxhash/v2"
	"github.com/keyplace/chash"
)

// GoRedis places keys exactly as a go-redis v9 Ring does with its default
// ConsistentHash (github.com/dgryski/go-rendezvous over xxhash), so that a
// service can replace a redis.Ring's sharding with chash and move no key.
//
// Node IDs are the shard names, the keys of redis.RingOptions.Addrs (not
// the addresses: go-redis hashes the names). go-redis has no weights, so
// every weight must be 1 (or 0, meaning 1).
//
// A key is first reduced to its hash tag as go-redis parses it: if the key
// holds a '{', and a '}' follows it with at least one byte between, the
// bytes between the first '{' and the first '}' after it are hashed;
// otherwise the whole key is. So "{user1}:a" and "{user1}:b" share a shard,
// "{}x" and "a{b" hash whole, and "x{}{y}" hashes whole too (only the first
// '{' counts). The hashed part's xxhash64 h then scores each shard whose
// name hashes to s as xorshift*(h ^ s) (go-rendezvous's mix: x ^= x>>12,
// x ^= x<<25, x ^= x>>27, x *= 2685821657736338717), and the highest score
// wins. go-redis builds its shard list from a map, in random order, but
// scores tie only for names whose xxhash64 values are equal; GoRedis breaks
// such a tie (no real fleet has one) toward the smaller name.
//
// go-redis drops shards its heartbeat finds down; GoRedis places over every
// member, like a Ring whose shards are all up. AppendTopK continues in
// descending score order, which is where a key goes when the shards
// ranked before it are down; it costs k passes over the shards.
//
// Lookup is O(n) for n shards, one hash of the key and one multiply per
// shard, with no allocation. A GoRedis is immutable and safe for concurrent
// use; nodes are reported in ascending ID order. The zero GoRedis and a nil
// *GoRedis place no key: lookups return the zero Node, AppendTopK appends
// nothing and Len is 0 (build one with NewGoRedis).
type GoRedis struct {
	nodes  []chash.Node // ascending by ID
	hashes []uint64     // xxhash64 of each name
}

var _ chash.Placer = (*GoRedis)(nil)

// NewGoRedis returns the placement of a go-redis v9 Ring over the named
// shards. It fails if shards is empty, a name is empty or repeated, or a
// weight is not 1.
func NewGoRedis(shards []chash.Node) (*GoRedis, error) {
	ns, err := compatNodes("go-redis", shards, 1)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(ns, byID)
	g := &GoRedis{nodes: ns, hashes: make([]uint64, len(ns))}
	for i, n := range ns {
		g.hashes[i] = xxhash.Sum64String(n.ID)
	}
	return g, nil
}

// GoRedisHashKey returns the part of key that go-redis v9 hashes: the
// contents of its first hash tag, or the whole key.
func GoRedisHashKey(key string) string {
	if s := strings.IndexByte(key, '{'); s >= 0 {
		if e := strings.IndexByte(key[s+1:], '}'); e > 0 {
			return key[s+1 : s+1+e]
		}
	}
	return key
}

func goRedisHashKeyBytes(key []byte) []byte {
	if s := bytes.IndexByte(key, '{'); s >= 0 {
		if e := bytes.IndexByte(key[s+1:], '}'); e > 0 {
			return key[s+1 : s+1+e]
		}
	}
	return key
}

// xorshiftMult64 is go-rendezvous's score mix (a xorshift* step).
func xorshiftMult64(x uint64) uint64 {
	x ^= x >> 12
	x ^= x << 25
	x ^= x >> 27
	return x * 2685821657736338717
}

func (g *GoRedis) pick(h uint64) int {
	best, bestScore := 0, xorshiftMult64(h^g.hashes[0])
	for i := 1; i < len(g.hashes); i++ {
		if s := xorshiftMult64(h ^ g.hashes[i]); s > bestScore {
			best, bestScore = i, s
		}
	}
	return best
}

// Lookup returns the shard go-redis would send key to.
func (g *GoRedis) Lookup(key []byte) chash.Node {
	if g.Len() == 0 {
		return chash.Node{}
	}
	return g.nodes[g.pick(xxhash.Sum64(goRedisHashKeyBytes(key)))]
}

// LookupString is Lookup for a string key, without copying it.
func (g *GoRedis) LookupString(key string) chash.Node {
	if g.Len() == 0 {
		return chash.Node{}
	}
	return g.nodes[g.pick(xxhash.Sum64String(GoRedisHashKey(key)))]
}

// AppendTopK appends up to k shards for key in descending score order.
func (g *GoRedis) AppendTopK(dst []chash.Node, key []byte, k int) []chash.Node {
	return g.appendTopK(dst, xxhash.Sum64(goRedisHashKeyBytes(key)), k)
}

// AppendTopKString is AppendTopK for a string key, without copying it.
func (g *GoRedis) AppendTopKString(dst []chash.Node, key string, k int) []chash.Node {
	return g.appendTopK(dst, xxhash.Sum64String(GoRedisHashKey(key)), k)
}

func (g *GoRedis) appendTopK(dst []chash.Node, h uint64, k int) []chash.Node {
	if g.Len() == 0 {
		return dst
	}
	return appendByScore(dst, g.nodes, k, func(i int) uint64 { return xorshiftMult64(h ^ g.hashes[i]) })
}

// Nodes returns a copy of the shards, ascending by ID.
func (g *GoRedis) Nodes() []chash.Node {
	if g == nil {
		return nil
	}
	return slices.Clone(g.nodes)
}

// Len returns the number of shards.
func (g *GoRedis) Len() int {
	if g == nil {
		return 0
	}
	return len(g.nodes)
}
