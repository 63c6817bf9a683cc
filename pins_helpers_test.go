package chash_test

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/keyplace/chash"
	"github.com/keyplace/chash/chashtest"
)

// phi is the golden-ratio increment between a ring node's point seeds.
const phi = 0x9e3779b97f4a7c15

// pinHasher hashes the strings in its map to the given values and every
// other string with xxhash64, so that a test can put a key or a node ID at
// a position of its choosing. It is not comparable, so Diff never treats
// two placers built with it as sharing a hasher.
type pinHasher map[string]uint64

func (h pinHasher) Sum64(b []byte) uint64 {
	if v, ok := h[string(b)]; ok {
		return v
	}
	return xxhash.Sum64(b)
}

func (h pinHasher) Sum64String(s string) uint64 {
	if v, ok := h[s]; ok {
		return v
	}
	return xxhash.Sum64String(s)
}

// aimHasher hashes a key of the form aimAt(h) to h and every other string
// with xxhash64: node IDs hash as under the default Hasher, and a test can
// look up the owner of any hash value. It is comparable, so Diff compares
// placers built with it exactly.
type aimHasher struct{}

func aimAt(h uint64) string {
	var b [9]byte
	b[0] = '@'
	binary.BigEndian.PutUint64(b[1:], h)
	return string(b[:])
}

func (aimHasher) Sum64(b []byte) uint64 {
	if len(b) == 9 && b[0] == '@' {
		return binary.BigEndian.Uint64(b[1:])
	}
	return xxhash.Sum64(b)
}

func (aimHasher) Sum64String(s string) uint64 {
	if len(s) == 9 && s[0] == '@' {
		return binary.BigEndian.Uint64([]byte(s[1:]))
	}
	return xxhash.Sum64String(s)
}

// effWeight is a node's effective weight: 0 means 1.
func effWeight(n chash.Node) float64 {
	if n.Weight == 0 {
		return 1
	}
	return n.Weight
}

// topKChecksum hashes (FNV-1a 64) the top k node IDs of each key: a
// compact pin of many placements.
func topKChecksum(p chash.Placer, keys []string, k int) uint64 {
	h := fnv.New64a()
	buf := make([]chash.Node, 0, k)
	var line strings.Builder
	for _, key := range keys {
		buf = p.AppendTopKString(buf[:0], key, k)
		line.Reset()
		for _, n := range buf {
			line.WriteString(n.ID)
			line.WriteByte(',')
		}
		line.WriteByte('\n')
		h.Write([]byte(line.String()))
	}
	return h.Sum64()
}

// weightedNodes returns n nodes named w-0, w-1, ... with weights spread
// over four orders of magnitude, none a whole multiple of another.
func weightedNodes(n int) []chash.Node {
	ws := []float64{1, 2.5, 0.37, 7, 0.013, 3.3, 1.01, 12, 0.5, 5.75}
	out := make([]chash.Node, n)
	for i := range out {
		out[i] = chash.Node{ID: fmt.Sprintf("w-%d", i), Weight: ws[i%len(ws)]}
	}
	return out
}

// pinKeys returns n of the suite's keys, or n/div under -short (the
// cross-platform runs under qemu use -short).
func pinKeys(n, div int) []string {
	if testing.Short() {
		n /= div
	}
	return chashtest.Keys(n)
}
