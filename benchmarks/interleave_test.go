package benchmarks

import (
	"flag"
	"fmt"
	"slices"
	"testing"
	"time"
)

var (
	interleaveRounds = flag.Int("rounds", 100, "rounds of BenchmarkInterleaved (lookups; builds take a fifth as many)")
	interleaveBatch  = flag.Int("batch", 4096, "lookups a timed interval of BenchmarkInterleaved makes")
)

// BenchmarkInterleaved measures chash against each peer of its family in
// alternating short intervals, for lookups at 8, 64 and 1,000 nodes with
// 13- and 80-byte keys and for builds at 64 and 1,000 nodes: round after
// round, one interval of chash and one of the peer, in alternating order,
// each a batch of lookups (by default 4,096, a fraction of a millisecond)
// or one build. On a shared machine an interval that the scheduler
// preempts or that other work slows is longer, never shorter, so the
// fastest intervals are the figures least touched by the load, and a
// ratio of the two fastest is the comparison a quiet machine would give;
// BenchmarkLookup's passes of 300 ms are rarely run without a preemption
// when other processes are busy. Lookups continue through the keys of
// BenchKeys from one interval to the next, so the cycle the predictor
// would have to learn is as long as in BenchmarkLookup.
//
// Each sub-benchmark runs its rounds once whatever b.N is (run it with
// -benchtime 1x) and reports chash-ns and peer-ns, each subject's fastest
// interval per operation, ratio-min, their quotient, and ratio-med, the
// median over rounds of the ratio within a round. Names are
// Interleaved/{Lookup,Build}/FAMILY/PEER/nodes=N[/key=S].
func BenchmarkInterleaved(b *testing.B) {
	var fams []string
	ours := map[string]Subject{}
	peers := map[string][]Subject{}
	for _, s := range Subjects() {
		switch {
		case s.Family == "hash":
		case s.Ours:
			ours[s.Family] = s
			fams = append(fams, s.Family)
		default:
			peers[s.Family] = append(peers[s.Family], s)
		}
	}
	for _, n := range benchNodeCounts {
		for _, size := range benchKeySizes {
			keys := BenchKeys(size, *keyCount)
			for _, fam := range fams {
				for _, p := range peers[fam] {
					b.Run(fmt.Sprintf("Lookup/%s/%s/nodes=%d/key=%d", fam, p.Name, n, size), func(b *testing.B) {
						a, c := build(b, ours[fam], n).Lookup, build(b, p, n).Lookup
						next := 0
						interleave(b, *interleaveRounds, *interleaveBatch, func(f func(string) string) {
							var id string
							for i := range *interleaveBatch {
								id = f(keys.At(next + i))
							}
							sinkID = id
						}, a, c, &next)
					})
				}
			}
		}
	}
	for _, n := range []int{64, 1000} {
		ids := NodeIDs(n)
		for _, fam := range fams {
			for _, p := range peers[fam] {
				b.Run(fmt.Sprintf("Build/%s/%s/nodes=%d", fam, p.Name, n), func(b *testing.B) {
					skipSlow(b, p, n)
					if p.Name == "stathat" && n > 64 {
						b.Skip("quadratic build: seconds a round")
					}
					build := func(s Subject) func(string) string {
						return func(string) string {
							if _, err := s.Build(ids); err != nil {
								b.Fatal(err)
							}
							return ""
						}
					}
					interleave(b, max(1, *interleaveRounds/5), 1, func(f func(string) string) { f("") },
						build(ours[fam]), build(p), nil)
				})
			}
		}
	}
}

// interleave runs rounds of run(a) and run(c), timed one interval each, in
// alternating order, and reports the figures BenchmarkInterleaved
// describes; ops is the operations an interval makes. next, if not nil,
// moves on by ops after each interval.
func interleave(b *testing.B, rounds, ops int, run func(func(string) string), a, c func(string) string, next *int) {
	ta, tc := make([]float64, rounds), make([]float64, rounds)
	timed := func(f func(string) string) float64 {
		start := time.Now()
		run(f)
		d := time.Since(start)
		if next != nil {
			*next += ops
		}
		return float64(d.Nanoseconds()) / float64(ops)
	}
	run(a) // warm both up: first touches of tables and keys
	run(c)
	b.ResetTimer()
	for range b.N {
		for r := range rounds {
			if r%2 == 0 {
				ta[r], tc[r] = timed(a), timed(c)
			} else {
				tc[r], ta[r] = timed(c), timed(a)
			}
		}
	}
	ratios := make([]float64, rounds)
	for r := range ratios {
		ratios[r] = ta[r] / tc[r]
	}
	slices.Sort(ratios)
	fa, fc := slices.Min(ta), slices.Min(tc)
	b.ReportMetric(fa, "chash-ns")
	b.ReportMetric(fc, "peer-ns")
	b.ReportMetric(fa/fc, "ratio-min")
	b.ReportMetric(ratios[rounds/2], "ratio-med")
}
