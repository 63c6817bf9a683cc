package chashtest

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"testing"

	"github.com/keyplace/chash"
	balancer "github.com/keyplace/chash/balance"
)

// This file holds the contract's rules for classes of placers: what a
// placer declares about itself, which code that wraps or routes through it
// consults (never a list of type names), and what a constructor owes any
// weights it is given.

// positional checks that a placer whose placement depends on the order of
// its nodes, so that a list reordered moves most keys, declares it, as the
// module's routers and client adapters rely on: chash.IsPositional reports
// true (a Positional() bool method), or chash.IsStateful does (a
// Stateful() bool method), for placers that number slots and derive their
// changes. A placer that a
// reorder leaves mostly in place (one whose order only breaks ties, or
// rounds weights) must not claim it; and a Holder or a Zoned of it answers
// as it does.
func positional(t testing.TB, s *suite) {
	nodes := s.nodes(10)
	p := s.build(t, nodes)
	pos, st := chash.IsPositional(p), chash.IsStateful(p)
	moved := 0.0
	if s.Ordered {
		a := s.owners(p)
		b := s.owners(s.build(t, reordered(nodes)))
		for i := range a {
			if a[i] != b[i] {
				moved++
			}
		}
		moved /= float64(len(a))
	}
	switch {
	case moved > 0.5 && !pos && !st:
		t.Fatalf("a reordered list of 10 nodes moved %.0f%% of keys, yet chash.IsPositional says the placement is not positional: "+
			"declare it with a method Positional() bool (or Stateful() bool for numbered slots that Derive keeps), "+
			"which routers and client adapters consult before building placers from lists whose order they do not control", 100*moved)
	case moved < 0.25 && (pos || st):
		t.Fatalf("a reordered list of 10 nodes moved %.1f%% of keys, yet the placer declares its placement depends on the order (positional %v, stateful %v)", 100*moved, pos, st)
	}
	if chash.IsPositional(chash.NewHolder(p)) != pos {
		t.Fatal("chash.IsPositional of a Holder of the placer differs from the placer's")
	}
	if z, err := chash.NewZoned(p); err == nil && chash.IsPositional(z) != pos {
		t.Fatal("chash.IsPositional of a Zoned of the placer differs from the placer's")
	}
}

// views checks the rule for a placer whose members change (a view, with a
// Load() Placer method): the module's wrappers that would keep its first
// members (chash.NewZoned, balance.New) refuse it with ErrInvalidOption.
// With Spec.Wrap, the placer is itself a wrapper: built over a Holder whose
// placer then changes, it either refused the Holder with ErrInvalidOption
// or follows it.
func views(t testing.TB, s *suite) {
	p := s.build(t, s.nodes(10))
	if _, ok := p.(interface{ Load() chash.Placer }); ok {
		if _, err := chash.NewZoned(p); !errors.Is(err, chash.ErrInvalidOption) {
			t.Errorf("chash.NewZoned of a view: error %v, want ErrInvalidOption (it would keep the first members)", err)
		}
		if _, err := balancer.New(p); !errors.Is(err, chash.ErrInvalidOption) {
			t.Errorf("balance.New of a view: error %v, want ErrInvalidOption (its counts would keep the first members)", err)
		}
	}
	if s.Wrap == nil {
		return
	}
	h := chash.NewHolder(p)
	w, err := s.Wrap(h)
	if err != nil {
		if !errors.Is(err, chash.ErrInvalidOption) {
			t.Fatalf("Wrap of a Holder: error %v, want nil (follow it) or ErrInvalidOption (refuse it)", err)
		}
		return
	}
	if isNil(w) {
		t.Fatal("Wrap of a Holder returned a nil placer and no error")
	}
	h.Store(s.build(t, s.nodes(13)))
	if n := len(w.Nodes()); n != 13 {
		t.Fatalf("a wrapper of a Holder whose placer grew from 10 to 13 members reports %d: it neither follows the view nor refuses it", n)
	}
	owners := s.owners(w)
	want := s.owners(h)
	for i := range owners {
		if owners[i] != want[i] {
			t.Fatalf("a wrapper of a Holder places %q on %s, the Holder's placer on %s: it does not follow the view", s.keys[i], owners[i], want[i])
		}
	}
}

// hugeWeights checks that a constructor sizes what it allocates from the
// weights it is given before allocating: weights that would ask for more
// than any structure may hold (on a 32-bit platform, more than the
// address space) get an error, or a placer that works, never a panic
// (makeslice, an index out of range) or a fatal out-of-memory. Placers
// that are not Weighted must refuse unequal weights; the case gives them
// equal huge ones.
func hugeWeights(t testing.TB, s *suite) {
	fleets := map[string][]chash.Node{}
	heavy := s.nodes(129)
	for i := range heavy {
		heavy[i].Weight = 1e9
	}
	fleets["129 nodes of weight 1e9"] = heavy
	if s.Weighted {
		one := s.nodes(257)
		one[0].Weight = 4e9
		fleets["one node of weight 4e9 among 256 of weight 1"] = one
		wide := s.nodes(20)
		for i := range wide {
			wide[i].Weight = math.Ldexp(1, i*3)
		}
		fleets["weights 1 to 2^57"] = wide
	}
	for name, nodes := range fleets {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		p, err := buildSafely(s.New, nodes)
		runtime.ReadMemStats(&after)
		if pe, ok := err.(panicked); ok {
			t.Fatalf("%s: New panicked: %v", name, pe.v)
		}
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<30 {
			t.Errorf("%s: New allocated %d MiB: a size from weights must be bounded before it is allocated", name, grew>>20)
		}
		if err != nil {
			continue
		}
		if isNil(p) {
			t.Fatalf("%s: New returned a nil placer and no error", name)
		}
		if err := checkTopK(p, newRoster(p.Nodes()), "key", 3); err != nil {
			t.Fatalf("%s: the placer New accepted: %v", name, err)
		}
	}
}

// panicked is a panic buildSafely recovered.
type panicked struct{ v any }

func (p panicked) Error() string { return fmt.Sprint("panic: ", p.v) }

func buildSafely(f func([]chash.Node) (chash.Placer, error), nodes []chash.Node) (p chash.Placer, err error) {
	defer func() {
		if v := recover(); v != nil {
			p, err = nil, panicked{v}
		}
	}()
	return f(nodes)
}
