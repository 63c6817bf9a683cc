package chash_test

import (
	"testing"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/chashtest"
	"github.com/keyplace/chash/internal/conformance"
)

// BenchmarkContract runs chashtest.BenchmarkPlacer on every placer type of
// the package at 4,000 members: each algorithm, alone and zone-aware (three
// zones), ketama, and the wrappers (Holder, Migration). Its TopKAll
// sub-benchmarks hold every list of all members within the contract's
// bound of a plain ring's time, in the same run.
func BenchmarkContract(b *testing.B) {
	type spec = chashtest.Spec
	build := func(a chash.Algorithm, opts ...chash.Option) func([]chash.Node) (chash.Placer, error) {
		return func(nodes []chash.Node) (chash.Placer, error) { return chash.New(a, nodes, opts...) }
	}
	for _, a := range chash.Algorithms() {
		b.Run(a.String(), func(b *testing.B) { chashtest.BenchmarkPlacer(b, spec{New: build(a)}) })
		b.Run(a.String()+"/zoned", func(b *testing.B) {
			chashtest.BenchmarkPlacer(b, spec{
				New: func(nodes []chash.Node) (chash.Placer, error) {
					p, err := chash.New(a, nodes)
					if err != nil {
						return nil, err
					}
					return chash.NewZoned(p)
				},
				Nodes: func(n int) []chash.Node { return conformance.ZonedNodes(n, 3) },
			})
		})
	}
	b.Run("ketama", func(b *testing.B) {
		chashtest.BenchmarkPlacer(b, spec{New: build(chash.AlgorithmRing, chash.WithKetama(chash.KetamaLibmemcached))})
	})
	b.Run("holder", func(b *testing.B) {
		chashtest.BenchmarkPlacer(b, spec{New: func(nodes []chash.Node) (chash.Placer, error) {
			p, err := chash.NewRendezvous(nodes)
			return chash.NewHolder(p), err
		}})
	})
	b.Run("migration", func(b *testing.B) {
		chashtest.BenchmarkPlacer(b, spec{New: func(nodes []chash.Node) (chash.Placer, error) {
			from, err := chash.NewRing(nodes[1:])
			if err != nil {
				return nil, err
			}
			to, err := chash.NewRing(nodes)
			if err != nil {
				return nil, err
			}
			return chash.NewMigration(from, to)
		}})
	})
}
