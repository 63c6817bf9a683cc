package benchmarks

import (
	"fmt"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/keyplace/chash"
)

var sinkNode chash.Node

// BenchmarkScale is the scaling report's data: for every chash algorithm
// at 8 to 100,000 nodes (to 1,000 with -short), lookup and top-3 through
// the Placer interface with 13- and 80-byte keys, and build time, bytes
// allocated while building and bytes retained by the built placer
// (retained-B). Names are Scale/ALGORITHM/nodes=N/{Lookup,TopK3}/key=S and
// Scale/ALGORITHM/nodes=N/Build; Scale/hash/nodes=N/key=S is the bare hash,
// measured beside each membership. A
// membership an algorithm cannot be built at prints a "scale-stop" line
// with the reason instead.
func BenchmarkScale(b *testing.B) {
	counts := ScaleNodeCounts
	if testing.Short() {
		counts = counts[:3]
	}
	// Node counts outermost, so that the algorithms at one membership and
	// the hash they are compared with run close together in time.
	for _, n := range counts {
		for _, size := range ScaleKeySizes {
			keys := BenchKeys(size, *keyCount)
			b.Run(fmt.Sprintf("hash/nodes=%d/key=%d", n, size), func(b *testing.B) {
				b.ReportAllocs()
				var s uint64
				for i := 0; i < b.N; i++ {
					s += xxhash.Sum64String(keys.At(i))
				}
				sinkID = hashNames[s&7]
			})
		}
		for _, a := range ScaleAlgorithms() {
			scaleOne(b, a, n)
		}
	}
}

func scaleOne(b *testing.B, a chash.Algorithm, n int) {
	nodes := nodesOf(NodeIDs(n))
	opts := ScaleOptions(a, n)
	build := func() (chash.Placer, error) { return chash.New(a, nodes, opts...) }
	// The placer is built by the first sub-benchmark -bench selects, so
	// that a filtered run builds only what it measures.
	var (
		p        chash.Placer
		retained float64
		err      error
		built    bool
	)
	get := func(b *testing.B) chash.Placer {
		if !built {
			built = true
			p, retained, err = Retained(max(1, 2000/n), build)
			if err != nil {
				fmt.Printf("scale-stop\t%v\t%d\t%v\n", a, n, err)
			}
		}
		if err != nil {
			b.Skip(err)
		}
		return p
	}
	prefix := fmt.Sprintf("%v/nodes=%d", a, n)
	for _, size := range ScaleKeySizes {
		keys := BenchKeys(size, *keyCount)
		b.Run(fmt.Sprintf("%s/Lookup/key=%d", prefix, size), func(b *testing.B) {
			p := get(b)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				sinkNode = p.LookupString(keys.At(i))
			}
		})
		b.Run(fmt.Sprintf("%s/TopK3/key=%d", prefix, size), func(b *testing.B) {
			p := get(b)
			buf := make([]chash.Node, 0, 3)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				buf = p.AppendTopKString(buf[:0], keys.At(i), 3)
			}
			sinkNode = buf[0]
		})
	}
	b.Run(prefix+"/Build", func(b *testing.B) {
		get(b)
		p = nil // let the lookups' placer go before building more
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if _, err := build(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(retained, "retained-B")
	})
}
