package conformance

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/keyplace/chash"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

// BenchKeys returns 1<<14 distinct keys of exactly size bytes: enough that
// a lookup cannot be served by a cache holding one key's path.
func BenchKeys(size int) ([][]byte, []string) {
	bs := make([][]byte, 1<<14)
	ss := make([]string, len(bs))
	for i := range bs {
		k := fmt.Sprintf("key:%0*d", size-4, i*7919)
		bs[i], ss[i] = []byte(k), k
	}
	return bs, ss
}

// ZonedNodes returns n nodes spread round-robin over z zones named z0...
func ZonedNodes(n, z int) []chash.Node {
	nodes := Nodes(n)
	for i := range nodes {
		nodes[i].Zone = fmt.Sprintf("z%d", i%z)
	}
	return nodes
}

// CheckContract holds a placer to the Placer contract: lookups
// that do not allocate, AppendTopK of distinct nodes led by Lookup's, and
// Nodes and Len that agree.
func CheckContract(t *testing.T, p chash.Placer) {
	t.Helper()
	require.Equal(t, len(p.Nodes()), p.Len())
	dst := make([]chash.Node, 0, p.Len()+1)
	for i := 0; i < 2000; i++ {
		key := fmt.Sprintf("prop-%d", i)
		first := p.LookupString(key)
		require.Equal(t, first, p.Lookup([]byte(key)))
		for _, k := range []int{1, 2, p.Len(), p.Len() + 1} {
			top := p.AppendTopKString(dst[:0], key, k)
			require.Len(t, top, min(k, p.Len()))
			require.Equal(t, first, top[0])
			seen := map[string]bool{}
			for _, n := range top {
				require.False(t, seen[n.ID], "key %q k %d: %s twice", key, k, n.ID)
				seen[n.ID] = true
			}
		}
	}
	assert.Empty(t, p.AppendTopKString(nil, "x", 0))
	if testing.CoverMode() != "" {
		return
	}
	key, skey := []byte("user:1234567"), "user:1234567"
	allocs := testing.AllocsPerRun(200, func() {
		p.Lookup(key)
		p.LookupString(skey)
		p.AppendTopK(dst[:0], key, 3)
		p.AppendTopKString(dst[:0], skey, p.Len())
	})
	assert.Zero(t, allocs, "lookups allocate")
}

// NamedNodes returns n nodes named by id(i) for i from 1.
func NamedNodes(n int, id func(i int) string) []chash.Node {
	out := make([]chash.Node, n)
	for i := range out {
		out[i] = chash.Node{ID: id(i + 1)}
	}
	return out
}

// DomainOf returns n's failure domain: its zone, or itself if it has none.
func DomainOf(n chash.Node) string {
	if n.Zone == "" {
		return "\x00" + n.ID
	}
	return n.Zone
}
