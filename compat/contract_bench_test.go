package compat_test

import (
	"fmt"
	"testing"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/chashtest"
	"github.com/keyplace/chash/compat"
	"github.com/keyplace/chash/internal/conformance"
)

// BenchmarkContract runs chashtest.BenchmarkPlacer on every placer of the
// package at 4,000 members, over the member names each system uses. Its
// TopKAll sub-benchmarks hold each list of all members within the
// contract's bound of a plain ring's time, in the same run.
func BenchmarkContract(b *testing.B) {
	named := func(format string) func(int) []chash.Node {
		return func(n int) []chash.Node {
			return conformance.NamedNodes(n, func(i int) string { return fmt.Sprintf(format, i) })
		}
	}
	for _, c := range []struct {
		name  string
		new   func([]chash.Node) (chash.Placer, error)
		nodes func(int) []chash.Node
	}{
		{"caddy", func(n []chash.Node) (chash.Placer, error) { return conformance.AsPlacer(compat.NewCaddy(n)) }, caddyUpstreams},
		{"envoy-maglev", func(n []chash.Node) (chash.Placer, error) { return conformance.AsPlacer(compat.NewEnvoyMaglev(n, 0)) }, envoyHosts},
		{"envoy-ring-hash", func(n []chash.Node) (chash.Placer, error) {
			return conformance.AsPlacer(compat.NewEnvoyRingHash(n, 0, 0))
		}, ringHashEndpoints},
		{"grpc-ring-hash", func(n []chash.Node) (chash.Placer, error) {
			return conformance.AsPlacer(compat.NewGRPCRingHash(n, 0, 0))
		}, ringHashEndpoints},
		{"gomemcache", func(n []chash.Node) (chash.Placer, error) { return conformance.AsPlacer(compat.NewGomemcache(n)) }, named("10.0.%d.1:11211")},
		{"goredis", func(n []chash.Node) (chash.Placer, error) { return conformance.AsPlacer(compat.NewGoRedis(n)) }, named("shard-%d")},
		{"groupcache", func(n []chash.Node) (chash.Placer, error) {
			return conformance.AsPlacer(compat.NewGroupcache(n, 0))
		}, named("http://10.0.%d.1:8080")},
		{"nginx-consistent", func(n []chash.Node) (chash.Placer, error) {
			return conformance.AsPlacer(compat.NewNginxConsistent(n))
		}, nginxServers},
		{"nginx-hash", func(n []chash.Node) (chash.Placer, error) { return conformance.AsPlacer(compat.NewNginxHash(n)) }, nginxServers},
	} {
		b.Run(c.name, func(b *testing.B) { chashtest.BenchmarkPlacer(b, chashtest.Spec{New: c.new, Nodes: c.nodes}) })
	}
}
