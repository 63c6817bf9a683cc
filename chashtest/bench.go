package chashtest

import (
	"testing"
	"time"

	"github.com/keyplace/chash"
)

// Benchmark sizes and the default bound of TopKAll.
const (
	benchNodes    = 4000
	benchRounds   = 3  // calls of each list per key, of which TopKAll's ratio takes the fastest
	maxTopKRatio  = 50 // default Spec.MaxTopKRatio
	benchKeyCount = 1024
)

// BenchmarkPlacer measures the placer s describes at 4,000 members
// (Spec.Nodes(4000)), as sub-benchmarks:
//
//   - Lookup: LookupString of a key.
//   - TopK3: AppendTopKString of 3 into a reused slice.
//   - TopKAll: AppendTopKString of every member. It also times a plain
//     chash.Ring (160 points a node) of the same members over the same
//     keys, alternating with the placer in the same run so that a loaded
//     machine slows both alike, and reports the ratio of the fastest of
//     three calls of each, per key, as the metric "x-ring". A list of every member costs the ring O(points), and any
//     placer O(n log n) at most; one that scans its list for each
//     candidate, O(n·k), is hundreds of times the ring at this size. The
//     benchmark fails when the ratio exceeds Spec.MaxTopKRatio (zero
//     means 50): a bound far from both, so that noise does not trip it,
//     even with -benchtime 1x.
//
// Every sub-benchmark reports allocations. Only Spec.New, Spec.Nodes and
// Spec.MaxTopKRatio are read.
func BenchmarkPlacer(b *testing.B, s Spec) {
	b.Helper()
	if s.New == nil {
		b.Fatal("chashtest: Spec.New is nil")
	}
	if s.Nodes == nil {
		s.Nodes = Nodes
	}
	nodes := s.Nodes(benchNodes)
	p, err := s.New(nodes)
	if err != nil || isNil(p) {
		b.Fatalf("New(%d nodes): %v", len(nodes), err)
	}
	keys := Keys(benchKeyCount)
	b.Run("Lookup", func(b *testing.B) {
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			p.LookupString(keys[i%len(keys)])
		}
	})
	b.Run("TopK3", func(b *testing.B) {
		b.ReportAllocs()
		dst := make([]chash.Node, 0, 3)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			dst = p.AppendTopKString(dst[:0], keys[i%len(keys)], 3)
		}
	})
	b.Run("TopKAll", func(b *testing.B) {
		ring, err := chash.NewRing(nodes)
		if err != nil {
			b.Fatalf("NewRing(%d nodes): %v", len(nodes), err)
		}
		bound := s.MaxTopKRatio
		if bound == 0 {
			bound = maxTopKRatio
		}
		dst := make([]chash.Node, 0, len(nodes))
		all := func(q chash.Placer, key string) time.Duration {
			t0 := time.Now()
			dst = q.AppendTopKString(dst[:0], key, len(nodes))
			return time.Since(t0)
		}
		// One warm-up call each: pools, caches, lazily built tables.
		all(p, keys[0])
		all(ring, keys[0])
		b.ReportAllocs()
		b.ResetTimer()
		// The ratio compares the fastest of benchRounds calls of each per
		// key, so that a pause (a collection, a preempted thread) in one
		// call does not count against either.
		var own, base time.Duration
		fastest := func(q chash.Placer, key string) time.Duration {
			d := all(q, key)
			for range benchRounds - 1 {
				d = min(d, all(q, key))
			}
			return d
		}
		for i := 0; i < b.N; i++ {
			key := keys[i%len(keys)]
			all(p, key)
			b.StopTimer()
			if len(dst) != len(nodes) {
				b.Fatalf("AppendTopKString(%q, k = %d) appended %d nodes", key, len(nodes), len(dst))
			}
			own += fastest(p, key)
			base += fastest(ring, key)
			b.StartTimer()
		}
		ratio := float64(own) / float64(max(base, 1))
		b.ReportMetric(ratio, "x-ring")
		if ratio > bound {
			b.Errorf("a list of all %d members took %.0fx a plain ring's (bound %.0fx): a top-k of every member must cost O(n log n) at most",
				len(nodes), ratio, bound)
		}
	})
}
