package chash_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/keyplace/chash"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGRPCRingHashVectors(t *testing.T) {
	checkCompatVectors(t, "grpc/vectors.tsv", func(s compatSet) (chash.Placer, error) {
		lo, hi := 0, 0
		switch {
		case strings.HasSuffix(s.name, "-small"):
			lo, hi = 10, 100
		case strings.HasSuffix(s.name, "-capped"):
			lo, hi = 4096, 4096
		}
		return chash.NewGRPCRingHash(s.nodes, lo, hi)
	})
}

func ringHashEndpoints(n int) []chash.Node {
	return compatNodes(n, func(i int) string { return fmt.Sprintf("10.0.0.%d:50051", i) })
}

func TestRingHashContract(t *testing.T) {
	for _, n := range []int{1, 3, 8, 64} {
		g, err := chash.NewGRPCRingHash(ringHashEndpoints(n), 0, 0)
		require.NoError(t, err)
		checkCompat(t, g)
		e, err := chash.NewEnvoyRingHash(ringHashEndpoints(n), 0, 0)
		require.NoError(t, err)
		checkCompat(t, e)
	}
}

// The ring sizes follow both systems' scale rule: the least-weighted
// endpoint gets a whole number of entries, up to the maximum.
func TestRingHashEntries(t *testing.T) {
	for _, c := range []struct {
		weights  []float64
		min, max int
		want     int
	}{
		{[]float64{1, 1, 1}, 1024, 4096, 1026},
		{[]float64{1, 1, 2, 3, 5}, 1024, 4096, 1032},
		{[]float64{1, 1, 1}, 10, 100, 12},
		{[]float64{3, 3, 4}, 7, 7, 7},
		{[]float64{1, 1000}, 1024, 4096, 2002},
		{[]float64{1, 10000}, 1024, 4096, 4096},
	} {
		nodes := make([]chash.Node, len(c.weights))
		for i, w := range c.weights {
			nodes[i] = chash.Node{ID: fmt.Sprintf("e%d", i), Weight: w}
		}
		g, err := chash.NewGRPCRingHash(nodes, c.min, c.max)
		require.NoError(t, err)
		assert.Equal(t, c.want, g.Entries(), "%v %d-%d", c.weights, c.min, c.max)
	}
}

// Envoy lays out hosts in the configured order and grpc-go in hash-key
// order; with equal weights and a whole number of entries each, the rings
// are the same.
func TestEnvoyRingHashOrder(t *testing.T) {
	nodes := ringHashEndpoints(5)
	reversed := []chash.Node{nodes[4], nodes[3], nodes[2], nodes[1], nodes[0]}
	g, err := chash.NewGRPCRingHash(reversed, 0, 0)
	require.NoError(t, err)
	e, err := chash.NewEnvoyRingHash(reversed, 1024, 4096)
	require.NoError(t, err)
	ids := func(ns []chash.Node) (out []string) {
		for _, n := range ns {
			out = append(out, n.ID)
		}
		return out
	}
	assert.Equal(t, ids(nodes), ids(g.Nodes()))
	assert.Equal(t, ids(reversed), ids(e.Nodes()))
	for i := 0; i < 5000; i++ {
		key := fmt.Sprint(i)
		require.Equal(t, g.LookupString(key), e.LookupString(key))
		require.Equal(t, g.LookupString(key), e.LookupHash(xxhash.Sum64String(key)))
	}
}

func TestRingHashErrors(t *testing.T) {
	for _, c := range []struct {
		nodes    []chash.Node
		min, max int
		want     error
	}{
		{nil, 0, 0, chash.ErrNoNodes},
		{[]chash.Node{{ID: ""}}, 0, 0, chash.ErrEmptyID},
		{[]chash.Node{{ID: "a"}, {ID: "a"}}, 0, 0, chash.ErrDuplicateID},
		{[]chash.Node{{ID: "a", Weight: 1.5}}, 0, 0, chash.ErrInvalidWeight},
		{[]chash.Node{{ID: "a", Weight: 1 << 31}, {ID: "b", Weight: 1 << 31}}, 0, 0, chash.ErrInvalidWeight},
		{[]chash.Node{{ID: "a"}}, 100, 10, chash.ErrInvalidOption},
		{[]chash.Node{{ID: "a"}}, -1, 10, chash.ErrInvalidOption},
		{[]chash.Node{{ID: "a"}}, 1, 1 << 24, chash.ErrInvalidOption},
	} {
		_, err := chash.NewGRPCRingHash(c.nodes, c.min, c.max)
		assert.True(t, errors.Is(err, c.want), "%v: %v", c.nodes, err)
		_, err = chash.NewEnvoyRingHash(c.nodes, c.min, c.max)
		assert.True(t, errors.Is(err, c.want), "%v: %v", c.nodes, err)
	}
}

func BenchmarkGRPCRingHash(b *testing.B) {
	p, err := chash.NewGRPCRingHash(ringHashEndpoints(8), 0, 0)
	require.NoError(b, err)
	benchCompat(b, p)
}

func BenchmarkEnvoyRingHash(b *testing.B) {
	p, err := chash.NewEnvoyRingHash(ringHashEndpoints(8), 0, 0)
	require.NoError(b, err)
	benchCompat(b, p)
}
