package chash

import (
	"crypto/md5"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"github.com/keyplace/chash/internal/place"
)

// KetamaVariant names a ketama implementation whose placement a [Ring]
// reproduces bit for bit when built with [WithKetama]. The implementations
// share one scheme and differ in the strings they hash and in how they
// round a server's share of points:
//
// A server's points come from MD5 digests of "NAME-k" for k = 0, 1, ...:
// each digest gives four points, its four little-endian 32-bit words. A
// key's position is the first little-endian word of MD5(key), and its
// owner is the server of the first point at or after that position,
// wrapping to the first point of the circle.
//
// The zero KetamaVariant means "not ketama": the ring's own placement.
type KetamaVariant uint8

const (
	// KetamaLibketama is the original libketama from Last.fm: NAME is the
	// node ID as given ("10.0.0.1:11211"), and a server of weight w out of
	// a total W among n servers gets floorf(w/W × 40 × n) digests, computed
	// partly in float64, which rounds differently from the others for some
	// n (at equal weights: 61, 122, 237, 244, 474, 488, ... get 39).
	KetamaLibketama KetamaVariant = iota + 1
	// KetamaLibmemcached is libmemcached with MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED
	// (PHP's OPT_LIBKETAMA_COMPATIBLE, the usual "ketama" of PHP, Python and
	// C clients) and twemproxy with "distribution: ketama" and "hash: md5".
	// NAME is the node ID without a ":11211" suffix ("10.0.0.1" for
	// "10.0.0.1:11211", "10.0.0.1:22122" unchanged), and the digest count is
	// floor(w/W × 160 / 4 × n) computed in float32, which gives 39 instead
	// of 40 at equal weights for n = 25, 47, 50, 55, 61, 71, 94, 100, ...
	KetamaLibmemcached
	// KetamaSpy is spymemcached's KetamaNodeLocator with the KETAMA_HASH
	// algorithm and the default SPYMEMCACHED key format. NAME is the node ID
	// as given, which must be what Java prints for the node's socket address
	// without its leading "/": "10.0.0.1:11211" for a server given by IP
	// address, "cache1/10.0.0.1:11211" for one given by host name. At equal
	// weights every server gets 40 digests; unequal weights use the
	// libmemcached count, as spymemcached's weighted locator does.
	KetamaSpy
)

var ketamaNames = [...]string{
	KetamaLibketama:    "libketama",
	KetamaLibmemcached: "libmemcached",
	KetamaSpy:          "spymemcached",
}

// String returns the variant's name, such as "libmemcached", or
// "KetamaVariant(N)" for a value that names no variant.
func (v KetamaVariant) String() string {
	if v > 0 && int(v) < len(ketamaNames) {
		return ketamaNames[v]
	}
	return fmt.Sprintf("KetamaVariant(%d)", v)
}

// maxKetamaWeight is the largest weight libmemcached can be given.
const maxKetamaWeight = math.MaxUint32

// ketamaPoints returns the sorted points of nodes under variant v. Unlike
// the ring's own points, each node's count depends on every weight.
func ketamaPoints(v KetamaVariant, nodes []Node) ([]point, error) {
	var total uint64
	equal := true
	for _, n := range nodes {
		if n.Weight != math.Trunc(n.Weight) || n.Weight > maxKetamaWeight {
			return nil, fmt.Errorf("%w: node %q has weight %v: ketama needs a whole number from 1 to %d", ErrInvalidWeight, n.ID, n.Weight, uint64(maxKetamaWeight))
		}
		total += uint64(n.Weight)
		equal = equal && n.Weight == nodes[0].Weight
	}
	// Two IDs that hash the same point names ("10.0.0.1:11211" and
	// "10.0.0.1" under libmemcached) would place all points on top of each
	// other, and one server would silently own nothing.
	names := make(map[string]string, len(nodes))
	for _, n := range nodes {
		name := v.pointName(n.ID)
		if other, ok := names[name]; ok {
			return nil, fmt.Errorf("%w: %q and %q are the same server to %v (both hash %q)", ErrDuplicateID, other, n.ID, v, name)
		}
		names[name] = n.ID
	}
	digests := make([]int, len(nodes))
	sum := 0
	for i, n := range nodes {
		digests[i] = v.digests(uint64(n.Weight), total, len(nodes), equal)
		sum += digests[i]
	}
	if 4*sum > place.MaxPoints {
		return nil, fmt.Errorf("%w: ketama ring of %d points (limit %d)", ErrTooLarge, 4*sum, place.MaxPoints)
	}
	points := make([]point, 0, 4*sum)
	var buf []byte
	for i, n := range nodes {
		name := v.pointName(n.ID)
		for k := 0; k < digests[i]; k++ {
			buf = append(append(append(buf[:0], name...), '-'), strconv.Itoa(k)...)
			d := md5.Sum(buf)
			for w := 0; w < 16; w += 4 {
				points = append(points, point{pos: uint64(binary.LittleEndian.Uint32(d[w:])) << 32, node: uint32(i)})
			}
		}
	}
	slices.SortFunc(points, comparePoints)
	return points, nil
}

// digests returns how many MD5 digests (of four points each) a server of
// weight w gets out of total among n servers. The float32 steps are the
// C and Java clients' own; each is rounded by an explicit conversion so
// that the compiler cannot fuse them.
func (v KetamaVariant) digests(w, total uint64, n int, equal bool) int {
	pct := float32(w) / float32(total)
	if v == KetamaLibketama {
		// libketama: floorf(pct * 40.0 * (float)numservers), where 40.0 is
		// a double, so the product is a double rounded to float by floorf.
		return int(math.Floor(float64(float32(float64(pct) * 40.0 * float64(float32(n))))))
	}
	if v == KetamaSpy && equal {
		return 40 // the unweighted locator: 160 repetitions, 4 per digest
	}
	// libmemcached, twemproxy and spymemcached's weighted locator:
	// floor(pct * 160 / 4 * (float)n + 1e-10), all in float32. The 1e-10
	// cannot change a float32 of 1 or more, so the floor is unaffected.
	x := float32(pct * 160)
	x = float32(x / 4)
	x = float32(x * float32(n))
	return int(math.Floor(float64(x)))
}

// pointName returns the string whose "-k" suffixes v hashes for a server.
func (v KetamaVariant) pointName(id string) string {
	if v == KetamaLibmemcached {
		return strings.TrimSuffix(id, ":11211")
	}
	return id
}

// ketamaHasher places keys on a ketama ring: a key's position is the first
// little-endian word of MD5(key), in the top half of the ring's uint64.
// NewRing installs it as the ring's Hasher under WithKetama.
type ketamaHasher struct{}

func (ketamaHasher) Sum64(key []byte) uint64 {
	d := md5.Sum(key)
	return uint64(binary.LittleEndian.Uint32(d[:])) << 32
}

// Sum64String hashes a string without copying it: md5.Sum only reads its
// argument and does not keep it.
func (h ketamaHasher) Sum64String(key string) uint64 {
	return h.Sum64(unsafe.Slice(unsafe.StringData(key), len(key)))
}
