package compat

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"slices"
	"strconv"
	"strings"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/internal/place"
)

// nginxPointsPerWeight is how many points nginx's consistent hash gives a
// server per unit of weight.
const nginxPointsPerWeight = 160

// maxNginxWeight bounds a server's weight so that its points stay within
// the ring's size limit.
const maxNginxWeight = place.MaxPoints / nginxPointsPerWeight

// NginxConsistent places keys exactly as nginx's upstream directive
// "hash $key consistent" does (ngx_http_upstream_hash_module, compatible
// with Cache::Memcached::Fast), for an upstream whose servers are all up.
//
// Node IDs are the server parameters exactly as written in the upstream
// block, in the same order: "10.0.0.1:8080", "cache1.example:11211",
// "unix:/run/app.sock". nginx splits an ID into host and port at its last
// ':' when only digits follow (otherwise the whole ID is the host, with an
// empty port; a "unix:" prefix is dropped and the rest is the host), and a
// server of weight w gets 160 × w points: the first is the CRC-32 of host,
// a zero byte, port and the four bytes 0, each next one the CRC-32 of the
// same prefix followed by the previous point in little-endian bytes. A key
// belongs to the first point at or after the CRC-32 of the key, wrapping
// around. Where points coincide nginx keeps one, that of the server listed
// first (its sort is glibc's stable qsort), and so does NginxConsistent.
//
// Two of nginx's own cases are left to the caller. A server given by a host
// name that resolves to several addresses becomes several peers sharing the
// name's points, which nginx then balances by weighted round robin; list
// such a server once, by name, and NginxConsistent places keys on the name.
// An empty key, and an upstream of a single server, make nginx fall back to
// round robin; NginxConsistent places the empty key by the CRC-32 of
// nothing. Weights must be whole numbers from 1 to 104857.
//
// AppendTopK continues clockwise over distinct servers, which is the order
// in which nginx tries the next upstream when one fails. Lookup is a CRC-32
// and a binary search over the points, with no allocation. An
// NginxConsistent is immutable and safe for concurrent use; Nodes are
// reported in the given order. The zero NginxConsistent and a nil
// *NginxConsistent place no key: lookups return the zero Node, AppendTopK
// appends nothing and Len is 0 (build one with NewNginxConsistent).
type NginxConsistent struct {
	nodes []chash.Node
	ring  pointRing
}

var _ chash.Placer = (*NginxConsistent)(nil)

// NewNginxConsistent returns the placement of "hash $key consistent" over
// the servers of an upstream block, in the order written. It fails if
// servers is empty, an ID is empty or repeated, or a weight is not a whole
// number from 1 to 104857.
func NewNginxConsistent(servers []chash.Node) (*NginxConsistent, error) {
	ns, err := compatNodes("nginx", servers, maxNginxWeight)
	if err != nil {
		return nil, err
	}
	// Summed in 64 bits and checked before any allocation: 257 heavy
	// servers overflow a 32-bit int.
	var total int64
	for _, n := range ns {
		total += nginxPointsPerWeight * int64(n.Weight)
	}
	if total > place.MaxPoints {
		return nil, fmt.Errorf("%w: nginx ring of %d points (limit %d)", chash.ErrTooLarge, total, place.MaxPoints)
	}
	points := make([]point, 0, total)
	for i, n := range ns {
		points = appendNginxPoints(points, n, uint32(i))
	}
	return &NginxConsistent{nodes: ns, ring: newPointRing(points, keepFirst)}, nil
}

// appendNginxPoints appends the 160 × weight points of server n.
func appendNginxPoints(dst []point, n chash.Node, i uint32) []point {
	host, port := nginxHostPort(n.ID)
	base := crc32.Update(0, crc32.IEEETable, []byte(host))
	base = crc32.Update(base, crc32.IEEETable, []byte{0})
	base = crc32.Update(base, crc32.IEEETable, []byte(port))
	var prev [4]byte
	for j := 0; j < nginxPointsPerWeight*int(n.Weight); j++ {
		h := crc32.Update(base, crc32.IEEETable, prev[:])
		dst = append(dst, point{pos: uint64(h), node: i})
		binary.LittleEndian.PutUint32(prev[:], h)
	}
	return dst
}

// nginxHostPort splits a server parameter as nginx's consistent hash does.
func nginxHostPort(server string) (host, port string) {
	if len(server) >= 5 && strings.EqualFold(server[:5], "unix:") {
		return server[5:], ""
	}
	for j := len(server) - 1; j >= 0; j-- {
		c := server[j]
		if c == ':' {
			return server[:j], server[j+1:]
		}
		if c < '0' || c > '9' {
			break
		}
	}
	return server, ""
}

// Lookup returns the server nginx proxies a request with this key to.
func (p *NginxConsistent) Lookup(key []byte) chash.Node {
	if p.Len() == 0 {
		return chash.Node{}
	}
	return p.nodes[p.ring.owner[p.ring.search(uint64(crc32.ChecksumIEEE(key)))]]
}

// LookupString is Lookup for a string key, without copying it.
func (p *NginxConsistent) LookupString(key string) chash.Node { return p.Lookup(stringBytes(key)) }

// AppendTopK appends up to k distinct servers met clockwise from key.
func (p *NginxConsistent) AppendTopK(dst []chash.Node, key []byte, k int) []chash.Node {
	if p.Len() == 0 {
		return dst
	}
	return p.ring.appendWalk(dst, p.nodes, p.ring.search(uint64(crc32.ChecksumIEEE(key))), k)
}

// AppendTopKString is AppendTopK for a string key, without copying it.
func (p *NginxConsistent) AppendTopKString(dst []chash.Node, key string, k int) []chash.Node {
	return p.AppendTopK(dst, stringBytes(key), k)
}

// Nodes returns a copy of the servers, in the given order.
func (p *NginxConsistent) Nodes() []chash.Node {
	if p == nil {
		return nil
	}
	return slices.Clone(p.nodes)
}

// Len returns the number of servers.
func (p *NginxConsistent) Len() int {
	if p == nil {
		return 0
	}
	return len(p.nodes)
}

// nginxHashTries is how many rehashes nginx's plain hash makes before it
// falls back to round robin.
const nginxHashTries = 20

// NginxHash places keys exactly as nginx's upstream directive "hash $key"
// (without consistent) does, for an upstream whose servers are all up. Its
// hash is Cache::Memcached's: bits 16 to 30 of the CRC-32 of the key, taken
// modulo the total weight, choose a server by walking the servers in the
// order written, each covering as many values as its weight. It is not
// consistent: adding or removing a server moves most keys.
//
// Node IDs are the servers as written in the upstream block; only their
// order and weights matter to the placement. Weights must be whole numbers
// from 1 to 1<<20. As with [NginxConsistent], nginx itself sends empty keys,
// and every key of a single-server upstream, by round robin.
//
// AppendTopK follows nginx's retries when a server fails: each next try
// hashes the try number's decimal digits followed by the key, adds bits 16
// to 30 of that CRC-32 to the running value, and skips servers already
// tried; after 20 skips nginx falls back to round robin, and AppendTopK to
// the remaining servers in order. Lookup is one CRC-32 and a bisection of
// the servers' running weights (O(log n)), with no allocation. An NginxHash is immutable and safe
// for concurrent use; Nodes are reported in the given order. The zero
// NginxHash and a nil *NginxHash place no key: lookups return the zero Node,
// AppendTopK appends nothing and Len is 0 (build one with NewNginxHash).
type NginxHash struct {
	nodes []chash.Node
	ends  []uint64 // the first value past each server's, in order
	total uint64
}

var _ chash.Placer = (*NginxHash)(nil)

// NewNginxHash returns the placement of "hash $key" over the servers of an
// upstream block, in the order written. It fails if servers is empty, an ID
// is empty or repeated, or a weight is not a whole number from 1 to 1<<20.
func NewNginxHash(servers []chash.Node) (*NginxHash, error) {
	ns, err := compatNodes("nginx", servers, 1<<20)
	if err != nil {
		return nil, err
	}
	p := &NginxHash{nodes: ns, ends: make([]uint64, len(ns))}
	for i, n := range ns {
		p.total += uint64(n.Weight)
		p.ends[i] = p.total
	}
	return p, nil
}

// cacheMemcachedHash is Cache::Memcached's 15-bit hash of a CRC-32.
func cacheMemcachedHash(crc uint32) uint64 { return uint64(crc>>16) & 0x7fff }

// at returns the server that covers value h modulo the total weight: the
// one nginx's walk over the weights reaches, found by bisecting their
// running sums.
func (p *NginxHash) at(h uint64) int {
	w := h % p.total
	i, _ := slices.BinarySearch(p.ends, w+1)
	return i
}

// Lookup returns the server nginx proxies a request with this key to.
func (p *NginxHash) Lookup(key []byte) chash.Node {
	if p.Len() == 0 {
		return chash.Node{}
	}
	return p.nodes[p.at(cacheMemcachedHash(crc32.ChecksumIEEE(key)))]
}

// LookupString is Lookup for a string key, without copying it.
func (p *NginxHash) LookupString(key string) chash.Node { return p.Lookup(stringBytes(key)) }

// AppendTopK appends up to k distinct servers in the order nginx tries
// them for key.
func (p *NginxHash) AppendTopK(dst []chash.Node, key []byte, k int) []chash.Node {
	k = place.ClampK(k, p.Len())
	if k == 0 {
		return dst
	}
	start := len(dst)
	seen := place.NewPicked(len(p.nodes), k)
	var h uint64
	var digits [20]byte
	skips := 0
	for rehash := uint64(0); len(dst)-start < k && skips <= nginxHashTries; rehash++ {
		crc := uint32(0)
		if rehash > 0 {
			crc = crc32Small(strconv.AppendUint(digits[:0], rehash, 10))
		}
		h += cacheMemcachedHash(crc32.Update(crc, crc32.IEEETable, key))
		if i := p.at(h); take(seen, i, p.nodes[i].ID, dst[start:]) {
			dst = place.Append(dst, &p.nodes[i])
		} else {
			skips++
		}
	}
	for i := 0; i < len(p.nodes) && len(dst)-start < k; i++ {
		if take(seen, i, p.nodes[i].ID, dst[start:]) {
			dst = place.Append(dst, &p.nodes[i])
		}
	}
	seen.Release()
	return dst
}

// AppendTopKString is AppendTopK for a string key, without copying it.
func (p *NginxHash) AppendTopKString(dst []chash.Node, key string, k int) []chash.Node {
	return p.AppendTopK(dst, stringBytes(key), k)
}

// Nodes returns a copy of the servers, in the given order.
func (p *NginxHash) Nodes() []chash.Node {
	if p == nil {
		return nil
	}
	return slices.Clone(p.nodes)
}

// Len returns the number of servers.
func (p *NginxHash) Len() int {
	if p == nil {
		return 0
	}
	return len(p.nodes)
}

// Positional reports true: the placement depends on the order of the
// servers as written (a key's value modulo the total weight is walked over them in order), so code that builds it from a list whose order it does not control
// must fix the order first (see [chash.IsPositional]).
func (p *NginxHash) Positional() bool { return true }

// crc32Small is the IEEE CRC-32 of a few bytes, computed byte by byte so
// that a buffer on the caller's stack does not escape into crc32.Update.
func crc32Small(b []byte) uint32 {
	crc := ^uint32(0)
	for _, c := range b {
		crc = crc32.IEEETable[byte(crc)^c] ^ crc>>8
	}
	return ^crc
}
