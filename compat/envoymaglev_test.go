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

// The tables Envoy's own unit tests expect
// (test/extensions/load_balancing_policies/maglev/maglev_lb_test.cc:
// Basic, BasicWithHostName, Weighted), where request hash i picks slot i.
func TestEnvoyMaglevEnvoyTables(t *testing.T) {
	for _, c := range []struct {
		name  string
		hosts []chash.Node
		size  int
		want  []int // index into hosts per slot
	}{
		{"Basic", conformance.NamedNodes(6, func(i int) string { return fmt.Sprintf("127.0.0.1:%d", 89+i) }), 7, []int{2, 4, 0, 1, 5, 0, 3}},
		{"BasicWithHostName", conformance.NamedNodes(6, func(i int) string { return fmt.Sprint(89 + i) }), 7, []int{2, 5, 0, 3, 4, 1, 0}},
		{"Weighted", []chash.Node{{ID: "127.0.0.1:90", Weight: 1}, {ID: "127.0.0.1:91", Weight: 2}}, 17, []int{1, 0, 0, 1, 0, 1, 1, 0, 1, 1, 1, 1, 1, 0, 1, 0, 1}},
	} {
		// Envoy sorts hosts by hash key, so the configured order is irrelevant.
		reversed := make([]chash.Node, len(c.hosts))
		for i, h := range c.hosts {
			reversed[len(c.hosts)-1-i] = h
		}
		for _, hosts := range [][]chash.Node{c.hosts, reversed} {
			g, err := compat.NewEnvoyMaglev(hosts, c.size)
			require.NoError(t, err)
			for i := uint64(0); i < uint64(3*c.size); i++ {
				require.Equal(t, c.hosts[c.want[i%uint64(c.size)]].ID, g.LookupHash(i).ID, "%s slot %d", c.name, i)
			}
		}
	}
	g, err := compat.NewEnvoyMaglev([]chash.Node{{ID: "127.0.0.1:90", Weight: 1}, {ID: "127.0.0.1:91", Weight: 2}}, 17)
	require.NoError(t, err)
	assert.Equal(t, []int{6, 11}, g.Entries()) // Envoy's min and max entries per host
}

// Envoy's BasicWithRetryHostPredicate: hash 10's second attempt goes from
// 127.0.0.1:91 to 127.0.0.1:90.
func TestEnvoyMaglevRetries(t *testing.T) {
	hosts := conformance.NamedNodes(6, func(i int) string { return fmt.Sprintf("127.0.0.1:%d", 89+i) })
	g, err := compat.NewEnvoyMaglev(hosts, 7)
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1:91", g.LookupHash(10).ID)
	assert.Equal(t, "127.0.0.1:90", g.LookupHash(10^^uint64(0)).ID)
}

func envoyHosts(n int) []chash.Node {
	return conformance.NamedNodes(n, func(i int) string { return fmt.Sprintf("10.0.0.%d:8080", i) })
}

// TestEnvoyMaglevSizes holds EnvoyMaglev at several sizes, and with a
// table smaller than the hosts, to the interface's rules.
func TestEnvoyMaglevSizes(t *testing.T) {
	for _, n := range []int{1, 3, 8, 64} {
		p, err := compat.NewEnvoyMaglev(envoyHosts(n), 0)
		require.NoError(t, err)
		chashtest.CheckPlacer(t, p)
	}
	p, err := compat.NewEnvoyMaglev(envoyHosts(10), 7)
	require.NoError(t, err)
	chashtest.CheckPlacer(t, p)
}

// Weighted turns give each host entries in proportion to its weight.
func TestEnvoyMaglevWeights(t *testing.T) {
	hosts := []chash.Node{{ID: "a", Weight: 1}, {ID: "b", Weight: 2}, {ID: "c", Weight: 3}, {ID: "d", Weight: 4}}
	g, err := compat.NewEnvoyMaglev(hosts, 0)
	require.NoError(t, err)
	for i, e := range g.Entries() {
		assert.InDelta(t, float64(i+1)/10, float64(e)/float64(g.TableSize()), 0.001, hosts[i].ID)
	}
}

func TestEnvoyMaglevErrors(t *testing.T) {
	for _, c := range []struct {
		nodes []chash.Node
		size  int
		want  error
	}{
		{nil, 0, chash.ErrNoNodes},
		{[]chash.Node{{ID: ""}}, 0, chash.ErrEmptyID},
		{[]chash.Node{{ID: "a"}, {ID: "a"}}, 0, chash.ErrDuplicateID},
		{[]chash.Node{{ID: "a", Weight: 1.5}}, 0, chash.ErrInvalidWeight},
		{[]chash.Node{{ID: "a"}}, 8, chash.ErrInvalidOption},
		{[]chash.Node{{ID: "a"}}, -7, chash.ErrInvalidOption},
		{[]chash.Node{{ID: "a"}}, 1<<24 + 1, chash.ErrInvalidOption},
	} {
		_, err := compat.NewEnvoyMaglev(c.nodes, c.size)
		assert.True(t, errors.Is(err, c.want), "%v %d: %v", c.nodes, c.size, err)
	}
}

func BenchmarkEnvoyMaglev(b *testing.B) {
	p, err := compat.NewEnvoyMaglev(envoyHosts(8), 0)
	require.NoError(b, err)
	benchCompat(b, p)
}

// TestContractEnvoyMaglev runs the contract: Maglev over a table of 65537,
// so near-perfect balance and a small collateral on each change.
func TestContractEnvoyMaglev(t *testing.T) {
	chashtest.TestPlacer(t, chashtest.Spec{
		New: func(nodes []chash.Node) (chash.Placer, error) {
			return conformance.AsPlacer(compat.NewEnvoyMaglev(nodes, 0))
		},
		Zero:     &compat.EnvoyMaglev{},
		Nodes:    envoyHosts,
		Weighted: true,
		Derive:   true,
		MaxCV:    0.03, MaxPeak: 1.05, ShareTol: 0.04,
		Collateral: 0.02,
		// Whole weights, the smallest 100.
		NewScaled: func(nodes []chash.Node, unit float64) (chash.Placer, error) {
			return conformance.AsPlacer(compat.NewEnvoyMaglev(wholeWeights(nodes, 100/unit), 0))
		},
		Variants: []func() (chash.Placer, error){
			func() (chash.Placer, error) { return compat.NewEnvoyMaglev(envoyHosts(10), 1009) },
		},
	})
}
