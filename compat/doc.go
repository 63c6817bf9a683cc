// Package compat places keys exactly as other systems do, so that a fleet
// already running one of them can move its clients to chash without moving
// a key, and then measure and stage a move to a better placement with
// [chash.Diff] and [chash.NewMigration].
//
// Each placer is a [chash.Placer]: it works with [chash.Holder],
// [chash.Diff], [chash.Shares], [chash.Fingerprint], [chash.Derive], the
// chash command and the adapters. Node IDs must be spelled as the system
// hashes them:
//
//   - go-redis v9 Ring, default hash: [NewGoRedis], shard names (the keys of
//     RingOptions.Addrs), hash tags {…} parsed as go-redis does.
//   - gomemcache ServerList: [NewGomemcacheList] with the strings given to
//     SetServers (repeats are weight), or [NewGomemcache].
//   - groupcache consistenthash and HTTPPool: [NewGroupcache], peers in the
//     order given to Set.
//   - nginx "hash $key consistent" and "hash $key": [NewNginxConsistent] and
//     [NewNginxHash], server parameters as written, in order.
//   - grpc-go ring_hash and Envoy ring_hash: [NewGRPCRingHash] and
//     [NewEnvoyRingHash], with the configured ring sizes.
//   - Envoy Maglev: [NewEnvoyMaglev].
//   - Caddy's hashing selection policies: [NewCaddy], dial addresses in order.
//
// (libmemcached, libketama and spymemcached clients are matched by the core
// ring: chash.NewRing(nodes, chash.WithKetama(v)).)
//
// Every placement was checked against the real system on every key of the
// vectors under the repository's testdata/ directory: keys written through
// go-redis to real redis-server processes, real nginx serving requests,
// grpc-go's own balancer over loopback servers, gomemcache's PickServer,
// groupcache's Map.Get, Caddy's selection in process, and the rings and
// tables of Envoy's unit tests. Each constructor's doc says what is hashed
// and where the system itself is ambiguous. AppendTopK continues in the
// system's own failover order where it has one.
//
// Like the core's placers, these are immutable, safe for concurrent use,
// and their lookups do not allocate. The zero value and the nil pointer of
// each behave as an empty placer.
package compat
