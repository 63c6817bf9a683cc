package compat_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/compat"
	"github.com/keyplace/chash/internal/conformance"
)

// sinkNode keeps the compiler from dropping a benchmark's lookups.
var sinkNode chash.Node

// benchCompat measures Lookup and AppendTopK(3) of p over 13-byte keys.
func benchCompat(b *testing.B, p chash.Placer) {
	_, ss := conformance.BenchKeys(13)
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
			func() (chash.Placer, error) { return compat.NewGoRedis(nodes) },
			func() (chash.Placer, error) { return compat.NewGomemcache(nodes) },
			func() (chash.Placer, error) { return compat.NewGomemcacheList(ids...) },
			func() (chash.Placer, error) { return compat.NewGroupcache(nodes, int(weight)) },
			func() (chash.Placer, error) { return compat.NewNginxConsistent(nodes) },
			func() (chash.Placer, error) { return compat.NewNginxHash(nodes) },
			func() (chash.Placer, error) { return compat.NewGRPCRingHash(nodes, int(weight), 0) },
			func() (chash.Placer, error) { return compat.NewEnvoyRingHash(nodes, 0, int(weight)*64) },
			func() (chash.Placer, error) { return compat.NewEnvoyMaglev(nodes, 7) },
			func() (chash.Placer, error) { return compat.NewCaddy(nodes) },
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
