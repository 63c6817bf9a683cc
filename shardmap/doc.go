// Package shardmap is placement as data: an explicit map of P partitions to
// R replicas each, for the constraints hashing cannot promise.
//
// [New] computes a map from nodes and a [Spec]: replicas of a partition on
// distinct nodes and, where nodes carry a Zone, distinct zones; no node
// above ceil(c·P·R·w/W) replicas for load factor c; operator pins; nodes of
// weight 0 drained (a shard map is the one place in the module where a
// weight of 0 means "hold nothing" rather than 1, because draining is what
// an operator of a map asks for); or an error wrapping [ErrConstraint] that
// names what cannot be met. [Map.Rebalance] moves only what must move, and
// [PlanMoves] orders the copies so that every partition keeps R−1 live
// replicas and no node exceeds its bound mid-way, primaries last.
//
// A Map is a chash.Placer (keys hash to a partition, the partition's
// replicas are its top-k), versioned, fingerprinted, and serialised as
// checked JSON ("chash.shardmap/1", see [Parse]) for a control plane to
// publish; every client loads the same map. The chash command's shardmap
// subcommands (build, rebalance, plan) do the same from files.
//
// A Map is immutable and safe for concurrent use; lookups do not allocate.
// The zero Map and a nil *Map have no partitions and no members.
package shardmap
