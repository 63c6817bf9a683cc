package compat_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/chashtest"
	"github.com/keyplace/chash/compat"
	"github.com/keyplace/chash/internal/conformance"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCaddyVectors(t *testing.T) {
	checkCompatVectors(t, "caddy/vectors.tsv", func(s compatSet) (chash.Placer, error) { return compat.NewCaddy(s.nodes) })
}

func caddyUpstreams(n int) []chash.Node {
	return conformance.NamedNodes(n, func(i int) string { return fmt.Sprintf("10.0.0.%d:8080", i) })
}

// TestCaddySizes holds Caddy at several sizes to the interface's rules.
func TestCaddySizes(t *testing.T) {
	for _, n := range []int{1, 3, 8, 64} {
		p, err := compat.NewCaddy(caddyUpstreams(n))
		require.NoError(t, err)
		chashtest.CheckPlacer(t, p)
	}
}

// Highest random weight: removing an upstream moves only its keys.
func TestCaddyRemoveMovesOnlyItsKeys(t *testing.T) {
	all, err := compat.NewCaddy(caddyUpstreams(6))
	require.NoError(t, err)
	rest, err := compat.NewCaddy(append(caddyUpstreams(2), caddyUpstreams(6)[3:]...))
	require.NoError(t, err)
	for i := 0; i < 20000; i++ {
		key := fmt.Sprint(i)
		if before := all.LookupString(key); before.ID != "10.0.0.3:8080" {
			require.Equal(t, before, rest.LookupString(key), key)
		} else {
			require.Equal(t, all.AppendTopKString(nil, key, 2)[1], rest.LookupString(key), key)
		}
	}
}

func TestCaddyErrors(t *testing.T) {
	for _, c := range []struct {
		nodes []chash.Node
		want  error
	}{
		{nil, chash.ErrNoNodes},
		{[]chash.Node{{ID: ""}}, chash.ErrEmptyID},
		{[]chash.Node{{ID: "a"}, {ID: "a"}}, chash.ErrDuplicateID},
		{[]chash.Node{{ID: "a", Weight: 2}}, chash.ErrInvalidWeight},
	} {
		_, err := compat.NewCaddy(c.nodes)
		assert.True(t, errors.Is(err, c.want), "%v: %v", c.nodes, err)
	}
}

func BenchmarkCaddy(b *testing.B) {
	p, err := compat.NewCaddy(caddyUpstreams(8))
	require.NoError(b, err)
	benchCompat(b, p)
}

// TestContractCaddy runs the contract: highest random weight, so minimal
// disruption and rendezvous's balance; the configured order is kept and
// decides only exact ties.
func TestContractCaddy(t *testing.T) {
	chashtest.TestPlacer(t, chashtest.Spec{
		New:        func(nodes []chash.Node) (chash.Placer, error) { return conformance.AsPlacer(compat.NewCaddy(nodes)) },
		Zero:       &compat.Caddy{},
		Nodes:      caddyUpstreams,
		KeepsOrder: true,
		Derive:     true,
		MaxCV:      0.02, MaxPeak: 1.05, ShareTol: 0.05,
	})
}
