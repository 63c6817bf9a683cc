// Package member shares one view of a fleet between the processes that
// place keys on it, whatever keeps the fleet's member set: etcd, DNS, a
// gossip cluster, ZooKeeper. A [Source] reads the member set from where
// the fleet keeps it; a [Watcher] runs the source and serves the latest
// [View] as a [chash.Placer]. The package holds the contract and the
// behaviours every source shares, so that each source is only the code
// that talks to its server; the sources themselves live in nested modules
// (adapters/etcd, adapters/dns), and package membertest checks a source
// against the contract on its real server.
//
// # The contract
//
// A source hands its watcher complete snapshots at a version, never
// deltas; the version never goes backwards; errors are reported, never
// served. The watcher does the rest, the same way for every source:
//
//   - Coalescing with bounded staleness: snapshots within a window
//     (WithCoalesce) are built into one view, and a view is served at
//     most the window plus one build after its snapshot.
//   - A silence bound (WithSilence) that covers every step of the source,
//     its first read and the setting up of a watch included: a source
//     silent for longer is reported (ErrSilent) and restarted.
//   - Members a placer refuses (a weight it cannot honour) are left out
//     and reported (ErrRefused), found without rebuilding once per member
//     (see Place), and everyone else is served; only a member set with no
//     placeable member keeps the last good view (ErrNoMembers).
//   - Every field of chash.Node (ID, weight, zone) travels through every
//     source, with the member's address and metadata ([Member]).
//   - Lookups take one atomic load, allocate nothing and never see a nil
//     placer; a watcher started before any member registered waits for
//     the first (Wait, Follow).
//
// # One placement, not only one member set
//
// Processes that agree on the members can still disagree on how to place
// them. A fleet can publish its placement [Spec] (algorithm, options and
// the name of its hasher seed, never the secret) beside its members, in
// every source that can hold it; a watcher given a nil [Builder] builds
// with the published spec, so every process builds the same placer, and
// [chash.Fingerprint] of the view covers the spec (its algorithm, options
// and hasher). A process that declares the spec it expects ([WithSpec])
// reports a published spec that differs (ErrSpecMismatch).
//
// # Writing a source
//
// A source is a type with one method, Run(ctx, sink), that reads the
// complete member set, hands it to sink.Snapshot, and then follows it,
// handing over each later complete set with a higher version, telling
// sink.Heard whenever the server confirms the set current, and
// sink.Report whenever it skips a member or retries a read. Run returns
// when ctx ends or on a fault it cannot recover from; the watcher reports
// the fault and calls Run again, with backoff. A source package then
// offers a constructor that returns Follow(ctx, source, build, opts...),
// with a silence bound (WithSilence) of about three of its confirmation
// intervals, and runs membertest.TestSource against its real server,
// with a Fleet that writes members the way the fleet's nodes do (and a
// Breaker and a SpecPublisher where the server allows). See [Source] for
// the rules in full.
//
// Members travel as their JSON form ([EncodeJSON], [DecodeJSON]) wherever a
// server stores a value per member: an etcd key, a ZooKeeper znode's data,
// a gossip node's metadata. The version is the server's own where it has
// one (an etcd revision; for ZooKeeper the largest of the parent znode's
// pzxid, which a child created or deleted raises, and the children's
// mzxids, which a change of their data raises: zxids only grow) or a
// counter the source raises on each change it sees
// (DNS; a gossip source's join, leave and update events). Sources whose
// server offers no order of its own hand over the set they hold as a new
// snapshot only when it differs from the last, and confirm it otherwise.
package member
