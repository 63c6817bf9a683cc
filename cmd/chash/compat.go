package main

import (
	"github.com/keyplace/chash"
	"github.com/keyplace/chash/compat"
)

// compatAlgos are the placements of other systems that diff and plan
// accept by name, so that the cost of leaving one can be measured: node IDs
// are spelled as each system hashes them (see the chash constructors).
func compatAlgos() []algo {
	wrap := func(name string, build func([]chash.Node) (chash.Placer, error)) algo {
		return algo{name: name, build: build}
	}
	return []algo{
		wrap("gomemcache", func(n []chash.Node) (chash.Placer, error) { return compat.NewGomemcache(n) }),
		wrap("goredis", func(n []chash.Node) (chash.Placer, error) { return compat.NewGoRedis(n) }),
		wrap("groupcache", func(n []chash.Node) (chash.Placer, error) { return compat.NewGroupcache(n, 0) }),
		wrap("nginx-consistent", func(n []chash.Node) (chash.Placer, error) { return compat.NewNginxConsistent(n) }),
		wrap("nginx-hash", func(n []chash.Node) (chash.Placer, error) { return compat.NewNginxHash(n) }),
		wrap("grpc-ring-hash", func(n []chash.Node) (chash.Placer, error) { return compat.NewGRPCRingHash(n, 0, 0) }),
		wrap("envoy-ring-hash", func(n []chash.Node) (chash.Placer, error) { return compat.NewEnvoyRingHash(n, 0, 0) }),
		wrap("envoy-maglev", func(n []chash.Node) (chash.Placer, error) { return compat.NewEnvoyMaglev(n, 0) }),
		wrap("caddy", func(n []chash.Node) (chash.Placer, error) { return compat.NewCaddy(n) }),
	}
}
