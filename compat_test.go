package chash_test

import (
	"fmt"
	"testing"

	"github.com/keyplace/chash"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// checkCompat holds a compatibility placer to the Placer contract: lookups
// that do not allocate, AppendTopK of distinct nodes led by Lookup's, and
// Nodes and Len that agree.
func checkCompat(t *testing.T, p chash.Placer) {
	t.Helper()
	require.Equal(t, len(p.Nodes()), p.Len())
	dst := make([]chash.Node, 0, p.Len()+1)
	for i := 0; i < 2000; i++ {
		key := fmt.Sprintf("prop-%d", i)
		first := p.LookupString(key)
		require.Equal(t, first, p.Lookup([]byte(key)))
		for _, k := range []int{1, 2, p.Len(), p.Len() + 1} {
			top := p.AppendTopKString(dst[:0], key, k)
			require.Len(t, top, min(k, p.Len()))
			require.Equal(t, first, top[0])
			seen := map[string]bool{}
			for _, n := range top {
				require.False(t, seen[n.ID], "key %q k %d: %s twice", key, k, n.ID)
				seen[n.ID] = true
			}
		}
	}
	assert.Empty(t, p.AppendTopKString(nil, "x", 0))
	if testing.CoverMode() != "" {
		return
	}
	key, skey := []byte("user:1234567"), "user:1234567"
	allocs := testing.AllocsPerRun(200, func() {
		p.Lookup(key)
		p.LookupString(skey)
		p.AppendTopK(dst[:0], key, 3)
		p.AppendTopKString(dst[:0], skey, p.Len())
	})
	assert.Zero(t, allocs, "lookups allocate")
}

// benchCompat measures Lookup and AppendTopK(3) of p over 13-byte keys.
func benchCompat(b *testing.B, p chash.Placer) {
	_, ss := benchKeys(13)
	b.Run("lookup", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			sinkNode = p.LookupString(ss[i&(len(ss)-1)])
		}
	})
	b.Run("top3", func(b *testing.B) {
		b.ReportAllocs()
		dst := make([]chash.Node, 0, 3)
		for i := 0; i < b.N; i++ {
			dst = p.AppendTopKString(dst[:0], ss[i&(len(ss)-1)], 3)
		}
	})
}

// compatNodes returns n nodes named by id(i) for i from 1.
func compatNodes(n int, id func(i int) string) []chash.Node {
	out := make([]chash.Node, n)
	for i := range out {
		out[i] = chash.Node{ID: id(i + 1)}
	}
	return out
}
