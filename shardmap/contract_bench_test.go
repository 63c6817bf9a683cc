package shardmap_test

import (
	"testing"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/chashtest"
	"github.com/keyplace/chash/internal/conformance"
	"github.com/keyplace/chash/shardmap"
)

// BenchmarkContract runs chashtest.BenchmarkPlacer on a map of 16,384
// partitions and 3 replicas over 4,000 nodes: its TopKAll holds a list of
// every node within the contract's bound of a plain ring's time.
func BenchmarkContract(b *testing.B) {
	chashtest.BenchmarkPlacer(b, chashtest.Spec{
		New: func(nodes []chash.Node) (chash.Placer, error) {
			return conformance.AsPlacer(shardmap.New(nodes, shardmap.Spec{Partitions: 16384, Replicas: 3}))
		},
		Nodes: func(n int) []chash.Node {
			nodes := chashtest.Nodes(n)
			for i := range nodes {
				nodes[i].Weight = 1 // a shard map reads 0 as draining
			}
			return nodes
		},
	})
}

// A long list (past 32 beyond the replicas) is sorted where a short one is
// selected node by node: both give one order, each list a prefix of the
// longer ones.
func TestLongListsArePrefixes(t *testing.T) {
	nodes := chashtest.Nodes(120)
	for i := range nodes {
		nodes[i].Weight = 1
	}
	nodes[5].Weight = 0 // draining: never in a list
	m, err := shardmap.New(nodes, shardmap.Spec{Partitions: 256, Replicas: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range chashtest.Keys(300) {
		all := m.AppendTopKString(nil, key, len(nodes))
		if len(all) != m.Len() {
			t.Fatalf("%q: %d nodes of %d", key, len(all), m.Len())
		}
		for _, k := range []int{3, 20, 34, 35, 60} {
			chashtest.CheckTopK(t, m, key, k)
			short := m.AppendTopKString(nil, key, k)
			for i := range short {
				if short[i].ID != all[i].ID {
					t.Fatalf("%q: top %d differs from the long list at %d: %s, %s", key, k, i, short[i].ID, all[i].ID)
				}
			}
		}
	}
}
