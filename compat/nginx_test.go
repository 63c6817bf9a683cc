package compat_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/chashtest"
	"github.com/keyplace/chash/compat"
	"github.com/keyplace/chash/internal/conformance"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNginxConsistentVectors(t *testing.T) {
	build := func(s compatSet) (chash.Placer, error) { return compat.NewNginxConsistent(s.nodes) }
	checkCompatVectors(t, "nginx/consistent.tsv", upOnly(build))
	checkNginxFailover(t, "nginx/consistent.tsv", build)
}

func TestNginxHashVectors(t *testing.T) {
	build := func(s compatSet) (chash.Placer, error) { return compat.NewNginxHash(s.nodes) }
	checkCompatVectors(t, "nginx/hash.tsv", upOnly(build))
	checkNginxFailover(t, "nginx/hash.tsv", build)
}

// upOnly skips the vector sets with a server down.
func upOnly(build func(s compatSet) (chash.Placer, error)) func(s compatSet) (chash.Placer, error) {
	return func(s compatSet) (chash.Placer, error) {
		if strings.HasSuffix(s.name, "-down") {
			return nil, nil
		}
		return build(s)
	}
}

// checkNginxFailover checks set F-down, whose middle server refused
// connections: nginx's choice is the first live server of AppendTopK.
func checkNginxFailover(t *testing.T, file string, build func(s compatSet) (chash.Placer, error)) {
	v := readCompatVectors(t, file)
	j := slices.IndexFunc(v.sets, func(s compatSet) bool { return s.name == "F-down" })
	require.GreaterOrEqual(t, j, 0)
	s := v.sets[j]
	p, err := build(s)
	require.NoError(t, err)
	dead := s.nodes[2].ID
	failovers := 0
	for i, key := range v.keys {
		top := p.AppendTopKString(nil, key, p.Len())
		want := top[0]
		if want.ID == dead {
			want = top[1]
			failovers++
		}
		require.Equal(t, s.nodes[v.want[i][j]].ID, want.ID, "key %q", key)
	}
	require.Greater(t, failovers, len(v.keys)/10)
	t.Logf("%s F-down: %d keys, %d failed over, 0 mismatches", file, len(v.keys), failovers)
}

func nginxServers(n int) []chash.Node {
	return conformance.NamedNodes(n, func(i int) string { return fmt.Sprintf("10.0.0.%d:8080", i) })
}

// TestNginxSizes holds both nginx placers at several sizes to the
// interface's rules.
func TestNginxSizes(t *testing.T) {
	for _, n := range []int{1, 3, 8, 64} {
		c, err := compat.NewNginxConsistent(nginxServers(n))
		require.NoError(t, err)
		chashtest.CheckPlacer(t, c)
		h, err := compat.NewNginxHash(nginxServers(n))
		require.NoError(t, err)
		chashtest.CheckPlacer(t, h)
	}
}

// Adding a server to the consistent ring moves keys only to it; the plain
// hash moves most of them.
func TestNginxMovement(t *testing.T) {
	c5, err := compat.NewNginxConsistent(nginxServers(5))
	require.NoError(t, err)
	c6, err := compat.NewNginxConsistent(nginxServers(6))
	require.NoError(t, err)
	h5, err := compat.NewNginxHash(nginxServers(5))
	require.NoError(t, err)
	h6, err := compat.NewNginxHash(nginxServers(6))
	require.NoError(t, err)
	movedC, movedH := 0, 0
	const keys = 20000
	for i := 0; i < keys; i++ {
		key := fmt.Sprintf("k%d", i)
		if a, b := c5.LookupString(key), c6.LookupString(key); a != b {
			require.Equal(t, "10.0.0.6:8080", b.ID)
			movedC++
		}
		if h5.LookupString(key) != h6.LookupString(key) {
			movedH++
		}
	}
	assert.InDelta(t, 1.0/6, float64(movedC)/keys, 0.06)
	assert.Greater(t, float64(movedH)/keys, 0.6)
}

func TestNginxErrors(t *testing.T) {
	for _, c := range []struct {
		nodes []chash.Node
		want  error
	}{
		{nil, chash.ErrNoNodes},
		{[]chash.Node{{ID: ""}}, chash.ErrEmptyID},
		{[]chash.Node{{ID: "a"}, {ID: "a"}}, chash.ErrDuplicateID},
		{[]chash.Node{{ID: "a", Weight: 0.5}}, chash.ErrInvalidWeight},
		{[]chash.Node{{ID: "a", Weight: 1 << 21}}, chash.ErrInvalidWeight},
	} {
		_, err := compat.NewNginxConsistent(c.nodes)
		assert.True(t, errors.Is(err, c.want), "%v: %v", c.nodes, err)
		_, err = compat.NewNginxHash(c.nodes)
		assert.True(t, errors.Is(err, c.want), "%v: %v", c.nodes, err)
	}
}

func BenchmarkNginxConsistent(b *testing.B) {
	p, err := compat.NewNginxConsistent(nginxServers(8))
	require.NoError(b, err)
	benchCompat(b, p)
}

func BenchmarkNginxHash(b *testing.B) {
	p, err := compat.NewNginxHash(nginxServers(8))
	require.NoError(b, err)
	benchCompat(b, p)
}

// TestContractNginxConsistent runs the contract: a ring of 160 CRC-32
// points a unit of weight, so a ring's bounds; the order written is kept
// and decides only coinciding points.
func TestContractNginxConsistent(t *testing.T) {
	chashtest.TestPlacer(t, chashtest.Spec{
		New: func(nodes []chash.Node) (chash.Placer, error) {
			return conformance.AsPlacer(compat.NewNginxConsistent(nodes))
		},
		Zero:       &compat.NginxConsistent{},
		Nodes:      nginxServers,
		KeepsOrder: true,
		Weighted:   true,
		Derive:     true,
		MaxCV:      0.12, MaxPeak: 1.25, ShareTol: 0.3,
		WeightTVD: 0.08,
		// Whole weights: the smallest gets 4 (640 points).
		NewScaled: func(nodes []chash.Node, unit float64) (chash.Placer, error) {
			return conformance.AsPlacer(compat.NewNginxConsistent(wholeWeights(nodes, 4/unit)))
		},
	})
}

// TestContractNginxHash runs the contract: a 15-bit CRC-32 hash modulo the
// total weight, walked in the order written, so not consistent (any change
// moves most keys: Collateral 1) and ordered. nginx's retries add each
// try's hash to the last, so a server's keys fail over unevenly (measured
// up to 2.8 times the even share on one other server).
func TestContractNginxHash(t *testing.T) {
	chashtest.TestPlacer(t, chashtest.Spec{
		New: func(nodes []chash.Node) (chash.Placer, error) {
			return conformance.AsPlacer(compat.NewNginxHash(nodes))
		},
		Zero:       &compat.NginxHash{},
		Nodes:      nginxServers,
		Ordered:    true,
		Weighted:   true,
		Derive:     true,
		Collateral: 1,
		Spread:     3.5,
		MaxCV:      0.02, MaxPeak: 1.05, ShareTol: 0.05,
		// Whole weights, the smallest 10: a total near the 15-bit hash's
		// range would favour the servers that cover its low values, as it
		// does in nginx.
		NewScaled: func(nodes []chash.Node, unit float64) (chash.Placer, error) {
			return conformance.AsPlacer(compat.NewNginxHash(wholeWeights(nodes, 10/unit)))
		},
		WeightTVD: 0.05,
	})
}
