package etcd

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/member"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Builder makes the placer of a view from its members' nodes, ascending by
// ID (for chash.NewJump that order is the bucket numbering): see
// member.Builder. A nil Builder builds with the spec the fleet publishes
// (Publish).
type Builder = member.Builder

// View is one published view: the members under the prefix at one etcd
// revision (View.Version) and the placer built from them. A View is
// immutable.
type View = member.View

// Source reads the members under a prefix from etcd: a member.Source, for
// member.New and the contract test. Watch runs one for you.
//
// Each Run reads the prefix afresh and watches it from that read's
// revision + 1, handing over the complete member set at each revision that
// changes it (the etcd revision is the snapshot's version), and asks etcd
// every progress interval to confirm the watch current. A compacted
// revision, a cancelled watch, a lost leader (the watch requires one) or a
// closed stream end the Run with an error, and the watcher runs it again,
// which reads afresh.
//
// Members live at prefix + ID, the spec at prefix + "/" (see Publish).
// Keys deeper under the prefix, such as those of a nested prefix
// ("/svc/cache/n1" under "/svc"), are not members of this one: they are
// ignored, not reported. Values that are not valid members are skipped and
// reported (ErrBadMember).
type Source struct {
	c      *clientv3.Client
	prefix string
	cfg    config
}

// NewSource returns the source of the members under prefix. It fails if c
// is nil or prefix is empty.
func NewSource(c *clientv3.Client, prefix string, opts ...Option) (*Source, error) {
	if c == nil {
		return nil, fmt.Errorf("%w: nil etcd client", chash.ErrInvalidOption)
	}
	p, err := cleanPrefix(prefix)
	if err != nil {
		return nil, err
	}
	return &Source{c: c, prefix: p, cfg: newConfig(opts)}, nil
}

// Watcher follows the members under a prefix and serves the latest view:
// a member.Watcher (see there for the rules every view follows) with
// Revision. It is a chash.Placer: each lookup delegates to the placer of
// the view current at that moment, with one atomic load, so lookups never
// block on etcd, never allocate beyond what that placer does and never see
// a nil placer. Its methods are safe for concurrent use; a nil or zero
// Watcher serves nothing, as an empty chash.Holder does: build one with
// Watch.
//
// # Staleness
//
// Changes arriving within the coalescing window (WithCoalesce, default
// 100 ms) are built into one view, so a change is served at most the
// window plus one build after etcd delivers it. A watcher that hears
// nothing from etcd (no change, no progress notice) for three progress
// intervals (WithProgressInterval), while reading, creating its watch or
// following it, reports member.ErrSilent and reads afresh; LastHeard
// tells the view's age.
//
// # Bad data
//
// A value that is not a valid Member is skipped and reported. A member
// the Builder refuses (a weight it cannot honour) is left out, reported
// (member.ErrRefused) and listed in View.Refused, and everyone else is
// served. Only a member set with no placeable member keeps the last good
// view (ErrNoMembers).
type Watcher struct {
	w *member.Watcher
}

var _ chash.Placer = (*Watcher)(nil)

// Watch follows the members under prefix and returns once it serves the
// first view: it waits for a first member to register (a fleet starting
// after its clients) until ctx ends, then fails with ErrNoMembers wrapping
// ctx's error and the last fault. ctx bounds only this wait. build makes
// the placers; nil builds with the spec the fleet publishes (Publish), or
// WithSpec's until one is published. It fails at once if c is nil or
// prefix is empty. It never returns a Watcher without a view.
func Watch(ctx context.Context, c *clientv3.Client, prefix string, build Builder, opts ...Option) (*Watcher, error) {
	src, err := NewSource(c, prefix, opts...)
	if err != nil {
		return nil, err
	}
	w, err := member.Follow(ctx, src, build, src.cfg.watchOptions()...)
	if err != nil {
		return nil, fmt.Errorf("etcd: watch %s: %w", src.prefix, err)
	}
	return &Watcher{w: w}, nil
}

// Member returns the shared watcher underneath, for what package member
// offers beyond this package's methods (Ready, Wait).
func (w *Watcher) Member() *member.Watcher {
	if w == nil {
		return nil
	}
	return w.w
}

// Close stops following the prefix. The watcher keeps serving its last
// view. Closing again does nothing.
func (w *Watcher) Close() error { return w.Member().Close() }

// LastHeard returns when etcd last confirmed the watcher current: the last
// read, watch event or progress notice. While it answers, that is at most
// about WithProgressInterval ago; an older time means the view may be
// stale (etcd down or unreachable), which is worth an alert. Zero for a nil
// Watcher.
func (w *Watcher) LastHeard() time.Time { return w.Member().LastHeard() }

// Run reads the prefix, hands the members to sink and follows them until
// ctx ends or the watch fails (see Source).
func (s *Source) Run(ctx context.Context, sink member.Sink) error {
	f := &following{s: s, sink: sink, members: map[string]Member{}}
	if err := f.read(ctx); err != nil {
		return err
	}
	return f.follow(ctx)
}

// following is one Run's state.
type following struct {
	s       *Source
	sink    member.Sink
	members map[string]Member
	spec    *member.Spec
	rev     int64
}

// testHookWatch, when set by a test, is called right before the watch is
// created.
var testHookWatch func()

// read replaces the members with a fresh read of the prefix and hands
// them over.
func (f *following) read(ctx context.Context) error {
	resp, err := f.s.c.Get(ctx, f.s.prefix, clientv3.WithPrefix())
	if err != nil {
		return fmt.Errorf("etcd: read %s: %w", f.s.prefix, err)
	}
	for _, kv := range resp.Kvs {
		f.accept(string(kv.Key[len(f.s.prefix):]), kv.Value)
	}
	f.rev = resp.Header.Revision
	f.hand()
	return nil
}

// follow applies the watch from rev + 1 until it fails or ctx ends.
func (f *following) follow(ctx context.Context) error {
	s := f.s
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	if testHookWatch != nil {
		testHookWatch()
	}
	events := s.c.Watch(wctx, s.prefix, clientv3.WithPrefix(), clientv3.WithRev(f.rev+1))
	tick := time.NewTicker(s.cfg.progress)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			go s.askProgress(wctx)
		case resp, ok := <-events:
			switch {
			case !ok:
				return fmt.Errorf("etcd: watch %s: closed; reading afresh", s.prefix)
			case resp.Err() != nil:
				return fmt.Errorf("etcd: watch %s: %w; reading afresh", s.prefix, resp.Err())
			}
			if f.apply(resp.Events) {
				f.hand()
			} else {
				f.sink.Heard()
			}
		}
	}
}

// askProgress asks etcd to confirm, on the watch stream of ctx, that the
// watch is current.
func (s *Source) askProgress(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.progress)
	defer cancel()
	s.c.RequestProgress(ctx)
}

// apply updates the members with events and reports whether any of them
// changed.
func (f *following) apply(events []*clientv3.Event) bool {
	changed := false
	for _, ev := range events {
		name := string(ev.Kv.Key[len(f.s.prefix):])
		if nested(name) {
			continue
		}
		f.rev = max(f.rev, ev.Kv.ModRevision)
		changed = true
		delete(f.members, name)
		if name == specName {
			f.spec = nil
		}
		if ev.Type == clientv3.EventTypePut {
			f.accept(name, ev.Kv.Value)
		}
	}
	return changed
}

// nested reports whether name, under the prefix, is a key of a nested
// prefix rather than a member.
func nested(name string) bool { return strings.Contains(name, "/") }

// accept adds the member or spec in value, or reports why not.
func (f *following) accept(name string, value []byte) {
	switch {
	case nested(name):
	case name == specName:
		spec, err := parseSpec(value)
		if err != nil {
			f.sink.Report(fmt.Errorf("etcd: spec at %s: %w", f.s.prefix, err))
			return
		}
		f.spec = &spec
	default:
		m, err := parseMember(name, value, f.s.cfg.maxValue)
		if err != nil {
			f.sink.Report(err)
			return
		}
		f.members[name] = m
	}
}

// hand hands the complete member set at rev over.
func (f *following) hand() {
	ms := make([]Member, 0, len(f.members))
	for _, m := range f.members {
		ms = append(ms, m)
	}
	f.sink.Snapshot(member.Snapshot{Version: f.rev, Members: ms, Spec: f.spec})
}
