package benchmarks

import (
	"flag"
	"fmt"
	"math"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/keyplace/chash"
)

// TestFamily measures the family table at 1,000 nodes with few samples:
// every placer has the members it should, a middle member leaving moves
// no key between the others for a stateful algorithm and most keys for a
// positional one (which must rebuild), and every placement is about as
// even as chance.
func TestFamily(t *testing.T) {
	cfg := FamilyConfig{Rounds: 3, Batch: 256, BalanceKeys: 200_000, MoveKeys: 50_000}
	for _, pct := range FamilyRemoved {
		rows, err := MeasureFamily(1000, pct, cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			a, err := chash.ParseAlgorithm(r.Algorithm)
			if err != nil {
				t.Fatal(err)
			}
			if want := 1000 - 10*pct; r.Members != want {
				t.Errorf("%s, %d%% removed: %d members, want %d", r.Algorithm, pct, r.Members, want)
			}
			if a.Stateful() && r.Collateral != 0 {
				t.Errorf("%s, %d%% removed: %.4f of keys moved between members that stay", r.Algorithm, pct, r.Collateral)
			}
			if !a.Stateful() && r.Collateral < 0.3 {
				t.Errorf("%s, %d%% removed: a rebuild without a middle member moved only %.4f between the others", r.Algorithm, pct, r.Collateral)
			}
			if r.CV > 1.5*r.NoiseCV || r.PeakMean < 1 || !(r.LookupNs > 0) || !(r.Bytes > 0) {
				t.Errorf("%s, %d%% removed: %+v", r.Algorithm, pct, r)
			}
			t.Logf("%s %d%%: %.1f ns (%.2f× hash), %.0f B, moved %.4f%%, collateral %.4f%%, peak/mean %.3f, CV %.4f (noise %.4f)",
				r.Algorithm, pct, r.LookupNs, r.HashRatio, r.Bytes, 100*r.Moved, 100*r.Collateral, r.PeakMean, r.CV, r.NoiseCV)
		}
	}
}

var familyBenchNodes = flag.String("family-nodes", "1000", "fleet sizes of BenchmarkFamily, comma-separated (cmd/family measures 10^3 to 10^6)")

// BenchmarkFamily times LookupString of each family algorithm at each
// fleet size and share removed (FamilyPlacer), 13-byte keys through the
// Placer interface, and reports x-hash, its quotient by the bare hash of
// the same keys timed at the start of the benchmark (the fastest of five
// passes). cmd/family measures
// the same lookups interleaved, with memory, movement and balance, for
// FAMILY.md; this benchmark keeps them running in CI and under benchstat.
func BenchmarkFamily(b *testing.B) {
	keys := BenchKeys(13, BenchKeyCount)
	hashNs := math.Inf(1) // the fastest of 5 passes of 1<<20 hashes
	for range 5 {
		start, sum := time.Now(), 0
		for i := range 1 << 20 {
			sum += int(xxhash.Sum64String(keys.At(i)) & 7)
		}
		runtime.KeepAlive(sum) // the timed work is not optimised away
		hashNs = min(hashNs, float64(time.Since(start).Nanoseconds())/(1<<20))
	}
	for _, f := range strings.Split(*familyBenchNodes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			b.Fatalf("-family-nodes: %v", err)
		}
		for _, a := range FamilyAlgorithms {
			for _, pct := range FamilyRemoved {
				b.Run(fmt.Sprintf("%v/nodes=%d/removed=%d", a, n, pct), func(b *testing.B) {
					p, err := FamilyPlacer(a, n, pct)
					if err != nil {
						b.Fatal(err)
					}
					b.ReportAllocs()
					b.ResetTimer()
					sum := 0
					for i := range b.N {
						sum += len(p.LookupString(keys.At(i)).ID)
					}
					runtime.KeepAlive(sum) // the timed work is not optimised away
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/hashNs, "x-hash")
				})
			}
		}
	}
}
