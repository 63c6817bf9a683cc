// Package etcd shares one view of a fleet between processes that place keys
// with chash, through etcd: each node announces itself with [Register], each
// client follows the member set with [Watch] and places keys with the
// [Watcher] it returns, which is a [chash.Placer].
//
// Members live under a key prefix, one key per node: prefix + ID, whose
// value is the JSON of a [Member]. The node's ID is its placement identity,
// so it is the key's name, never a lease or a process ID: a node that
// restarts or loses its lease comes back under the same key and gets the
// same keys placed on it.
//
// Every view a Watcher serves is a snapshot: the complete member set under
// the prefix at one etcd revision, built into a placer by the caller's
// constructor and published atomically. Processes whose watchers serve the
// same revision serve the same placement, which [chash.Fingerprint] (and
// [Watcher.Fingerprint]) makes visible in logs and metrics.
package etcd
