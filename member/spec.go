package member

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/keyplace/chash"
)

// Spec is a fleet's placement: the algorithm and the options every process
// must build its placer with, published beside the members in the sources
// that can hold it, so that processes agree on how to place as well as on
// whom. It names the hasher seed by reference only (Seed), never the secret
// itself: each process resolves the name through WithSeeds.
//
// The zero Spec is not valid: it names no algorithm. Specs are compared
// with ==; two specs that differ only in the spelling of a default (a zero
// TableSize and 65537) are different specs that place alike.
//
// Its text form, which String writes and ParseSpec reads, is the
// algorithm's name followed by the options set, as in the flags of the
// chash command:
//
//	maglev table-size=65537 seed=cache-seed
//	ring vnodes=200 weight-unit=1073741824
//	bounded partitions=16384 load-factor=1.25
//
// Its JSON form is an object with the same names:
// {"algorithm":"maglev","table-size":65537,"seed":"cache-seed"}.
type Spec struct {
	// Algorithm is the placement algorithm (chash.ParseAlgorithm's names).
	Algorithm chash.Algorithm
	// Vnodes is the ring's points per unit of weight (chash.WithVnodes);
	// 0 means the default.
	Vnodes int
	// WeightUnit is the ring's weight unit (chash.WithWeightUnit); 0
	// means the default.
	WeightUnit float64
	// TableSize is Maglev's table size (chash.WithTableSize); 0 means the
	// default.
	TableSize int
	// Partitions is the bounded placer's partition count
	// (chash.WithPartitions); 0 means the default.
	Partitions int
	// LoadFactor is the bounded placer's load factor
	// (chash.WithLoadFactor); 0 means the default.
	LoadFactor float64
	// Seed names the xxhash seed of the fleet's hasher
	// (chash.XXHashSeed): a name such as "cache-seed" that each process
	// resolves to the secret through WithSeeds, never the secret. Empty
	// means the default hasher. At most 256 printable bytes, no spaces.
	Seed string
	// Reshuffle accepts a positional or stateful algorithm
	// (chash.Algorithm.Positional or Stateful: jump, jumpback, binomial,
	// flip, memento, anchor, dx, jumpbackanchor, choosek), which Check
	// otherwise refuses. A watcher builds each view afresh from the
	// members in ID order, so every process agrees, but such a placement
	// numbers its members by that order: a member leaving other than the
	// last in ID order renumbers the ones after it and moves most keys
	// (a stateful algorithm keeps its promise of moving only the departed
	// member's keys only when the processes share its engine's state,
	// which a membership snapshot does not carry).
	Reshuffle bool
}

// The option names of the text and JSON forms.
const (
	specVnodes     = "vnodes"
	specWeightUnit = "weight-unit"
	specTableSize  = "table-size"
	specPartitions = "partitions"
	specLoadFactor = "load-factor"
	specSeed       = "seed"
	specReshuffle  = "reshuffle"
	maxSpecLength  = 1024
	maxSeedName    = 256
)

// ParseSpec reads the text form of a Spec (see Spec) and checks it. Every
// error wraps ErrBadSpec.
func ParseSpec(text string) (Spec, error) {
	if len(text) > maxSpecLength {
		return Spec{}, fmt.Errorf("%w: %d bytes (limit %d)", ErrBadSpec, len(text), maxSpecLength)
	}
	fields := strings.Fields(text)
	if len(fields) == 0 {
		return Spec{}, fmt.Errorf("%w: empty", ErrBadSpec)
	}
	a, err := chash.ParseAlgorithm(fields[0])
	if err != nil {
		return Spec{}, fmt.Errorf("%w: %w", ErrBadSpec, err)
	}
	s := Spec{Algorithm: a}
	seen := map[string]bool{}
	for _, f := range fields[1:] {
		name, value, ok := strings.Cut(f, "=")
		if !ok || seen[name] {
			return Spec{}, fmt.Errorf("%w: %q: want distinct name=value options", ErrBadSpec, f)
		}
		seen[name] = true
		if err := s.set(name, value); err != nil {
			return Spec{}, err
		}
	}
	return s, s.Check()
}

// set sets the option name from its text.
func (s *Spec) set(name, value string) error {
	var err error
	switch name {
	case specVnodes:
		s.Vnodes, err = strconv.Atoi(value)
	case specWeightUnit:
		s.WeightUnit, err = strconv.ParseFloat(value, 64)
	case specTableSize:
		s.TableSize, err = strconv.Atoi(value)
	case specPartitions:
		s.Partitions, err = strconv.Atoi(value)
	case specLoadFactor:
		s.LoadFactor, err = strconv.ParseFloat(value, 64)
	case specSeed:
		s.Seed = value
	case specReshuffle:
		if value != "true" {
			return fmt.Errorf("%w: %s=%q: the only value is true", ErrBadSpec, name, value)
		}
		s.Reshuffle = true
	default:
		return fmt.Errorf("%w: unknown option %q (want %s)", ErrBadSpec, name,
			strings.Join([]string{specVnodes, specWeightUnit, specTableSize, specPartitions, specLoadFactor, specSeed, specReshuffle}, ", "))
	}
	if err != nil {
		return fmt.Errorf("%w: %s=%q: not a number", ErrBadSpec, name, value)
	}
	return nil
}

// String returns the text form of s: the algorithm and the options that
// are set, in a fixed order, so that equal specs print alike.
func (s Spec) String() string {
	var b strings.Builder
	b.WriteString(s.Algorithm.String())
	opt := func(name, value string) { b.WriteString(" " + name + "=" + value) }
	if s.Vnodes != 0 {
		opt(specVnodes, strconv.Itoa(s.Vnodes))
	}
	if s.WeightUnit != 0 {
		opt(specWeightUnit, formatFloat(s.WeightUnit))
	}
	if s.TableSize != 0 {
		opt(specTableSize, strconv.Itoa(s.TableSize))
	}
	if s.Partitions != 0 {
		opt(specPartitions, strconv.Itoa(s.Partitions))
	}
	if s.LoadFactor != 0 {
		opt(specLoadFactor, formatFloat(s.LoadFactor))
	}
	if s.Seed != "" {
		opt(specSeed, s.Seed)
	}
	if s.Reshuffle {
		opt(specReshuffle, "true")
	}
	return b.String()
}

// formatFloat writes f in the shortest form that reads back exactly,
// whole numbers below 1e15 without an exponent.
func formatFloat(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// Check reports whether s names a valid algorithm and options in range,
// with an error wrapping ErrBadSpec (and the chash error) if not. Options
// the algorithm ignores are allowed, as chash.New allows them.
func (s Spec) Check() error {
	if s.Algorithm == 0 || s.Algorithm.String() == fmt.Sprintf("Algorithm(%d)", s.Algorithm) {
		return fmt.Errorf("%w: %w: %v", ErrBadSpec, chash.ErrUnknownAlgorithm, s.Algorithm)
	}
	if (s.Algorithm.Positional() || s.Algorithm.Stateful()) && !s.Reshuffle {
		return fmt.Errorf("%w: %w: %v numbers the members by their order, and a watcher rebuilds it from the members in ID order at each change, "+
			"so a member leaving moves most keys: choose rendezvous, maglev, ring or bounded, or set reshuffle=true to accept it",
			ErrBadSpec, chash.ErrInvalidOption, s.Algorithm)
	}
	if s.Seed != "" && !printable(s.Seed, maxSeedName) {
		return fmt.Errorf("%w: seed name %q: want up to %d printable bytes without spaces", ErrBadSpec, s.Seed, maxSeedName)
	}
	for _, f := range []float64{s.WeightUnit, s.LoadFactor} {
		if math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
			return fmt.Errorf("%w: %w: %v", ErrBadSpec, chash.ErrInvalidOption, f)
		}
	}
	if _, err := s.options(0); err != nil {
		return fmt.Errorf("%w: %w", ErrBadSpec, err)
	}
	return nil
}

// options returns the chash options of s, with seed as the hasher's seed
// when s names one.
func (s Spec) options(seed uint64) ([]chash.Option, error) {
	var opts []chash.Option
	if s.Vnodes != 0 {
		opts = append(opts, chash.WithVnodes(s.Vnodes))
	}
	if s.WeightUnit != 0 {
		opts = append(opts, chash.WithWeightUnit(s.WeightUnit))
	}
	if s.TableSize != 0 {
		opts = append(opts, chash.WithTableSize(s.TableSize))
	}
	if s.Partitions != 0 {
		opts = append(opts, chash.WithPartitions(s.Partitions))
	}
	if s.LoadFactor != 0 {
		opts = append(opts, chash.WithLoadFactor(s.LoadFactor))
	}
	if s.Seed != "" {
		opts = append(opts, chash.WithHasher(chash.XXHashSeed(seed)))
	}
	// Apply them to a one-node placer of the algorithm, so that a value
	// out of range is an error here and not at the first build (the
	// node's weight may not suit the options: that is the members' say).
	if _, err := chash.New(s.Algorithm, []chash.Node{{ID: "spec-check"}}, opts...); errors.Is(err, chash.ErrInvalidOption) {
		return nil, err
	}
	return opts, nil
}

// SeedFunc resolves the name of a hasher seed (Spec.Seed) to the secret
// seed, from wherever the process keeps its secrets: an environment
// variable, a file, a secret store.
type SeedFunc func(name string) (uint64, error)

// Builder returns the Builder that places with s, resolving its seed name,
// if it has one, through seeds when called. It fails, with ErrSeed, if s
// names a seed and seeds is nil or cannot resolve it, and with ErrBadSpec
// if s is not valid.
func (s Spec) Builder(seeds SeedFunc) Builder {
	return func(nodes []chash.Node) (chash.Placer, error) {
		if err := s.Check(); err != nil {
			return nil, err
		}
		var seed uint64
		if s.Seed != "" {
			if seeds == nil {
				return nil, fmt.Errorf("%w: the spec names seed %q and no SeedFunc was given", ErrSeed, s.Seed)
			}
			var err error
			if seed, err = seeds(s.Seed); err != nil {
				return nil, fmt.Errorf("%w: %q: %w", ErrSeed, s.Seed, err)
			}
		}
		opts, err := s.options(seed)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrBadSpec, err)
		}
		return chash.New(s.Algorithm, nodes, opts...)
	}
}

// Build places nodes as s says, with chash.New. It fails with ErrSeed if
// s names a seed: use s.Builder with a SeedFunc for those.
func (s Spec) Build(nodes []chash.Node) (chash.Placer, error) { return s.Builder(nil)(nodes) }

// specJSON is the JSON form of a Spec.
type specJSON struct {
	Algorithm  string  `json:"algorithm"`
	Vnodes     int     `json:"vnodes,omitempty"`
	WeightUnit float64 `json:"weight-unit,omitempty"`
	TableSize  int     `json:"table-size,omitempty"`
	Partitions int     `json:"partitions,omitempty"`
	LoadFactor float64 `json:"load-factor,omitempty"`
	Seed       string  `json:"seed,omitempty"`
	Reshuffle  bool    `json:"reshuffle,omitempty"`
}

// MarshalJSON writes the JSON form of s (see Spec).
func (s Spec) MarshalJSON() ([]byte, error) {
	return json.Marshal(specJSON{Algorithm: s.Algorithm.String(), Vnodes: s.Vnodes, WeightUnit: s.WeightUnit,
		TableSize: s.TableSize, Partitions: s.Partitions, LoadFactor: s.LoadFactor, Seed: s.Seed, Reshuffle: s.Reshuffle})
}

// UnmarshalJSON reads the JSON form of a Spec and checks it; errors wrap
// ErrBadSpec. It accepts the text form as a JSON string too.
func (s *Spec) UnmarshalJSON(b []byte) error {
	if len(b) > maxSpecLength {
		return fmt.Errorf("%w: %d bytes (limit %d)", ErrBadSpec, len(b), maxSpecLength)
	}
	var text string
	if json.Unmarshal(b, &text) == nil {
		p, err := ParseSpec(text)
		if err == nil {
			*s = p
		}
		return err
	}
	var j specJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return fmt.Errorf("%w: %v", ErrBadSpec, err)
	}
	a, err := chash.ParseAlgorithm(j.Algorithm)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrBadSpec, err)
	}
	p := Spec{Algorithm: a, Vnodes: j.Vnodes, WeightUnit: j.WeightUnit, TableSize: j.TableSize,
		Partitions: j.Partitions, LoadFactor: j.LoadFactor, Seed: j.Seed, Reshuffle: j.Reshuffle}
	if err := p.Check(); err != nil {
		return err
	}
	*s = p
	return nil
}
