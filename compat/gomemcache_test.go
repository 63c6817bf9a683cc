package compat_test

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/keyplace/chash/internal/measure"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/chashtest"
	"github.com/keyplace/chash/compat"
	"github.com/keyplace/chash/internal/conformance"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGomemcacheVectors(t *testing.T) {
	checkCompatVectors(t, "gomemcache/vectors.tsv", func(s compatSet) (chash.Placer, error) {
		var list []string
		for _, n := range s.nodes {
			for range int(n.Weight) {
				list = append(list, n.ID)
			}
		}
		byList, err := compat.NewGomemcacheList(list...)
		if err != nil {
			return nil, err
		}
		require.Equal(t, list, byList.List())
		if byNodes, err := compat.NewGomemcache(s.nodes); err == nil {
			require.Equal(t, list, byNodes.List(), "set %s", s.name)
		} else {
			require.ErrorIs(t, err, chash.ErrDuplicateID, "set %s", s.name)
		}
		return byList, nil
	})
}

// TestGomemcacheSizes holds Gomemcache at several sizes to the
// interface's rules.
func TestGomemcacheSizes(t *testing.T) {
	for _, n := range []int{1, 3, 8, 64} {
		p, err := compat.NewGomemcache(conformance.NamedNodes(n, func(i int) string { return fmt.Sprintf("10.0.0.%d:11211", i) }))
		require.NoError(t, err)
		chashtest.CheckPlacer(t, p)
	}
	p, err := compat.NewGomemcacheList("a", "b", "a", "c", "a")
	require.NoError(t, err)
	chashtest.CheckPlacer(t, p)
	assert.Equal(t, []chash.Node{{ID: "a", Weight: 3}, {ID: "b", Weight: 1}, {ID: "c", Weight: 1}}, p.Nodes())
}

// Keys longer than 256 bytes are placed by their first 256, as
// ServerList copies them into a 256-byte buffer.
func TestGomemcacheLongKeys(t *testing.T) {
	p, err := compat.NewGomemcache(conformance.NamedNodes(10, func(i int) string { return fmt.Sprintf("s%d", i) }))
	require.NoError(t, err)
	base := strings.Repeat("x", 256)
	for i := 0; i < 50; i++ {
		assert.Equal(t, p.LookupString(base), p.LookupString(base+fmt.Sprint(i)))
	}
}

func TestGomemcacheErrors(t *testing.T) {
	for _, nodes := range [][]chash.Node{nil, {{ID: ""}}, {{ID: "a"}, {ID: "a"}}, {{ID: "a", Weight: 1.5}}, {{ID: "a", Weight: 1 << 25}}} {
		_, err := compat.NewGomemcache(nodes)
		assert.Error(t, err, "%v", nodes)
	}
	_, err := compat.NewGomemcacheList()
	assert.True(t, errors.Is(err, chash.ErrNoNodes), "%v", err)
	_, err = compat.NewGomemcacheList("a", "")
	assert.True(t, errors.Is(err, chash.ErrEmptyID), "%v", err)
}

func BenchmarkGomemcache(b *testing.B) {
	p, err := compat.NewGomemcache(conformance.NamedNodes(8, func(i int) string { return fmt.Sprintf("10.0.0.%d:11211", i) }))
	require.NoError(b, err)
	benchCompat(b, p)
}

// TestContractGomemcache runs the contract: CRC-32 modulo the list, which
// is not consistent (any change moves most keys: Collateral 1), whose list
// order is the placement, and whose next choice is the next server of the
// list (Spread 9: a server's keys all fail over to one other).
func TestContractGomemcache(t *testing.T) {
	servers := func(n int) []chash.Node {
		return conformance.NamedNodes(n, func(i int) string { return fmt.Sprintf("10.0.0.%d:11211", i) })
	}
	chashtest.TestPlacer(t, chashtest.Spec{
		New: func(nodes []chash.Node) (chash.Placer, error) {
			return conformance.AsPlacer(compat.NewGomemcache(nodes))
		},
		Zero:       &compat.Gomemcache{},
		Nodes:      servers,
		Ordered:    true,
		Weighted:   true,
		Derive:     true,
		Collateral: 1,
		Spread:     9,
		MaxCV:      0.02, MaxPeak: 1.05, ShareTol: 0.05,
		// Weights are entry counts: the smallest weight gets 100.
		NewScaled: func(nodes []chash.Node, unit float64) (chash.Placer, error) {
			return conformance.AsPlacer(compat.NewGomemcache(wholeWeights(nodes, 100/unit)))
		},
		Variants: []func() (chash.Placer, error){
			// The list with its first server again at the end.
			func() (chash.Placer, error) {
				list := measure.IDs(servers(10))
				return compat.NewGomemcacheList(append(list, list[0])...)
			},
		},
	})
}

// wholeWeights returns nodes with each weight times scale, rounded.
func wholeWeights(nodes []chash.Node, scale float64) []chash.Node {
	out := slices.Clone(nodes)
	for i := range out {
		out[i].Weight = math.Round(out[i].Weight * scale)
	}
	return out
}
