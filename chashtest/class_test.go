package chashtest

import (
	"testing"

	"github.com/keyplace/chash"
)

// A placement that a reorder moves without declaring it fails Positional,
// and so does a declaration the placement does not bear out.
func TestCatchesUndeclaredOrder(t *testing.T) {
	s := toySpec(good)
	s.Ordered = true
	s.New = func(nodes []chash.Node) (chash.Placer, error) {
		p, err := newToy(nodes, 0, good)
		if err != nil {
			return nil, err
		}
		return modulo{p, nodes}, nil
	}
	s.Zero = modulo{}
	mustFail(t, "Positional", s, "chash.IsPositional says the placement is not positional")

	claims := toySpec(good)
	claims.Ordered = true
	claims.New = func(nodes []chash.Node) (chash.Placer, error) {
		p, err := newToy(nodes, 0, good)
		return claimant{p}, err
	}
	claims.Zero = claimant{}
	mustFail(t, "Positional", claims, "declares its placement depends on the order")
}

// modulo is a toy whose Lookup is a key's hash modulo n over the nodes in
// the order given (the only method the Positional case reads).
type modulo struct {
	*toy
	order []chash.Node
}

func (m modulo) LookupString(key string) chash.Node { return m.order[hash(key)%uint64(len(m.order))] }

// claimant is a toy that says it is positional, which it is not.
type claimant struct{ *toy }

func (claimant) Positional() bool { return true }

// A wrapper that keeps its inner placer's first members fails Views, and
// so does a view that a wrapper of the module does not refuse.
func TestCatchesStaleWrapper(t *testing.T) {
	s := toySpec(good)
	s.Wrap = func(inner chash.Placer) (chash.Placer, error) {
		return snapshot{inner.Nodes(), inner}, nil
	}
	mustFail(t, "Views", s, "neither follows the view nor refuses it")

	follows := toySpec(good)
	follows.Wrap = func(inner chash.Placer) (chash.Placer, error) { return passThrough{inner}, nil }
	if r := runCase(t, "Views", follows); r.failed {
		t.Errorf("a wrapper that follows its Holder failed Views: %q", r.log)
	}
}

// snapshot wraps a placer but keeps the members it had when wrapped.
type snapshot struct {
	nodes []chash.Node
	chash.Placer
}

func (s snapshot) Nodes() []chash.Node { return s.nodes }
func (s snapshot) Len() int            { return len(s.nodes) }

// passThrough wraps a placer and asks it each time.
type passThrough struct{ chash.Placer }

// A constructor that sizes a table from the weights without a bound
// panics on huge weights, and HugeWeights says so.
func TestCatchesUnboundedSizes(t *testing.T) {
	s := toySpec(good)
	s.Weighted = true
	s.New = func(nodes []chash.Node) (chash.Placer, error) {
		total := 0.0
		for _, n := range nodes {
			total += n.Weight
		}
		table := make([]uint32, 0, int(total*1e9)) // overflows: makeslice panics
		_ = table
		return newToy(nodes, 0, good)
	}
	mustFail(t, "HugeWeights", s, "New panicked")
}
