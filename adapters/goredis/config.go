package goredis

import (
	"errors"
	"fmt"
	"slices"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/compat"
	"github.com/redis/go-redis/v9"
)

// Config describes how a go-redis Ring places keys on its shards. Its zero
// value places exactly as go-redis does by default, so that switching a
// Ring to it moves no key: make that the first step, then measure a better
// placement with DryRun before switching to it.
type Config struct {
	// Algorithm is the chash algorithm. The zero value means go-redis's own
	// default placement (compat.NewGoRedis: rendezvous over xxhash with
	// go-rendezvous's mix), which takes no weights or options.
	Algorithm chash.Algorithm
	// Weights gives shards relative capacities by shard name; shards not in
	// the map weigh 1. go-redis itself has no weights.
	Weights map[string]float64
	// Options are passed to the chash constructor.
	Options []chash.Option
	// Reshuffle accepts a positional algorithm (Algorithm.Positional:
	// jump, jumpback, binomial, flip), which numbers its nodes by
	// position. go-redis hands the Hash its live shards in map
	// order, so the adapter numbers the buckets by shard name; adding or
	// removing a shard other than the last by name, and any shard going
	// down, then renumbers buckets and moves most keys. Without Reshuffle,
	// a positional algorithm is refused with chash.ErrInvalidOption: two
	// map orders of the same four shards would disagree on every key.
	//
	// chash.AlgorithmDx and chash.AlgorithmChooseK keep jump's memory and
	// constant-time lookups without that cost: NewConsistentHash numbers
	// their slots by name over the whole fleet, once, and each set of live
	// shards is derived from that placement (chash.Derive), so a shard
	// going down moves only its own keys, and every Ring with the same
	// Config and Addrs agrees, whatever order its shards went down in
	// (their placement depends on which slots work, not on the order of
	// removals). The other stateful algorithms (memento, anchor,
	// jumpbackanchor) depend on that order, which each Ring sees for
	// itself: they are refused with chash.ErrInvalidOption.
	Reshuffle bool
}

// ErrNoShards reports a Ring configured with no shards.
var ErrNoShards = errors.New("goredis: no shards")

// Placer returns the placement of the named shards under c, in the order
// the Hash uses. It fails as the chash constructor does, or with
// chash.ErrInvalidOption for a combination c cannot honour.
func (c Config) Placer(shards []string) (chash.Placer, error) {
	if c.Algorithm == 0 {
		if c.Weights != nil || len(c.Options) > 0 {
			return nil, fmt.Errorf("goredis: %w: go-redis's default placement takes no weights or options; set Algorithm", chash.ErrInvalidOption)
		}
		nodes := make([]chash.Node, len(shards))
		for i, s := range shards {
			nodes[i] = chash.Node{ID: s}
		}
		p, err := compat.NewGoRedis(nodes)
		if err != nil {
			return nil, fmt.Errorf("goredis: %w", err)
		}
		return p, nil
	}
	switch a := c.Algorithm; {
	case a.HistoryDependent():
		return nil, errHistory(a)
	case a.Positional() && !c.Reshuffle:
		return nil, errPositional(a)
	case a.Positional() || a.Stateful():
		shards = slices.Clone(shards)
		slices.Sort(shards)
	}
	nodes := make([]chash.Node, len(shards))
	for i, s := range shards {
		nodes[i] = chash.Node{ID: s, Weight: c.Weights[s]}
	}
	p, err := chash.New(c.Algorithm, nodes, c.Options...)
	if err != nil {
		return nil, fmt.Errorf("goredis: %w", err)
	}
	return p, nil
}

// errPositional refuses a positional algorithm without Reshuffle.
func errPositional(a chash.Algorithm) error {
	return fmt.Errorf("goredis: %w: %v numbers shards by position, and go-redis hands them over in map order: "+
		"use Config{Algorithm: %v, Reshuffle: true} to number them by name (a shard going down then moves most keys), "+
		"a non-positional algorithm (rendezvous, ring, maglev, bounded), "+
		"or Config{Algorithm: dx or choosek}, which keep jump's memory and speed and let any shard go down moving only its keys",
		chash.ErrInvalidOption, a, a)
}

// errHistory refuses a stateful algorithm whose placement depends on the
// order of removals.
func errHistory(a chash.Algorithm) error {
	return fmt.Errorf("goredis: %w: %v places keys by the order in which shards went down, which each Ring sees for itself, "+
		"so Rings would disagree: use Config{Algorithm: dx or choosek}, whose placement depends only on which shards are up",
		chash.ErrInvalidOption, a)
}

// errStatefulHash refuses a stateful algorithm in NewConsistentHash and
// New, which see only the live shards.
func errStatefulHash(a chash.Algorithm) error {
	if a.HistoryDependent() {
		return errHistory(a)
	}
	return fmt.Errorf("goredis: %w: %v keeps shards in slots numbered over the whole fleet, which NewConsistentHash does not know: "+
		"use Config{Algorithm: %v}.NewConsistentHash(addrs)", chash.ErrInvalidOption, a, a)
}

// NewConsistentHash returns the function for RingOptions.NewConsistentHash,
// after building the placement of the whole fleet, addrs (the Ring's
// RingOptions.Addrs, name to address), so that a configuration that cannot
// place it fails here and not as "redis: all ring shards are down": for
// example a Maglev table smaller than the fleet wraps chash.ErrInvalidOption.
// The Ring calls the function with its live shards, a subset of addrs;
// shards added later with SetAddrs are checked only then (see DryRun).
//
// For dx and choosek (see Reshuffle) the placement of addrs, slots
// numbered by name, is kept, and each set of live shards is derived from
// it: a shard that is down gives up its slot and only its keys move. A
// shard added later with SetAddrs takes the slot of a shard that is down
// if there is one, else a new slot, so its place can change as others go
// down and come back: make it part of the fleet (Apply again) once it is.
func (c Config) NewConsistentHash(addrs map[string]string) (func(shards []string) redis.ConsistentHash, error) {
	if len(addrs) == 0 {
		return nil, ErrNoShards
	}
	all, err := c.Placer(names(addrs))
	if err != nil {
		return nil, err
	}
	return func(shards []string) redis.ConsistentHash {
		p, err := c.next(all, shards)
		if err != nil {
			return Hash{err: err}
		}
		return Hash{p: p}
	}, nil
}

// next returns the placement of shards after fleet, the placement of the
// configured fleet: derived from it for a stateful algorithm, else placed
// afresh.
func (c Config) next(fleet chash.Placer, shards []string) (chash.Placer, error) {
	if !c.Algorithm.Stateful() {
		return c.Placer(shards)
	}
	if len(shards) == 0 {
		return nil, fmt.Errorf("goredis: %w: every shard is down", chash.ErrNoNodes)
	}
	nodes := make([]chash.Node, len(shards))
	for i, s := range shards {
		nodes[i] = chash.Node{ID: s, Weight: c.Weights[s]}
	}
	p, err := chash.Derive(fleet, nodes)
	if err != nil {
		return nil, fmt.Errorf("goredis: %w", err)
	}
	return p, nil
}

// Apply validates c against opt.Addrs and sets opt.NewConsistentHash.
func (c Config) Apply(opt *redis.RingOptions) error {
	f, err := c.NewConsistentHash(opt.Addrs)
	if err != nil {
		return err
	}
	opt.NewConsistentHash = f
	return nil
}

// DryRun reports what Ring.SetAddrs(next) would do to the keys of a Ring
// placed by c over current, with every shard up: the fraction that would
// change shard, and the flows between shards (chash.Diff). It fails if
// either map is empty or c cannot place either fleet. To measure a change
// of placement instead, Diff the Placer of two Configs over one fleet.
func (c Config) DryRun(current, next map[string]string) (chash.Movement, error) {
	if len(current) == 0 || len(next) == 0 {
		return chash.Movement{}, ErrNoShards
	}
	a, err := c.Placer(names(current))
	if err != nil {
		return chash.Movement{}, err
	}
	b, err := c.next(a, names(next))
	if err != nil {
		return chash.Movement{}, err
	}
	m, err := chash.Diff(a, b)
	if err != nil {
		return chash.Movement{}, fmt.Errorf("goredis: %w", err)
	}
	return m, nil
}

// names returns the shard names of addrs in ascending order.
func names(addrs map[string]string) []string {
	out := make([]string, 0, len(addrs))
	for name := range addrs {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}
