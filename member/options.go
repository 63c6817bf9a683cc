package member

import "time"

// DefaultCoalesce is a watcher's coalescing window unless WithCoalesce says
// otherwise.
const DefaultCoalesce = 100 * time.Millisecond

// DefaultSilence is a watcher's silence bound unless WithSilence says
// otherwise. A source that confirms itself more often (etcd's progress
// notices, DNS's re-resolutions) should set a bound of about three of its
// intervals.
const DefaultSilence = 15 * time.Second

// Option configures a Watcher. A nil Option is ignored.
type Option func(*config)

type config struct {
	coalesce time.Duration
	silence  time.Duration
	spec     *Spec
	seeds    SeedFunc
	onError  []func(error)
	onView   []func(*View)
}

func newConfig(opts []Option) config {
	c := config{coalesce: DefaultCoalesce, silence: DefaultSilence}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	return c
}

// WithCoalesce sets the coalescing window: the first snapshot after a
// published view starts a timer of d, and the latest snapshot when it
// fires is built into the next view. A change is thus served at most d
// plus one build after the source hands it over, and a burst of changes
// causes at most one build per d. Zero builds every snapshot; a negative
// d means zero. The first view is built at once, whatever d.
func WithCoalesce(d time.Duration) Option { return func(c *config) { c.coalesce = max(d, 0) } }

// WithSilence sets the silence bound: when the source has handed over no
// snapshot and confirmed nothing (Sink.Heard) for d, the watcher reports
// ErrSilent, stops the source's Run and starts it again, which reads
// afresh; the last view keeps serving. The bound runs from each start of
// Run too, so it covers the first read and the setting up of a watch. At
// least 10 ms; the default is DefaultSilence.
func WithSilence(d time.Duration) Option {
	return func(c *config) { c.silence = max(d, 10*time.Millisecond) }
}

// WithSpec gives the placement spec this process expects. When the source
// publishes a different one, the watcher reports ErrSpecMismatch (once for
// each spec published). With a nil Builder the watcher builds with the
// published spec, and with s until one is published.
func WithSpec(s Spec) Option { return func(c *config) { c.spec = &s } }

// WithSeeds sets how the watcher resolves the name of a hasher seed that a
// spec names (Spec.Seed) when it builds from a spec. Without it, a spec
// that names a seed cannot be built (ErrSeed).
func WithSeeds(f SeedFunc) Option { return func(c *config) { c.seeds = f } }

// WithErrorHook adds a function that receives what the watcher and its
// source cannot act on: members skipped (ErrBadMember) or refused
// (ErrRefused), views that would be empty (ErrNoMembers), a silent source
// (ErrSilent), a snapshot behind the view (ErrBehind), a spec that differs
// (ErrSpecMismatch), and the faults of the source, which retries them. It
// is called from the watcher's goroutines and must not block for long.
// Hooks are called in the order given; a nil f is ignored.
func WithErrorHook(f func(error)) Option {
	return func(c *config) {
		if f != nil {
			c.onError = append(c.onError, f)
		}
	}
}

// WithViewHook adds a function called with each view the watcher serves,
// the first included, right after it is published: the place to log or
// export View.Fingerprint and View.Version. It is called from the
// watcher's goroutine and must not block for long. Hooks are called in
// the order given; a nil f is ignored.
func WithViewHook(f func(*View)) Option {
	return func(c *config) {
		if f != nil {
			c.onView = append(c.onView, f)
		}
	}
}
