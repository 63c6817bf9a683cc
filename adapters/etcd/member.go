package etcd

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/keyplace/chash"
)

// Member is what a node announces: its placement identity and weight, and
// whatever a client needs to reach it. It is stored as JSON under
// prefix + ID.
type Member struct {
	// ID is the node's placement identity (chash.Node.ID) and the name of
	// its key under the prefix. It must not be empty.
	ID string `json:"id"`
	// Weight is the node's relative capacity (chash.Node.Weight); 0 means 1.
	// It must be finite and not negative.
	Weight float64 `json:"weight,omitempty"`
	// Addr is where clients reach the node, such as "10.0.0.7:11211".
	Addr string `json:"addr,omitempty"`
	// Meta holds anything else a client needs, such as a zone.
	Meta map[string]string `json:"meta,omitempty"`
}

// Node returns the member as a chash.Node.
func (m Member) Node() chash.Node { return chash.Node{ID: m.ID, Weight: m.Weight} }

// ErrBadMember reports a value under the prefix that is not a valid
// member: not JSON, too large, an empty ID or one that differs from its
// key's name, or a negative, NaN or infinite weight. Watchers skip such
// values and report them, wrapped with the key, through the error hook.
var ErrBadMember = errors.New("etcd: bad member")

// ErrNoMembers reports a member set with no valid member. Watch returns it
// when the first read finds none; afterwards a watcher keeps serving its
// last good view and reports it through the error hook.
var ErrNoMembers = fmt.Errorf("etcd: no valid members: %w", chash.ErrNoNodes)

// DefaultMaxValueSize is the largest member value, in bytes, a watcher
// accepts unless WithMaxValueSize says otherwise.
const DefaultMaxValueSize = 16 << 10

// check reports whether m is a valid member to announce or accept.
func (m Member) check() error {
	switch {
	case m.ID == "":
		return fmt.Errorf("%w: empty ID", ErrBadMember)
	case m.Weight < 0 || math.IsNaN(m.Weight) || math.IsInf(m.Weight, 0):
		return fmt.Errorf("%w: %q has weight %v", ErrBadMember, m.ID, m.Weight)
	}
	return nil
}

// parseMember decodes the value of the key whose name under the prefix is
// name, enforcing the rules of ErrBadMember.
func parseMember(name string, value []byte, maxSize int) (Member, error) {
	if len(value) > maxSize {
		return Member{}, fmt.Errorf("%w: %q: value of %d bytes (limit %d)", ErrBadMember, name, len(value), maxSize)
	}
	var m Member
	if err := json.Unmarshal(value, &m); err != nil {
		return Member{}, fmt.Errorf("%w: %q: %v", ErrBadMember, name, err)
	}
	if err := m.check(); err != nil {
		return Member{}, fmt.Errorf("%w (key %q)", err, name)
	}
	if m.ID != name {
		return Member{}, fmt.Errorf("%w: key %q holds ID %q: a member's ID must be its key's name", ErrBadMember, name, m.ID)
	}
	return m, nil
}

// cleanPrefix returns prefix ending in exactly one "/".
func cleanPrefix(prefix string) (string, error) {
	p := strings.TrimRight(prefix, "/")
	if p == "" {
		return "", fmt.Errorf("%w: empty prefix", chash.ErrInvalidOption)
	}
	return p + "/", nil
}

// Option configures Register or Watch. An option that does not apply to
// the call it is given to is ignored, so one list can configure both.
type Option func(*config)

type config struct {
	ttl      time.Duration
	coalesce time.Duration
	progress time.Duration
	maxValue int
	onError  []func(error)
	onView   []func(*View)
}

func newConfig(opts []Option) config {
	c := config{ttl: DefaultTTL, coalesce: DefaultCoalesce, progress: DefaultProgressInterval, maxValue: DefaultMaxValueSize}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	return c
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
const DefaultCoalesce = 100 * time.Millisecond

// WithTTL sets a registration's lease TTL, rounded up to a whole second
// and at least etcd's minimum (about 2 s with default election settings):
// a node whose process dies leaves every view about this long after its
// last keepalive. Only Register uses it.
func WithTTL(d time.Duration) Option { return func(c *config) { c.ttl = max(d, time.Second) } }

// WithCoalesce sets a watcher's coalescing window: the first change after
// a published view starts a timer of d, and the changes that arrive before
// it fires are built into one view. A change is thus served at most d plus
// one build after the watcher receives it, and a burst causes at most one
// build per d. Zero builds a view for every watch response. Only Watch
// uses it.
func WithCoalesce(d time.Duration) Option { return func(c *config) { c.coalesce = max(d, 0) } }

// DefaultProgressInterval is how often a watcher asks etcd to confirm its
// watch unless WithProgressInterval says otherwise.
const DefaultProgressInterval = 5 * time.Second

// WithProgressInterval sets how often a watcher asks etcd to confirm that
// its watch is current (at least 10 ms); after three intervals without a
// word from etcd the watcher reports it and reads afresh. Only Watch uses
// it.
func WithProgressInterval(d time.Duration) Option {
	return func(c *config) { c.progress = max(d, 10*time.Millisecond) }
}

// WithMaxValueSize sets the largest member value, in bytes, a watcher
// accepts; larger ones are skipped and reported. Only Watch uses it.
func WithMaxValueSize(n int) Option { return func(c *config) { c.maxValue = max(n, 1) } }

// WithErrorHook sets the function that receives what a watcher or a
// registration cannot act on: skipped members (ErrBadMember), views that
// would be empty (ErrNoMembers), constructor failures, lost leases and
// failed reads or keepalives that are being retried. It is called from the
// background goroutine and must not block for long. Each WithErrorHook adds
// a hook; they are called in the order given. A nil f is ignored.
func WithErrorHook(f func(error)) Option {
	return func(c *config) {
		if f != nil {
			c.onError = append(c.onError, f)
		}
	}
}

// WithViewHook sets a function called with each view a watcher serves,
// the first included, right after it is published: the place to log or
// export View.Fingerprint and View.Revision. It is called from the
// background goroutine and must not block for long. Each WithViewHook adds
// a hook; they are called in the order given. A nil f is ignored. Only
// Watch uses it.
func WithViewHook(f func(*View)) Option {
	return func(c *config) {
		if f != nil {
			c.onView = append(c.onView, f)
		}
	}
}

// ParseMember decodes the value of the key whose name under the prefix is
// name (the part after the prefix's "/") as a watcher does, with the limit
// DefaultMaxValueSize. It fails with ErrBadMember as described there.
func ParseMember(name string, value []byte) (Member, error) {
	return parseMember(name, value, DefaultMaxValueSize)
}
