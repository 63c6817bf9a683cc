package zookeeper

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/member"
)

// ErrPath reports a fleet path ZooKeeper cannot hold: it must start with
// "/", not end with one, and name a znode below the root.
var ErrPath = errors.New("zookeeper: bad fleet path")

// DefaultInterval is how often a source confirms its view with the server
// unless WithInterval says otherwise.
const DefaultInterval = 2 * time.Second

// Option configures a Source, a watcher through Watch, or a Registration.
type Option func(*config)

type config struct {
	interval time.Duration
	onError  []func(error)
	watch    []member.Option
}

func newConfig(opts []Option) config {
	c := config{interval: DefaultInterval}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	return c
}

func (c config) report(err error) {
	for _, f := range c.onError {
		f(err)
	}
}

// WithInterval sets how often a source asks the server to confirm its
// view (at least 10 ms; default DefaultInterval). Watch sets the silence
// bound to three intervals. Registrations ignore it.
func WithInterval(d time.Duration) Option {
	return func(c *config) { c.interval = max(d, 10*time.Millisecond) }
}

// WithErrorHook adds a function that receives what a registration, or a
// watcher and its source, report (see member.WithErrorHook): a
// registration's lost node and the failures of putting it back. A nil f is
// ignored.
func WithErrorHook(f func(error)) Option {
	return func(c *config) {
		if f != nil {
			c.onError = append(c.onError, f)
			c.watch = append(c.watch, member.WithErrorHook(f))
		}
	}
}

// WithViewHook adds a function called with each view served (see
// member.WithViewHook). Only Watch uses it.
func WithViewHook(f func(*member.View)) Option {
	return func(c *config) { c.watch = append(c.watch, member.WithViewHook(f)) }
}

// WithMemberOptions passes options of package member to the watcher
// (member.WithCoalesce, WithSpec, WithSeeds, WithSilence). Only Watch uses
// them.
func WithMemberOptions(opts ...member.Option) Option {
	return func(c *config) { c.watch = append(c.watch, opts...) }
}

// checkPath returns path if it can name a fleet.
func checkPath(path string) (string, error) {
	if !strings.HasPrefix(path, "/") || strings.HasSuffix(path, "/") || strings.Contains(path, "//") {
		return "", fmt.Errorf("%w: %q: want /a/b, not the root", ErrPath, path)
	}
	return path, nil
}

// checkID reports whether ZooKeeper can name a child m.ID.
func checkID(m member.Member) error {
	if strings.Contains(m.ID, "/") || m.ID == "." || m.ID == ".." || strings.ContainsRune(m.ID, 0) {
		return fmt.Errorf("%w: zookeeper: %q cannot name a znode (no \"/\", no NUL, not . or ..)", member.ErrBadMember, m.ID)
	}
	return m.Check()
}

// errNilConn is the error of a call given no connection.
var errNilConn = fmt.Errorf("%w: zookeeper: nil connection", chash.ErrInvalidOption)
