package compat_test

import (
	"fmt"
	"testing"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/chashtest"
	"github.com/keyplace/chash/compat"
	"github.com/keyplace/chash/internal/conformance"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// samePlacement reports whether p and q give the same top 3 for 2,000 keys.
func samePlacement(p, q chash.Placer) bool {
	var a, b []chash.Node
	for _, k := range chashtest.Keys(2000) {
		a, b = p.AppendTopKString(a[:0], k, 3), q.AppendTopKString(b[:0], k, 3)
		if fmt.Sprint(a) != fmt.Sprint(b) {
			return false
		}
	}
	return true
}

// TestFingerprintSettings: placers built with other settings get other
// fingerprints when they place keys differently (Envoy ring_hash with
// other ring sizes used to share one), and equal inputs equal ones.
func TestFingerprintSettings(t *testing.T) {
	hosts := conformance.NamedNodes(5, func(i int) string { return fmt.Sprintf("10.0.0.%d:80", i) })
	builds := map[string]func() (chash.Placer, error){}
	for _, size := range [][2]int{{0, 0}, {64, 64}, {128, 128}, {1024, 4096}, {3, 3}} {
		builds[fmt.Sprintf("envoy %v", size)] = func() (chash.Placer, error) { return compat.NewEnvoyRingHash(hosts, size[0], size[1]) }
		builds[fmt.Sprintf("grpc %v", size)] = func() (chash.Placer, error) { return compat.NewGRPCRingHash(hosts, size[0], size[1]) }
	}
	for _, r := range []int{0, 1, 7} {
		builds[fmt.Sprintf("groupcache %d", r)] = func() (chash.Placer, error) { return compat.NewGroupcache(hosts, r) }
	}
	for _, m := range []int{0, 7, 251} {
		builds[fmt.Sprintf("envoy maglev %d", m)] = func() (chash.Placer, error) { return compat.NewEnvoyMaglev(hosts, m) }
	}
	builds["gomemcache a,b,a"] = func() (chash.Placer, error) { return compat.NewGomemcacheList("a", "b", "a") }
	builds["gomemcache a,a,b"] = func() (chash.Placer, error) { return compat.NewGomemcacheList("a", "a", "b") }
	placers := map[string]chash.Placer{}
	for name, build := range builds {
		p, err := build()
		require.NoError(t, err, name)
		q, err := build()
		require.NoError(t, err, name)
		require.Equal(t, chash.Fingerprint(p), chash.Fingerprint(q), name)
		placers[name] = p
	}
	for a, p := range placers {
		for b, q := range placers {
			if a < b {
				same := samePlacement(p, q)
				assert.Equal(t, same, chash.Fingerprint(p) == chash.Fingerprint(q), "%s and %s: same placement %v", a, b, same)
			}
		}
	}
}

// TestDeriveCompat: chash.Derive rebuilds a compat placer with its
// settings, as its constructor does for the new members.
func TestDeriveCompat(t *testing.T) {
	hosts := conformance.NamedNodes(6, func(i int) string { return fmt.Sprintf("10.0.0.%d:80", i) })
	fewer := hosts[:5]
	for name, build := range map[string]func(nodes []chash.Node) (chash.Placer, error){
		"caddy":        func(n []chash.Node) (chash.Placer, error) { return compat.NewCaddy(n) },
		"envoy maglev": func(n []chash.Node) (chash.Placer, error) { return compat.NewEnvoyMaglev(n, 251) },
		"gomemcache":   func(n []chash.Node) (chash.Placer, error) { return compat.NewGomemcache(n) },
		"goredis":      func(n []chash.Node) (chash.Placer, error) { return compat.NewGoRedis(n) },
		"groupcache":   func(n []chash.Node) (chash.Placer, error) { return compat.NewGroupcache(n, 7) },
		"grpc":         func(n []chash.Node) (chash.Placer, error) { return compat.NewGRPCRingHash(n, 64, 64) },
		"envoy ring":   func(n []chash.Node) (chash.Placer, error) { return compat.NewEnvoyRingHash(n, 64, 64) },
		"nginx":        func(n []chash.Node) (chash.Placer, error) { return compat.NewNginxConsistent(n) },
		"nginx hash":   func(n []chash.Node) (chash.Placer, error) { return compat.NewNginxHash(n) },
	} {
		p, err := build(hosts)
		require.NoError(t, err, name)
		want, err := build(fewer)
		require.NoError(t, err, name)
		got, err := chash.Derive(p, fewer)
		require.NoError(t, err, name)
		assert.Equal(t, chash.Fingerprint(want), chash.Fingerprint(got), name)
		assert.True(t, samePlacement(want, got), name)
		_, err = chash.Derive(p, nil)
		assert.ErrorIs(t, err, chash.ErrNoNodes, name)
	}
}

// TestSizesCheckedBeforeAllocating: lists whose total size passes the limit
// are refused with ErrTooLarge before anything is allocated, also where
// the total overflows a 32-bit int (on 386, 129 gomemcache nodes of weight
// 2^24 panicked in makeslice and 257 heavy nginx servers ran out of memory).
func TestSizesCheckedBeforeAllocating(t *testing.T) {
	heavy := func(n int, w float64) []chash.Node {
		nodes := conformance.NamedNodes(n, func(i int) string { return fmt.Sprintf("10.0.%d.%d:80", i/250, i%250) })
		for i := range nodes {
			nodes[i].Weight = w
		}
		return nodes
	}
	_, err := compat.NewGomemcache(heavy(129, 1<<24))
	assert.ErrorIs(t, err, chash.ErrTooLarge)
	_, err = compat.NewNginxConsistent(heavy(257, 104857))
	assert.ErrorIs(t, err, chash.ErrTooLarge)
}

// TestEnvoyMaglevBuildBounded: a build whose weights are far apart ends with
// ErrTooLarge within its work bound instead of running for seconds (one
// host at 4e9 among 5,000: refused after a quarter of a second of work; 30 s
// before among more hosts), and the same weights over fewer hosts build.
func TestEnvoyMaglevBuildBounded(t *testing.T) {
	hosts := func(n int) []chash.Node {
		nodes := conformance.NamedNodes(n, func(i int) string { return fmt.Sprintf("h%d", i) })
		for i := range nodes {
			nodes[i].Weight = 1
		}
		nodes[0].Weight = 4e9
		return nodes
	}
	_, err := compat.NewEnvoyMaglev(hosts(5000), 0)
	assert.ErrorIs(t, err, chash.ErrTooLarge)
	g, err := compat.NewEnvoyMaglev(hosts(100), 0)
	require.NoError(t, err)
	assert.Equal(t, compat.EnvoyMaglevTableSize, g.TableSize())
}

// TestLongListsArePrefixes: Caddy, go-redis and Envoy Maglev switch to a
// sorted or bitmap walk past 32 nodes (a list of every one of 4,000 nodes
// cost 418, 173 ms); each list must still be the prefix of the next longer
// one across the switch.
func TestLongListsArePrefixes(t *testing.T) {
	hosts := conformance.NamedNodes(100, func(i int) string { return fmt.Sprintf("10.1.0.%d:80", i) })
	caddy, err := compat.NewCaddy(hosts)
	require.NoError(t, err)
	redis, err := compat.NewGoRedis(hosts)
	require.NoError(t, err)
	maglev, err := compat.NewEnvoyMaglev(hosts, 1009)
	require.NoError(t, err)
	for name, p := range map[string]chash.Placer{"caddy": caddy, "goredis": redis, "envoy maglev": maglev} {
		for _, key := range []string{"a", "user:42", "x:9"} {
			all := p.AppendTopKString(nil, key, 100)
			require.Len(t, all, 100, name)
			for k := 1; k < 100; k++ {
				require.Equal(t, all[:k], p.AppendTopKString(nil, key, k), "%s: top-%d of %q is not a prefix", name, k, key)
			}
			if !testing.Short() && !raceEnabled { // the race detector empties pools at random
				dst := make([]chash.Node, 0, 100)
				assert.Zero(t, testing.AllocsPerRun(20, func() { p.AppendTopKString(dst[:0], key, 100) }), name)
			}
		}
	}
}
