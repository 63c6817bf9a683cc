package chash_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/keyplace/chash"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// craftedHasher stands for IDs an attacker chose: xxhash64 is invertible,
// so an ID with any chosen hash is cheap to make. "evil-i" hashes to
// base + i·step; everything else hashes as xxhash64.
type craftedHasher struct{ base, step uint64 }

func (c craftedHasher) Sum64(b []byte) uint64 { return c.Sum64String(string(b)) }

func (c craftedHasher) Sum64String(s string) uint64 {
	if rest, ok := strings.CutPrefix(s, "evil-"); ok {
		if i, err := strconv.Atoi(rest); err == nil {
			return c.base + uint64(i)*c.step
		}
	}
	return xxhash.Sum64String(s)
}

func evilNodes(n int) []chash.Node {
	out := make([]chash.Node, n)
	for i := range out {
		out[i] = chash.Node{ID: fmt.Sprintf("evil-%d", i)}
	}
	return out
}

// 8,000 IDs with one hash used to make a Maglev build O(N·M) (seconds);
// nodes that share a permutation now share one walk and the table is
// built in O(M), as if they were one node taking many turns.
func TestMaglevEqualHashIDsBuildFast(t *testing.T) {
	h := chash.WithHasher(craftedHasher{base: 12345})
	g, err := chash.NewMaglev(evilNodes(8000), h)
	require.NoError(t, err)
	entries := g.Entries()
	lo, hi := entries[0], entries[0]
	for _, e := range entries {
		lo, hi = min(lo, e), max(hi, e)
	}
	assert.LessOrEqual(t, hi-lo, 1, "nodes taking turns on one list still get equal entry counts")
}

// Nodes whose IDs hash alike are not independent: Shares and Diff of a
// rendezvous placer must not report the closed form as exact.
func TestRendezvousCollidingIDsAreNotExact(t *testing.T) {
	h := chash.WithHasher(craftedHasher{base: 99})
	nodes := append(evilNodes(1), chash.Node{ID: "evil-00"}, chash.Node{ID: "honest"})
	r, err := chash.NewRendezvous(nodes, h)
	require.NoError(t, err)
	o, err := chash.Shares(r)
	require.NoError(t, err)
	assert.False(t, o.Exact, "colliding IDs: shares are sampled")
	for _, s := range o.Shares {
		if s.Node.ID == "evil-00" {
			assert.Zero(t, s.Fraction, "the higher of two colliding IDs never owns a key")
		}
	}
	q, err := r.Add(chash.Node{ID: "other"})
	require.NoError(t, err)
	m, err := chash.Diff(r, q)
	require.NoError(t, err)
	assert.False(t, m.Exact)
}

// 1,000 IDs whose hashes differ by multiples of the ring's point stride
// share most points. The ring stays correct (the clump's points tie, and
// the lower ID owns each), lookups stay O(log P) through the clump, and
// Shares stays exact. A secret seed (XXHashSeed) is the defence: the
// attacker then cannot choose hashes.
func TestRingCraftedClump(t *testing.T) {
	const phi = 0x9e3779b97f4a7c15
	r, err := chash.NewRing(evilNodes(1000), chash.WithHasher(craftedHasher{base: 7, step: phi}))
	require.NoError(t, err)
	o, err := chash.Shares(r)
	require.NoError(t, err)
	require.True(t, o.Exact)
	owners := 0
	total := 0.0
	for _, s := range o.Shares {
		total += s.Fraction
		if s.Fraction > 0 {
			owners++
		}
	}
	assert.InDelta(t, 1, total, 1e-9)
	assert.Less(t, owners, 1000, "crafted IDs do starve nodes without a secret seed")
	for _, k := range []string{"a", "b", "c", "user:1"} {
		n := r.LookupString(k)
		assert.NotEmpty(t, n.ID)
		assert.Equal(t, n, r.AppendTopKString(nil, k, 3)[0])
	}
}

func BenchmarkRingCraftedClump(b *testing.B) {
	const phi = 0x9e3779b97f4a7c15
	r, err := chash.NewRing(evilNodes(1000), chash.WithHasher(craftedHasher{base: 7, step: phi}))
	require.NoError(b, err)
	keys := make([]string, 1024)
	for i := range keys {
		keys[i] = fmt.Sprintf("user:%d", i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_ = r.LookupString(keys[i%len(keys)])
	}
}
