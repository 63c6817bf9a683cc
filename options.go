package chash

import (
	"cmp"
	"fmt"
	"math"

	"github.com/keyplace/chash/internal/place"
)

// Option configures a constructor. Options are validated when they are
// applied: a constructor given an out-of-range value returns an error that
// wraps ErrInvalidOption. An option that does not apply to an algorithm is
// ignored by it; options that contradict each other are an error. A nil
// Option is ignored.
type Option func(*config) error

// config holds every option's value. Options set fields; newConfig then
// fills in the defaults, so every constructor sees a complete config.
type config struct {
	hasher     hasher
	hasherSet  bool // WithHasher was given
	vnodes     int
	weightUnit float64
	tableSize  int
	partitions int
	loadFactor float64
	ketama     KetamaVariant
}

// newConfig applies opts, rejects combinations that contradict each other,
// and fills in the defaults: the one place where they live.
func newConfig(opts []Option) (config, error) {
	c := config{hasher: defaultHasher}
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(&c); err != nil {
			return config{}, err
		}
	}
	if c.ketama != 0 {
		// Ketama fixes the hash (MD5) and the point counts; an option that
		// would change them cannot be honoured, so it is an error rather
		// than silently ignored.
		switch {
		case c.hasherSet:
			return config{}, fmt.Errorf("%w: WithKetama hashes with MD5 and cannot be combined with WithHasher", ErrInvalidOption)
		case c.vnodes != 0:
			return config{}, fmt.Errorf("%w: WithKetama fixes each server's points and cannot be combined with WithVnodes", ErrInvalidOption)
		case c.weightUnit != 0:
			return config{}, fmt.Errorf("%w: WithKetama takes the servers' own whole-number weights and cannot be combined with WithWeightUnit", ErrInvalidOption)
		}
		c.hasher = hasher{ext: ketamaHasher{}}
	}
	c.vnodes = cmp.Or(c.vnodes, DefaultVnodes)
	c.weightUnit = cmp.Or(c.weightUnit, 1)
	c.tableSize = cmp.Or(c.tableSize, DefaultTableSize)
	c.partitions = cmp.Or(c.partitions, DefaultPartitions)
	c.loadFactor = cmp.Or(c.loadFactor, DefaultLoadFactor)
	return c, nil
}

// WithHasher sets the 64-bit hash applied to keys and node IDs. The default
// is [XXHash], xxhash64 with seed 0. A nil Hasher is an error. Every client
// that must agree on placement must use the same Hasher.
func WithHasher(h Hasher) Option {
	return func(c *config) error {
		if h == nil {
			return fmt.Errorf("%w: WithHasher(nil)", ErrInvalidOption)
		}
		c.hasher, c.hasherSet = newHasher(h), true
		return nil
	}
}

// WithVnodes sets the ring's points per unit of weight, from 1 to 1<<16.
// The default is 160: the load's coefficient of variation is about
// 1/sqrt(vnodes), so 160 points give about 8%. Only the ring uses it; it
// cannot be combined with WithKetama.
func WithVnodes(n int) Option {
	return func(c *config) error {
		if n < 1 || n > 1<<16 {
			return fmt.Errorf("%w: WithVnodes(%d): want 1 to 65536", ErrInvalidOption, n)
		}
		c.vnodes = n
		return nil
	}
}

// WithWeightUnit sets the weight that earns a ring node WithVnodes points
// (default 1): a node of weight w gets round(vnodes × w / unit) points. It
// lets weights be given in any unit, such as bytes of capacity:
// WithWeightUnit(1<<30) gives a 64 GiB node (weight 64<<30) 64 × 160
// points. The unit must be finite and positive. Only the ring uses it (the
// other algorithms depend on weights only through their ratios); it cannot
// be combined with WithKetama. See NewRing for the weights a ring accepts.
func WithWeightUnit(u float64) Option {
	return func(c *config) error {
		if !(u > 0) || math.IsInf(u, 0) {
			return fmt.Errorf("%w: WithWeightUnit(%v): want a finite value > 0", ErrInvalidOption, u)
		}
		c.weightUnit = u
		return nil
	}
}

// WithTableSize sets Maglev's lookup table size: a prime, at least the
// number of nodes, at most 1<<24. The default is 65537. Only Maglev uses it.
func WithTableSize(m int) Option {
	return func(c *config) error {
		if m < 2 || m > 1<<24 || !place.IsPrime(m) {
			return fmt.Errorf("%w: WithTableSize(%d): want a prime from 2 to 16777216", ErrInvalidOption, m)
		}
		c.tableSize = m
		return nil
	}
}

// WithPartitions sets the number of partitions keys are hashed into by the
// bounded-load placer, from 1 to 1<<24. Only Bounded uses it; its
// constructor documents the default.
func WithPartitions(n int) Option {
	return func(c *config) error {
		if n < 1 || n > 1<<24 {
			return fmt.Errorf("%w: WithPartitions(%d): want 1 to 16777216", ErrInvalidOption, n)
		}
		c.partitions = n
		return nil
	}
}

// WithLoadFactor sets the bounded-load factor c: no node holds more than
// about c times its fair share. It must be finite and greater than 1; the
// default is 1.25. Only Bounded and the balancer use it.
func WithLoadFactor(f float64) Option {
	return func(c *config) error {
		if !(f > 1) || math.IsInf(f, 0) {
			return fmt.Errorf("%w: WithLoadFactor(%v): want a finite value > 1", ErrInvalidOption, f)
		}
		c.loadFactor = f
		return nil
	}
}
