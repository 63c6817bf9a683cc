// Package benchmarks compares chash with the Go placement libraries people
// use today, family by family (ring, rendezvous, jump, Maglev, bounded
// load): the same node names, the same keys and the same harness for every
// library, so that figures can be read as ratios. It is a separate module so
// that the library itself depends on none of them.
package benchmarks

import (
	"errors"
	"fmt"
	"slices"

	"github.com/cespare/xxhash/v2"
	"github.com/dgryski/go-jump"
	rendezvous "github.com/dgryski/go-rendezvous"
	"github.com/golang/groupcache/consistenthash"
	"github.com/keyplace/chash"
	"github.com/kkdai/maglev"
	"github.com/serialx/hashring"
	"github.com/stathat/consistent"
)

// Vnodes is the points per node every ring is built with, chash's default,
// so that rings are compared at equal balance.
const Vnodes = chash.DefaultVnodes

// MaglevTable is the lookup table size every Maglev is built with, chash's
// default.
const MaglevTable = 65537

// Impl is one built placement, seen through closures so that every library
// pays the same call overhead in the harness.
type Impl struct {
	// Lookup returns the ID of the node owning key.
	Lookup func(key string) string
	// TopK returns the last of the k preferred node IDs for key, or is nil
	// when the library has no replica list. It may reuse a buffer, so it
	// is not safe for concurrent use.
	TopK func(key string, k int) string
	// Remove removes a node through the library's own API, or is nil when
	// it has none. It returns the placement after removal.
	Remove func(id string) (Impl, error)
}

// Subject is one library's implementation of one family.
type Subject struct {
	Family string // ring, rendezvous, jump, maglev, bounded, or hash for the baseline
	Name   string // short name used in benchmark names
	Module string // import path
	Ours   bool
	Setup  string // hash and settings used, for the report
	// Concurrency says how lookups may run alongside membership changes.
	Concurrency string
	Build       func(ids []string) (Impl, error)
}

// Subjects returns the baseline, every chash algorithm this version
// provides, and every peer, in report order.
func Subjects() []Subject {
	out := []Subject{{
		Family: "hash", Name: "xxhash", Module: "github.com/cespare/xxhash/v2",
		Setup: "Sum64String of the key only: the floor", Build: buildHash,
	}}
	for _, a := range ComparedAlgorithms() {
		if _, err := chash.New(a, []chash.Node{{ID: "probe"}}); errors.Is(err, chash.ErrUnknownAlgorithm) {
			continue
		}
		out = append(out, ours(a))
	}
	out = append(out, peers()...)
	// Group by family, chash first in each, in the order of the families.
	slices.SortStableFunc(out, func(a, b Subject) int {
		return slices.Index(familyOrder, a.Family) - slices.Index(familyOrder, b.Family)
	})
	return out
}

// familyOrder is the order of the families in the report, the baseline
// first.
var familyOrder = []string{"hash", "ring", "rendezvous", "jump", "jumpback", "maglev", "bounded"}

// ComparedAlgorithms returns the chash algorithms this report compares
// with peers and across scales: those of its families. The algorithms that
// can lose any member or replace jump in constant time (memento, anchor,
// dx, binomial, flip, jumpbackanchor, choosek) have no peer in Go and
// their own table, FAMILY.md (BenchmarkFamily in the root package); their
// placement after a removal is derived, not rebuilt, so this report's
// "same as a rebuild" checks do not apply to them.
func ComparedAlgorithms() []chash.Algorithm {
	var out []chash.Algorithm
	for _, a := range chash.Algorithms() {
		if slices.Contains(familyOrder, a.String()) {
			out = append(out, a)
		}
	}
	return out
}

// Families returns the families that have at least one subject, in order.
func Families() []string {
	var fs []string
	for _, s := range Subjects() {
		if s.Family != "hash" && !slices.Contains(fs, s.Family) {
			fs = append(fs, s.Family)
		}
	}
	return fs
}

// hashNames lets the baseline return a string that depends on the hash,
// so that the hash cannot be optimised away, at the cost of one load.
var hashNames = [8]string{"0", "1", "2", "3", "4", "5", "6", "7"}

func buildHash(ids []string) (Impl, error) {
	return Impl{Lookup: func(key string) string {
		return hashNames[xxhash.Sum64String(key)&7]
	}}, nil
}

func ours(a chash.Algorithm) Subject {
	setup := "defaults (xxhash)"
	switch a {
	case chash.AlgorithmRing:
		setup = fmt.Sprintf("defaults: xxhash, %d points per node", Vnodes)
	case chash.AlgorithmMaglev:
		setup = fmt.Sprintf("defaults: xxhash, table %d", MaglevTable)
	}
	return Subject{
		Family: a.String(), Name: "chash", Module: "github.com/keyplace/chash", Ours: true, Setup: setup,
		Concurrency: "immutable; Holder swaps atomically, reads take no lock",
		Build: func(ids []string) (Impl, error) {
			p, err := chash.New(a, nodesOf(ids))
			if err != nil {
				return Impl{}, err
			}
			return oursImpl(p), nil
		},
	}
}

func oursImpl(p chash.Placer) Impl {
	buf := make([]chash.Node, 0, 8)
	return Impl{
		Lookup: directLookup(p),
		TopK: func(key string, k int) string {
			buf = p.AppendTopKString(buf[:0], key, k)
			if len(buf) == 0 {
				return ""
			}
			return buf[len(buf)-1].ID
		},
		Remove: func(id string) (Impl, error) {
			q, err := removeOurs(p, id)
			if err != nil {
				return Impl{}, err
			}
			return oursImpl(q), nil
		},
	}
}

// directLookup calls LookupString on the concrete type, as the closures
// of the peers call theirs: the library's own benchmarks measure the
// Placer interface path.
func directLookup(p chash.Placer) func(string) string {
	switch p := p.(type) {
	case *chash.Ring:
		return func(key string) string { return p.LookupString(key).ID }
	case *chash.Rendezvous:
		return func(key string) string { return p.LookupString(key).ID }
	case *chash.Jump:
		return func(key string) string { return p.LookupString(key).ID }
	case *chash.JumpBack:
		return func(key string) string { return p.LookupString(key).ID }
	case *chash.Maglev:
		return func(key string) string { return p.LookupString(key).ID }
	case *chash.Bounded:
		return func(key string) string { return p.LookupString(key).ID }
	}
	return func(key string) string { return p.LookupString(key).ID }
}

// removeOurs calls the concrete type's Remove(ids ...string), whatever
// type it returns.
func removeOurs(p chash.Placer, id string) (chash.Placer, error) {
	r, ok := p.(interface {
		Remove(ids ...string) (*chash.Ring, error)
	})
	if ok {
		return r.Remove(id)
	}
	return removeByReflection(p, id)
}

func nodesOf(ids []string) []chash.Node {
	ns := make([]chash.Node, len(ids))
	for i, id := range ids {
		ns[i] = chash.Node{ID: id}
	}
	return ns
}

func peers() []Subject {
	return []Subject{
		{
			Family: "ring", Name: "stathat", Module: "github.com/stathat/consistent",
			Setup:       fmt.Sprintf("crc32 (no hash option), NumberOfReplicas = %d (default 20)", Vnodes),
			Concurrency: "RWMutex read-locked on every lookup",
			Build:       buildStathat,
		},
		{
			Family: "ring", Name: "serialx", Module: "github.com/serialx/hashring",
			Setup:       fmt.Sprintf("NewWithHashAndWeights: xxhash, weight %d per node (one point per unit of weight)", Vnodes),
			Concurrency: "Add/Remove return a new ring; no lock",
			Build:       buildSerialx,
		},
		{
			Family: "ring", Name: "groupcache", Module: "github.com/golang/groupcache/consistenthash",
			Setup:       fmt.Sprintf("xxhash truncated to 32 bits (its hash is uint32), %d replicas", Vnodes),
			Concurrency: "mutable, no lock: Add is unsafe during lookups",
			Build:       buildGroupcache,
		},
		{
			Family: "rendezvous", Name: "go-rendezvous", Module: "github.com/dgryski/go-rendezvous",
			Setup:       "xxhash Sum64String",
			Concurrency: "mutable, no lock: Add/Remove unsafe during lookups",
			Build:       buildRendezvous,
		},
		{
			Family: "jump", Name: "go-jump", Module: "github.com/dgryski/go-jump",
			Setup:       "xxhash Sum64String, then jump.Hash; bucket i is node i",
			Concurrency: "pure function; the caller keeps the node list",
			Build:       buildJump,
		},
		{
			Family: "maglev", Name: "kkdai", Module: "github.com/kkdai/maglev",
			Setup:       fmt.Sprintf("siphash (no hash option), table %d", MaglevTable),
			Concurrency: "RWMutex read-locked on every lookup",
			Build:       buildKkdai,
		},
	}
}

func buildStathat(ids []string) (Impl, error) {
	c := consistent.New()
	c.NumberOfReplicas = Vnodes
	for _, id := range ids {
		c.Add(id)
	}
	return stathatImpl(c), nil
}

func stathatImpl(c *consistent.Consistent) Impl {
	return Impl{
		Lookup: func(key string) string {
			id, _ := c.Get(key)
			return id
		},
		TopK: func(key string, k int) string {
			ids, _ := c.GetN(key, k)
			if len(ids) == 0 {
				return ""
			}
			return ids[len(ids)-1]
		},
		Remove: func(id string) (Impl, error) {
			c.Remove(id)
			return stathatImpl(c), nil
		},
	}
}

// u64Key orders serialx's ring by a 64-bit hash.
type u64Key uint64

func (k u64Key) Less(o hashring.HashKey) bool { return k < o.(u64Key) }

func serialxHash(b []byte) hashring.HashKey { return u64Key(xxhash.Sum64(b)) }

func buildSerialx(ids []string) (Impl, error) {
	w := make(map[string]int, len(ids))
	for _, id := range ids {
		w[id] = Vnodes
	}
	return serialxImpl(hashring.NewWithHashAndWeights(w, serialxHash)), nil
}

func serialxImpl(r *hashring.HashRing) Impl {
	return Impl{
		Lookup: func(key string) string {
			id, _ := r.GetNode(key)
			return id
		},
		TopK: func(key string, k int) string {
			ids, _ := r.GetNodes(key, k)
			if len(ids) == 0 {
				return ""
			}
			return ids[len(ids)-1]
		},
		Remove: func(id string) (Impl, error) { return serialxImpl(r.RemoveNode(id)), nil },
	}
}

func buildGroupcache(ids []string) (Impl, error) {
	m := consistenthash.New(Vnodes, func(b []byte) uint32 { return uint32(xxhash.Sum64(b)) })
	m.Add(ids...)
	return Impl{Lookup: m.Get}, nil
}

func buildRendezvous(ids []string) (Impl, error) {
	return rendezvousImpl(rendezvous.New(slices.Clone(ids), xxhash.Sum64String)), nil
}

func rendezvousImpl(r *rendezvous.Rendezvous) Impl {
	return Impl{
		Lookup: r.Lookup,
		Remove: func(id string) (Impl, error) {
			r.Remove(id)
			return rendezvousImpl(r), nil
		},
	}
}

func buildJump(ids []string) (Impl, error) {
	ids = slices.Clone(ids)
	return Impl{Lookup: func(key string) string {
		return ids[jump.Hash(xxhash.Sum64String(key), len(ids))]
	}}, nil
}

func buildKkdai(ids []string) (Impl, error) {
	m, err := maglev.NewMaglev(ids, MaglevTable)
	if err != nil {
		return Impl{}, err
	}
	return kkdaiImpl(m), nil
}

func kkdaiImpl(m *maglev.Maglev) Impl {
	return Impl{
		Lookup: func(key string) string {
			id, _ := m.Get(key)
			return id
		},
		Remove: func(id string) (Impl, error) {
			if err := m.Remove(id); err != nil {
				return Impl{}, err
			}
			return kkdaiImpl(m), nil
		},
	}
}
