package status

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/internal/place"
)

// Tracker is a [chash.Holder] that remembers the history of what it holds:
// a revision counted up by every change, the time of the last change, its
// fingerprint, and how many placers were built through it and how long
// that took. It is the placement view of a service whose membership comes
// from anywhere but a watcher that keeps this itself (an etcd Watcher has
// its own revision and builds): the status page ([NewHandler]) and the
// Prometheus collectors (adapters/prometheus) read it.
//
// Tracker is a chash.Placer that delegates each call to the placer current
// at that moment, with one atomic load: lookups take no lock and allocate
// nothing beyond what that placer does. The placer and its revision, time
// and fingerprint are swapped together, as one value, so that a reader
// never sees the new placer with the old revision. [chash.Fingerprint]
// sees through it as through a Holder (it has a Load method).
//
// All methods are safe for concurrent use. The zero Tracker, and a nil
// *Tracker, hold nothing: lookups return the zero Node, Revision is 0 and
// LastChange the zero time; Store, Build and Swap on a nil *Tracker
// panic. A Tracker must not be copied after first use.
type Tracker struct {
	cur        atomic.Pointer[tracked]
	builds     atomic.Int64
	buildNanos atomic.Int64
}

// tracked is one placement a Tracker served, immutable once stored.
type tracked struct {
	p           chash.Placer // nil when empty
	revision    int64
	changed     time.Time
	fingerprint string
}

var _ chash.Placer = (*Tracker)(nil)

// NewTracker returns a Tracker holding p at revision 1 (nil, or a typed
// nil, holds nothing, at revision 1 all the same).
func NewTracker(p chash.Placer) *Tracker {
	t := new(Tracker)
	t.Store(p)
	return t
}

// Store makes p the current placer, one revision up, changed now. nil, or
// a nil pointer in a Placer, empties the Tracker (which is also a change).
// It costs one [chash.Fingerprint] of p, O(n), so that readers of the
// fingerprint pay nothing.
func (t *Tracker) Store(p chash.Placer) { t.Swap(p) }

// Swap is Store, returning the previous placer (nil if there was none).
func (t *Tracker) Swap(p chash.Placer) chash.Placer {
	if isNil(p) {
		p = nil
	}
	next := &tracked{p: p, changed: time.Now(), fingerprint: chash.Fingerprint(p)}
	for {
		old := t.cur.Load()
		next.revision = old.rev() + 1
		if t.cur.CompareAndSwap(old, next) {
			if old == nil {
				return nil
			}
			return old.p
		}
	}
}

// Build calls build, counts it and its duration (Builds, BuildTime) and,
// if it succeeds, stores its placer; on error it keeps the current placer
// and returns the error as build returned it. A build that returns a nil
// placer without an error is stored as empty. build runs on the calling
// goroutine; concurrent Builds run concurrently and the last to finish is
// stored. A nil build is an error wrapping chash.ErrInvalidOption, and
// counts as no build.
func (t *Tracker) Build(build func() (chash.Placer, error)) error {
	if build == nil {
		return fmt.Errorf("%w: status: Tracker.Build(nil)", chash.ErrInvalidOption)
	}
	start := time.Now()
	p, err := build()
	t.buildNanos.Add(int64(time.Since(start)))
	t.builds.Add(1)
	if err != nil {
		return err
	}
	t.Store(p)
	return nil
}

// Load returns the current placer, or nil if none is held.
func (t *Tracker) Load() chash.Placer {
	if c := t.load(); c != nil {
		return c.p
	}
	return nil
}

// Revision returns the number of changes (Store, Swap and successful
// Build calls), 1 after NewTracker; 0 for the zero Tracker.
func (t *Tracker) Revision() int64 { return t.load().rev() }

// LastChange returns when the current placer was stored, or the zero time
// if nothing ever was.
func (t *Tracker) LastChange() time.Time {
	if c := t.load(); c != nil {
		return c.changed
	}
	return time.Time{}
}

// Fingerprint returns [chash.Fingerprint] of the current placer, computed
// when it was stored: [chash.FingerprintNone] when empty.
func (t *Tracker) Fingerprint() string {
	if c := t.load(); c != nil {
		return c.fingerprint
	}
	return chash.FingerprintNone
}

// Builds returns how many times Build was called, failed builds included.
func (t *Tracker) Builds() int64 {
	if t == nil {
		return 0
	}
	return t.builds.Load()
}

// BuildTime returns the total time spent in the builds of Build.
func (t *Tracker) BuildTime() time.Duration {
	if t == nil {
		return 0
	}
	return time.Duration(t.buildNanos.Load())
}

// Lookup calls Lookup on the current placer.
func (t *Tracker) Lookup(key []byte) chash.Node {
	if p := t.Load(); p != nil {
		return p.Lookup(key)
	}
	return chash.Node{}
}

// LookupString calls LookupString on the current placer.
func (t *Tracker) LookupString(key string) chash.Node {
	if p := t.Load(); p != nil {
		return p.LookupString(key)
	}
	return chash.Node{}
}

// AppendTopK calls AppendTopK on the current placer.
func (t *Tracker) AppendTopK(dst []chash.Node, key []byte, k int) []chash.Node {
	if p := t.Load(); p != nil {
		return p.AppendTopK(dst, key, k)
	}
	return dst
}

// AppendTopKString calls AppendTopKString on the current placer.
func (t *Tracker) AppendTopKString(dst []chash.Node, key string, k int) []chash.Node {
	if p := t.Load(); p != nil {
		return p.AppendTopKString(dst, key, k)
	}
	return dst
}

// Nodes calls Nodes on the current placer.
func (t *Tracker) Nodes() []chash.Node {
	if p := t.Load(); p != nil {
		return p.Nodes()
	}
	return nil
}

// Len calls Len on the current placer.
func (t *Tracker) Len() int {
	if p := t.Load(); p != nil {
		return p.Len()
	}
	return 0
}

func (t *Tracker) load() *tracked {
	if t == nil {
		return nil
	}
	return t.cur.Load()
}

func (c *tracked) rev() int64 {
	if c == nil {
		return 0
	}
	return c.revision
}

func isNil(p chash.Placer) bool { return place.IsNil(p) }
