// Package goredis places the keys of a github.com/redis/go-redis/v9 Ring
// with chash: [NewConsistentHash] returns the function that
// redis.RingOptions.NewConsistentHash expects, backed by the chash
// algorithm and options of your choice.
//
//	newHash, err := goredis.NewConsistentHash(chash.AlgorithmRing)
//	if err != nil { ... }
//	rdb := redis.NewRing(&redis.RingOptions{
//		Addrs:             map[string]string{"shard1": "10.0.0.1:6379", "shard2": "10.0.0.2:6379"},
//		NewConsistentHash: newHash,
//	})
//
// Keys are placed by shard name (the keys of RingOptions.Addrs), not by
// address, so a shard can move to another address and keep its keys. The
// Ring applies hash tags first: "{user42}:cart" is placed as "user42".
package goredis

import (
	"fmt"

	"github.com/keyplace/chash"
	"github.com/redis/go-redis/v9"
)

// Hash is a redis.ConsistentHash over one set of shards. The Ring builds a
// new one whenever its set of live shards changes.
//
// The zero Hash, and the Hash of an empty or invalid shard list, places
// no key: Get returns "", which the Ring reports as "redis: all ring
// shards are down". A Hash is immutable and safe for concurrent use.
type Hash struct {
	p   chash.Placer
	err error
}

var _ redis.ConsistentHash = Hash{}

// Get returns the name of the shard that owns key, or "" if the Hash has
// no shards. It does not allocate.
func (h Hash) Get(key string) string {
	if h.p == nil {
		return ""
	}
	return h.p.LookupString(key).ID
}

// Placer returns the placer behind the Hash, whose node IDs are the shard
// names, or nil if it has no shards.
func (h Hash) Placer() chash.Placer { return h.p }

// Err returns why the Hash has no shards: nil if it has some, an error
// wrapping chash.ErrNoNodes for an empty list (every shard down), or the
// chash constructor's error (such as chash.ErrEmptyID for a shard named "").
func (h Hash) Err() error { return h.err }

// New returns the Hash of shards placed with algorithm a and opts. It never
// fails and never panics: if the placer cannot be built, the Hash places no
// key and Err says why. A positional algorithm (a.Positional(): jump,
// jumpback, binomial, flip) is refused, Err wrapping
// chash.ErrInvalidOption, since the Ring hands its shards over in map
// order; [Config] with Reshuffle numbers them by name instead. A stateful
// one (a.Stateful()) is refused too: its slots must be numbered over the
// whole fleet, which [Config] does for dx and choosek.
func New(a chash.Algorithm, shards []string, opts ...chash.Option) Hash {
	switch {
	case a.Positional():
		return Hash{err: errPositional(a)}
	case a.Stateful():
		return Hash{err: errStatefulHash(a)}
	}
	nodes := make([]chash.Node, len(shards))
	for i, s := range shards {
		nodes[i] = chash.Node{ID: s}
	}
	p, err := chash.New(a, nodes, opts...)
	if err != nil {
		return Hash{err: fmt.Errorf("goredis: %w", err)}
	}
	return Hash{p: p}
}

// NewConsistentHash returns a function for redis.RingOptions's
// NewConsistentHash field that places keys with algorithm a and opts. Every
// Ring that must agree on placement must use the same algorithm, options
// and shard names.
//
// It checks the algorithm and options now, by building a one-shard placer,
// and returns an error wrapping chash.ErrUnknownAlgorithm or
// chash.ErrInvalidOption if they are wrong. A positional algorithm
// (a.Positional(): jump, jumpback, binomial, flip) is refused with
// chash.ErrInvalidOption: the Ring passes its shards in map order, so two
// calls over the same shards would disagree on nearly every key. [Config]
// with Reshuffle numbers them by name instead. A stateful algorithm
// (a.Stateful()) is refused as well: [Config] numbers the slots of dx and
// choosek over the whole fleet, so that any shard can go down moving only
// its keys. A shard list the algorithm
// cannot take (empty, or larger than a Maglev table) yields a Hash that
// places no key, so the Ring reports its shards down rather than panic;
// see [Hash.Err]. [Config.NewConsistentHash] checks the options against the
// real fleet instead, accepts weights, and its zero value places exactly as
// go-redis's default does.
//
// The Ring calls the function, under its lock, each time its set of live
// shards changes; each call builds a placer (for the ring, O(P log P) time
// for P points, 160 per shard by default). The Hash's Get does not
// allocate.
func NewConsistentHash(a chash.Algorithm, opts ...chash.Option) (func(shards []string) redis.ConsistentHash, error) {
	switch {
	case a.Positional():
		return nil, errPositional(a)
	case a.Stateful():
		return nil, errStatefulHash(a)
	}
	if _, err := chash.New(a, []chash.Node{{ID: "probe"}}, opts...); err != nil {
		return nil, fmt.Errorf("goredis: %w", err)
	}
	return func(shards []string) redis.ConsistentHash {
		return New(a, shards, opts...)
	}, nil
}
