package member

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/keyplace/chash"
)

// View is one published view: the members a source held at one version
// and the placer built from them. A View is immutable.
type View struct {
	// Version is the source's version of the member set (see Snapshot).
	Version int64
	// Built is when the watcher published the view.
	Built time.Time
	// Fingerprint is chash.Fingerprint(Placer). Processes that build from
	// the same spec and members show the same fingerprint.
	Fingerprint string
	// Members are the members placed, ascending by ID.
	Members []Member
	// Refused are the valid members the placer refused (see Place),
	// ascending by ID: they are not in Members and own no key.
	Refused []Refusal
	// Spec is the placement spec published with the members, or nil.
	Spec *Spec
	// Placer places keys on Members. It is never nil: before the first
	// view it is an empty placer, which places no key.
	Placer chash.Placer
}

// Watcher runs a Source and serves the latest view of its member set. It
// is a chash.Placer: each lookup delegates to the placer of the view
// current at that moment, with one atomic load, so lookups never block on
// the source, allocate nothing beyond what that placer does and never see
// a nil placer. A caller that needs several lookups against one member
// set should take View once. A Watcher also has a method Load() Placer, so
// that chash.Fingerprint and chash.Diff see through it, as through a
// chash.Holder. Its methods are safe for concurrent use; a nil or zero
// Watcher serves nothing, as an empty chash.Holder does: build one with
// New or Follow.
//
// Views follow these rules, the same for every source:
//
//   - A view is a complete snapshot at one version; versions only go up
//     (a snapshot behind the view served is reported, ErrBehind).
//   - Snapshots arriving within the coalescing window (WithCoalesce) are
//     built into one view: a change is served at most the window plus one
//     build after the source hands it over. A snapshot whose placed
//     members and spec are those of the view served reuses its placer.
//   - Invalid members are reported (ErrBadMember) and left out; members
//     the placer refuses are reported (ErrRefused), left out and listed in
//     View.Refused, and everyone else is served. Only a snapshot with no
//     placeable member keeps the last good view (ErrNoMembers).
//   - A source silent for longer than the silence bound (WithSilence) is
//     reported (ErrSilent) and its Run started again; LastHeard tells how
//     fresh the view is.
//   - Source faults are reported and retried; the last good view keeps
//     serving throughout.
type Watcher struct {
	view    atomic.Pointer[View]
	builds  atomic.Int64
	buildNs atomic.Int64 // time spent in builds
	heard   atomic.Int64 // unix nanoseconds of the source's last word
	started atomic.Int64 // unix nanoseconds of the current Run's start
	lastErr atomic.Pointer[error]

	src    Source
	build  Builder
	cfg    config
	cancel context.CancelFunc
	done   chan struct{}
	ready  chan struct{}
	once   sync.Once

	mu      sync.Mutex
	pending *Snapshot
	wake    chan struct{}

	// Owned by the build loop.
	placer    *placement
	placerKey string
	lastNodes []chash.Node
	mismatch  string // the published spec last reported as differing
}

var _ chash.Placer = (*Watcher)(nil)

// empty is the placer of the view before the first.
var empty chash.Placer = new(chash.Holder)

// New starts a watcher of src that builds its placers with build, or, if
// build is nil, with the spec the source publishes (see WithSpec and
// WithSeeds). It returns at once: the watcher serves an empty view (no
// key placed) until the first view is built, which Ready and Wait tell.
// It fails only if src is nil. Close stops it.
func New(src Source, build Builder, opts ...Option) (*Watcher, error) {
	if src == nil {
		return nil, fmt.Errorf("%w: member: nil source", chash.ErrInvalidOption)
	}
	w := &Watcher{src: src, build: build, cfg: newConfig(opts), done: make(chan struct{}),
		ready: make(chan struct{}), wake: make(chan struct{}, 1)}
	w.view.Store(&View{Placer: empty, Fingerprint: chash.FingerprintNone})
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); w.runSource(ctx) }()
	go func() { defer wg.Done(); w.runBuilds(ctx) }()
	go func() { wg.Wait(); close(w.done) }()
	return w, nil
}

// Follow starts a watcher as New does and waits until it serves its first
// view or ctx ends (see Wait). It never returns a Watcher without a view:
// on failure it closes the watcher.
func Follow(ctx context.Context, src Source, build Builder, opts ...Option) (*Watcher, error) {
	w, err := New(src, build, opts...)
	if err != nil {
		return nil, err
	}
	if err := w.Wait(ctx); err != nil {
		w.Close()
		return nil, err
	}
	return w, nil
}

// Ready returns a channel closed once the watcher serves its first view.
// A nil Watcher's is closed.
func (w *Watcher) Ready() <-chan struct{} {
	if w == nil || w.ready == nil {
		c := make(chan struct{})
		close(c)
		return c
	}
	return w.ready
}

// Wait waits until the watcher serves its first view, which a member set
// with no placeable member (a fleet not yet registered) delays, or until
// ctx ends or the watcher is closed. Its error wraps ErrNoMembers and
// ctx's error (or ErrClosed), and tells the last fault reported.
func (w *Watcher) Wait(ctx context.Context) error {
	if w == nil || w.ready == nil {
		return fmt.Errorf("%w: nil watcher", ErrNoMembers)
	}
	var why error
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
		why = ctx.Err()
	case <-w.done:
		why = ErrClosed
	}
	if last := w.lastErr.Load(); last != nil {
		return fmt.Errorf("%w: %w; last fault: %w", ErrNoMembers, why, *last)
	}
	return fmt.Errorf("%w: %w; the source handed over nothing", ErrNoMembers, why)
}

// Close stops the source and waits for the watcher's goroutines. The
// watcher keeps serving its last view. Closing again does nothing.
func (w *Watcher) Close() error {
	if w == nil || w.cancel == nil {
		return nil
	}
	w.cancel()
	<-w.done
	return nil
}

// report calls the error hooks.
func (w *Watcher) report(err error) {
	if err == nil {
		return
	}
	w.lastErr.Store(&err)
	for _, f := range w.cfg.onError {
		f(err)
	}
}

func (w *Watcher) hear() { w.heard.Store(time.Now().UnixNano()) }

// LastHeard returns when the source last handed over a snapshot or
// confirmed the last one current. An age well beyond the source's interval
// (and the silence bound) means the view may be stale: worth an alert.
// Zero for a nil Watcher or before the source said anything.
func (w *Watcher) LastHeard() time.Time {
	if w == nil || w.heard.Load() == 0 {
		return time.Time{}
	}
	return time.Unix(0, w.heard.Load())
}

// Builds returns how many placers the watcher has built: a figure to
// export next to the fingerprint. It counts the builds of the search for
// refused members too.
func (w *Watcher) Builds() int64 {
	if w == nil {
		return 0
	}
	return w.builds.Load()
}

// BuildTime returns the total time the watcher has spent building placers
// (Builds of them, the search for refused members included): with Builds,
// the cost of following the membership, which adapters/prometheus exports
// as chash_placement_build_seconds_total.
func (w *Watcher) BuildTime() time.Duration {
	if w == nil {
		return 0
	}
	return time.Duration(w.buildNs.Load())
}

// sink is the Sink a watcher hands its source.
type sink struct{ w *Watcher }

func (s sink) Snapshot(snap Snapshot) {
	w := s.w
	w.hear()
	w.mu.Lock()
	if w.pending == nil || snap.Version >= w.pending.Version {
		w.pending = &snap
	}
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (s sink) Heard() { s.w.hear() }

func (s sink) Report(err error) { s.w.report(err) }

// runSource runs the source until ctx ends, again after each failure or
// silence, with backoff.
func (w *Watcher) runSource(ctx context.Context) {
	wait := 50 * time.Millisecond
	for ctx.Err() == nil {
		run, cancel := context.WithCancelCause(ctx)
		start := time.Now()
		w.started.Store(start.UnixNano())
		dog := make(chan struct{})
		go w.watchdog(run, cancel, dog)
		err := w.src.Run(run, sink{w})
		silent := errors.Is(context.Cause(run), ErrSilent)
		cancel(nil)
		<-dog
		if ctx.Err() != nil {
			return
		}
		if err != nil && !silent {
			w.report(fmt.Errorf("member: source: %w; running it again", err))
		}
		if w.heard.Load() > start.UnixNano() {
			wait = 50 * time.Millisecond
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// watchdog cancels run when the source is silent for longer than the
// bound, counting from the start of the run at the earliest.
func (w *Watcher) watchdog(run context.Context, cancel context.CancelCauseFunc, done chan struct{}) {
	defer close(done)
	tick := time.NewTicker(max(w.cfg.silence/8, 5*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-run.Done():
			return
		case <-tick.C:
		}
		since := max(w.heard.Load(), w.started.Load())
		if silent := time.Since(time.Unix(0, since)); silent > w.cfg.silence {
			w.report(fmt.Errorf("%w: no word for %v (bound %v), serving version %d; reading afresh",
				ErrSilent, silent.Round(time.Millisecond), w.cfg.silence, w.Version()))
			cancel(ErrSilent)
			return
		}
	}
}

// runBuilds builds views from the snapshots handed over, coalescing them.
func (w *Watcher) runBuilds(ctx context.Context) {
	var due <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.wake:
			if w.cfg.coalesce == 0 || !w.isReady() {
				w.publishPending()
			} else if due == nil {
				due = time.After(w.cfg.coalesce)
			}
		case <-due:
			due = nil
			w.publishPending()
		}
	}
}

func (w *Watcher) isReady() bool {
	select {
	case <-w.ready:
		return true
	default:
		return false
	}
}

// publishPending serves the latest snapshot handed over, if any.
func (w *Watcher) publishPending() {
	w.mu.Lock()
	s := w.pending
	w.pending = nil
	w.mu.Unlock()
	if s != nil {
		w.report(w.publish(s))
	}
}

// publish serves the view of s, or returns what keeps it from serving.
func (w *Watcher) publish(s *Snapshot) error {
	last := w.view.Load()
	ready := w.isReady()
	switch {
	case ready && s.Version < last.Version:
		return fmt.Errorf("%w: version %d, behind the %d served: keeping it", ErrBehind, s.Version, last.Version)
	case ready && s.Version == last.Version:
		return nil
	}
	members := w.valid(s.Members)
	build, key, err := w.builder(s.Spec)
	if err != nil {
		return fmt.Errorf("version %d: %w: keeping the view of version %d", s.Version, err, last.Version)
	}
	nodes := make([]chash.Node, len(members))
	for i, m := range members {
		nodes[i] = m.Node()
	}
	v := &View{Version: s.Version, Built: time.Now(), Spec: s.Spec}
	var refused []Refusal
	if ready && key == w.placerKey && slices.Equal(nodes, w.lastNodes) {
		v.Placer, v.Fingerprint = last.Placer, last.Fingerprint
		refused = last.Refused
	} else {
		if key != w.placerKey {
			w.placer, w.placerKey = newPlacement(build), key
		}
		before, t0 := w.placer.builds, time.Now()
		p, r, err := w.placer.place(nodes)
		w.buildNs.Add(int64(time.Since(t0)))
		w.builds.Add(int64(w.placer.builds - before))
		w.reportRefused(r, last.Refused)
		if err != nil {
			return fmt.Errorf("version %d: %w: keeping the view of version %d", s.Version, err, last.Version)
		}
		v.Placer, v.Fingerprint, refused = p, chash.Fingerprint(p), r
		w.lastNodes = nodes
	}
	v.Members, v.Refused = split(members, refused)
	w.view.Store(v)
	w.once.Do(func() { close(w.ready) })
	for _, f := range w.cfg.onView {
		f(v)
	}
	return nil
}

// valid returns the valid members of in, ascending by ID, each ID once,
// reporting the others.
func (w *Watcher) valid(in []Member) []Member {
	out := make([]Member, 0, len(in))
	for _, m := range in {
		if err := m.Check(); err != nil {
			w.report(err)
			continue
		}
		out = append(out, m)
	}
	slices.SortStableFunc(out, func(a, b Member) int { return cmp.Compare(a.ID, b.ID) })
	return slices.CompactFunc(out, func(a, b Member) bool {
		if a.ID == b.ID {
			w.report(fmt.Errorf("%w: %q twice in one snapshot: keeping the first", ErrBadMember, a.ID))
			return true
		}
		return false
	})
}

// builder returns the builder for a snapshot published with spec, and a
// key that changes whenever the builder does.
func (w *Watcher) builder(published *Spec) (Builder, string, error) {
	local := w.cfg.spec
	if published != nil && local != nil && *published != *local {
		if text := published.String(); text != w.mismatch {
			w.mismatch = text
			w.report(fmt.Errorf("%w: published %q, local %q", ErrSpecMismatch, text, local.String()))
		}
	}
	switch {
	case w.build != nil:
		return w.build, "builder", nil
	case published != nil:
		return published.Builder(w.cfg.seeds), "spec " + published.String(), nil
	case local != nil:
		return local.Builder(w.cfg.seeds), "spec " + local.String(), nil
	}
	return nil, "", fmt.Errorf("%w: none published, none given (WithSpec), and no Builder", ErrNoSpec)
}

// reportRefused reports the refusals of now that were not in before.
func (w *Watcher) reportRefused(now, before []Refusal) {
	for _, r := range now {
		if !slices.ContainsFunc(before, func(b Refusal) bool { return b.Member.Node() == r.Member.Node() }) {
			w.report(r.Err)
		}
	}
}

// split returns the members placed and the refusals, with the members'
// full records; both ascending by ID.
func split(members []Member, refused []Refusal) ([]Member, []Refusal) {
	if len(refused) == 0 {
		return members, nil
	}
	placed := make([]Member, 0, len(members)-len(refused))
	out := make([]Refusal, 0, len(refused))
	i := 0
	for _, m := range members {
		for i < len(refused) && refused[i].Member.ID < m.ID {
			i++
		}
		if i < len(refused) && refused[i].Member.ID == m.ID {
			out = append(out, Refusal{Member: m, Err: refused[i].Err})
			continue
		}
		placed = append(placed, m)
	}
	return placed, out
}
