package compat

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/cespare/xxhash/v2"
	"github.com/keyplace/chash"
)

// Ring sizes of the ring_hash policies.
const (
	// GRPCMinRingSize and GRPCMaxRingSize are grpc-go's ring_hash defaults;
	// grpc-go also caps both at GRPC_RING_HASH_CAP, 4096 unless set.
	GRPCMinRingSize = 1024
	GRPCMaxRingSize = 4096
	// EnvoyMinRingSize and EnvoyMaxRingSize are Envoy's RingHashLbConfig
	// defaults.
	EnvoyMinRingSize = 1024
	EnvoyMaxRingSize = 8 << 20
)

// RingHash places keys exactly as the ring_hash load-balancing policy of
// grpc-go ("ring_hash_experimental", gRFC A42) or of Envoy does, for
// endpoints that are all ready. Build it with [NewGRPCRingHash] or
// [NewEnvoyRingHash]; the two differ only in the order in which they lay
// out the endpoints' entries.
//
// Node IDs are the endpoints' hash keys: the address as the resolver
// reports it ("10.0.0.1:50051"; for Envoy the host's address string, or its
// host name with use_hostname_for_hashing), or the hash key set in the
// endpoint's metadata. Weights are whole numbers (grpc-go's weight
// attribute, Envoy's load_balancing_weight), at most 1<<32-1 in total.
//
// The ring is built as both systems build it: each weight is normalised to
// w/Σw; scale = min(ceil(minWeight × minRingSize) / minWeight, maxRingSize)
// for the smallest normalised weight; then, walking the endpoints in order
// (grpc-go sorts them by hash key, Envoy keeps the configured order) and
// accumulating target += scale × weight in IEEE doubles (each product
// rounded, as on amd64), each endpoint adds entries xxhash64(key + "_" + i)
// for i = 0, 1, ... while the count of entries is below the target. The
// entries are sorted by hash; a request hash h picks the first entry whose
// hash is >= h, wrapping to the first. Both systems sort with an unstable
// sort, so two entries with equal 64-bit hashes (never seen in practice)
// are in an unspecified order; RingHash puts the earlier endpoint's first.
//
// Lookup hashes the key with xxhash64 (seed 0), which is the request hash
// grpc-go computes from the requestHashHeader's value (several values are
// joined with ","), and Envoy's for a header hash policy; a service that
// computes its own request hash can look it up with LookupHash.
//
// AppendTopK continues clockwise over distinct endpoints, the order in
// which both systems skip unavailable ones. Lookup is one hash and a binary
// search over the ring, with no allocation. A RingHash is immutable and
// safe for concurrent use; Nodes are reported in ring-building order. The
// zero RingHash and a nil *RingHash place no key: lookups return the zero
// Node, AppendTopK appends nothing and Len is 0 (build one with
// NewGRPCRingHash or NewEnvoyRingHash).
type RingHash struct {
	nodes    []chash.Node
	ring     pointRing
	min, max int     // the ring sizes it was built with, for Derive
	sorted   bool    // grpc-go's form: endpoints sorted by hash key
	scale    float64 // the ring's size before rounding, for Fingerprint
}

var _ chash.Placer = (*RingHash)(nil)

// NewGRPCRingHash returns grpc-go's ring_hash placement over endpoints,
// with the ring sizes of its LB config after grpc-go's cap (0 means the
// defaults, GRPCMinRingSize and GRPCMaxRingSize). It fails if endpoints is
// empty, a hash key is empty or repeated, a weight is not a whole number,
// the weights sum past 1<<32-1, or the sizes are not 1 <= min <= max <= 1<<23.
func NewGRPCRingHash(endpoints []chash.Node, minRingSize, maxRingSize int) (*RingHash, error) {
	ns, err := compatNodes("ring_hash", endpoints, math.MaxUint32)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(ns, byID)
	r, err := newRingHash(ns, orDefault(minRingSize, GRPCMinRingSize), orDefault(maxRingSize, GRPCMaxRingSize))
	if r != nil {
		r.sorted = true
	}
	return r, err
}

// NewEnvoyRingHash returns Envoy's ring_hash placement over hosts in the
// configured order, with the xxHash hash function and the given ring sizes
// (0 means the defaults, EnvoyMinRingSize and EnvoyMaxRingSize). It fails
// as NewGRPCRingHash does.
func NewEnvoyRingHash(hosts []chash.Node, minRingSize, maxRingSize int) (*RingHash, error) {
	ns, err := compatNodes("ring_hash", hosts, math.MaxUint32)
	if err != nil {
		return nil, err
	}
	return newRingHash(ns, orDefault(minRingSize, EnvoyMinRingSize), orDefault(maxRingSize, EnvoyMaxRingSize))
}

func orDefault(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

func newRingHash(ns []chash.Node, minSize, maxSize int) (*RingHash, error) {
	if minSize < 1 || maxSize < minSize || maxSize > 8<<20 {
		return nil, fmt.Errorf("%w: ring_hash ring sizes %d to %d: want 1 <= min <= max <= %d", chash.ErrInvalidOption, minSize, maxSize, 8<<20)
	}
	var sum uint64
	for _, n := range ns {
		sum += uint64(n.Weight)
	}
	if sum > math.MaxUint32 {
		return nil, fmt.Errorf("%w: ring_hash weights sum to %d (limit %d)", chash.ErrInvalidWeight, sum, uint64(math.MaxUint32))
	}
	minWeight := 1.0
	for _, n := range ns {
		minWeight = math.Min(minWeight, n.Weight/float64(sum))
	}
	scale := math.Min(math.Ceil(minWeight*float64(minSize))/minWeight, float64(maxSize))
	points := make([]point, 0, int(math.Ceil(scale)))
	var current, target float64
	var buf []byte
	for i, n := range ns {
		target += float64(scale * (n.Weight / float64(sum)))
		for idx := 0; current < target; idx++ {
			buf = strconv.AppendInt(append(append(buf[:0], n.ID...), '_'), int64(idx), 10)
			points = append(points, point{pos: xxhash.Sum64(buf), node: uint32(i)})
			current++
		}
	}
	return &RingHash{nodes: ns, ring: newPointRing(points, keepAll), min: minSize, max: maxSize, scale: scale}, nil
}

// LookupHash returns the endpoint for a request hash computed elsewhere.
func (r *RingHash) LookupHash(h uint64) chash.Node {
	if r.Len() == 0 {
		return chash.Node{}
	}
	return r.nodes[r.ring.owner[r.ring.search(h)]]
}

// Lookup returns the endpoint for the request whose hash key is key.
func (r *RingHash) Lookup(key []byte) chash.Node { return r.LookupHash(xxhash.Sum64(key)) }

// LookupString is Lookup for a string key, without copying it.
func (r *RingHash) LookupString(key string) chash.Node { return r.LookupHash(xxhash.Sum64String(key)) }

// AppendTopK appends up to k distinct endpoints met clockwise from key.
func (r *RingHash) AppendTopK(dst []chash.Node, key []byte, k int) []chash.Node {
	if r.Len() == 0 {
		return dst
	}
	return r.ring.appendWalk(dst, r.nodes, r.ring.search(xxhash.Sum64(key)), k)
}

// AppendTopKString is AppendTopK for a string key, without copying it.
func (r *RingHash) AppendTopKString(dst []chash.Node, key string, k int) []chash.Node {
	if r.Len() == 0 {
		return dst
	}
	return r.ring.appendWalk(dst, r.nodes, r.ring.search(xxhash.Sum64String(key)), k)
}

// Entries returns the number of entries on the ring.
func (r *RingHash) Entries() int {
	if r == nil {
		return 0
	}
	return len(r.ring.pos)
}

// Nodes returns a copy of the endpoints: ascending by hash key for grpc-go,
// in the configured order for Envoy.
func (r *RingHash) Nodes() []chash.Node {
	if r == nil {
		return nil
	}
	return slices.Clone(r.nodes)
}

// Len returns the number of endpoints.
func (r *RingHash) Len() int {
	if r == nil {
		return 0
	}
	return len(r.nodes)
}
