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

func TestGoRedisVectors(t *testing.T) {
	checkCompatVectors(t, "goredis/vectors.tsv", func(s compatSet) (chash.Placer, error) { return compat.NewGoRedis(s.nodes) })
}

// TestGoRedisSizes holds GoRedis at several sizes to the interface's
// rules.
func TestGoRedisSizes(t *testing.T) {
	for _, n := range []int{1, 3, 8, 64} {
		p, err := compat.NewGoRedis(conformance.NamedNodes(n, func(i int) string { return fmt.Sprintf("shard-%d", i) }))
		require.NoError(t, err)
		chashtest.CheckPlacer(t, p)
	}
}

func TestGoRedisHashKey(t *testing.T) {
	for key, want := range map[string]string{
		"":              "",
		"plain":         "plain",
		"{user1}:a":     "user1",
		"x{user1}":      "user1",
		"{}":            "{}",
		"{}x":           "{}x",
		"a{b":           "a{b",
		"}{a}":          "a",
		"{a}{b}":        "a",
		"x{}{y}":        "x{}{y}",
		"{{a}}":         "{a",
		"foo{bar}{zap}": "bar",
	} {
		assert.Equal(t, want, compat.GoRedisHashKey(key), "key %q", key)
	}
	p, err := compat.NewGoRedis(conformance.NamedNodes(8, func(i int) string { return fmt.Sprintf("shard-%d", i) }))
	require.NoError(t, err)
	assert.Equal(t, p.LookupString("{user1}:followers"), p.LookupString("user1"))
}

func TestGoRedisErrors(t *testing.T) {
	for _, c := range []struct {
		nodes []chash.Node
		want  error
	}{
		{nil, chash.ErrNoNodes},
		{[]chash.Node{{ID: ""}}, chash.ErrEmptyID},
		{[]chash.Node{{ID: "a"}, {ID: "a"}}, chash.ErrDuplicateID},
		{[]chash.Node{{ID: "a", Weight: 2}}, chash.ErrInvalidWeight},
	} {
		_, err := compat.NewGoRedis(c.nodes)
		assert.True(t, errors.Is(err, c.want), "%v: %v", c.nodes, err)
	}
}

func BenchmarkGoRedis(b *testing.B) {
	p, err := compat.NewGoRedis(conformance.NamedNodes(8, func(i int) string { return fmt.Sprintf("shard-%d", i) }))
	require.NoError(b, err)
	benchCompat(b, p)
}

// TestContractGoRedis runs the contract: go-rendezvous, so minimal
// disruption and rendezvous's balance.
func TestContractGoRedis(t *testing.T) {
	chashtest.TestPlacer(t, chashtest.Spec{
		New:  func(nodes []chash.Node) (chash.Placer, error) { return conformance.AsPlacer(compat.NewGoRedis(nodes)) },
		Zero: &compat.GoRedis{},
		Nodes: func(n int) []chash.Node {
			return conformance.NamedNodes(n, func(i int) string { return fmt.Sprintf("shard-%d", i) })
		},
		Derive: true,
		MaxCV:  0.02, MaxPeak: 1.05, ShareTol: 0.05,
	})
}
