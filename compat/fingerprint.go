package compat

import (
	"github.com/keyplace/chash"
	"github.com/keyplace/chash/internal/digest"
)

// Each placer's Fingerprint digests what its placement depends on: the
// system, the settings the system reads, and the members with their
// weights, in the order the system reads them (the given order where the
// system keeps it, by ID where it sorts). Two placers of this package have
// equal fingerprints exactly when they were built from the same inputs
// after defaults, which makes them place every key identically.

// fingerprint digests the members in stored order, or returns
// FingerprintNone for none.
func fingerprint(d *digest.Digest, name string, nodes []chash.Node) string {
	if len(nodes) == 0 {
		return chash.FingerprintNone
	}
	d.Num(uint64(len(nodes)))
	for _, n := range nodes {
		d.Node(n.ID, n.Weight)
	}
	return d.Sum(name)
}

// Fingerprint returns the placement's fingerprint for [chash.Fingerprint],
// such as "caddy-1f0c55b2d7a9e314"; FingerprintNone for a nil or empty
// placer.
func (c *Caddy) Fingerprint() string {
	if c == nil {
		return chash.FingerprintNone
	}
	return fingerprint(digest.New().Str("caddy"), "caddy", c.nodes)
}

// Fingerprint returns the placement's fingerprint for [chash.Fingerprint],
// covering the table size; FingerprintNone for a nil or empty placer.
func (g *EnvoyMaglev) Fingerprint() string {
	if g == nil {
		return chash.FingerprintNone
	}
	return fingerprint(digest.New().Str("envoy-maglev").Num(uint64(len(g.table))), "envoymaglev", g.nodes)
}

// Fingerprint returns the placement's fingerprint for [chash.Fingerprint],
// covering the server list with its repeats; FingerprintNone for a nil or
// empty placer.
func (g *Gomemcache) Fingerprint() string {
	if g == nil {
		return chash.FingerprintNone
	}
	d := digest.New().Str("gomemcache").Num(uint64(len(g.slots)))
	for _, s := range g.slots {
		d.Num(uint64(s))
	}
	return fingerprint(d, "gomemcache", g.nodes)
}

// Fingerprint returns the placement's fingerprint for [chash.Fingerprint];
// FingerprintNone for a nil or empty placer.
func (g *GoRedis) Fingerprint() string {
	if g == nil {
		return chash.FingerprintNone
	}
	return fingerprint(digest.New().Str("goredis"), "goredis", g.nodes)
}

// Fingerprint returns the placement's fingerprint for [chash.Fingerprint],
// covering the points per peer; FingerprintNone for a nil or empty placer.
func (g *Groupcache) Fingerprint() string {
	if g == nil {
		return chash.FingerprintNone
	}
	return fingerprint(digest.New().Str("groupcache").Num(uint64(g.replicas)), "groupcache", g.nodes)
}

// Fingerprint returns the placement's fingerprint for [chash.Fingerprint],
// covering the ring's size as computed from the configured bounds (bounds
// that give the same ring give the same fingerprint); FingerprintNone for
// a nil or empty placer.
func (r *RingHash) Fingerprint() string {
	if r == nil {
		return chash.FingerprintNone
	}
	return fingerprint(digest.New().Str("ringhash").Float(r.scale), "ringhash", r.nodes)
}

// Fingerprint returns the placement's fingerprint for [chash.Fingerprint];
// FingerprintNone for a nil or empty placer.
func (p *NginxConsistent) Fingerprint() string {
	if p == nil {
		return chash.FingerprintNone
	}
	return fingerprint(digest.New().Str("nginx-consistent"), "nginxconsistent", p.nodes)
}

// Fingerprint returns the placement's fingerprint for [chash.Fingerprint];
// FingerprintNone for a nil or empty placer.
func (p *NginxHash) Fingerprint() string {
	if p == nil {
		return chash.FingerprintNone
	}
	return fingerprint(digest.New().Str("nginx-hash"), "nginxhash", p.nodes)
}
