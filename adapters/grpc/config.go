package chashgrpc

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/balance"
	"github.com/keyplace/chash/compat"
	"google.golang.org/grpc/serviceconfig"
)

// Name is the name the balancer is registered under, for a service config
// such as
//
//	{"loadBalancingConfig": [{"chash": {"algorithm": "rendezvous", "header": "x-tenant"}}]}
const Name = "chash"

// RingHash is the Config.Algorithm value that places keys exactly as
// grpc-go's ring_hash_experimental does for the same endpoints and request
// hash header (xxhash64 of the header's values joined by ","), so a fleet
// can move to this balancer without moving keys.
const RingHash = "ring_hash"

// ErrConfig reports a service config the balancer cannot use.
var ErrConfig = errors.New("chashgrpc: invalid config")

// Config is the balancer's service config, parsed from JSON. The zero
// Config, {}, is rendezvous hashing keyed only by [WithKey], without a
// load bound.
type Config struct {
	serviceconfig.LoadBalancingConfig `json:"-"`

	// Algorithm is a name chash.ParseAlgorithm accepts for an algorithm
	// that is neither positional nor stateful ("ring", "rendezvous",
	// "maglev", "bounded") or RingHash. Empty means "rendezvous". The
	// others are refused (see ParseConfig).
	Algorithm string `json:"algorithm,omitempty"`
	// Vnodes, TableSize, Partitions and PartitionLoadFactor are the
	// algorithm's options (chash.WithVnodes, WithTableSize, WithPartitions,
	// and WithLoadFactor for the bounded algorithm's partitions); zero
	// means the algorithm's default. Seed, if set, is chash.XXHashSeed.
	Vnodes              int     `json:"vnodes,omitempty"`
	TableSize           int     `json:"tableSize,omitempty"`
	Partitions          int     `json:"partitions,omitempty"`
	PartitionLoadFactor float64 `json:"partitionLoadFactor,omitempty"`
	Seed                uint64  `json:"seed,omitempty"`
	// MinRingSize and MaxRingSize size the RingHash ring as ring_hash's
	// fields of the same names do (defaults 1024 and 4096, capped at 4096).
	MinRingSize uint64 `json:"minRingSize,omitempty"`
	MaxRingSize uint64 `json:"maxRingSize,omitempty"`
	// Header is the request metadata key whose values (joined by ",") are
	// the request key when the context carries none from WithKey. Empty
	// means the key comes only from WithKey. Matched case-insensitively.
	Header string `json:"header,omitempty"`
	// LoadFactor, if set (it must be greater than 1), bounds each
	// endpoint's in-flight RPCs to about LoadFactor times its weighted
	// share, through a balance.Balancer: a request whose choice is full goes
	// to its next choice. Zero means no bound.
	LoadFactor float64 `json:"loadFactor,omitempty"`
}

// ParseConfig parses and validates a Config from its JSON form.
//
// A configuration is validated for what it is, at a bounded cost: the
// algorithm's name, every option's range and the load factor, without
// building a placement of the configured size (a one-node rendezvous
// placer applies, and so checks, every option; a ring_hash ring is capped
// at 4096 entries). Whether a given set of endpoints can be placed depends
// on them (a Maglev table must be at least as large as the endpoints, a
// ring's points are capped, jump takes only equal weights): that is
// decided for each resolver update, and an update that cannot be placed
// never fails RPCs that a placement of the same endpoints could serve
// (see the package documentation).
//
// A positional algorithm (chash.Algorithm.Positional: jump, jumpback,
// binomial, flip) is refused: it numbers the endpoints by position, so
// when the resolver drops one other than the last most keys move
// (dropping the second of four moved 685 of 1,000 keys, 241 of them on the
// dropped endpoint), and a resolver's order is not stable. So is a
// stateful one (chash.Algorithm.Stateful: memento, anchor, dx,
// jumpbackanchor, choosek): it can lose any endpoint, but only if each
// placer is derived from the last or built from a state every client
// shares, and a resolver's list carries no such state, while channels
// start at different times; built from the list, dropping the second of
// four endpoints moved 66-75% of keys. Rendezvous, maglev, ring and
// bounded lose any endpoint moving only its keys, built from the list
// alone.
func ParseConfig(js []byte) (*Config, error) {
	var c Config
	if err := json.Unmarshal(js, &c); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	c.Header = strings.ToLower(strings.TrimSpace(c.Header))
	if strings.HasSuffix(c.Header, "-bin") {
		return nil, fmt.Errorf("%w: header %q is binary metadata", ErrConfig, c.Header)
	}
	if err := c.validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return &c, nil
}

// validate checks c's fields, at a cost that does not depend on the sizes
// they configure.
func (c *Config) validate() error {
	probe := []chash.Node{{ID: "probe"}}
	if c.ringHash() {
		// The sizes are capped at 4096 before the ring is built.
		if _, err := c.placer(probe); err != nil {
			return err
		}
	} else {
		a, err := c.algorithm()
		if err != nil {
			return err
		}
		switch {
		case a.Positional():
			return fmt.Errorf("%w: algorithm %q numbers the endpoints by position: when the resolver drops one other than the last, most keys move, and a resolver's order is not stable; "+
				"use rendezvous, maglev, ring or bounded, which lose any endpoint moving only its keys", chash.ErrInvalidOption, c.Algorithm)
		case a.Stateful():
			return fmt.Errorf("%w: algorithm %q keeps the endpoints in numbered slots that every client would have to derive alike or share, and a resolver's list carries no such state: "+
				"built from the list, dropping one endpoint moves most keys; use rendezvous, maglev, ring or bounded, which lose any endpoint moving only its keys", chash.ErrInvalidOption, c.Algorithm)
		}
		// A one-node rendezvous placer applies every option, so checks its
		// range, and ignores the sizes they configure.
		if _, err := chash.NewRendezvous(probe, c.options()...); err != nil {
			return err
		}
	}
	if c.LoadFactor != 0 {
		p, err := chash.NewRendezvous(probe)
		if err != nil {
			return err
		}
		if _, err := balance.New(p, balance.WithLoadFactor(c.LoadFactor)); err != nil {
			return fmt.Errorf("loadFactor: %w", err)
		}
	}
	return nil
}

func (c *Config) ringHash() bool { return strings.EqualFold(strings.TrimSpace(c.Algorithm), RingHash) }

// algorithm returns the configured chash algorithm (not RingHash).
func (c *Config) algorithm() (chash.Algorithm, error) {
	name := c.Algorithm
	if strings.TrimSpace(name) == "" {
		name = "rendezvous"
	}
	return chash.ParseAlgorithm(name)
}

// placer builds the configured placement over nodes.
func (c *Config) placer(nodes []chash.Node) (chash.Placer, error) {
	if c.ringHash() {
		lo, hi := c.MinRingSize, c.MaxRingSize
		if lo == 0 {
			lo = defaultMinRingSize
		}
		if hi == 0 {
			hi = defaultMaxRingSize
		}
		// grpc-go caps both sizes (GRPC_RING_HASH_CAP, default 4096) before
		// it builds the ring; the core's placer takes them after the cap.
		r, err := compat.NewGRPCRingHash(nodes, int(min(lo, ringSizeCap)), int(min(hi, ringSizeCap)))
		if err != nil {
			return nil, err
		}
		return r, nil
	}
	a, err := c.algorithm()
	if err != nil {
		return nil, err
	}
	return chash.New(a, nodes, c.options()...)
}

// fallback builds the placement used when the configured one cannot place
// nodes and there is no last good placement to keep: rendezvous over the
// same nodes, weights and seed, which can be built for any non-empty set
// of distinct, named nodes whose weights are endpoint weights (1 to
// 1<<32-1).
func (c *Config) fallback(nodes []chash.Node) (chash.Placer, error) {
	var opts []chash.Option
	if c.Seed != 0 {
		opts = append(opts, chash.WithHasher(chash.XXHashSeed(c.Seed)))
	}
	return chash.NewRendezvous(nodes, opts...)
}

func (c *Config) options() []chash.Option {
	var opts []chash.Option
	if c.Vnodes != 0 {
		opts = append(opts, chash.WithVnodes(c.Vnodes))
	}
	if c.TableSize != 0 {
		opts = append(opts, chash.WithTableSize(c.TableSize))
	}
	if c.Partitions != 0 {
		opts = append(opts, chash.WithPartitions(c.Partitions))
	}
	if c.PartitionLoadFactor != 0 {
		opts = append(opts, chash.WithLoadFactor(c.PartitionLoadFactor))
	}
	if c.Seed != 0 {
		opts = append(opts, chash.WithHasher(chash.XXHashSeed(c.Seed)))
	}
	return opts
}
