package chashgrpc

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/cespare/xxhash/v2"
	"github.com/keyplace/chash"
)

// Ring sizes as grpc-go's ring_hash_experimental defaults and caps them
// (its minRingSize and maxRingSize defaults, and GRPC_RING_HASH_CAP's
// default of 4096, which caps both).
const (
	defaultMinRingSize = 1024
	defaultMaxRingSize = 4096
	ringSizeCap        = 4096
)

// grpcRing is a chash.Placer that places keys exactly as grpc-go's
// ring_hash_experimental does for the same endpoints (gRFC A42, A61, A76),
// so a fleet can move to this balancer without moving keys. The facts it
// reproduces, as grpc-go's balancer/ringhash computes them:
//
//   - weights are normalised to sum to 1, and the ring's scale is
//     min(ceil(minWeight × minRingSize) / minWeight, maxRingSize);
//   - walking the endpoints in ascending hash-key order, entries are added
//     while the running count is below the running target scale × weight,
//     entry i of an endpoint hashing xxhash64(hashKey + "_" + i);
//   - a request hash h (xxhash64 of the key) goes to the first entry whose
//     hash is >= h, wrapping to the first entry.
//
// Lookups are a binary search, O(log ring size), and do not allocate.
type grpcRing struct {
	nodes  []chash.Node // ascending by ID
	hashes []uint64     // entry hashes, ascending
	owner  []int32      // owner[i] is the node of hashes[i]
}

// newGRPCRing builds the ring for nodes whose weights are whole numbers
// (gRPC endpoint weights are uint32; zero means 1).
func newGRPCRing(nodes []chash.Node, minSize, maxSize uint64) (*grpcRing, error) {
	if len(nodes) == 0 {
		return nil, fmt.Errorf("%w: ring_hash", chash.ErrNoNodes)
	}
	minSize, maxSize = min(minSize, ringSizeCap), min(maxSize, ringSizeCap)
	if minSize == 0 || maxSize == 0 || minSize > maxSize {
		return nil, fmt.Errorf("%w: ring_hash ring sizes min %d, max %d", chash.ErrInvalidOption, minSize, maxSize)
	}
	r := &grpcRing{nodes: slices.Clone(nodes)}
	slices.SortFunc(r.nodes, func(a, b chash.Node) int { return cmpString(a.ID, b.ID) })
	var sum uint64
	for i, n := range r.nodes {
		if i > 0 && n.ID == r.nodes[i-1].ID {
			return nil, fmt.Errorf("%w: %q", chash.ErrDuplicateID, n.ID)
		}
		w := n.Weight
		if w == 0 {
			w = 1
		}
		if w < 1 || w > math.MaxUint32 || w != math.Trunc(w) {
			return nil, fmt.Errorf("%w: %q has weight %v (ring_hash wants a whole number from 1 to 2^32-1)", chash.ErrInvalidWeight, n.ID, n.Weight)
		}
		r.nodes[i].Weight = w
		sum += uint64(w)
	}
	minW := 1.0
	for _, n := range r.nodes {
		minW = math.Min(minW, n.Weight/float64(sum))
	}
	scale := math.Min(math.Ceil(minW*float64(minSize))/minW, float64(maxSize))
	var cur, target float64
	for i, n := range r.nodes {
		target += scale * (n.Weight / float64(sum))
		for idx := 0; cur < target; idx++ {
			r.hashes = append(r.hashes, xxhash.Sum64String(n.ID+"_"+strconv.Itoa(idx)))
			r.owner = append(r.owner, int32(i))
			cur++
		}
	}
	r.sort()
	return r, nil
}

// sort orders the entries by hash, keeping owners beside their hashes.
func (r *grpcRing) sort() {
	order := make([]int, len(r.hashes))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case r.hashes[a] < r.hashes[b]:
			return -1
		case r.hashes[a] > r.hashes[b]:
			return 1
		}
		return 0
	})
	h, o := make([]uint64, len(order)), make([]int32, len(order))
	for i, j := range order {
		h[i], o[i] = r.hashes[j], r.owner[j]
	}
	r.hashes, r.owner = h, o
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// find returns the first entry whose hash is >= h, or 0 past the last.
func (r *grpcRing) find(h uint64) int {
	i, _ := slices.BinarySearch(r.hashes, h)
	if i == len(r.hashes) {
		return 0
	}
	return i
}

func (r *grpcRing) Lookup(key []byte) chash.Node {
	return r.nodes[r.owner[r.find(xxhash.Sum64(key))]]
}

func (r *grpcRing) LookupString(key string) chash.Node {
	return r.nodes[r.owner[r.find(xxhash.Sum64String(key))]]
}

func (r *grpcRing) AppendTopK(dst []chash.Node, key []byte, k int) []chash.Node {
	return r.appendTopK(dst, xxhash.Sum64(key), k)
}

func (r *grpcRing) AppendTopKString(dst []chash.Node, key string, k int) []chash.Node {
	return r.appendTopK(dst, xxhash.Sum64String(key), k)
}

// appendTopK walks the ring clockwise from h, as ring_hash does when it
// skips an endpoint in TRANSIENT_FAILURE, appending each node the first
// time it is met.
func (r *grpcRing) appendTopK(dst []chash.Node, h uint64, k int) []chash.Node {
	k = min(max(k, 0), len(r.nodes))
	start, i := len(dst), r.find(h)
	for walked := 0; len(dst)-start < k && walked < len(r.hashes); walked++ {
		if n := r.nodes[r.owner[i]]; absent(dst[start:], n.ID) {
			dst = append(dst, n)
		}
		if i++; i == len(r.hashes) {
			i = 0
		}
	}
	// Where maxRingSize caps the scale, a very light node can own no
	// entry: ring_hash never picks it, so it comes last.
	for j := 0; len(dst)-start < k && j < len(r.nodes); j++ {
		if absent(dst[start:], r.nodes[j].ID) {
			dst = append(dst, r.nodes[j])
		}
	}
	return dst
}

func absent(nodes []chash.Node, id string) bool {
	for _, n := range nodes {
		if n.ID == id {
			return false
		}
	}
	return true
}

func (r *grpcRing) Nodes() []chash.Node { return slices.Clone(r.nodes) }

func (r *grpcRing) Len() int { return len(r.nodes) }
