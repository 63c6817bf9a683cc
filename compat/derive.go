package compat

import "github.com/keyplace/chash"

// Each placer's Derive rebuilds it for another membership with the same
// settings, for [chash.Derive]: the placer's constructor applied to nodes,
// in the order given where the system keeps its members' order. A nil or
// zero-value placer derives with the constructor's defaults.

// Derive returns a Caddy placement over upstreams; see [NewCaddy].
func (c *Caddy) Derive(upstreams []chash.Node) (chash.Placer, error) {
	return placer(NewCaddy(upstreams))
}

// Derive returns an Envoy Maglev placement over hosts with g's table size;
// see [NewEnvoyMaglev].
func (g *EnvoyMaglev) Derive(hosts []chash.Node) (chash.Placer, error) {
	size := 0
	if g != nil {
		size = len(g.table)
	}
	return placer(NewEnvoyMaglev(hosts, size))
}

// Derive returns a gomemcache placement of nodes, each Weight times in a
// row; see [NewGomemcache].
func (g *Gomemcache) Derive(nodes []chash.Node) (chash.Placer, error) {
	return placer(NewGomemcache(nodes))
}

// Derive returns a go-redis Ring placement over shards; see [NewGoRedis].
func (g *GoRedis) Derive(shards []chash.Node) (chash.Placer, error) {
	return placer(NewGoRedis(shards))
}

// Derive returns a groupcache placement over peers with g's points per
// peer; see [NewGroupcache].
func (g *Groupcache) Derive(peers []chash.Node) (chash.Placer, error) {
	replicas := 0
	if g != nil {
		replicas = g.replicas
	}
	return placer(NewGroupcache(peers, replicas))
}

// Derive returns a ring_hash placement over nodes with r's system (grpc-go
// or Envoy) and ring sizes; see [NewGRPCRingHash] and [NewEnvoyRingHash].
func (r *RingHash) Derive(nodes []chash.Node) (chash.Placer, error) {
	if r == nil || r.min == 0 {
		return placer(NewGRPCRingHash(nodes, 0, 0))
	}
	if r.sorted {
		return placer(NewGRPCRingHash(nodes, r.min, r.max))
	}
	return placer(NewEnvoyRingHash(nodes, r.min, r.max))
}

// Derive returns an nginx consistent-hash placement over servers; see
// [NewNginxConsistent].
func (p *NginxConsistent) Derive(servers []chash.Node) (chash.Placer, error) {
	return placer(NewNginxConsistent(servers))
}

// Derive returns an nginx hash placement over servers; see [NewNginxHash].
func (p *NginxHash) Derive(servers []chash.Node) (chash.Placer, error) {
	return placer(NewNginxHash(servers))
}

// placer returns a constructor's result as a Placer, and a nil Placer, not
// a typed nil, with an error.
func placer[P chash.Placer](p P, err error) (chash.Placer, error) {
	if err != nil {
		return nil, err
	}
	return p, nil
}

var (
	_ chash.Deriver       = (*Caddy)(nil)
	_ chash.Fingerprinter = (*Caddy)(nil)
	_ chash.Deriver       = (*EnvoyMaglev)(nil)
	_ chash.Fingerprinter = (*EnvoyMaglev)(nil)
	_ chash.Deriver       = (*Gomemcache)(nil)
	_ chash.Fingerprinter = (*Gomemcache)(nil)
	_ chash.Deriver       = (*GoRedis)(nil)
	_ chash.Fingerprinter = (*GoRedis)(nil)
	_ chash.Deriver       = (*Groupcache)(nil)
	_ chash.Fingerprinter = (*Groupcache)(nil)
	_ chash.Deriver       = (*RingHash)(nil)
	_ chash.Fingerprinter = (*RingHash)(nil)
	_ chash.Deriver       = (*NginxConsistent)(nil)
	_ chash.Fingerprinter = (*NginxConsistent)(nil)
	_ chash.Deriver       = (*NginxHash)(nil)
	_ chash.Fingerprinter = (*NginxHash)(nil)
)
