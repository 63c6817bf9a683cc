package chash

import (
	"cmp"
	"fmt"
	"math"

	"github.com/keyplace/chash/internal/place"
)

// The defaults of the options, which the algorithms' docs refer to.

// DefaultVnodes is the ring's points per unit of weight unless WithVnodes
// says otherwise.
const DefaultVnodes = 160

// DefaultTableSize is Maglev's lookup table size unless WithTableSize says
// otherwise: the prime 65537.
const DefaultTableSize = 65537

// DefaultPartitions is the bounded placer's partition count unless
// WithPartitions says otherwise, for up to 1,024 nodes: 256 KiB of table,
// 16 partitions a node at 1,024 nodes. Larger fleets get the smallest
// power of two that gives each node 16 (see NewBounded). See Bounded for
// the measurements behind it.
const DefaultPartitions = 1 << 14

// partitionsPerNode is how many partitions a node of mean weight gets by
// default at least: with fewer, the rounding of ceil(c × share) dominates
// the load bound (at 3.3 a node, 5,000 equal nodes peak at 1.53 times the
// mean for c = 1.25, and 147 own nothing).
const partitionsPerNode = 16

// DefaultLoadFactor is the bounded placer's load factor unless
// WithLoadFactor says otherwise (the balancer's own is
// balance.DefaultLoadFactor, of the same value).
const DefaultLoadFactor = 1.25

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
	capacity   int // WithCapacity; 0 means the algorithm's default
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
	// partitions stays 0 unless set: NewBounded picks it from the nodes.
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
// bounded-load placer, from 1 to 1<<24. Only Bounded uses it; NewBounded
// documents the default, which depends on the number of nodes.
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

// WithKetama makes NewRing place keys exactly as the ketama implementation
// v does for the same servers and weights. Node IDs are "host:port" as the
// clients are configured (see each variant for the string it hashes);
// weights must be whole numbers from 1 to 1<<32-1 (0 means 1). WithHasher
// and WithVnodes are then ignored: keys and points are hashed with MD5 and
// point counts follow the variant. A value other than the three variants
// is an error; there is no default, since the variants disagree.
//
// The ring's first choice for a key is the client's server for it. The
// other nodes of AppendTopK continue the walk around the circle, which is
// not what the clients do on failover. Add and Remove rebuild the ring,
// since each server's point count depends on the total weight.
//
// Where two servers' points coincide (about P²/2³³ chance per ring of P
// points: 0.2% at 25 servers), the arc before them goes to the server
// with the smaller ID; libketama and libmemcached give it to the server
// listed first, spymemcached to the one listed last. A ring whose servers
// are configured in ID order differs only in the spymemcached case.
func WithKetama(v KetamaVariant) Option {
	return func(c *config) error {
		if v == 0 || int(v) >= len(ketamaNames) {
			return fmt.Errorf("%w: WithKetama(%d): want KetamaLibketama, KetamaLibmemcached or KetamaSpy", ErrInvalidOption, v)
		}
		c.ketama = v
		return nil
	}
}

// WithCapacity sets the number of buckets of an AnchorHash placer (the most
// members it can ever hold; the default is the number of nodes given) and
// the initial node array of a DxHash placer (which grows by doubling; the
// default is the smallest power of two that holds the nodes). It must be
// from 1 to 1<<24 and at least the number of nodes. Placement depends on
// it, so every process of a fleet must use the same. Only NewAnchor and
// NewDx use it.
func WithCapacity(n int) Option {
	return func(c *config) error {
		if n < 1 || n > maxBuckets {
			return fmt.Errorf("%w: WithCapacity(%d): want 1 to 16777216", ErrInvalidOption, n)
		}
		c.capacity = n
		return nil
	}
}
