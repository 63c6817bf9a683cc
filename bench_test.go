package chash_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/keyplace/chash"
	"github.com/keyplace/chash/internal/conformance"
)

// benchKeys returns 1<<14 distinct keys of exactly size bytes: enough that
// a lookup cannot be served by a cache holding one key's path.
func benchKeys(size int) ([][]byte, []string) {
	bs := make([][]byte, 1<<14)
	ss := make([]string, len(bs))
	for i := range bs {
		k := fmt.Sprintf("key:%0*d", size-4, i*7919)
		bs[i], ss[i] = []byte(k), k
	}
	return bs, ss
}

var (
	benchNodeCounts = []int{8, 64, 1000}
	benchKeySizes   = []int{13, 80}
	sink            uint64
	sinkNode        chash.Node
)

// BenchmarkHash is the floor every lookup is measured against: the default
// hash of the same keys.
func BenchmarkHash(b *testing.B) {
	for _, size := range benchKeySizes {
		bs, ss := benchKeys(size)
		b.Run(fmt.Sprintf("key=%d/bytes", size), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				sink += xxhash.Sum64(bs[i&(len(bs)-1)])
			}
		})
		b.Run(fmt.Sprintf("key=%d/string", size), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				sink += xxhash.Sum64String(ss[i&(len(ss)-1)])
			}
		})
	}
}

// BenchmarkLookup measures every lookup path of every algorithm at 8, 64
// and 1,000 nodes with 13- and 80-byte keys.
func BenchmarkLookup(b *testing.B) {
	for _, a := range chash.Algorithms() {
		for _, n := range benchNodeCounts {
			p, err := chash.New(a, conformance.Nodes(n))
			if errors.Is(err, chash.ErrUnknownAlgorithm) {
				continue
			}
			if err != nil {
				b.Fatal(err)
			}
			for _, size := range benchKeySizes {
				benchPaths(b, fmt.Sprintf("%v/nodes=%d/key=%d", a, n, size), p, size)
			}
		}
	}
}

func benchPaths(b *testing.B, name string, p chash.Placer, size int) {
	bs, ss := benchKeys(size)
	mask := len(bs) - 1
	b.Run(name+"/Lookup", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			sinkNode = p.Lookup(bs[i&mask])
		}
	})
	b.Run(name+"/LookupString", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			sinkNode = p.LookupString(ss[i&mask])
		}
	})
	b.Run(name+"/AppendTopK3", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]chash.Node, 0, 3)
		for i := 0; i < b.N; i++ {
			buf = p.AppendTopK(buf[:0], bs[i&mask], 3)
		}
	})
	b.Run(name+"/AppendTopKString3", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]chash.Node, 0, 3)
		for i := 0; i < b.N; i++ {
			buf = p.AppendTopKString(buf[:0], ss[i&mask], 3)
		}
	})
}

// BenchmarkBuild measures constructing each placer, with bytes allocated.
func BenchmarkBuild(b *testing.B) {
	for _, a := range chash.Algorithms() {
		for _, n := range []int{64, 1000} {
			nodes := conformance.Nodes(n)
			if _, err := chash.New(a, nodes); errors.Is(err, chash.ErrUnknownAlgorithm) {
				continue
			}
			b.Run(fmt.Sprintf("%v/nodes=%d", a, n), func(b *testing.B) {
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					if _, err := chash.New(a, nodes); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
