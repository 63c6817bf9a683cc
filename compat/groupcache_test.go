package compat_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/chashtest"
	"github.com/keyplace/chash/compat"
	"github.com/keyplace/chash/internal/conformance"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGroupcacheVectors(t *testing.T) {
	checkCompatVectors(t, "groupcache/vectors.tsv", func(s compatSet) (chash.Placer, error) {
		replicas := 0
		switch {
		case strings.HasSuffix(s.name, "-r3"):
			replicas = 3
		case strings.HasSuffix(s.name, "-r1"):
			replicas = 1
		}
		return compat.NewGroupcache(s.nodes, replicas)
	})
}

// TestGroupcacheSizes holds Groupcache at several sizes to the
// interface's rules.
func TestGroupcacheSizes(t *testing.T) {
	for _, n := range []int{1, 3, 8, 64} {
		p, err := compat.NewGroupcache(conformance.NamedNodes(n, func(i int) string { return fmt.Sprintf("http://10.0.0.%d:8080", i) }), 0)
		require.NoError(t, err)
		chashtest.CheckPlacer(t, p)
	}
}

func TestGroupcacheErrors(t *testing.T) {
	_, err := compat.NewGroupcache(nil, 0)
	assert.True(t, errors.Is(err, chash.ErrNoNodes), "%v", err)
	_, err = compat.NewGroupcache([]chash.Node{{ID: "a"}}, -1)
	assert.True(t, errors.Is(err, chash.ErrInvalidOption), "%v", err)
	_, err = compat.NewGroupcache([]chash.Node{{ID: "a"}, {ID: "b"}}, 1<<24)
	assert.True(t, errors.Is(err, chash.ErrTooLarge), "%v", err)
	_, err = compat.NewGroupcache([]chash.Node{{ID: "a", Weight: 3}}, 0)
	assert.True(t, errors.Is(err, chash.ErrInvalidWeight), "%v", err)
}

func BenchmarkGroupcache(b *testing.B) {
	p, err := compat.NewGroupcache(conformance.NamedNodes(8, func(i int) string { return fmt.Sprintf("http://10.0.0.%d:8080", i) }), 0)
	require.NoError(b, err)
	benchCompat(b, p)
}

// TestContractGroupcache runs the contract: a ring of 50 CRC-32 points a
// peer, so a ring's disruption and the balance of few points (measured CV
// 0.13 at 10 peers, peak 1.27, and a peer's keys fail over to one
// neighbour up to 2.9 times as often as to the average one); the order
// given is kept and decides only coinciding points.
func TestContractGroupcache(t *testing.T) {
	peers := func(n int) []chash.Node {
		return conformance.NamedNodes(n, func(i int) string { return fmt.Sprintf("http://10.0.0.%d:8080", i) })
	}
	chashtest.TestPlacer(t, chashtest.Spec{
		New: func(nodes []chash.Node) (chash.Placer, error) {
			return conformance.AsPlacer(compat.NewGroupcache(nodes, 0))
		},
		Zero:       &compat.Groupcache{},
		Nodes:      peers,
		KeepsOrder: true,
		Derive:     true,
		MaxCV:      0.2, MaxPeak: 1.4, ShareTol: 0.4,
		Spread: 3.5,
		Variants: []func() (chash.Placer, error){
			func() (chash.Placer, error) { return compat.NewGroupcache(peers(10), 100) },
			// The default spelled out: the same placement.
			func() (chash.Placer, error) { return compat.NewGroupcache(peers(10), compat.GroupcacheReplicas) },
		},
	})
}
