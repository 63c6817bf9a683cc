// Package membertest checks a member.Source against the contract every
// source keeps, on its real server, in the manner of chashtest and
// testing/fstest: a test describes how to reach a fleet of its own on the
// server in a [Spec], and [TestSource] runs the contract as named
// subtests. Every source of the repository runs it (adapters/etcd and
// adapters/dns), and a source written elsewhere can run it the same way.
//
// The cases: complete snapshots of exactly the members written, every
// field of chash.Node (ID, weight, zone) out as in; versions that never go
// backwards, and a higher one for every change; changes served within the
// bound; a member the placer refuses left out and reported while the
// others are served; an empty member set keeping the last good view; a
// watcher started before any member registered waiting for the first;
// with a Breaker, a server that stops answering reported, the last view
// kept and staleness visible, and recovery after; with a SpecPublisher, a
// published placement spec built by every watcher, and a local spec that
// differs reported.
//
// The package imports only the standard library and the chash module.
package membertest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/member"
)

// Fleet is the writing side of a source under test: a member set of the
// test's own on the real server (a key prefix, a DNS name, a znode).
type Fleet interface {
	// Source returns a new source following the fleet.
	Source() member.Source
	// Set makes the server hold exactly members, and returns once it
	// does (a write committed, a zone reloaded).
	Set(members []member.Member) error
}

// SpecPublisher is a Fleet that can publish a placement spec beside its
// members (nil removes it). Sources whose server can hold one implement
// it in their test.
type SpecPublisher interface {
	Fleet
	Publish(s *member.Spec) error
}

// Breaker is a Fleet whose server can be made to stop answering (stopped,
// cut off, silenced) and come back: Restore must bring back the member
// set held before Break.
type Breaker interface {
	Fleet
	Break() error
	Restore() error
}

// Spec describes a source under test. Only NewFleet is required.
type Spec struct {
	// NewFleet returns an empty fleet of the test's own, cleaned up with
	// t.Cleanup.
	NewFleet func(t *testing.T) Fleet
	// Options are given to every watcher the suite starts, after the
	// suite's own (a source's interval, for instance).
	Options []member.Option
	// Silence is the silence bound the suite runs watchers with: about
	// three of the intervals at which the source confirms itself. Zero
	// means 1 s.
	Silence time.Duration
	// Settle bounds how long a change may take to be served. Zero means
	// 5 s.
	Settle time.Duration
	// ID, when set, returns the ID of the suite's i-th member, for
	// sources whose IDs must have a shape (DNS: "host:port"). Nil means
	// "m0000", "m0001", ...
	ID func(i int) string
	// Addr and Meta say whether the source carries Member.Addr and
	// Member.Meta as written; when they are false the suite writes none
	// and ignores what comes back. The fields of chash.Node always
	// travel.
	Addr, Meta bool
	// Weights lists the weights the source can carry exactly, when it
	// cannot carry every finite one; nil means any (the suite uses 1, 2.5
	// and 3, and 1e12 for a member a ring refuses). The largest must be
	// one a ring of 160 points a unit refuses (above 104,857).
	Weights []float64
}

func (s Spec) silence() time.Duration { return cmpOr(s.Silence, time.Second) }
func (s Spec) settle() time.Duration  { return cmpOr(s.Settle, 5*time.Second) }

func cmpOr(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// members returns the suite's members i0 to i0+n-1, with weights and
// zones that vary.
func (s Spec) members(i0, n int) []member.Member {
	weights := s.Weights
	if weights == nil {
		weights = []float64{1, 2.5, 3}
	}
	out := make([]member.Member, n)
	for j := range out {
		i := i0 + j
		id := fmt.Sprintf("m%04d", i)
		if s.ID != nil {
			id = s.ID(i)
		}
		m := member.Member{ID: id, Weight: weights[i%len(weights)], Zone: fmt.Sprintf("z%d", i%3)}
		if s.Addr {
			m.Addr = fmt.Sprintf("10.0.%d.%d:11211", i/256, i%256)
		}
		if s.Meta {
			m.Meta = map[string]string{"rack": fmt.Sprintf("r%d", i%5)}
		}
		out[j] = m
	}
	return out
}

// TestSource runs the contract against the source of s as subtests.
func TestSource(t *testing.T, s Spec) {
	t.Helper()
	if s.NewFleet == nil {
		t.Fatal("membertest: Spec.NewFleet is nil")
	}
	t.Run("Snapshot", func(t *testing.T) { testSnapshot(t, s) })
	t.Run("Changes", func(t *testing.T) { testChanges(t, s) })
	t.Run("Refused", func(t *testing.T) { testRefused(t, s) })
	t.Run("Empty", func(t *testing.T) { testEmpty(t, s) })
	t.Run("WaitsForFirst", func(t *testing.T) { testWaits(t, s) })
	t.Run("Faults", func(t *testing.T) { testFaults(t, s) })
	t.Run("Spec", func(t *testing.T) { testSpec(t, s) })
	t.Run("Lookups", func(t *testing.T) { testLookups(t, s) })
}

// probe follows a fleet with one watcher and records what it was told.
type probe struct {
	t      *testing.T
	s      Spec
	w      *member.Watcher
	mu     sync.Mutex
	errs   []error
	views  []*member.View
	faults []string // contract violations seen in the source's snapshots

	last *member.Snapshot // the last snapshot the source handed over
}

// checked wraps a source, checking every snapshot it hands over.
type checked struct {
	src member.Source
	p   *probe
}

type checkedSink struct {
	member.Sink
	p *probe
}

func (c checked) Run(ctx context.Context, sink member.Sink) error {
	return c.src.Run(ctx, &checkedSink{Sink: sink, p: c.p})
}

// Snapshot checks the rules of complete snapshots and versions.
func (c *checkedSink) Snapshot(s member.Snapshot) {
	p := c.p
	ids := map[string]bool{}
	for _, m := range s.Members {
		if ids[m.ID] {
			p.fault("version %d holds %q twice", s.Version, m.ID)
		}
		ids[m.ID] = true
	}
	p.mu.Lock()
	last := p.last
	p.last = &s
	p.mu.Unlock()
	if last != nil {
		switch {
		case s.Version < last.Version:
			p.fault("version %d after version %d: backwards", s.Version, last.Version)
		case s.Version == last.Version && !sameSnapshot(*last, s):
			p.fault("version %d handed over twice with different members", s.Version)
		}
	}
	c.Sink.Snapshot(s)
}

func sameSnapshot(a, b member.Snapshot) bool {
	if (a.Spec == nil) != (b.Spec == nil) || a.Spec != nil && *a.Spec != *b.Spec || len(a.Members) != len(b.Members) {
		return false
	}
	x, y := sortedMembers(a.Members), sortedMembers(b.Members)
	return slices.EqualFunc(x, y, member.Member.Equal)
}

func sortedMembers(ms []member.Member) []member.Member {
	out := slices.Clone(ms)
	slices.SortFunc(out, func(a, b member.Member) int { return strings.Compare(a.ID, b.ID) })
	return out
}

func (p *probe) fault(format string, args ...any) {
	p.mu.Lock()
	p.faults = append(p.faults, fmt.Sprintf(format, args...))
	p.mu.Unlock()
}

// follow starts a watcher of fleet with build and the suite's options,
// without waiting for its first view.
func follow(t *testing.T, s Spec, fleet Fleet, build member.Builder, opts ...member.Option) *probe {
	t.Helper()
	p := &probe{t: t, s: s}
	all := []member.Option{
		member.WithSilence(s.silence()),
		member.WithCoalesce(20 * time.Millisecond),
		member.WithErrorHook(func(err error) { p.mu.Lock(); p.errs = append(p.errs, err); p.mu.Unlock() }),
		member.WithViewHook(func(v *member.View) {
			p.mu.Lock()
			if n := len(p.views); n > 0 && v.Version <= p.views[n-1].Version {
				p.faults = append(p.faults, fmt.Sprintf("view of version %d after one of version %d", v.Version, p.views[n-1].Version))
			}
			p.views = append(p.views, v)
			p.mu.Unlock()
		}),
	}
	all = append(append(all, s.Options...), opts...)
	w, err := member.New(checked{src: fleet.Source(), p: p}, build, all...)
	if err != nil {
		t.Fatalf("member.New: %v", err)
	}
	p.w = w
	t.Cleanup(func() {
		w.Close()
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, f := range p.faults {
			t.Errorf("contract: %s", f)
		}
	})
	return p
}

// reported reports whether an error matching target (errors.Is) and
// containing text was reported.
func (p *probe) reported(target error, text string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, err := range p.errs {
		if (target == nil || errors.Is(err, target)) && strings.Contains(err.Error(), text) {
			return true
		}
	}
	return false
}

func (p *probe) errors() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var b strings.Builder
	for _, err := range p.errs[max(0, len(p.errs)-8):] {
		b.WriteString("\n\t" + err.Error())
	}
	return b.String()
}

// serves reports whether the view holds exactly want, Node fields and,
// where the source carries them, Addr and Meta.
func (p *probe) serves(want []member.Member) bool {
	v := p.w.View()
	if v == nil || len(v.Members) != len(want) {
		return false
	}
	got := v.Members
	for i, m := range sortedMembers(want) {
		g := got[i]
		if g.Node() != m.Node() || p.s.Addr && g.Addr != m.Addr {
			return false
		}
		if p.s.Meta && !maps(g.Meta, m.Meta) {
			return false
		}
	}
	return true
}

func maps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// await waits until cond holds, for up to the suite's settle bound.
func (p *probe) await(what string, cond func() bool) {
	p.t.Helper()
	deadline := time.Now().Add(p.s.settle())
	for !cond() {
		if time.Now().After(deadline) {
			v := p.w.View()
			p.t.Fatalf("%s: not within %v; serving version %d with %d members; reported:%s",
				what, p.s.settle(), v.Version, len(v.Members), p.errors())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func set(t *testing.T, f Fleet, ms []member.Member) {
	t.Helper()
	if err := f.Set(ms); err != nil {
		t.Fatalf("Fleet.Set of %d members: %v", len(ms), err)
	}
}

func ring(nodes []chash.Node) (chash.Placer, error) { return chash.NewRing(nodes) }

func rendezvous(nodes []chash.Node) (chash.Placer, error) { return chash.NewRendezvous(nodes) }

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// Snapshot: exactly the members written, every field of chash.Node out
// as in, and the view's fingerprint that of a placer built from them.
func testSnapshot(t *testing.T, s Spec) {
	f := s.NewFleet(t)
	want := s.members(0, 20)
	set(t, f, want)
	p := follow(t, s, f, rendezvous)
	if err := p.w.Wait(ctxFor(t, s.settle())); err != nil {
		t.Fatalf("Wait: %v", err)
	}
	p.await("the 20 members written are served", func() bool { return p.serves(want) })
	nodes := make([]chash.Node, len(want))
	for i, m := range want {
		nodes[i] = m.Node()
	}
	ref, err := chash.NewRendezvous(nodes)
	if err != nil {
		t.Fatal(err)
	}
	if got, exp := p.w.Fingerprint(), chash.Fingerprint(ref); got != exp {
		t.Errorf("Fingerprint %s, want %s (the placer of the members written)", got, exp)
	}
	if got := chash.Fingerprint(p.w); got != p.w.Fingerprint() {
		t.Errorf("chash.Fingerprint(watcher) = %s, want the view's %s: it must see through Load", got, p.w.Fingerprint())
	}
	if p.w.LastHeard().IsZero() {
		t.Error("LastHeard is zero after a snapshot")
	}
}

// Changes: joins, leaves, reweights and zone moves are each served, with
// a higher version.
func testChanges(t *testing.T, s Spec) {
	f := s.NewFleet(t)
	cur := s.members(0, 10)
	set(t, f, cur)
	p := follow(t, s, f, rendezvous)
	p.await("the first members", func() bool { return p.serves(cur) })
	steps := []struct {
		name   string
		change func([]member.Member) []member.Member
	}{
		{"join", func(ms []member.Member) []member.Member { return append(ms, s.members(10, 2)...) }},
		{"leave", func(ms []member.Member) []member.Member { return append(ms[:2:2], ms[3:]...) }},
		{"reweight", func(ms []member.Member) []member.Member {
			ms = slices.Clone(ms)
			ms[0].Weight = s.members(1, 1)[0].Weight
			if ms[0].Weight == s.members(0, 1)[0].Weight {
				ms[0].Weight = s.members(2, 1)[0].Weight
			}
			return ms
		}},
		{"zone", func(ms []member.Member) []member.Member {
			ms = slices.Clone(ms)
			ms[1].Zone = "elsewhere"
			return ms
		}},
	}
	for _, st := range steps {
		before := p.w.Version()
		cur = st.change(cur)
		set(t, f, cur)
		p.await(st.name+" served", func() bool { return p.serves(cur) })
		if p.w.Version() <= before {
			t.Errorf("%s: version %d after %d: a change must raise it", st.name, p.w.Version(), before)
		}
	}
}

// Refused: a member the placer cannot take is left out and reported, and
// everyone else is served; it joins once it is placeable.
func testRefused(t *testing.T, s Spec) {
	f := s.NewFleet(t)
	ms := s.members(0, 8)
	set(t, f, ms)
	p := follow(t, s, f, ring)
	p.await("the first members", func() bool { return p.serves(ms) })
	heavy := s.members(8, 1)[0]
	heavy.Weight = heaviest(s)
	more := s.members(9, 1)
	set(t, f, append(append(slices.Clone(ms), heavy), more...))
	p.await("the others served, the heavy member left out", func() bool { return p.serves(append(slices.Clone(ms), more...)) })
	p.await("the refusal reported", func() bool { return p.reported(member.ErrRefused, heavy.ID) })
	if v := p.w.View(); len(v.Refused) != 1 || v.Refused[0].Member.ID != heavy.ID {
		t.Errorf("View.Refused = %v, want %s alone", v.Refused, heavy.ID)
	}
	// One more change elsewhere: still served, the refusal remembered.
	ms = append(ms, more...)
	ms[0].Zone = "moved"
	set(t, f, append(slices.Clone(ms), heavy))
	p.await("a later change served despite the refused member", func() bool { return p.serves(ms) })
}

// heaviest returns a weight the source carries and a ring refuses: more
// points than a ring may have.
func heaviest(s Spec) float64 {
	if s.Weights != nil {
		return slices.Max(s.Weights)
	}
	return 1e12
}

// Empty: a member set emptied keeps the last good view, reported.
func testEmpty(t *testing.T, s Spec) {
	f := s.NewFleet(t)
	ms := s.members(0, 5)
	set(t, f, ms)
	p := follow(t, s, f, rendezvous)
	p.await("the first members", func() bool { return p.serves(ms) })
	before := p.w.View()
	set(t, f, nil)
	p.await("an empty member set reported", func() bool { return p.reported(member.ErrNoMembers, "") })
	if p.w.View() != before {
		t.Error("the view changed: an empty member set must keep the last good view")
	}
	if p.w.LookupString("k").ID == "" {
		t.Error("lookups found no node while the last good view serves")
	}
	back := s.members(20, 2)
	set(t, f, back)
	p.await("members back", func() bool { return p.serves(back) })
}

// WaitsForFirst: a watcher started before any member registered waits
// for the first, and Wait fails only when its context ends.
func testWaits(t *testing.T, s Spec) {
	f := s.NewFleet(t)
	p := follow(t, s, f, rendezvous)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	err := p.w.Wait(ctx)
	cancel()
	if !errors.Is(err, member.ErrNoMembers) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Wait on an empty fleet = %v, want ErrNoMembers and the context's error", err)
	}
	if n := p.w.LookupString("k"); n.ID != "" || p.w.Len() != 0 || p.w.Load() == nil {
		t.Errorf("before the first view: lookup %v, Len %d, Load %v: want an empty, non-nil placer", n, p.w.Len(), p.w.Load())
	}
	ms := s.members(0, 3)
	done := make(chan error, 1)
	go func() { done <- p.w.Wait(ctxFor(t, 2*s.settle())) }()
	time.Sleep(50 * time.Millisecond)
	set(t, f, ms)
	if err := <-done; err != nil {
		t.Fatalf("Wait after the first members registered: %v", err)
	}
	p.await("the first members", func() bool { return p.serves(ms) })
}

// Faults: a server that stops answering is reported, the last view keeps
// serving and LastHeard shows its age; after it comes back, changes are
// served again.
func testFaults(t *testing.T, s Spec) {
	f := s.NewFleet(t)
	b, ok := f.(Breaker)
	if !ok {
		t.Skip("the fleet is not a Breaker")
	}
	ms := s.members(0, 6)
	set(t, f, ms)
	p := follow(t, s, f, rendezvous)
	p.await("the first members", func() bool { return p.serves(ms) })
	before := p.w.View()
	if err := b.Break(); err != nil {
		t.Fatalf("Break: %v", err)
	}
	broke := time.Now()
	p.await("the outage reported", func() bool { return p.reported(member.ErrSilent, "") || p.reported(nil, "running it again") })
	p.await("the silence shows in LastHeard", func() bool { return time.Since(p.w.LastHeard()) > s.silence() })
	if p.w.View() != before {
		t.Error("the view changed during the outage")
	}
	if p.w.LookupString("k").ID == "" {
		t.Error("lookups found no node during the outage")
	}
	if err := b.Restore(); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	t.Logf("outage of %v", time.Since(broke).Round(time.Millisecond))
	ms = append(ms, s.members(6, 1)...)
	set(t, f, ms)
	p.await("a change after the outage served", func() bool { return p.serves(ms) })
	if age := time.Since(p.w.LastHeard()); age > s.silence() {
		t.Errorf("LastHeard %v ago after recovery", age)
	}
}

// Spec: a published spec is what watchers without a builder build with,
// and a local spec that differs is reported.
func testSpec(t *testing.T, s Spec) {
	f := s.NewFleet(t)
	pub, ok := f.(SpecPublisher)
	if !ok {
		t.Skip("the fleet cannot publish a spec")
	}
	ms := s.members(0, 6)
	set(t, f, ms)
	spec := member.Spec{Algorithm: chash.AlgorithmMaglev, TableSize: 1009}
	if err := pub.Publish(&spec); err != nil {
		t.Fatalf("Publish: %v", err)
	}
	local := member.Spec{Algorithm: chash.AlgorithmRing}
	follows := follow(t, s, f, nil)
	differs := follow(t, s, f, nil, member.WithSpec(local))
	nodes := make([]chash.Node, len(ms))
	for i, m := range ms {
		nodes[i] = m.Node()
	}
	ref, err := spec.Build(nodes)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []*probe{follows, differs} {
		p.await("the published spec built", func() bool { return p.w.Fingerprint() == chash.Fingerprint(ref) })
		if v := p.w.View(); v.Spec == nil || *v.Spec != spec {
			t.Errorf("View.Spec = %v, want %v", v.Spec, spec)
		}
	}
	differs.await("the differing local spec reported", func() bool { return differs.reported(member.ErrSpecMismatch, "") })
	if follows.reported(member.ErrSpecMismatch, "") {
		t.Error("a watcher with no local spec reported a mismatch")
	}
}

// Lookups: a watcher's lookups allocate nothing (without the race
// detector, which allocates) and agree with its view's placer.
func testLookups(t *testing.T, s Spec) {
	f := s.NewFleet(t)
	ms := s.members(0, 10)
	set(t, f, ms)
	p := follow(t, s, f, rendezvous)
	p.await("the members", func() bool { return p.serves(ms) })
	key, dst := []byte("user:1"), make([]chash.Node, 0, 3)
	allocs := testing.AllocsPerRun(100, func() {
		p.w.Lookup(key)
		p.w.LookupString("user:2")
		dst = p.w.AppendTopK(dst[:0], key, 3)
	})
	if allocs != 0 && !raceEnabled {
		t.Errorf("lookups allocate %v times a run", allocs)
	}
	if got, want := p.w.LookupString("user:2"), p.w.View().Placer.LookupString("user:2"); got != want {
		t.Errorf("LookupString = %v, the view's placer says %v", got, want)
	}
}
