package benchmarks

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
)

var (
	benchNodeCounts = []int{8, 64, 1000}
	benchKeySizes   = []int{13, 80}
	sinkID          string
	sinkMu          sync.Mutex
)

// built caches placements: some peers take seconds to build at 1,000 nodes
// and every benchmark round would otherwise rebuild them.
var built sync.Map // "name/family/n" -> Impl

func build(b *testing.B, s Subject, n int) Impl {
	skipSlow(b, s, n)
	key := fmt.Sprintf("%s/%s/%d", s.Family, s.Name, n)
	if im, ok := built.Load(key); ok {
		return im.(Impl)
	}
	im, err := s.Build(NodeIDs(n))
	if err != nil {
		b.Fatalf("%s: %v", key, err)
	}
	built.Store(key, im)
	return im
}

// skipSlow skips, with -short, the 1,000-node stathat ring: its build
// takes seconds, as each Add re-sorts the whole ring.
func skipSlow(b *testing.B, s Subject, n int) {
	if testing.Short() && s.Name == "stathat" && n > 64 {
		b.Skip("quadratic build; skipped with -short")
	}
}

// BenchmarkLookup measures every subject's single-owner lookup through the
// same closure call, at 8, 64 and 1,000 nodes with 13- and 80-byte keys.
// Names are Lookup/FAMILY/LIBRARY/nodes=N/key=S.
func BenchmarkLookup(b *testing.B) {
	// Subjects are the innermost loop so that a library and its peers
	// run close together in time, under the same machine load.
	for _, n := range benchNodeCounts {
		for _, size := range benchKeySizes {
			for _, s := range Subjects() {
				name := fmt.Sprintf("%s/%s/nodes=%d/key=%d", s.Family, s.Name, n, size)
				b.Run(name, func(b *testing.B) {
					lookup := build(b, s, n).Lookup
					keys := BenchKeys(size)
					mask := len(keys) - 1
					b.ReportAllocs()
					b.ResetTimer()
					var id string
					for i := 0; i < b.N; i++ {
						id = lookup(keys[i&mask])
					}
					sinkID = id
				})
			}
		}
	}
}

// BenchmarkTopK3 measures the 3-node replica list of every subject that
// has one (chash appends into a reused buffer; peers return a new slice,
// as their APIs require).
func BenchmarkTopK3(b *testing.B) {
	for _, n := range benchNodeCounts {
		for _, size := range benchKeySizes {
			for _, s := range Subjects() {
				if s.Family == "hash" {
					continue
				}
				name := fmt.Sprintf("%s/%s/nodes=%d/key=%d", s.Family, s.Name, n, size)
				b.Run(name, func(b *testing.B) {
					topK := build(b, s, n).TopK
					if topK == nil {
						b.Skip("no replica list")
					}
					keys := BenchKeys(size)
					mask := len(keys) - 1
					b.ReportAllocs()
					b.ResetTimer()
					var id string
					for i := 0; i < b.N; i++ {
						id = topK(keys[i&mask], 3)
					}
					sinkID = id
				})
			}
		}
	}
}

// BenchmarkBuild measures building each subject from a list of node
// names, with bytes allocated.
func BenchmarkBuild(b *testing.B) {
	for _, n := range []int{64, 1000} {
		for _, s := range Subjects() {
			if s.Family == "hash" {
				continue
			}
			b.Run(fmt.Sprintf("%s/%s/nodes=%d", s.Family, s.Name, n), func(b *testing.B) {
				skipSlow(b, s, n)
				ids := NodeIDs(n)
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					if _, err := s.Build(ids); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkParallelLookup runs lookups from every P at once, at 64 nodes
// with 13-byte keys: a library that locks on every lookup shows it here.
// ns/op is wall time per lookup over all Ps.
func BenchmarkParallelLookup(b *testing.B) {
	for _, s := range Subjects() {
		b.Run(fmt.Sprintf("%s/%s/nodes=64/key=13", s.Family, s.Name), func(b *testing.B) {
			lookup := build(b, s, 64).Lookup
			keys := BenchKeys(13)
			mask := len(keys) - 1
			var seed atomic.Uint32
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				i := int(seed.Add(7919))
				var id string
				for pb.Next() {
					id = lookup(keys[i&mask])
					i++
				}
				sinkMu.Lock()
				sinkID = id
				sinkMu.Unlock()
			})
		})
	}
}
