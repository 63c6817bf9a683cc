package conformance

import (
	"fmt"
	"math"
	"strings"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/chashtest"
)

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
	nodes := chashtest.Nodes(n)
	for i := range nodes {
		nodes[i].Zone = fmt.Sprintf("z%d", i%z)
	}
	return nodes
}

// NamedNodes returns n nodes named by id(i) for i from 1.
func NamedNodes(n int, id func(i int) string) []chash.Node {
	out := make([]chash.Node, n)
	for i := range out {
		out[i] = chash.Node{ID: id(i + 1)}
	}
	return out
}
