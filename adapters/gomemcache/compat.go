package gomemcache

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/compat"
)

// ErrReorder reports a SetServers that would renumber a positional
// placement (chash.Algorithm.Positional: jump, jumpback, binomial, flip):
// servers reordered, or removed other than from the end of the list. A
// positional algorithm numbers servers by their position, so such a
// change moves most keys (a rotation of five servers moves all of them,
// removing the middle one of five about 55%). A removal from the middle
// also wraps chash.ErrNotLast. WithReshuffle allows the change. A stateful
// algorithm (memento, anchor, dx, jumpbackanchor, choosek) has jump's
// memory and speed and no such limit: see WithAlgorithm.
var ErrReorder = errors.New("gomemcache: positional placement would be renumbered")

// WithServerList makes the Selector place every key exactly where
// memcache.ServerList places it for the same server list: CRC-32 of the
// key modulo the list's length, in list order, a server listed twice
// taking two entries (compat.NewGomemcacheList). Switching a client from
// ServerList to this Selector therefore moves no key and keeps the cache
// warm; it is the first step of a move to a consistent placement (see
// [Selector.DryRun] and [Migration]).
//
// Like ServerList, it is not consistent: any change of the list moves most
// keys. It cannot be combined with WithAlgorithm, WithWeights or
// WithPlacerOptions (New fails with chash.ErrInvalidOption).
func WithServerList() Option {
	return func(s *settings) error {
		s.serverList = true
		return nil
	}
}

// WithReshuffle lets SetServers renumber a positional placement (jump,
// jumpback, binomial, flip; see ErrReorder), accepting that most keys
// move. Other algorithms ignore it.
func WithReshuffle() Option {
	return func(s *settings) error {
		s.reshuffle = true
		return nil
	}
}

// check rejects option combinations that contradict each other.
func (set *settings) check() error {
	if set.serverList && (set.alg != 0 || set.weights != nil || len(set.opts) > 0) {
		return fmt.Errorf("gomemcache: %w: WithServerList places as memcache.ServerList does and takes no algorithm, weights or placer options", chash.ErrInvalidOption)
	}
	return nil
}

// newPlacer builds the placer of one server list; nodes carry the
// configured weights and are distinct unless the list repeats a server. A
// stateful algorithm's placer is derived from the current one, so that
// every server keeps its slot: built afresh from the list, the servers
// after a removed one would be renumbered and most keys would move.
func (s *Selector) newPlacer(servers []string, nodes []chash.Node) (chash.Placer, error) {
	if s.set.serverList {
		return compat.NewGomemcacheList(servers...)
	}
	alg := s.set.alg
	if alg == 0 {
		alg = chash.AlgorithmRing
	}
	if m := s.current(); m != nil && alg.Stateful() {
		return chash.Derive(m.Placer, nodes)
	}
	return chash.New(alg, nodes, s.set.opts...)
}

// checkOrder refuses a SetServers that would renumber a positional
// placement (jump, jumpback, binomial, flip): the new list must extend the
// current one or drop servers from its end. It asks the placement itself
// (chash.IsPositional), not a list of algorithm names. WithServerList is
// exempt: it is documented to move most keys on any change.
func (s *Selector) checkOrder(servers []string) error {
	m := s.current()
	if s.set.reshuffle || s.set.serverList || m == nil || !chash.IsPositional(m.Placer) {
		return nil
	}
	old := m.ids
	n := min(len(old), len(servers))
	if slices.Equal(old[:n], servers[:n]) {
		return nil
	}
	for _, id := range old {
		if !slices.Contains(servers, id) {
			return fmt.Errorf("%w: %w: %q is not last (%v numbers servers by position; pass WithReshuffle to accept moving most keys, "+
				"or use a stateful algorithm, %s, which lets any server leave moving only its keys)", ErrReorder, chash.ErrNotLast, id, s.set.alg, statefulNames)
		}
	}
	return fmt.Errorf("%w: servers given in a new order (%v numbers servers by position; pass WithReshuffle to accept moving every key, "+
		"or use a stateful algorithm, %s)", ErrReorder, s.set.alg, statefulNames)
}

// statefulNames lists the stateful algorithms (chash.Algorithm.Stateful),
// for messages.
var statefulNames = func() string {
	var names []string
	for _, a := range chash.Algorithms() {
		if a.Stateful() {
			names = append(names, a.String())
		}
	}
	return strings.Join(names, ", ")
}()

// DryRun reports what SetServers(servers...) would do to the keys, without
// changing anything: the fraction that would change server and the flows
// between servers (chash.Diff of the current placement and the new one).
// It fails as SetServers would, except that it also measures a change that
// SetServers refuses with ErrReorder. Without servers set, every key
// "moves" from nowhere: DryRun fails wrapping ErrNoServers.
func (s *Selector) DryRun(servers ...string) (chash.Movement, error) {
	m := s.current()
	if m == nil {
		return chash.Movement{}, ErrNoServers
	}
	next, err := s.build(servers)
	if err != nil {
		return chash.Movement{}, err
	}
	mv, err := chash.Diff(m.Placer, next.Placer)
	if err != nil {
		return chash.Movement{}, fmt.Errorf("gomemcache: %w", err)
	}
	return mv, nil
}
