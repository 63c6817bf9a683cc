package etcd

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sync/atomic"
	"time"

	"github.com/keyplace/chash"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Builder makes the placer of a view from its members, ascending by ID
// (for chash.NewJump that order is the bucket numbering). Any algorithm and
// options work, for example:
//
//	func(nodes []chash.Node) (chash.Placer, error) {
//		return chash.NewMaglev(nodes, chash.WithTableSize(65537))
//	}
type Builder func(nodes []chash.Node) (chash.Placer, error)

// View is one published view: the valid members under the prefix at one
// etcd revision and the placer built from them. A View is immutable.
type View struct {
	// Revision is the etcd revision the member set was read or watched at.
	Revision int64
	// Fingerprint is chash.Fingerprint(Placer).
	Fingerprint string
	// Members are the valid members, ascending by ID.
	Members []Member
	// Placer is the Builder's placer of Members.
	Placer chash.Placer
}

// Watcher follows the members under a prefix and serves the latest view.
// It is a chash.Placer: each lookup delegates to the placer of the view
// current at that moment, with one atomic load, so lookups never block on
// etcd, never allocate beyond what that placer does and never see a nil
// placer. A caller that needs several lookups against one membership
// should take View once. Its methods are safe for concurrent use; a nil or
// zero Watcher serves nothing, as an empty chash.Holder does: build one
// with Watch.
//
// A view's placer, revision, fingerprint and members are swapped together
// with one atomic store, as chash.Holder swaps a placer, so Revision and
// Fingerprint always describe the placer that lookups use at that moment.
//
// # Staleness
//
// The first change after a published view starts the coalescing window
// (WithCoalesce, default DefaultCoalesce, 100 ms); every change that
// arrives before it ends is built into one view. A change is served at most
// the window plus one build after etcd delivers it to the watcher, and a
// burst of changes causes at most one build per window. Views that change
// only members' Addr or Meta reuse the placer without a build.
//
// # Faults
//
// A compacted revision, a cancelled watch, a lost leader (the watch
// requires one) or a closed watch stream make the watcher read the prefix
// afresh and watch from that read's revision + 1, retrying reads with
// backoff up to 2 s apart; it serves its last view meanwhile. A dropped
// connection that the client re-establishes resumes the watch where it
// stopped, or, if that revision was compacted meanwhile, leads to a fresh
// read. The revision served never goes backwards: a read at a lower
// revision than the one served (an etcd restored from an old backup) is
// reported and not served.
//
// # Bad data
//
// A value that is not a valid Member (see ErrBadMember), or larger than
// WithMaxValueSize, is skipped and reported through WithErrorHook, and the
// view is built from the other members. A view with no valid member is
// not served: the watcher keeps its last good view and reports
// ErrNoMembers. A Builder error is reported and likewise keeps the last
// view.
type Watcher struct {
	view   atomic.Pointer[View]
	builds atomic.Int64
	heard  atomic.Int64 // unix nanoseconds of etcd's last word

	c       *clientv3.Client
	prefix  string
	build   Builder
	cfg     config
	cancel  context.CancelFunc
	done    chan struct{}
	members map[string]Member // the valid members at rev; owned by run
	rev     int64             // the revision members reflect; owned by run
}

var _ chash.Placer = (*Watcher)(nil)

// Watch reads the members under prefix, builds the first view with build
// and follows the prefix in the background until Close. ctx bounds only
// the first read. It fails if c or build is nil, prefix is empty, the read
// fails, no valid member is there (ErrNoMembers) or build fails: it never
// returns a Watcher without a view.
func Watch(ctx context.Context, c *clientv3.Client, prefix string, build Builder, opts ...Option) (*Watcher, error) {
	if c == nil || build == nil {
		return nil, fmt.Errorf("%w: nil etcd client or builder", chash.ErrInvalidOption)
	}
	p, err := cleanPrefix(prefix)
	if err != nil {
		return nil, err
	}
	w := &Watcher{c: c, prefix: p, build: build, cfg: newConfig(opts), done: make(chan struct{})}
	if err := w.read(ctx); err != nil {
		return nil, err
	}
	if err := w.publish(); err != nil {
		return nil, err
	}
	run, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	go w.run(run)
	return w, nil
}

// Close stops following the prefix. The watcher keeps serving its last
// view. Closing again does nothing.
func (w *Watcher) Close() error {
	if w == nil || w.cancel == nil {
		return nil
	}
	w.cancel()
	<-w.done
	return nil
}

// run follows the prefix, and reads it afresh whenever the watch ends.
func (w *Watcher) run(ctx context.Context) {
	defer close(w.done)
	for ctx.Err() == nil {
		w.follow(ctx)
		for wait := 50 * time.Millisecond; ctx.Err() == nil; wait = min(2*wait, 2*time.Second) {
			rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			err := w.read(rctx)
			cancel()
			if err == nil {
				w.cfg.report(w.publish())
				break
			}
			w.cfg.report(err)
			select {
			case <-ctx.Done():
			case <-time.After(wait):
			}
		}
	}
}

// follow applies the watch from rev + 1 until it fails or ctx ends,
// publishing coalesced views.
func (w *Watcher) follow(ctx context.Context) {
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	events := w.c.Watch(wctx, w.prefix, clientv3.WithPrefix(), clientv3.WithRev(w.rev+1))
	var due <-chan time.Time
	tick := time.NewTicker(w.cfg.progress)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-due:
			due = nil
			w.cfg.report(w.publish())
		case <-tick.C:
			if silent := time.Since(w.LastHeard()); silent > 3*w.cfg.progress {
				w.cfg.report(fmt.Errorf("etcd: watch %s: no word from etcd for %v, serving revision %d; reading afresh",
					w.prefix, silent.Round(time.Millisecond), w.Revision()))
				return
			}
			go w.askProgress(wctx)
		case resp, ok := <-events:
			if !ok {
				w.cfg.report(fmt.Errorf("etcd: watch %s: closed; reading afresh", w.prefix))
				return
			}
			if err := resp.Err(); err != nil {
				w.cfg.report(fmt.Errorf("etcd: watch %s: %w; reading afresh", w.prefix, err))
				return
			}
			w.hear()
			if !w.apply(resp.Events) {
				continue
			}
			if w.cfg.coalesce == 0 {
				w.cfg.report(w.publish())
			} else if due == nil {
				due = time.After(w.cfg.coalesce)
			}
		}
	}
}

// askProgress asks etcd to confirm, on the watch stream of ctx, that the
// watch is current.
func (w *Watcher) askProgress(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, w.cfg.progress)
	defer cancel()
	w.c.RequestProgress(ctx)
}

func (w *Watcher) hear() { w.heard.Store(time.Now().UnixNano()) }

// LastHeard returns when etcd last confirmed the watcher current: the last
// read, watch event or progress notice. While it answers, that is at most
// about WithProgressInterval ago; an older time means the view may be
// stale (etcd down or unreachable), which is worth an alert. Zero for a nil
// Watcher.
func (w *Watcher) LastHeard() time.Time {
	if w == nil {
		return time.Time{}
	}
	return time.Unix(0, w.heard.Load())
}

// apply updates members with events and reports whether any arrived.
func (w *Watcher) apply(events []*clientv3.Event) bool {
	for _, ev := range events {
		name := string(ev.Kv.Key[len(w.prefix):])
		w.rev = max(w.rev, ev.Kv.ModRevision)
		delete(w.members, name)
		if ev.Type == clientv3.EventTypePut {
			w.accept(name, ev.Kv.Value)
		}
	}
	return len(events) > 0
}

// accept adds the member in value to members, or reports why not.
func (w *Watcher) accept(name string, value []byte) {
	m, err := parseMember(name, value, w.cfg.maxValue)
	if err != nil {
		w.cfg.report(err)
		return
	}
	w.members[name] = m
}

// read replaces members with a fresh read of the prefix.
func (w *Watcher) read(ctx context.Context) error {
	resp, err := w.c.Get(ctx, w.prefix, clientv3.WithPrefix())
	if err != nil {
		return fmt.Errorf("etcd: read %s: %w", w.prefix, err)
	}
	w.members = make(map[string]Member, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		w.accept(string(kv.Key[len(w.prefix):]), kv.Value)
	}
	w.rev = resp.Header.Revision
	w.hear()
	return nil
}

// publish serves the view of members at rev, building its placer unless
// the last view has the same nodes. It returns what keeps it from serving.
func (w *Watcher) publish() error {
	last := w.view.Load()
	switch {
	case last != nil && w.rev < last.Revision:
		return fmt.Errorf("etcd: watch %s: etcd is at revision %d, behind the %d served: keeping it", w.prefix, w.rev, last.Revision)
	case last != nil && w.rev == last.Revision:
		return nil
	case len(w.members) == 0:
		return fmt.Errorf("%w under %s at revision %d: keeping the view of revision %d", ErrNoMembers, w.prefix, w.rev, revision(last))
	}
	members := slices.SortedFunc(maps.Values(w.members), func(a, b Member) int { return cmp.Compare(a.ID, b.ID) })
	v := &View{Revision: w.rev, Members: members}
	if last != nil && sameNodes(last.Members, members) {
		v.Placer, v.Fingerprint = last.Placer, last.Fingerprint
	} else if err := w.place(v); err != nil {
		return err
	}
	w.view.Store(v)
	for _, f := range w.cfg.onView {
		f(v)
	}
	return nil
}

// place builds v's placer.
func (w *Watcher) place(v *View) (err error) {
	nodes := make([]chash.Node, len(v.Members))
	for i, m := range v.Members {
		nodes[i] = m.Node()
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("etcd: watch %s: builder panicked: %v", w.prefix, r)
		}
	}()
	p, err := w.build(nodes)
	switch {
	case err != nil:
		return fmt.Errorf("etcd: watch %s: build view of revision %d: %w", w.prefix, v.Revision, err)
	case p == nil || reflect.ValueOf(p).Kind() == reflect.Pointer && reflect.ValueOf(p).IsNil() || p.Len() == 0:
		return fmt.Errorf("%w: watch %s: builder returned an empty placer", chash.ErrNoNodes, w.prefix)
	}
	w.builds.Add(1)
	v.Placer, v.Fingerprint = p, chash.Fingerprint(p)
	return nil
}

func revision(v *View) int64 {
	if v == nil {
		return 0
	}
	return v.Revision
}

// sameNodes reports whether a and b, both ascending by ID, hold the same
// nodes with the same weights.
func sameNodes(a, b []Member) bool {
	return slices.EqualFunc(a, b, func(x, y Member) bool { return x.Node() == y.Node() })
}
