package benchmarks

import (
	"flag"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/keyplace/chash"
)

var (
	benchNodeCounts = []int{8, 64, 1000}
	benchKeySizes   = []int{13, 80}
	sinkID          string
	sinkMu          sync.Mutex
	// keyCount is how many distinct keys the lookup benchmarks cycle
	// through: -keys 16384 replays the shorter cycle of earlier versions,
	// which a branch predictor can learn (see BenchKeyCount).
	keyCount = flag.Int("keys", BenchKeyCount, "distinct keys the lookup benchmarks cycle through (a power of two)")
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
					keys := BenchKeys(size, *keyCount)
					b.ReportAllocs()
					b.ResetTimer()
					var id string
					for i := 0; i < b.N; i++ {
						id = lookup(keys.At(i))
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
					keys := BenchKeys(size, *keyCount)
					b.ReportAllocs()
					b.ResetTimer()
					var id string
					for i := 0; i < b.N; i++ {
						id = topK(keys.At(i), 3)
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
			keys := BenchKeys(13, *keyCount)
			var seed atomic.Uint32
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				i := int(seed.Add(7919))
				var id string
				for pb.Next() {
					id = lookup(keys.At(i))
					i++
				}
				sinkMu.Lock()
				sinkID = id
				sinkMu.Unlock()
			})
		})
	}
}

// BenchmarkLookupForm measures the two forms of a chash lookup that
// returns one node, for the algorithms that have both: LookupString, whose
// Node (five words) goes through memory even when only its ID is read, and
// LookupIndexString, an index into the caller's own per-node slice (here
// the IDs), which is what go-jump returns. Names are
// LookupForm/FAMILY/{node,index}/nodes=N/key=S; the peers' figures are
// BenchmarkLookup's.
func BenchmarkLookupForm(b *testing.B) {
	type indexer interface {
		LookupIndexString(key string) int
		Nodes() []chash.Node
	}
	for _, n := range benchNodeCounts {
		for _, size := range benchKeySizes {
			for _, a := range []chash.Algorithm{chash.AlgorithmRing, chash.AlgorithmRendezvous, chash.AlgorithmJump} {
				p, err := chash.New(a, nodesOf(NodeIDs(n)))
				if err != nil {
					b.Fatal(err)
				}
				x, ok := p.(indexer)
				if !ok {
					b.Fatalf("%v has no LookupIndexString", a)
				}
				ids := make([]string, n)
				for i, node := range x.Nodes() {
					ids[i] = node.ID
				}
				forms := []struct {
					name   string
					lookup func(string) string
				}{
					{"node", directLookup(p)},
					{"index", func(key string) string { return ids[x.LookupIndexString(key)] }},
				}
				for _, f := range forms {
					b.Run(fmt.Sprintf("%v/%s/nodes=%d/key=%d", a, f.name, n, size), func(b *testing.B) {
						keys := BenchKeys(size, *keyCount)
						lookup := f.lookup
						b.ReportAllocs()
						b.ResetTimer()
						var id string
						for i := 0; i < b.N; i++ {
							id = lookup(keys.At(i))
						}
						sinkID = id
					})
				}
			}
		}
	}
}
