package etcd

import (
	"fmt"
	"strings"
	"time"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/member"
)

// Member is what a node announces: its placement identity (ID, weight and
// zone: every field of chash.Node) and whatever a client needs to reach it.
// It is stored as its JSON form (see member.Member) under prefix + ID.
type Member = member.Member

// ErrBadMember reports a value under the prefix that is not a valid
// member: not JSON, too large, an empty ID or one that differs from its
// key's name, or a negative, NaN or infinite weight. Watchers skip such
// values and report them, wrapped with the key, through the error hook.
// It is member.ErrBadMember, the same for every source.
var ErrBadMember = member.ErrBadMember

// ErrNoMembers reports a member set with no member the placer can take.
// Watch returns it when no such member registered before its context
// ended; afterwards a watcher keeps serving its last good view and reports
// it through the error hook. It is member.ErrNoMembers and wraps
// chash.ErrNoNodes.
var ErrNoMembers = member.ErrNoMembers

// DefaultMaxValueSize is the largest member value, in bytes, a watcher
// accepts unless WithMaxValueSize says otherwise.
const DefaultMaxValueSize = member.DefaultMaxValueSize

// specName is the name under the prefix of the fleet's placement spec: the
// key prefix + "/" itself, which no member can have (IDs are not empty).
const specName = ""

// parseMember decodes the value of the key whose name under the prefix is
// name, enforcing the rules of ErrBadMember.
func parseMember(name string, value []byte, maxSize int) (Member, error) {
	m, err := member.DecodeJSON(value, maxSize)
	if err != nil {
		return Member{}, fmt.Errorf("%w (key %q)", err, name)
	}
	if m.ID != name {
		return Member{}, fmt.Errorf("%w: key %q holds ID %q: a member's ID must be its key's name", ErrBadMember, name, m.ID)
	}
	return m, nil
}

// checkID refuses an ID that cannot be a key's name under a prefix.
func checkID(m Member) error {
	if err := m.Check(); err != nil {
		return err
	}
	if strings.Contains(m.ID, "/") {
		return fmt.Errorf("%w: ID %q holds a \"/\": IDs name keys right under the prefix (a \"/\" would make it a member of a nested prefix)", ErrBadMember, m.ID)
	}
	return nil
}

// cleanPrefix returns prefix ending in exactly one "/".
func cleanPrefix(prefix string) (string, error) {
	p := strings.TrimRight(prefix, "/")
	if p == "" {
		return "", fmt.Errorf("%w: empty prefix", chash.ErrInvalidOption)
	}
	return p + "/", nil
}

// Option configures Register, Watch, NewSource or Publish. An option that
// does not apply to the call it is given to is ignored, so one list can
// configure all of them.
type Option func(*config)

type config struct {
	ttl      time.Duration
	progress time.Duration
	silence  time.Duration
	maxValue int
	onError  []func(error)
	watch    []member.Option
}

func newConfig(opts []Option) config {
	c := config{ttl: DefaultTTL, progress: DefaultProgressInterval, maxValue: DefaultMaxValueSize}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	return c
}

// watchOptions returns the watcher's options: the silence bound first, so
// that a WithMemberOptions given later can override it.
func (c config) watchOptions() []member.Option {
	silence := c.silence
	if silence == 0 {
		silence = 3 * c.progress
	}
	return append([]member.Option{member.WithSilence(silence)}, c.watch...)
}

func (c config) report(err error) {
	if err == nil {
		return
	}
	for _, f := range c.onError {
		f(err)
	}
}

// DefaultTTL is a registration's lease TTL unless WithTTL says otherwise.
const DefaultTTL = 10 * time.Second

// DefaultCoalesce is a watcher's coalescing window unless WithCoalesce says
// otherwise.
const DefaultCoalesce = member.DefaultCoalesce

// WithTTL sets a registration's lease TTL, rounded up to a whole second
// and at least etcd's minimum (about 2 s with default election settings):
// a node whose process dies leaves every view about this long after its
// last keepalive. Only Register uses it.
func WithTTL(d time.Duration) Option { return func(c *config) { c.ttl = max(d, time.Second) } }

// WithCoalesce sets a watcher's coalescing window (member.WithCoalesce):
// the first change after a published view starts a timer of d, and the
// changes that arrive before it fires are built into one view. A change is
// thus served at most d plus one build after the watcher receives it, and
// a burst causes at most one build per d. Zero builds a view for every
// watch response. Only Watch uses it.
func WithCoalesce(d time.Duration) Option {
	return func(c *config) { c.watch = append(c.watch, member.WithCoalesce(d)) }
}

// DefaultProgressInterval is how often a watcher asks etcd to confirm its
// watch unless WithProgressInterval says otherwise.
const DefaultProgressInterval = 5 * time.Second

// WithProgressInterval sets how often a watcher asks etcd to confirm that
// its watch is current (at least 10 ms). The silence bound is three
// intervals: a watcher that hears nothing from etcd for that long, while
// reading, setting up its watch or following it, reports member.ErrSilent
// and reads afresh. Only Watch uses it.
func WithProgressInterval(d time.Duration) Option {
	return func(c *config) { c.progress = max(d, 10*time.Millisecond) }
}

// WithMaxValueSize sets the largest member value, in bytes, a watcher
// accepts; larger ones are skipped and reported. Only Watch uses it.
func WithMaxValueSize(n int) Option { return func(c *config) { c.maxValue = max(n, 1) } }

// WithErrorHook sets the function that receives what a watcher or a
// registration cannot act on: skipped members (ErrBadMember), members the
// placer refuses (member.ErrRefused), views that would be empty
// (ErrNoMembers), a silent etcd (member.ErrSilent), a published spec that
// differs from WithSpec's (member.ErrSpecMismatch), lost leases and failed
// reads or keepalives that are being retried. It is called from a
// background goroutine and must not block for long. Each WithErrorHook adds
// a hook; they are called in the order given. A nil f is ignored.
func WithErrorHook(f func(error)) Option {
	return func(c *config) {
		if f != nil {
			c.onError = append(c.onError, f)
			c.watch = append(c.watch, member.WithErrorHook(f))
		}
	}
}

// WithViewHook sets a function called with each view a watcher serves,
// the first included, right after it is published: the place to log or
// export View.Fingerprint and View.Version (the etcd revision). It is
// called from the background goroutine and must not block for long. Each
// WithViewHook adds a hook; they are called in the order given. A nil f is
// ignored. Only Watch uses it.
func WithViewHook(f func(*View)) Option {
	return func(c *config) { c.watch = append(c.watch, member.WithViewHook(f)) }
}

// WithSpec gives the placement spec this process expects
// (member.WithSpec): a published spec that differs is reported, and with a
// nil Builder the watcher builds with s until a spec is published. Only
// Watch uses it.
func WithSpec(s member.Spec) Option {
	return func(c *config) { c.watch = append(c.watch, member.WithSpec(s)) }
}

// WithSeeds sets how a watcher resolves the hasher seed a spec names
// (member.WithSeeds). Only Watch uses it.
func WithSeeds(f member.SeedFunc) Option {
	return func(c *config) { c.watch = append(c.watch, member.WithSeeds(f)) }
}

// WithMemberOptions passes options of package member to the watcher, such
// as member.WithSilence to set the silence bound apart from the progress
// interval. Only Watch uses them.
func WithMemberOptions(opts ...member.Option) Option {
	return func(c *config) { c.watch = append(c.watch, opts...) }
}

// ParseMember decodes the value of the key whose name under the prefix is
// name (the part after the prefix's "/") as a watcher does, with the limit
// DefaultMaxValueSize. It fails with ErrBadMember as described there.
func ParseMember(name string, value []byte) (Member, error) {
	return parseMember(name, value, DefaultMaxValueSize)
}
