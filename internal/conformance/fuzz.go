package conformance

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/keyplace/chash"
)

// IDs returns the IDs of nodes, in order.
func IDs(nodes []chash.Node) []string { return ids(nodes) }

// FuzzNodes builds a node list from fuzz input: IDs separated by commas,
// and one weight per ID chosen by a byte from values that include invalid
// and extreme ones.
func FuzzNodes(idList string, weights []byte) []chash.Node {
	table := []float64{0, 1, 2, 0.5, 3, -1, math.NaN(), math.Inf(1), 1e-300, 1e300, 0x1p100, 0x1p-100, 7.25}
	var nodes []chash.Node
	for i, id := range strings.Split(idList, ",") {
		w := 0.0
		if i < len(weights) {
			w = table[int(weights[i])%len(table)]
		}
		nodes = append(nodes, chash.Node{ID: id, Weight: w})
	}
	if len(nodes) > 300 {
		nodes = nodes[:300]
	}
	return nodes
}

// Check verifies that p's answers for key are members, that the
// top k are distinct and start with Lookup.
func Check(t *testing.T, p chash.Placer, key string, k int) {
	t.Helper()
	members := p.Nodes()
	first := p.LookupString(key)
	if !slices.Contains(members, first) || p.Lookup([]byte(key)) != first {
		t.Fatalf("Lookup(%q) = %+v, not a member or not LookupString's", key, first)
	}
	top := p.AppendTopKString(nil, key, k)
	if len(top) != min(max(k, 0), len(members)) {
		t.Fatalf("AppendTopK(%q, %d) gave %d of %d nodes", key, k, len(top), len(members))
	}
	for i, n := range top {
		if !slices.Contains(members, n) || slices.Contains(top[:i], n) {
			t.Fatalf("AppendTopK(%q, %d) = %v: not distinct members", key, k, top)
		}
	}
	if len(top) > 0 && top[0] != first {
		t.Fatalf("AppendTopK(%q, %d)[0] = %v, Lookup %v", key, k, top[0], first)
	}
	if len(top) > 1 {
		shorter := p.AppendTopKString(nil, key, len(top)-1)
		if !slices.Equal(shorter, top[:len(top)-1]) {
			t.Fatalf("AppendTopK(%q, %d) = %v is not a prefix of AppendTopK(%d) = %v", key, len(top)-1, shorter, len(top), top)
		}
	}
}
