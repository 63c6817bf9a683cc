package prometheus

import (
	"fmt"

	"github.com/keyplace/chash"
	prom "github.com/prometheus/client_golang/prometheus"
)

// Option configures a collector. Options a collector does not use are
// ignored, so one list can configure all four. A nil Option is ignored.
type Option func(*config) error

type config struct {
	perNode  bool
	labels   prom.Labels
	maxZones int
	kinds    []errorKind
}

// errorKind is a label value of chash_membership_errors_total and the
// error it counts.
type errorKind struct {
	name   string
	target error
}

// DefaultMaxZones is how many zones get a series of their own in
// chash_placement_zone_members unless WithMaxZones says otherwise.
const DefaultMaxZones = 16

// otherZone is the zone label of the members of the zones past the limit.
const otherZone = "_other"

func newConfig(opts []Option) (config, error) {
	c := config{maxZones: DefaultMaxZones}
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(&c); err != nil {
			return config{}, err
		}
	}
	return c, nil
}

// WithPerNode adds the series of each member, labelled node: a placer's
// shares, a balancer's load and counts, a shard map's replicas and
// primaries. They are off by default, since their number grows with the
// fleet (dskit removed a per-member ownership metric for its
// cardinality); each collector's doc lists them.
func WithPerNode() Option {
	return func(c *config) error { c.perNode = true; return nil }
}

// WithConstLabels adds labels with fixed values to every series of the
// collector, such as {"placer": "sessions"} where a process exports
// several placements. The names must be valid label names and must not be
// "node", "zone", "kind", "algorithm" or "fingerprint", which the
// collectors use.
func WithConstLabels(labels prom.Labels) Option {
	return func(c *config) error {
		for name := range labels {
			switch name {
			case "node", "zone", "kind", "algorithm", "fingerprint":
				return fmt.Errorf("%w: prometheus: WithConstLabels: label %q is the collectors' own", chash.ErrInvalidOption, name)
			}
			if !validLabelName(name) {
				return fmt.Errorf("%w: prometheus: WithConstLabels: %q is not a label name", chash.ErrInvalidOption, name)
			}
		}
		c.labels = labels
		return nil
	}
}

// WithMaxZones sets how many zones, from 0 to 1,000, get a series of their
// own in chash_placement_zone_members: the zones with the most members,
// ties by name; the members of the others are counted under the zone
// "_other". The default is DefaultMaxZones.
func WithMaxZones(n int) Option {
	return func(c *config) error {
		if n < 0 || n > 1000 {
			return fmt.Errorf("%w: prometheus: WithMaxZones(%d): want 0 to 1000", chash.ErrInvalidOption, n)
		}
		c.maxZones = n
		return nil
	}
}

// WithErrorKind makes the membership collector count the errors that
// match target (errors.Is) under the label kind="name", before its own
// kinds. It is how errors of an adapter's own are told apart, such as
// WithErrorKind("lease_lost", errLeaseLost). The name must be a
// non-empty run of [a-z0-9_], at most 32 bytes; target must not be nil.
// At most 16 kinds may be added.
func WithErrorKind(name string, target error) Option {
	return func(c *config) error {
		switch {
		case target == nil:
			return fmt.Errorf("%w: prometheus: WithErrorKind(%q, nil)", chash.ErrInvalidOption, name)
		case !validKind(name):
			return fmt.Errorf("%w: prometheus: WithErrorKind(%q): want [a-z0-9_]{1,32}", chash.ErrInvalidOption, name)
		case len(c.kinds) >= 16:
			return fmt.Errorf("%w: prometheus: more than 16 error kinds", chash.ErrInvalidOption)
		}
		c.kinds = append(c.kinds, errorKind{name, target})
		return nil
	}
}

func validKind(s string) bool {
	if s == "" || len(s) > 32 {
		return false
	}
	for i := range len(s) {
		if b := s[i]; !(b >= 'a' && b <= 'z' || b >= '0' && b <= '9' || b == '_') {
			return false
		}
	}
	return true
}

func validLabelName(s string) bool {
	if s == "" || len(s) >= 2 && s[:2] == "__" {
		return false
	}
	for i := range len(s) {
		b := s[i]
		if !(b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b == '_' || i > 0 && b >= '0' && b <= '9') {
			return false
		}
	}
	return true
}

// desc returns the description of a metric of the collectors.
func (c config) desc(name, help string, labels ...string) *prom.Desc {
	return prom.NewDesc("chash_"+name, help, labels, c.labels)
}
