package compat

import (
	"slices"

	"github.com/cespare/xxhash/v2"
	"github.com/keyplace/chash"
)

// Caddy places keys exactly as the hashing selection policies of Caddy's
// reverse proxy do (ip_hash, client_ip_hash, uri_hash, query and header
// with a non-empty value): highest random weight, where upstream u scores a
// key by xxhash64(dial + key), the upstream's dial address as configured
// ("10.0.0.1:8080") followed by the key, and the first upstream with the
// strictly highest score wins. The key is the string the policy hashes:
// the client IP ("10.1.2.3"), the request URI ("/a?b=1"), or the values of
// the query parameter or header joined with ",".
//
// Node IDs are the dial addresses exactly as written, in the configured
// order (which decides only exact ties). Caddy's hashing has no weights, so
// every weight must be 1. Caddy skips unavailable upstreams; Caddy places
// over every member, like a pool that is all healthy. (Caddy also returns
// no upstream if every score is 0, which no real key does; Caddy returns
// the first.)
//
// AppendTopK continues in descending score order: where Caddy sends the key
// when the upstreams ranked before are down; it costs k passes over the
// upstreams. Lookup is O(n): one xxhash64
// per upstream of its precomputed prefix state and the key, with no
// allocation. A Caddy is immutable and safe for concurrent use; Nodes are
// reported in the given order. The zero Caddy and a nil *Caddy place no key:
// lookups return the zero Node, AppendTopK appends nothing and Len is 0
// (build one with NewCaddy).
type Caddy struct {
	nodes    []chash.Node
	prefixes []xxhash.Digest // each upstream's dial address, written
}

var _ chash.Placer = (*Caddy)(nil)

// NewCaddy returns the placement of Caddy's hashing selection policies over
// the upstreams' dial addresses, in the configured order. It fails if
// upstreams is empty, an address is empty or repeated, or a weight is not 1.
func NewCaddy(upstreams []chash.Node) (*Caddy, error) {
	ns, err := compatNodes("caddy", upstreams, 1)
	if err != nil {
		return nil, err
	}
	c := &Caddy{nodes: ns, prefixes: make([]xxhash.Digest, len(ns))}
	for i, n := range ns {
		c.prefixes[i].Reset()
		c.prefixes[i].WriteString(n.ID)
	}
	return c, nil
}

func (c *Caddy) score(i int, key []byte) uint64 {
	d := c.prefixes[i]
	d.Write(key)
	return d.Sum64()
}

func (c *Caddy) pick(key []byte) int {
	best, bestScore := 0, c.score(0, key)
	for i := 1; i < len(c.nodes); i++ {
		if s := c.score(i, key); s > bestScore {
			best, bestScore = i, s
		}
	}
	return best
}

// Lookup returns the upstream Caddy selects for key.
func (c *Caddy) Lookup(key []byte) chash.Node {
	if c.Len() == 0 {
		return chash.Node{}
	}
	return c.nodes[c.pick(key)]
}

// LookupString is Lookup for a string key, without copying it.
func (c *Caddy) LookupString(key string) chash.Node { return c.Lookup(stringBytes(key)) }

// AppendTopK appends up to k upstreams in descending score order.
func (c *Caddy) AppendTopK(dst []chash.Node, key []byte, k int) []chash.Node {
	if c.Len() == 0 {
		return dst
	}
	return appendByScore(dst, c.nodes, k, func(i int) uint64 { return c.score(i, key) })
}

// AppendTopKString is AppendTopK for a string key, without copying it.
func (c *Caddy) AppendTopKString(dst []chash.Node, key string, k int) []chash.Node {
	return c.AppendTopK(dst, stringBytes(key), k)
}

// Nodes returns a copy of the upstreams, in the given order.
func (c *Caddy) Nodes() []chash.Node {
	if c == nil {
		return nil
	}
	return slices.Clone(c.nodes)
}

// Len returns the number of upstreams.
func (c *Caddy) Len() int {
	if c == nil {
		return 0
	}
	return len(c.nodes)
}
