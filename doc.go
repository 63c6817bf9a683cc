// Package chash places keys on nodes: it decides which node, shard or backend
// owns a key, with the algorithms a service usually reaches for (a ring with
// virtual nodes, rendezvous hashing, jump hash, Maglev and bounded-load
// hashing) behind one [Placer] interface.
//
// Every placer is an immutable value. Lookups never allocate, take no lock and
// are safe for concurrent use; a membership change derives a new placer, and a
// [Holder] swaps the current one atomically while requests keep reading it.
//
// Placement is deterministic: placers built from the same nodes, options and
// [Hasher] place every key identically in every process and on every platform,
// whatever order the nodes were given in (for [Jump], the order is the bucket
// numbering).
package chash
