// Package memberlist shares one view of a fleet between processes that
// place keys with chash, through a gossip cluster of
// github.com/hashicorp/memberlist, as dskit and gubernator use it: each
// node of the fleet joins the cluster with [Join], announcing itself in its
// node metadata; each process follows the cluster's members with
// [Node.Watch] and places keys with the member.Watcher it returns, which is
// a chash.Placer. A process that places keys without being placed on
// joins with [Observe].
//
//	cfg := ml.DefaultLANConfig() // ml is github.com/hashicorp/memberlist
//	cfg.Name = "cache-1"         // the member's ID: Join sets it
//	n, err := memberlist.Join(cfg, member.Member{ID: "cache-1", Addr: "10.0.0.1:11211", Zone: "eu-1a"}, seeds)
//	w, err := n.Watch(ctx, nil) // nil: build with the spec the cluster publishes
//	owner := w.LookupString("user:42")
//
// # Members
//
// A member is a cluster node whose metadata is the JSON form of a
// member.Member (member.EncodeJSON), at most memberlist.MetaMaxSize (512)
// bytes, with the node's name as its ID: the ID is the placement identity,
// so a node that restarts, even at a new address, comes back under the
// same name and owns the same keys. Nodes with no metadata are observers
// and are not placed; a node whose metadata is not a member, or names
// another ID, is reported (member.ErrBadMember) and left out.
//
// Every view is a complete snapshot of the members this node holds alive
// or suspect (memberlist's Members), at a version the source raises on
// each join, leave and update event that changes the set (or the spec):
// processes whose clusters have converged serve the same placement, which
// chash.Fingerprint of the view shows.
//
// # The placement spec
//
// A fleet's placement spec (member.Spec) travels as memberlist user
// state, not in a member's metadata, so that it outlives whichever node
// published it and costs no metadata bytes: [Node.Publish] stamps it one
// above the stamp it holds (a Lamport clock: the publisher's name breaks
// ties) and broadcasts it; every node keeps the spec with the highest
// stamp, broadcasts it again when it learns one, and exchanges it in
// memberlist's push/pull state syncs (also on join), so that a node that
// missed the broadcasts, or joins later, converges on it. Watchers given a
// nil Builder build with it.
//
// # Staleness
//
// A node confirms its view whenever a peer answers: an ack to one of its
// probes (memberlist's PingDelegate) or a push/pull state sync, so about
// every ProbeInterval; a node alone in its cluster confirms on a timer.
// Node.Watch sets the silence bound to three probe intervals: a node that
// hears from no peer for that long (cut off from the cluster) is reported
// (member.ErrSilent) while its last view keeps serving.
//
// Membership changes reach every node as fast as memberlist spreads them:
// a clean Leave within a few gossip intervals; a crash after memberlist's
// failure detection (a probe, then the suspicion timeout, SuspicionMult ×
// log10(N) × ProbeInterval shortened by other nodes' confirmations, at
// most SuspicionMaxTimeoutMult times that). See the README for the figures
// measured on loopback.
package memberlist
