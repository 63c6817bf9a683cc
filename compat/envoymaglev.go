package compat

import (
	"fmt"
	"math"
	"math/bits"
	"slices"

	"github.com/cespare/xxhash/v2"
	"github.com/keyplace/chash"
	"github.com/keyplace/chash/internal/place"
)

// EnvoyMaglevTableSize is the table size of Envoy's Maglev load balancer
// unless its config sets table_size.
const EnvoyMaglevTableSize = 65537

// EnvoyMaglev places keys exactly as Envoy's Maglev load balancer
// (envoy.load_balancing_policies.maglev, and the cluster lb_policy MAGLEV)
// does, for hosts that are all healthy and in one priority without
// locality weighting.
//
// Node IDs are the hosts' hash keys: the address string ("10.0.0.1:8080"),
// the host name with use_hostname_for_hashing, or the metadata hash_key.
// Weights are the hosts' load_balancing_weight, whole numbers (0 means 1).
//
// The table is built as Envoy builds it: hosts sorted by hash key; host i's
// offset is xxhash64(key) mod M and its skip xxhash64 with seed 1 mod (M-1),
// plus 1; with normalised weights w_i = weight/Σweight and W the largest,
// turns run for iteration = 1, 2, ... over the hosts in order, and a host
// takes a turn unless iteration × w_i < target_i, when it does target_i +=
// W and claims the next free slot of its permutation. Each product and sum
// is one IEEE double operation, rounded as Envoy's are, so the weighted
// turns fall identically on every platform. A key's host is table[h mod M]
// for h = xxhash64(key), the hash of Envoy's header hash policy; LookupHash
// takes a request hash computed elsewhere. A table smaller than the number
// of hosts leaves some hosts without keys, as it does in Envoy (see
// [EnvoyMaglev.Entries]). Two hosts with equal hash keys, which Envoy orders
// by memory address, cannot be expressed: IDs are unique.
//
// AppendTopK follows Envoy's retries (the retry host predicate): attempt a
// looks up h ^ (2^64 - a); after 8 attempts per host it appends the
// remaining hosts in ID order. Lookup is one hash and one table read, with
// no allocation. Memory is 4 bytes per table entry. An EnvoyMaglev is
// immutable and safe for concurrent use; Nodes are reported in ascending ID
// order. The zero EnvoyMaglev and a nil *EnvoyMaglev place no key: lookups
// return the zero Node, AppendTopK appends nothing and Len is 0 (build one
// with NewEnvoyMaglev).
type EnvoyMaglev struct {
	nodes []chash.Node
	table []uint32 // node index per slot
}

var _ chash.Placer = (*EnvoyMaglev)(nil)

// NewEnvoyMaglev returns Envoy's Maglev placement over hosts with a table
// of tableSize entries (0 means EnvoyMaglevTableSize). It fails if hosts is
// empty, a hash key is empty or repeated, a weight is not a whole number
// from 1 to 1<<32-1, or tableSize is not a prime from 2 to 1<<24.
func NewEnvoyMaglev(hosts []chash.Node, tableSize int) (*EnvoyMaglev, error) {
	if tableSize == 0 {
		tableSize = EnvoyMaglevTableSize
	}
	if tableSize < 2 || tableSize > place.MaxPoints || !place.IsPrime(tableSize) {
		return nil, fmt.Errorf("%w: Envoy Maglev table size %d: want a prime from 2 to %d", chash.ErrInvalidOption, tableSize, place.MaxPoints)
	}
	ns, err := compatNodes("Envoy Maglev", hosts, math.MaxUint32)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(ns, byID)
	g := &EnvoyMaglev{nodes: ns, table: make([]uint32, tableSize)}
	if len(ns) == 1 {
		return g, nil // Envoy's degenerate table: every slot is the host
	}
	if err := g.fill(uint64(tableSize)); err != nil {
		return nil, err
	}
	return g, nil
}

// envoyEntry is one host's state while the table fills.
type envoyEntry struct {
	offset, skip, next uint64
	weight, target     float64
}

// The build is bounded as the core Maglev's is (chash.NewMaglev): hosts
// whose offset and skip an attacker made equal walk past each other's
// entries, and a probe budget of M·(2·log₂M + 64) ends such a build with
// chash.ErrTooLarge instead of running for seconds (8 s for crafted IDs at
// the default size). Envoy's turns cost a pass over the hosts each, and
// weights far apart (one host at 4e9, the rest at 1) need a turn for each
// of the heavy host's entries: turns × hosts is bounded by maxEnvoyChecks,
// about a quarter of a second of work (30 s before).
func (g *EnvoyMaglev) fill(size uint64) error {
	var sum float64
	for _, n := range g.nodes {
		sum += n.Weight
	}
	entries := make([]envoyEntry, len(g.nodes))
	maxW := 0.0
	for i, n := range g.nodes {
		entries[i] = envoyEntry{
			offset: xxhash.Sum64String(n.ID) % size,
			skip:   chash.XXHashSeed(1).Sum64String(n.ID)%(size-1) + 1,
			weight: n.Weight / sum,
		}
		maxW = math.Max(maxW, entries[i].weight)
	}
	taken := make([]bool, size)
	filled := uint64(0)
	budget := size * uint64(2*bits.Len64(size)+64)
	checks := uint64(0)
	for iteration := uint32(1); filled < size; iteration++ {
		if checks += uint64(len(entries)); checks > maxEnvoyChecks {
			return fmt.Errorf("%w: an Envoy Maglev table of %d entries over %d hosts needs more than %d host checks: weights too far apart for the table",
				chash.ErrTooLarge, size, len(entries), maxEnvoyChecks)
		}
		for i := 0; i < len(entries) && filled < size; i++ {
			e := &entries[i]
			if float64(float64(iteration)*e.weight) < e.target {
				continue
			}
			e.target = float64(e.target + maxW)
			c := (e.offset + e.skip*e.next) % size
			probes := uint64(0)
			for taken[c] {
				e.next++
				c = (e.offset + e.skip*e.next) % size
				probes++
			}
			if probes > budget {
				return fmt.Errorf("%w: an Envoy Maglev table of %d hosts needs more than %d probes to fill: host keys whose hashes collide",
					chash.ErrTooLarge, len(entries), size*uint64(2*bits.Len64(size)+64))
			}
			budget -= probes
			taken[c] = true
			g.table[c] = uint32(i)
			e.next++
			filled++
		}
	}
	return nil
}

// maxEnvoyChecks bounds the host checks of an Envoy Maglev build: a turn
// checks every host, and 1<<28 checks take about a quarter of a second.
const maxEnvoyChecks = 1 << 28

// Entries returns how many table entries each node owns, in Nodes order.
func (g *EnvoyMaglev) Entries() []int {
	if g == nil {
		return nil
	}
	out := make([]int, len(g.nodes))
	for _, n := range g.table {
		out[n]++
	}
	return out
}

// TableSize returns the number of table entries.
func (g *EnvoyMaglev) TableSize() int {
	if g == nil {
		return 0
	}
	return len(g.table)
}

// LookupHash returns the host for a request hash computed elsewhere.
func (g *EnvoyMaglev) LookupHash(h uint64) chash.Node {
	if g.Len() == 0 {
		return chash.Node{}
	}
	return g.nodes[g.table[h%uint64(len(g.table))]]
}

// Lookup returns the host Envoy picks for the request whose hash key is key.
func (g *EnvoyMaglev) Lookup(key []byte) chash.Node { return g.LookupHash(xxhash.Sum64(key)) }

// LookupString is Lookup for a string key, without copying it.
func (g *EnvoyMaglev) LookupString(key string) chash.Node {
	return g.LookupHash(xxhash.Sum64String(key))
}

// AppendTopK appends up to k distinct hosts in the order of Envoy's retry
// attempts for key.
func (g *EnvoyMaglev) AppendTopK(dst []chash.Node, key []byte, k int) []chash.Node {
	return g.appendTopK(dst, xxhash.Sum64(key), k)
}

// AppendTopKString is AppendTopK for a string key, without copying it.
func (g *EnvoyMaglev) AppendTopKString(dst []chash.Node, key string, k int) []chash.Node {
	return g.appendTopK(dst, xxhash.Sum64String(key), k)
}

func (g *EnvoyMaglev) appendTopK(dst []chash.Node, h uint64, k int) []chash.Node {
	k = place.ClampK(k, g.Len())
	if k == 0 {
		return dst
	}
	start := len(dst)
	// Past place.BigK nodes a bitmap records who is in, so a list of
	// every host costs O(n), not O(n·k) scans (173 ms at 4,000 hosts).
	seen := place.NewPicked(len(g.nodes), k)
	for a := 0; a < 8*len(g.nodes) && len(dst)-start < k; a++ {
		x := h
		if a > 0 {
			x ^= -uint64(a) // Envoy: hash ^= ~0ULL - attempt + 1
		}
		if i := int(g.table[x%uint64(len(g.table))]); take(seen, i, g.nodes[i].ID, dst[start:]) {
			dst = place.Append(dst, &g.nodes[i])
		}
	}
	for i := 0; i < len(g.nodes) && len(dst)-start < k; i++ {
		if take(seen, i, g.nodes[i].ID, dst[start:]) {
			dst = place.Append(dst, &g.nodes[i])
		}
	}
	seen.Release()
	return dst
}

// Nodes returns a copy of the hosts, ascending by hash key.
func (g *EnvoyMaglev) Nodes() []chash.Node {
	if g == nil {
		return nil
	}
	return slices.Clone(g.nodes)
}

// Len returns the number of hosts.
func (g *EnvoyMaglev) Len() int {
	if g == nil {
		return 0
	}
	return len(g.nodes)
}
