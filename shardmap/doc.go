// Package shardmap is placement as data: an explicit map of P partitions to
// R replicas each, for the constraints hashing cannot promise.
//
// [New] computes a map from nodes and a [Spec]: replicas of a partition on
// distinct nodes and, where nodes carry a Zone, distinct zones (or, with
// ZoneReplicas, so many in each zone, as Cassandra's
// NetworkTopologyStrategy; with Residency, ranges of partitions confined to
// zones); no node above its bound ceil(c·S) for load factor c and share S;
// operator pins; nodes of weight 0 drained (a shard map is the one place in
// the module where a weight of 0 means "hold nothing" rather than 1,
// because draining is what an operator of a map asks for); or an error
// wrapping [ErrConstraint] that names what cannot be met. Each node gets
// its fair share of its zone's replicas and of the primaries, exactly.
//
// [Map.Rebalance] brings a map to a new fleet or spec moving the least
// that leaves every node within the spec's Tolerance (one replica and one
// primary by default) of what a fresh build gives it, and [Map.Distance]
// says how far a map is; [PlanBatches] orders the copies in batches that
// may run at once, within limits per node, so that every partition keeps
// R−1 live replicas and no node exceeds its bound mid-way, primaries last;
// [Map.Loads] reports each node against its fair share. New, Rebalance and
// PlanMoves cost O(P·R·log) time: a map of 2^20 partitions builds,
// rebalances and plans in about a second each (BenchmarkScale).
//
// For Kafka, [ParseKafkaAssignment] reads a topic's current assignment,
// [Import] records it as an observed map (one that may break the
// constraints: rack-unaware, unbalanced), and [Plan.Kafka] writes a plan as
// one kafka-reassign-partitions document per batch.
//
// A Map is a chash.Placer (keys hash to a partition, the partition's
// replicas are its top-k), versioned, fingerprinted, and serialised as
// checked JSON ("chash.shardmap/2", see [Parse]; version-1 documents still
// load) for a control plane to publish; every client loads the same map.
// The chash command's shardmap subcommands (build, rebalance, plan,
// import, show) do the same from files.
//
// A Map is immutable and safe for concurrent use; lookups do not allocate.
// The zero Map and a nil *Map have no partitions and no members.
package shardmap
