package compat

import (
	"fmt"
	"hash/crc32"
	"slices"
	"strconv"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/internal/place"
)

// GroupcacheReplicas is the replica count of groupcache's HTTPPool when
// HTTPPoolOptions.Replicas is zero.
const GroupcacheReplicas = 50

// Groupcache places keys exactly as github.com/golang/groupcache's
// consistenthash.Map does with its default hash (crc32.ChecksumIEEE), as
// HTTPPool uses it to pick the peer that owns a key.
//
// Node IDs are the peers exactly as given to HTTPPool.Set or Map.Add, in
// the same order ("http://10.0.0.1:8080"). Each peer gets replicas points,
// the CRC-32 of strconv.Itoa(i) + peer for i from 0; a key belongs to the
// first point at or after the CRC-32 of the key, wrapping around. When two
// points coincide, groupcache's map keeps the peer added last, and so does
// Groupcache: the order of the peers matters only then. groupcache has no
// weights, so every weight must be 1. The positions are compared as Go
// ints, which this reproduces on 64-bit platforms (where groupcache's
// int(uint32) is never negative).
//
// AppendTopK continues clockwise over distinct peers. Lookup is a CRC-32
// and a binary search over n × replicas points, with no allocation. A
// Groupcache is immutable and safe for concurrent use; Nodes are reported
// in the given order. The zero Groupcache and a nil *Groupcache place no
// key: lookups return the zero Node, AppendTopK appends nothing and Len is 0
// (build one with NewGroupcache).
type Groupcache struct {
	nodes    []chash.Node
	ring     pointRing
	replicas int
}

var _ chash.Placer = (*Groupcache)(nil)

// NewGroupcache returns the placement of a consistenthash.Map built with
// replicas points per peer (0 means GroupcacheReplicas, HTTPPool's
// default) and the default hash, with the peers added in the given order.
// It fails if peers is empty, a peer is empty or repeated, a weight is not
// 1, replicas is negative, or the ring would exceed 1<<24 points.
func NewGroupcache(peers []chash.Node, replicas int) (*Groupcache, error) {
	if replicas == 0 {
		replicas = GroupcacheReplicas
	}
	if replicas < 0 {
		return nil, fmt.Errorf("%w: groupcache replicas %d: want 1 or more", chash.ErrInvalidOption, replicas)
	}
	ns, err := compatNodes("groupcache", peers, 1)
	if err != nil {
		return nil, err
	}
	if replicas > place.MaxPoints/len(ns) {
		return nil, fmt.Errorf("%w: groupcache ring of %d × %d points (limit %d)", chash.ErrTooLarge, len(ns), replicas, place.MaxPoints)
	}
	points := make([]point, 0, len(ns)*replicas)
	var buf []byte
	for i, n := range ns {
		for r := 0; r < replicas; r++ {
			buf = append(strconv.AppendInt(buf[:0], int64(r), 10), n.ID...)
			points = append(points, point{pos: uint64(crc32.ChecksumIEEE(buf)), node: uint32(i)})
		}
	}
	return &Groupcache{nodes: ns, ring: newPointRing(points, keepLast), replicas: replicas}, nil
}

// Lookup returns the peer groupcache's Map.Get returns for key.
func (g *Groupcache) Lookup(key []byte) chash.Node {
	if g.Len() == 0 {
		return chash.Node{}
	}
	return g.nodes[g.ring.owner[g.ring.search(uint64(crc32.ChecksumIEEE(key)))]]
}

// LookupString is Lookup for a string key, without copying it.
func (g *Groupcache) LookupString(key string) chash.Node { return g.Lookup(stringBytes(key)) }

// AppendTopK appends up to k distinct peers met clockwise from key.
func (g *Groupcache) AppendTopK(dst []chash.Node, key []byte, k int) []chash.Node {
	if g.Len() == 0 {
		return dst
	}
	return g.ring.appendWalk(dst, g.nodes, g.ring.search(uint64(crc32.ChecksumIEEE(key))), k)
}

// AppendTopKString is AppendTopK for a string key, without copying it.
func (g *Groupcache) AppendTopKString(dst []chash.Node, key string, k int) []chash.Node {
	return g.AppendTopK(dst, stringBytes(key), k)
}

// Nodes returns a copy of the peers, in the given order.
func (g *Groupcache) Nodes() []chash.Node {
	if g == nil {
		return nil
	}
	return slices.Clone(g.nodes)
}

// Len returns the number of peers.
func (g *Groupcache) Len() int {
	if g == nil {
		return 0
	}
	return len(g.nodes)
}
