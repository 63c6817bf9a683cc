package shardmap_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/shardmap"
)

// scaleFleets are the fleets of BenchmarkScale: a wide one (64 nodes in 4
// zones, R = 3, c = 1.25) and a tight one (12 nodes in 2 zones, R = 2,
// c = 1.075, whose bounds leave little room: the fleet that made the
// previous builder quadratic), each grown by one node a zone for the
// rebalance and the plan.
var scaleFleets = []struct {
	name  string
	nodes []chash.Node
	spec  shardmap.Spec
	zones int
}{
	{"wide", mapNodes(64, 4), shardmap.Spec{Replicas: 3}, 4},
	{"tight", mapNodes(12, 2), shardmap.Spec{Replicas: 2, LoadFactor: 1.075}, 2},
}

func grown(nodes []chash.Node, zones int) []chash.Node {
	next := slices.Clone(nodes)
	for z := range zones {
		next = append(next, chash.Node{ID: fmt.Sprintf("new-%d", z), Weight: 1, Zone: nodes[z].Zone})
	}
	return next
}

// BenchmarkScale measures New, Rebalance (one node added to each zone)
// and PlanMoves of that change at 2^14 to 2^20 partitions: each is
// O(P log P) or better, so time per partition stays flat (ns/partition).
// The figures New's and PlanBatches's docs cite.
func BenchmarkScale(b *testing.B) {
	for _, f := range scaleFleets {
		for _, lg := range []int{14, 16, 18, 20} {
			spec := f.spec
			spec.Partitions = 1 << lg
			next := grown(f.nodes, f.zones)
			m, err := shardmap.New(f.nodes, spec)
			if err != nil {
				b.Fatal(err)
			}
			after, err := m.Rebalance(next, spec)
			if err != nil {
				b.Fatal(err)
			}
			run := func(name string, op func() error) {
				b.Run(fmt.Sprintf("%s/%s/partitions=2^%d", f.name, name, lg), func(b *testing.B) {
					b.ReportAllocs()
					for range b.N {
						if err := op(); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(spec.Partitions), "ns/partition")
				})
			}
			run("new", func() error { _, err := shardmap.New(f.nodes, spec); return err })
			run("rebalance", func() error { _, err := m.Rebalance(next, spec); return err })
			run("plan", func() error { _, err := shardmap.PlanMoves(m, after, nil); return err })
		}
	}
}
