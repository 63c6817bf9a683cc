package gomemcache

import (
	"fmt"
	"maps"
	"slices"

	"github.com/keyplace/chash"
)

// Option configures New. Options are validated when New applies them; an
// invalid one makes New fail with an error wrapping chash.ErrInvalidOption
// or chash.ErrUnknownAlgorithm.
type Option func(*settings) error

// settings is fixed when New returns, so SetServers reads it without a lock.
type settings struct {
	alg     chash.Algorithm    // 0 means AlgorithmRing
	weights map[string]float64 // by address as given; missing means 1
	opts    []chash.Option
	// serverList places as memcache.ServerList does (WithServerList).
	serverList bool
	// reshuffle lets SetServers reorder a positional placement (WithReshuffle).
	reshuffle bool
}

// WithAlgorithm chooses the placement algorithm. The default is
// chash.AlgorithmRing, whose placement moves only the keys of a server
// that is added or removed and honours weights.
//
// A positional algorithm (chash.Algorithm.Positional: jump, jumpback,
// binomial, flip) numbers servers by their position in the list: it moves
// keys only when servers are added or removed at the end of the list, and
// SetServers refuses any other change (ErrReorder) unless WithReshuffle is
// given.
//
// A stateful algorithm (chash.Algorithm.Stateful: memento, anchor, dx,
// jumpbackanchor, choosek) has jump's memory and constant-time lookups and
// lets any server leave: SetServers derives each placer from the last
// (chash.Derive), so every server keeps its slot whatever the order of the
// list, a removed server's keys alone move and an added server takes about
// 1/n of the keys. The placement then depends on the Selector's history,
// not only on its list: clients agree only if they start from the same
// list and make the same changes (for memento, anchor and jumpbackanchor,
// in the same order). A client that starts later must not be built from
// the current list, which would number the servers afresh and disagree on
// most keys: give it the fleet's placer with SetPlacer, for example one
// built with chash.NewMementoFrom from the members and engine state the
// fleet keeps in its coordination service. Anchor holds at most as many
// servers as the first list unless WithPlacerOptions(chash.WithCapacity(n))
// gives it room.
func WithAlgorithm(a chash.Algorithm) Option {
	return func(s *settings) error {
		if !slices.Contains(chash.Algorithms(), a) {
			return fmt.Errorf("gomemcache: %w: %v", chash.ErrUnknownAlgorithm, a)
		}
		s.alg = a
		return nil
	}
}

// WithWeights gives servers relative capacities, keyed by the address as
// given to New and SetServers: a server of weight 2 receives about twice
// the keys of a server of weight 1. Servers not in the map weigh 1, and
// entries for servers not in the list are ignored, so one map can describe
// servers that come and go. The map is copied. Weights are checked when a
// server list is set: negative, NaN and infinite weights are errors.
func WithWeights(w map[string]float64) Option {
	return func(s *settings) error {
		s.weights = maps.Clone(w)
		return nil
	}
}

// WithPlacerOptions passes options to the chash constructor, such as
// chash.WithVnodes or chash.WithHasher. Every client that must agree on
// placement must use the same options.
func WithPlacerOptions(opts ...chash.Option) Option {
	return func(s *settings) error {
		s.opts = append(s.opts, opts...)
		return nil
	}
}
