package chash_test

import (
	"fmt"
	"reflect"
	"strings"
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

// FuzzCompat builds every compatibility placer from arbitrary server
// lists: each either fails with an error or places every key on a member.
func FuzzCompat(f *testing.F) {
	f.Add("10.0.0.1:11211,10.0.0.2:11211,10.0.0.3:11211", uint8(2), "key")
	f.Add("a,a,b", uint8(0), "{tag}x")
	f.Add(",unix:/x.sock", uint8(5), "")
	f.Fuzz(func(t *testing.T, list string, weight uint8, key string) {
		ids := strings.Split(list, ",")
		if len(ids) > 64 {
			ids = ids[:64]
		}
		nodes := make([]chash.Node, len(ids))
		for i, id := range ids {
			nodes[i] = chash.Node{ID: id}
		}
		if len(nodes) > 0 && weight > 0 {
			nodes[0].Weight = float64(weight % 8)
		}
		builds := []func() (chash.Placer, error){
			func() (chash.Placer, error) { return chash.NewGoRedis(nodes) },
			func() (chash.Placer, error) { return chash.NewGomemcache(nodes) },
			func() (chash.Placer, error) { return chash.NewGomemcacheList(ids...) },
			func() (chash.Placer, error) { return chash.NewGroupcache(nodes, int(weight)) },
			func() (chash.Placer, error) { return chash.NewNginxConsistent(nodes) },
			func() (chash.Placer, error) { return chash.NewNginxHash(nodes) },
			func() (chash.Placer, error) { return chash.NewGRPCRingHash(nodes, int(weight), 0) },
			func() (chash.Placer, error) { return chash.NewEnvoyRingHash(nodes, 0, int(weight)*64) },
			func() (chash.Placer, error) { return chash.NewEnvoyMaglev(nodes, 7) },
			func() (chash.Placer, error) { return chash.NewCaddy(nodes) },
		}
		for i, build := range builds {
			p, err := build()
			if err != nil {
				if p != nil && !reflect.ValueOf(p).IsNil() {
					t.Fatalf("constructor %d returned a placer and %v", i, err)
				}
				continue
			}
			members := map[string]bool{}
			for _, n := range p.Nodes() {
				members[n.ID] = true
			}
			if !members[p.LookupString(key).ID] {
				t.Fatalf("constructor %d: %q placed on a non-member", i, key)
			}
			if top := p.AppendTopKString(nil, key, 3); len(top) != min(3, p.Len()) {
				t.Fatalf("constructor %d: top-3 of %d nodes has %d", i, p.Len(), len(top))
			}
		}
	})
}
