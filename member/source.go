package member

import "context"

// Source follows a fleet's member set wherever the fleet keeps it (etcd,
// DNS, a gossip cluster, ZooKeeper) and hands the complete set to a Sink.
// A Watcher runs it; Sources are not called by users directly.
//
// A Source keeps four rules, which package membertest checks against the
// real server:
//
//   - Complete snapshots, never deltas: every Snapshot holds the whole
//     member set at its version, each member once, as the server holds it;
//     a source that reads changes as events applies them to its own copy
//     and hands over the result.
//   - A version that never goes backwards, across the calls of Run too:
//     the server's own (an etcd revision, a ZooKeeper zxid) or a counter
//     the source keeps, raised whenever the content changes. A snapshot
//     whose content differs from the previous one has a higher version.
//   - Errors reported, never served: a member the source cannot read is
//     reported through Sink.Report (wrapping ErrBadMember) and left out; a
//     read that fails or is partial (a truncated answer, a failed page) is
//     reported or returned, and yields no Snapshot. The watcher keeps its
//     last good view meanwhile.
//   - Word of life: each confirmation from the server that the last
//     snapshot is still current (a progress notice, a re-read that found
//     no change) is told through Sink.Heard, so that the watcher can tell
//     a quiet fleet from a silent server.
type Source interface {
	// Run reads the complete member set, hands it to sink.Snapshot, then
	// follows it, handing over each later set, until ctx ends or it
	// meets a fault it cannot recover from. It returns nil or ctx's error
	// once ctx has ended, and must return promptly then, whatever it is
	// waiting for; otherwise it returns the fault, and the watcher reports
	// it and calls Run again after a backoff (50 ms doubling to 2 s).
	//
	// The watcher cancels ctx when the source has been silent for longer
	// than the silence bound (WithSilence) and calls Run again: every
	// call starts with a fresh complete read, so the bound covers a read,
	// a watch being set up, and every step after them.
	//
	// Run is never called concurrently with itself for one Watcher. The
	// Sink's methods are safe to call from any goroutine and return at
	// once (they never wait for a build).
	Run(ctx context.Context, sink Sink) error
}

// Sink receives what a Source reads. The Watcher implements it; a test of
// a source alone may implement it too.
type Sink interface {
	// Snapshot hands over the complete member set at s.Version. The sink
	// owns s.Members afterwards: the source must not modify them. A
	// snapshot also confirms the source current, as Heard does.
	Snapshot(s Snapshot)
	// Heard confirms that the last snapshot handed over is still the
	// server's current member set.
	Heard()
	// Report tells of a fault the source handles itself, such as a member
	// it skipped (wrapping ErrBadMember) or a read it retries.
	Report(err error)
}

// Snapshot is a complete member set at one version.
type Snapshot struct {
	// Version orders the snapshots of one source: it never goes
	// backwards, and a snapshot with other content has a higher one.
	Version int64
	// Members is the complete member set, each ID once, in any order.
	// Members that are not valid (see Member.Check) are reported and left
	// out by the watcher; a source should leave them out itself.
	Members []Member
	// Spec is the placement spec published beside the members, or nil if
	// the source holds none (see Spec).
	Spec *Spec
}
