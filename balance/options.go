package balance

import (
	"fmt"
	"math"

	"github.com/keyplace/chash"
)

// DefaultLoadFactor is the load factor c of a balancer given no
// WithLoadFactor: no node takes more than about 1.25 times its fair share
// of the requests in flight.
const DefaultLoadFactor = 1.25

// Option configures [New]. Each option validates its argument: New
// returns an error wrapping chash.ErrInvalidOption for a value out of
// range or for options that contradict each other. A nil Option is
// ignored. The placers' options (chash.Option) are a different type, so
// one given here does not compile.
type Option func(*config) error

// config is the balancer's configuration; zero fields mean "the default".
type config struct {
	c       float64 // load factor; unbounded for none
	choices int     // d, the candidates compared per acquire
	hot     *HotKeys
	spread  int // the most replicas a hot key's reads spread over
}

// unbounded is the load factor of WithoutLoadBound.
var unbounded = math.Inf(1)

// WithLoadFactor sets the load factor c: an acquire takes a node only if
// its in-flight count stays within c times its share of the total. It must
// be finite and greater than 1; the default is [DefaultLoadFactor]. It
// conflicts with WithoutLoadBound.
func WithLoadFactor(f float64) Option {
	return func(c *config) error {
		if !(f > 1) || math.IsInf(f, 0) {
			return fmt.Errorf("%w: WithLoadFactor(%v): want a finite value > 1", chash.ErrInvalidOption, f)
		}
		if c.c == unbounded {
			return fmt.Errorf("%w: WithLoadFactor and WithoutLoadBound together", chash.ErrInvalidOption)
		}
		c.c = f
		return nil
	}
}

// WithoutLoadBound makes the balancer never refuse a node: every acquire
// takes its candidate (the first choice, or the lighter of the choices of
// WithChoices), so Acquire never returns ErrOverloaded, and LoadFactor
// reports +Inf. It conflicts with WithLoadFactor.
func WithoutLoadBound() Option {
	return func(c *config) error {
		if c.c != 0 && c.c != unbounded {
			return fmt.Errorf("%w: WithLoadFactor and WithoutLoadBound together", chash.ErrInvalidOption)
		}
		c.c = unbounded
		return nil
	}
}

// WithChoices sets d, from 1 to 16, the number of a key's first choices
// (AppendTopK(d)) that an acquire compares (Mitzenmacher, "The Power of Two
// Choices in Randomized Load Balancing", 2001): it takes the one with the
// least in-flight load for its weight, keeping the first choice unless
// another is strictly lighter, so most keys keep their node while a busy
// node sheds load. The load bound, unless WithoutLoadBound, still applies
// to the chosen node. The default, 1, takes the first choice. d > 1 suits
// stateless work or stores whose d replicas all hold the key; for a cache
// it costs hit rate (the key is cached on up to d nodes).
func WithChoices(d int) Option {
	return func(c *config) error {
		if d < 1 || d > 16 {
			return fmt.Errorf("%w: WithChoices(%d): want 1 to 16", chash.ErrInvalidOption, d)
		}
		c.choices = d
		return nil
	}
}

// WithHotKeys feeds h with every acquire and spreads the reads of the keys
// h reports hot over up to maxR of their first choices: a key with share s
// of recent acquires, over n nodes, gets R = min(maxR, max(2, ceil(s × n)))
// replicas, so that each replica receives about a fair node's share of it
// at most, and each acquire of it takes the lighter of two of its R
// replicas chosen at random (within the load bound unless
// WithoutLoadBound). Cold keys are untouched. maxR is from 1 to 256; 1
// only feeds h, for [Balancer.Stats]. A nil h is an error.
//
// Reads of a hot key then land on nodes other than its owner, so the data
// must be there: see [Balancer.AppendReplicas] for what writes must do.
func WithHotKeys(h *HotKeys, maxR int) Option {
	return func(c *config) error {
		if h == nil || h.cells == nil {
			return fmt.Errorf("%w: WithHotKeys: nil or zero HotKeys (use NewHotKeys)", chash.ErrInvalidOption)
		}
		if maxR < 1 || maxR > 256 {
			return fmt.Errorf("%w: WithHotKeys(maxR %d): want 1 to 256", chash.ErrInvalidOption, maxR)
		}
		c.hot, c.spread = h, maxR
		return nil
	}
}

// withDefaults returns c with its zero fields given their defaults.
func (c config) withDefaults() config {
	if c.c == 0 {
		c.c = DefaultLoadFactor
	}
	if c.choices == 0 {
		c.choices = 1
	}
	return c
}
