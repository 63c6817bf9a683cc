package prometheus

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/member"
	prom "github.com/prometheus/client_golang/prometheus"
)

// MembershipCollector exports the health of a membership watcher: the
// errors it reports, by kind, and how long ago its source last confirmed
// it current. Its series, 12 by default (one per kind, plus those of
// WithErrorKind):
//
//	chash_membership_errors_total{kind}                 counter errors reported through Report, by kind
//	chash_membership_last_heard_timestamp_seconds       gauge   when the source last confirmed the watcher current
//	chash_membership_staleness_seconds                  gauge   how long ago that was, at the scrape
//
// The kinds are the names given with WithErrorKind, matched first, in
// order, then:
//
//	bad_member   member.ErrBadMember: a value that is not a valid member, skipped
//	refused      member.ErrRefused: a valid member the placer refused
//	silent       member.ErrSilent: the source stopped answering
//	behind       member.ErrBehind: a snapshot behind the view served
//	spec         member.ErrSpecMismatch, ErrNoSpec, ErrBadSpec, ErrSeed: the placement spec
//	no_members   errors wrapping chash.ErrNoNodes (member.ErrNoMembers, an empty builder result)
//	timeout      errors wrapping context.DeadlineExceeded
//	canceled     errors wrapping context.Canceled
//	invalid      errors wrapping chash.ErrInvalidWeight, ErrEmptyID, ErrDuplicateID or ErrInvalidOption
//	other        the rest
//
// The member package's errors are what every source (etcd, DNS) reports,
// so its kinds need no option. For an etcd watcher: build the collector
// first, pass its Report to etcd.WithErrorHook, then give it the watcher
// with SetSource:
//
//	members, _ := chashprom.NewMembershipCollector(nil)
//	w, err := etcd.Watch(ctx, cli, prefix, build, etcd.WithErrorHook(members.Report))
//	...
//	members.SetSource(w)
//
// Report is safe for concurrent use and costs one atomic add after
// errors.Is against each kind; a scrape costs O(kinds). The zero
// MembershipCollector is not usable: build one with NewMembershipCollector.
type MembershipCollector struct {
	src    atomic.Pointer[heardBox]
	kinds  []errorKind
	counts []atomic.Uint64 // per kind, other last

	errs, heard, stale *prom.Desc
}

var _ prom.Collector = (*MembershipCollector)(nil)

// heardBox lets a source sit behind an atomic pointer.
type heardBox struct {
	src interface{ LastHeard() time.Time }
}

// builtinKinds are the kinds every membership collector counts, after
// those of WithErrorKind; "other" follows them.
var builtinKinds = []errorKind{
	{"bad_member", member.ErrBadMember},
	{"refused", member.ErrRefused},
	{"silent", member.ErrSilent},
	{"behind", member.ErrBehind},
	{"spec", member.ErrSpecMismatch},
	{"spec", member.ErrNoSpec},
	{"spec", member.ErrBadSpec},
	{"spec", member.ErrSeed},
	{"no_members", chash.ErrNoNodes},
	{"timeout", context.DeadlineExceeded},
	{"canceled", context.Canceled},
	{"invalid", chash.ErrInvalidWeight},
	{"invalid", chash.ErrEmptyID},
	{"invalid", chash.ErrDuplicateID},
	{"invalid", chash.ErrInvalidOption},
}

// NewMembershipCollector returns the collector of a watcher (see
// MembershipCollector). src gives LastHeard, the time its source last
// confirmed it current, such as an etcd Watcher; nil exports the errors
// alone. It uses WithErrorKind and WithConstLabels, and fails with
// chash.ErrInvalidOption for a bad option or a kind named twice.
func NewMembershipCollector(src interface{ LastHeard() time.Time }, opts ...Option) (*MembershipCollector, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	taken := map[string]bool{"other": true}
	for _, k := range builtinKinds {
		taken[k.name] = true
	}
	for _, k := range cfg.kinds {
		if taken[k.name] {
			return nil, fmt.Errorf("%w: prometheus: error kind %q named twice, or one of the collector's own", chash.ErrInvalidOption, k.name)
		}
		taken[k.name] = true
	}
	kinds := append(append([]errorKind{}, cfg.kinds...), builtinKinds...)
	c := &MembershipCollector{kinds: kinds, counts: make([]atomic.Uint64, len(kinds)+1),
		errs:  cfg.desc("membership_errors_total", "Errors the membership watcher reported, by kind.", "kind"),
		heard: cfg.desc("membership_last_heard_timestamp_seconds", "When the membership's source (etcd) last confirmed the watcher current, as a Unix time."),
		stale: cfg.desc("membership_staleness_seconds", "Time since the membership's source (etcd) last confirmed the watcher current."),
	}
	c.SetSource(src)
	return c, nil
}

// SetSource sets the source of the staleness series (nil, or a typed nil,
// removes them): for a watcher built after the collector, so that its
// error hook could be the collector's Report. Safe for concurrent use.
func (c *MembershipCollector) SetSource(src interface{ LastHeard() time.Time }) {
	if isNil(src) {
		c.src.Store(nil)
		return
	}
	c.src.Store(&heardBox{src})
}

// Report counts err under its kind; nil counts nothing. Pass it as the
// watcher's error hook (etcd.WithErrorHook(c.Report)).
func (c *MembershipCollector) Report(err error) {
	if err == nil || c == nil || c.counts == nil {
		return
	}
	for i, k := range c.kinds {
		if errors.Is(err, k.target) {
			c.counts[i].Add(1)
			return
		}
	}
	c.counts[len(c.kinds)].Add(1)
}

// Describe sends the descriptions of every series the collector can
// export.
func (c *MembershipCollector) Describe(ch chan<- *prom.Desc) {
	ch <- c.errs
	ch <- c.heard
	ch <- c.stale
}

// Collect sends the error counts and the staleness.
func (c *MembershipCollector) Collect(ch chan<- prom.Metric) {
	byName := map[string]uint64{"other": c.counts[len(c.kinds)].Load()}
	order := []string{}
	for i, k := range c.kinds {
		if _, ok := byName[k.name]; !ok {
			order = append(order, k.name)
		}
		byName[k.name] += c.counts[i].Load()
	}
	for _, name := range append(order, "other") {
		send(ch, c.errs, prom.CounterValue, float64(byName[name]), name)
	}
	b := c.src.Load()
	if b == nil {
		return
	}
	t := b.src.LastHeard()
	if t.IsZero() {
		return
	}
	send(ch, c.heard, prom.GaugeValue, float64(t.UnixNano())/1e9)
	send(ch, c.stale, prom.GaugeValue, max(time.Since(t).Seconds(), 0))
}
