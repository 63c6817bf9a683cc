// Package chash places keys on nodes: it decides which node, shard or backend
// owns a key, with the algorithms a service usually reaches for (a ring with
// virtual nodes, rendezvous hashing, jump hash, Maglev and bounded-load
// hashing) and every consistent hash published since jump behind one
// [Placer] interface.
//
// Every placer is an immutable value. Lookups never allocate, take no lock and
// are safe for concurrent use; a membership change derives a new placer, and a
// [Holder] swaps the current one atomically while requests keep reading it.
//
// Placement is deterministic: placers built from the same nodes, options and
// [Hasher] place every key identically in every process and on every platform,
// whatever order the nodes were given in (for [Jump], the order is the bucket
// numbering).
//
// # Choosing an algorithm
//
//   - [NewRing]: O(1) lookups, any add, remove or reweight moves only the
//     changed node's keys; balance within about 1/√vnodes. A general default,
//     and with [WithKetama] the placement of other ketama clients.
//   - [NewRendezvous]: O(n) lookups, exact weights, exact minimal movement and
//     a natural ranked replica list; up to about a hundred nodes.
//   - [NewJump]: O(log n) lookups, no memory, perfect balance; equal weights
//     and numbered buckets that grow and shrink at the end.
//   - [NewJumpBack], [NewFlip], [NewBinomial]: jump's uses and rules
//     (positional: see [Algorithm.Positional]) in constant time, each
//     bit-exact with its authors' reference ([JumpBackHash], [FlipHash],
//     [BinomialHash] on a hashed key).
//   - [NewMemento], [NewAnchor], [NewDx], [NewJumpBackAnchor], [NewChooseK]:
//     numbered buckets with jump's memory and speed, of which any member can
//     leave moving only its keys ([Algorithm.Stateful]). A placer built
//     afresh from a list renumbers its members, so derive each one from the
//     last ([Derive]) and let processes that must agree share the engine's
//     state (each type's Engine, read back by its From constructor).
//     Memento, Anchor and JumpBackAnchor also depend on the order of
//     removals ([Algorithm.HistoryDependent]); Dx and ChooseK do not;
//     ChooseK's top-k lists are prefix-stable and cost O(k²); JumpBackAnchor
//     shares its state byte for byte with hash4j in Java.
//   - [NewMaglev]: the fastest lookups (one table read), near-perfect balance;
//     a membership change moves a small documented fraction more than the
//     minimum.
//   - [NewBounded]: O(1) lookups with a hard cap on any node's share of the
//     key space.
//
// [ParseAlgorithm] and [New] choose one from configuration.
//
// # Weights
//
// [Node.Weight] is a relative capacity. Rendezvous, Maglev and bounded-load
// placement depend only on the ratios of the weights. A ring counts points,
// round(vnodes × weight / unit), so that its nodes stay independent of each
// other (changing one weight moves keys only to or from that node); give
// weights in any unit with [WithWeightUnit], and a weight the ring cannot
// honour within 5% of its points is an error, never a silently distorted
// share.
//
// A weight of 0 means 1 everywhere in this package and in compat (and in
// the chash command's membership files); only a shard map reads 0 as
// "drained", as package shardmap documents.
//
// # Membership changes
//
// Each placer's Add and Remove derive a new placer from the old one at the
// algorithm's cheapest cost; [Derive] does the same for code that holds only
// a Placer, including weight changes. Store the result in a [Holder] after
// checking its error.
//
// # Measuring a change
//
// [Diff] reports which keys move between two placements, node to node,
// exactly where the structure allows; [DiffSummary] reports the same per node
// in O(nodes) memory, for memberships whose node-to-node flows are too many
// to list; [Shares] reports each node's share of the key space. The chash command (cmd/chash) prints both, and plans a
// cache rollout from them.
//
// # The other packages
//
//   - compat: placers that reproduce other systems' placement exactly
//     (go-redis, gomemcache, groupcache, nginx, grpc-go and Envoy ring_hash,
//     Envoy Maglev, Caddy), for moving a running fleet without moving keys.
//   - shardmap: an explicit, versioned map of partitions to replicas, with
//     zones, pins, drains, rebalancing and ordered move plans.
//   - balance: live request load: bounded loads, two choices, hot keys.
//   - chashtest: the contract test every Placer runs, a user's own included.
//   - member: one view of a fleet's members, from wherever it keeps them
//     (the sources are nested modules: adapters/etcd, adapters/dns), with
//     the fleet's placement spec; member/membertest is the contract test
//     every source runs against its real server.
//
// Placers of other packages take part in [Fingerprint] and [Derive] through
// the [Fingerprinter] and [Deriver] interfaces; this package imports none
// of them.
//
// # IDs from untrusted sources
//
// xxhash64 is invertible, so whoever chooses node IDs can choose their
// hashes: IDs that collide make nodes own nothing, and IDs in a chosen
// progression make ring nodes share points. Builds and lookups stay fast and
// correct under such IDs (a lookup is O(log P) at worst, a Maglev build O(M)
// for nodes that collide and bounded otherwise, and Diff and Shares never
// report a wrong result as exact), but the balance is the attacker's. Where
// IDs come from service discovery or users, place with a secret seed,
// [WithHasher]([XXHashSeed](secret)), shared by every process that must
// agree.
//
// # Zero values
//
// The zero value and the nil pointer of every placer of this module, and of
// [Holder], behave as an empty placer: lookups return the zero [Node],
// AppendTopK appends nothing, Len is 0 and [Fingerprint] is
// [FingerprintNone]. A Holder stores a nil pointer as empty, so an
// unchecked failed constructor cannot crash a later lookup. A function that
// needs a placer (NewZoned, NewMigration, Derive, balance.New) refuses a
// nil one, typed or not, with [ErrNilPlacer].
package chash
