package compat_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/keyplace/chash"
	"github.com/keyplace/chash/chashtest"
	"github.com/keyplace/chash/compat"
	"github.com/keyplace/chash/internal/conformance"
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
		return compat.NewGRPCRingHash(s.nodes, lo, hi)
	})
}

func ringHashEndpoints(n int) []chash.Node {
	return conformance.NamedNodes(n, func(i int) string { return fmt.Sprintf("10.0.0.%d:50051", i) })
}

// TestRingHashSizes holds both ring_hash placers at several sizes to the
// interface's rules.
func TestRingHashSizes(t *testing.T) {
	for _, n := range []int{1, 3, 8, 64} {
		g, err := compat.NewGRPCRingHash(ringHashEndpoints(n), 0, 0)
		require.NoError(t, err)
		chashtest.CheckPlacer(t, g)
		e, err := compat.NewEnvoyRingHash(ringHashEndpoints(n), 0, 0)
		require.NoError(t, err)
		chashtest.CheckPlacer(t, e)
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
		g, err := compat.NewGRPCRingHash(nodes, c.min, c.max)
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
	g, err := compat.NewGRPCRingHash(reversed, 0, 0)
	require.NoError(t, err)
	e, err := compat.NewEnvoyRingHash(reversed, 1024, 4096)
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
		_, err := compat.NewGRPCRingHash(c.nodes, c.min, c.max)
		assert.True(t, errors.Is(err, c.want), "%v: %v", c.nodes, err)
		_, err = compat.NewEnvoyRingHash(c.nodes, c.min, c.max)
		assert.True(t, errors.Is(err, c.want), "%v: %v", c.nodes, err)
	}
}

func BenchmarkGRPCRingHash(b *testing.B) {
	p, err := compat.NewGRPCRingHash(ringHashEndpoints(8), 0, 0)
	require.NoError(b, err)
	benchCompat(b, p)
}

func BenchmarkEnvoyRingHash(b *testing.B) {
	p, err := compat.NewEnvoyRingHash(ringHashEndpoints(8), 0, 0)
	require.NoError(b, err)
	benchCompat(b, p)
}

// The rings Envoy's own unit tests expect
// (test/extensions/load_balancing_policies/ring_hash/ring_hash_lb_test.cc:
// Basic and BasicWithHostname, minimum_ring_size 12): every listed
// position belongs to its host, and the next hash to the next entry's.
func TestEnvoyRingHashEnvoyRings(t *testing.T) {
	type entry struct {
		host string
		pos  uint64
	}
	for _, c := range []struct {
		name  string
		hosts []chash.Node
		ring  []entry
	}{
		{"Basic", conformance.NamedNodes(6, func(i int) string { return fmt.Sprintf("127.0.0.1:%d", 89+i) }), []entry{
			{"127.0.0.1:94", 833437586790550860}, {"127.0.0.1:92", 928266305478181108},
			{"127.0.0.1:90", 1033482794131418490}, {"127.0.0.1:95", 3551244743356806947},
			{"127.0.0.1:93", 3851675632748031481}, {"127.0.0.1:91", 5583722120771150861},
			{"127.0.0.1:91", 6311230543546372928}, {"127.0.0.1:93", 7700377290971790572},
			{"127.0.0.1:95", 13144177310400110813}, {"127.0.0.1:92", 13444792449719432967},
			{"127.0.0.1:94", 15516499411664133160}, {"127.0.0.1:90", 16117243373044804889},
		}},
		{"BasicWithHostname", conformance.NamedNodes(6, func(i int) string { return fmt.Sprint(89 + i) }), []entry{
			{"95", 1975508444536362413}, {"95", 2376063919839173711}, {"93", 2386806903309390596},
			{"94", 6749904478991551885}, {"93", 6803900775736438537}, {"92", 7225015537174310577},
			{"90", 8787465352164086522}, {"92", 11282020843382717940}, {"91", 13723418369486627818},
			{"90", 13776502110861797421}, {"91", 14338313586354474791}, {"94", 15364271037087512980},
		}},
	} {
		e, err := compat.NewEnvoyRingHash(c.hosts, 12, 0)
		require.NoError(t, err)
		require.Equal(t, 12, e.Entries())
		assert.Equal(t, c.ring[0].host, e.LookupHash(0).ID, c.name)
		assert.Equal(t, c.ring[0].host, e.LookupHash(^uint64(0)).ID, c.name)
		for i, en := range c.ring {
			assert.Equal(t, en.host, e.LookupHash(en.pos).ID, "%s entry %d", c.name, i)
			assert.Equal(t, c.ring[(i+1)%len(c.ring)].host, e.LookupHash(en.pos+1).ID, "%s after entry %d", c.name, i)
		}
	}
}

// ringHashSpec is the contract of a ring_hash placement: a ring of about
// 1,030 entries at 10 endpoints (103 each), so a ring's disruption, the
// balance of about 100 points a node, and collateral moves, since the
// ring's size, and so each endpoint's entry count, depends on the
// membership (ceil(minWeight × 1024) / minWeight).
func ringHashSpec(build func([]chash.Node, int, int) (*compat.RingHash, error)) chashtest.Spec {
	return chashtest.Spec{
		New:      func(nodes []chash.Node) (chash.Placer, error) { return conformance.AsPlacer(build(nodes, 0, 0)) },
		Zero:     &compat.RingHash{},
		Nodes:    ringHashEndpoints,
		Weighted: true,
		Derive:   true,
		MaxCV:    0.15, MaxPeak: 1.35, ShareTol: 0.4,
		Collateral: 0.08, // measured 0.066 to 0.071 of keys
		WeightTVD:  0.1,
		// Whole weights, the smallest 100.
		NewScaled: func(nodes []chash.Node, unit float64) (chash.Placer, error) {
			return conformance.AsPlacer(build(wholeWeights(nodes, 100/unit), 0, 0))
		},
		Variants: []func() (chash.Placer, error){
			func() (chash.Placer, error) { return build(ringHashEndpoints(10), 2048, 8192) },
			func() (chash.Placer, error) { return build(ringHashEndpoints(10), 1024, 1024) },
		},
	}
}

// TestContractGRPCRingHash runs the contract on grpc-go's ring_hash, which
// sorts the endpoints. Envoy's ring over the same endpoints in that order
// is the same ring.
func TestContractGRPCRingHash(t *testing.T) {
	s := ringHashSpec(compat.NewGRPCRingHash)
	s.Variants = append(s.Variants, func() (chash.Placer, error) {
		sorted := ringHashEndpoints(10)
		slices.SortFunc(sorted, func(a, b chash.Node) int { return strings.Compare(a.ID, b.ID) })
		return compat.NewEnvoyRingHash(sorted, compat.GRPCMinRingSize, compat.GRPCMaxRingSize)
	})
	chashtest.TestPlacer(t, s)
}

// TestContractEnvoyRingHash runs the contract on Envoy's ring_hash, whose
// configured order is the order of its entries: Ordered.
func TestContractEnvoyRingHash(t *testing.T) {
	s := ringHashSpec(compat.NewEnvoyRingHash)
	s.Ordered = true
	chashtest.TestPlacer(t, s)
}
