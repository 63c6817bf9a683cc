package compat

import (
	"fmt"
	"hash/crc32"
	"slices"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/internal/place"
)

// gomemcacheKeyLimit is how many bytes of a key gomemcache's ServerList
// hashes: it copies the key into a 256-byte buffer first.
const gomemcacheKeyLimit = 256

// Gomemcache places keys exactly as github.com/bradfitz/gomemcache's
// ServerList does: the IEEE CRC-32 of the key modulo the number of entries
// in the server list, in list order. A server listed twice has two
// entries, which is how ServerList weights servers. Only the first 256
// bytes of a key are hashed (memcached keys are at most 250 bytes); a list
// of one server takes every key.
//
// Node IDs are the server strings as given to ServerList.SetServers
// ("10.0.0.1:11211", "/var/run/memcached.sock"): the placement depends only
// on their order and repetition, never on their spelling, but keeping the
// same strings keeps Nodes and Diff readable.
//
// CRC-32 mod n is not consistent: adding or removing a server moves about
// (n-1)/n of the keys, and reordering the list moves them too. Gomemcache
// exists to make a switch to chash move nothing; [Diff] from it to a
// [Ring] or [Rendezvous] shows the one-time cost of leaving it.
//
// AppendTopK continues with the following distinct servers in list order,
// wrapping (ServerList itself has no failover). Lookup is one CRC-32 and
// one division, with no allocation. A Gomemcache is immutable and safe for
// concurrent use; Nodes reports each distinct server once, in order of
// first appearance, with its number of entries as its weight. The zero
// Gomemcache and a nil *Gomemcache place no key: lookups return the zero
// Node, AppendTopK appends nothing and Len is 0 (build one with
// NewGomemcache or NewGomemcacheList).
type Gomemcache struct {
	nodes []chash.Node // distinct servers, in order of first appearance
	slots []uint32     // the list: slots[i] is the node of entry i
}

var _ chash.Placer = (*Gomemcache)(nil)

// NewGomemcache returns the placement of a ServerList whose list holds each
// node Weight times in a row, in the given order: {a, 2}, {b, 1} is the
// list a, a, b. Weights must be whole numbers; the list may hold at most
// 1<<24 entries. For a list whose repeats are not adjacent, use
// [NewGomemcacheList].
func NewGomemcache(nodes []chash.Node) (*Gomemcache, error) {
	ns, err := compatNodes("gomemcache", nodes, place.MaxPoints)
	if err != nil {
		return nil, err
	}
	// Summed in 64 bits and checked before any allocation: 129 nodes of
	// weight 2^24 overflow a 32-bit int.
	var total int64
	for _, n := range ns {
		total += int64(n.Weight)
	}
	if total > place.MaxPoints {
		return nil, fmt.Errorf("%w: gomemcache list of %d entries (limit %d)", chash.ErrTooLarge, total, place.MaxPoints)
	}
	g := &Gomemcache{nodes: ns, slots: make([]uint32, 0, total)}
	for i, n := range ns {
		for range int(n.Weight) {
			g.slots = append(g.slots, uint32(i))
		}
	}
	return g, nil
}

// NewGomemcacheList returns the placement of a ServerList given exactly
// these servers to SetServers, repeats included. It fails if the list is
// empty, holds an empty string or exceeds 1<<24 entries.
func NewGomemcacheList(servers ...string) (*Gomemcache, error) {
	if len(servers) == 0 {
		return nil, fmt.Errorf("%w (gomemcache)", chash.ErrNoNodes)
	}
	if len(servers) > place.MaxPoints {
		return nil, fmt.Errorf("%w: gomemcache list of %d entries (limit %d)", chash.ErrTooLarge, len(servers), place.MaxPoints)
	}
	g := &Gomemcache{slots: make([]uint32, len(servers))}
	index := make(map[string]uint32, len(servers))
	for i, s := range servers {
		if s == "" {
			return nil, fmt.Errorf("%w: server %d (gomemcache)", chash.ErrEmptyID, i)
		}
		j, ok := index[s]
		if !ok {
			j = uint32(len(g.nodes))
			index[s] = j
			g.nodes = append(g.nodes, chash.Node{ID: s})
		}
		g.nodes[j].Weight++
		g.slots[i] = j
	}
	return g, nil
}

// List returns the server list the placement reproduces, repeats included:
// what to give ServerList.SetServers.
func (g *Gomemcache) List() []string {
	if g == nil {
		return nil
	}
	out := make([]string, len(g.slots))
	for i, s := range g.slots {
		out[i] = g.nodes[s].ID
	}
	return out
}

func (g *Gomemcache) slot(key []byte) int {
	if len(g.slots) == 1 {
		return 0
	}
	if len(key) > gomemcacheKeyLimit {
		key = key[:gomemcacheKeyLimit]
	}
	return int(crc32.ChecksumIEEE(key) % uint32(len(g.slots)))
}

// Lookup returns the server ServerList.PickServer picks for key.
func (g *Gomemcache) Lookup(key []byte) chash.Node {
	if g.Len() == 0 {
		return chash.Node{}
	}
	return g.nodes[g.slots[g.slot(key)]]
}

// LookupString is Lookup for a string key, without copying it.
func (g *Gomemcache) LookupString(key string) chash.Node { return g.Lookup(stringBytes(key)) }

// AppendTopK appends up to k distinct servers for key: its own, then the
// next distinct servers of the list, wrapping around.
func (g *Gomemcache) AppendTopK(dst []chash.Node, key []byte, k int) []chash.Node {
	k = place.ClampK(k, g.Len())
	if k == 0 {
		return dst
	}
	start := len(dst)
	seen := place.NewPicked(len(g.nodes), k)
	for i, step := g.slot(key), 0; step < len(g.slots) && len(dst)-start < k; step++ {
		if j := int(g.slots[i]); take(seen, j, g.nodes[j].ID, dst[start:]) {
			dst = place.Append(dst, &g.nodes[j])
		}
		if i++; i == len(g.slots) {
			i = 0
		}
	}
	seen.Release()
	return dst
}

// AppendTopKString is AppendTopK for a string key, without copying it.
func (g *Gomemcache) AppendTopKString(dst []chash.Node, key string, k int) []chash.Node {
	return g.AppendTopK(dst, stringBytes(key), k)
}

// Nodes returns a copy of the distinct servers, in order of first
// appearance, each weighted by its number of entries.
func (g *Gomemcache) Nodes() []chash.Node {
	if g == nil {
		return nil
	}
	return slices.Clone(g.nodes)
}

// Len returns the number of distinct servers.
func (g *Gomemcache) Len() int {
	if g == nil {
		return 0
	}
	return len(g.nodes)
}

// Positional reports true: the placement depends on the order of the
// server list (a key's server is its entry modulo the list's length), so code that builds it from a list whose order it does not control
// must fix the order first (see [chash.IsPositional]).
func (g *Gomemcache) Positional() bool { return true }
