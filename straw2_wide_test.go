package chash

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// setWide sets wide for the rest of the test, which it skips if the
// kernels cannot run on this CPU.
func setWide(t testing.TB, on bool) {
	if on && !haveKernels {
		t.Skip("no AVX-512 on this CPU")
	}
	old := wide
	wide = on
	t.Cleanup(func() { wide = old })
}

// wideCases returns distinct seeds for n nodes, and keys to rank them
// for: random ones, and one equal to a seed, whose score for that node is
// 0, the value that marks an empty lane slot.
func wideCases(rng *rand.Rand, n int) ([]uint64, []uint64) {
	seen := make(map[uint64]bool, n)
	seeds := make([]uint64, 0, n)
	for len(seeds) < n {
		if s := rng.Uint64(); !seen[s] {
			seen[s] = true
			seeds = append(seeds, s)
		}
	}
	keys := []uint64{seeds[0], seeds[n-1], seeds[n/2], 0}
	for range 20 {
		keys = append(keys, rng.Uint64())
	}
	return seeds, keys
}

// TestWideIsScalar checks the wide path (the kernels and the merging of
// their chunks) against the scalar loops, for the best node and the best
// one, two and three, at every remainder mod 8, around movesFirst, and
// across a kernel call's chunk of nodes. Where there is no assembly, the
// kernels are their Go models; TestKernelsAreTheModels ties the two.
func TestWideIsScalar(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	counts := []int{63, 64, 65, 100, 1000, 1003, wideChunk, wideChunk + 8, wideChunk + 13, 2*wideChunk + 5}
	for n := wideMin; n <= 40; n++ {
		counts = append(counts, n)
	}
	for _, n := range counts {
		seeds, keys := wideCases(rng, n)
		s := straw2{seeds: seeds}
		nodes := make([]Node, n)
		for i := range nodes {
			nodes[i] = Node{ID: fmt.Sprint(i)}
		}
		for _, h := range keys {
			var best [2]int
			var lists [2][4][]Node
			for pass, on := range []bool{false, true} {
				setWide(t, on)
				best[pass] = s.best(h)
				for k := 1; k <= 3; k++ {
					lists[pass][k] = s.appendFew(nil, nodes, h, k, -1)
				}
			}
			require.Equal(t, best[0], best[1], "n=%d h=%#x", n, h)
			require.Equal(t, lists[0], lists[1], "n=%d h=%#x", n, h)
		}
	}
}

// TestKernelsAreTheModels checks the kernels' whole state, lane by lane,
// against their Go models, fresh and resumed, where there is assembly.
func TestKernelsAreTheModels(t *testing.T) {
	if !asmKernels || !haveKernels {
		t.Skip("the kernels are their models here")
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{0, 1, 5, 8, 13, 16, 24, 64, 800, 803} {
		seeds, keys := wideCases(rng, max(n, 8))
		seeds = seeds[:n]
		for _, h := range keys {
			var a, b wideBest
			var c, d wideTop3
			for _, resume := range []bool{false, true} {
				m1, i1 := best8(h, seeds, &a, resume)
				m2, i2 := best8Go(h, seeds, &b, resume)
				require.Equal(t, b, a, "best8, n=%d resume=%v", n, resume)
				if n > 0 {
					require.Equal(t, [2]uint64{m2, i2}, [2]uint64{m1, i1}, "best8, n=%d resume=%v", n, resume)
				}
				j1, j2, j3 := top3x8(h, seeds, &c, resume)
				k1, k2, k3 := top3x8Go(h, seeds, &d, resume)
				if n >= 3 {
					require.Equal(t, [3]uint64{k1, k2, k3}, [3]uint64{j1, j2, j3}, "top3x8, n=%d resume=%v", n, resume)
				}
				if !resume {
					// Without st: the same results.
					m3, i3 := best8(h, seeds, nil, false)
					l1, l2, l3 := top3x8(h, seeds, nil, false)
					if n > 0 {
						require.Equal(t, [2]uint64{m1, i1}, [2]uint64{m3, i3}, "best8 without st, n=%d", n)
					}
					// With either multiply for a few nodes (mulChains's choice).
					was := vpmullqFast
					for _, fast := range []uint8{0, 1} {
						vpmullqFast = fast
						m4, i4 := best8(h, seeds, nil, false)
						if n > 0 {
							require.Equal(t, [2]uint64{m1, i1}, [2]uint64{m4, i4}, "best8 without st, n=%d, vpmullqFast=%d", n, fast)
						}
					}
					vpmullqFast = was
					if n >= 3 {
						require.Equal(t, [3]uint64{j1, j2, j3}, [3]uint64{l1, l2, l3}, "top3x8 without st, n=%d", n)
					}
				}
				require.Equal(t, d, c, "top3x8, n=%d resume=%v", n, resume)
			}
		}
	}
}

// BenchmarkWide compares the wide and scalar rankings in one run.
func BenchmarkWide(b *testing.B) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{8, 12, 16, 24, 64, 1000} {
		seeds, _ := wideCases(rng, n)
		s := straw2{seeds: seeds}
		nodes := make([]Node, n)
		dst := make([]Node, 0, 3)
		for _, on := range []bool{false, true} {
			path := map[bool]string{false: "scalar", true: "wide"}[on]
			b.Run(fmt.Sprintf("best/nodes=%d/%s", n, path), func(b *testing.B) {
				setWide(b, on)
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					sinkInt = s.best(uint64(i) * 0x9e3779b97f4a7c15)
				}
			})
			b.Run(fmt.Sprintf("top3/nodes=%d/%s", n, path), func(b *testing.B) {
				setWide(b, on)
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					dst = s.appendFew(dst[:0], nodes, uint64(i)*0x9e3779b97f4a7c15, 3, -1)
				}
			})
		}
	}
}

var sinkInt int

// FuzzWide checks the wide path against the scalar loops on seeds and keys
// the fuzzer chooses, equal scores and zero scores included.
func FuzzWide(f *testing.F) {
	f.Add(uint64(1), []byte("0123456789abcdef0123456789abcdef0123456789abcdef01234567"), uint8(0))
	f.Fuzz(func(t *testing.T, h uint64, raw []byte, pick uint8) {
		seeds := make([]uint64, 0, len(raw)/8+1)
		for i := 0; i+8 <= len(raw); i += 8 {
			var v uint64
			for _, b := range raw[i : i+8] {
				v = v<<8 | uint64(b)
			}
			seeds = append(seeds, v)
		}
		if len(seeds) == 0 {
			return
		}
		if pick&1 != 0 {
			h = seeds[int(pick)%len(seeds)] // one node scores 0
		}
		s := straw2{seeds: seeds, collide: collide(seeds)}
		nodes := make([]Node, len(seeds))
		for i := range nodes {
			nodes[i] = Node{ID: fmt.Sprint(i)}
		}
		var best [2]int
		var top [2][]Node
		for pass, on := range []bool{false, true} {
			setWide(t, on)
			best[pass] = s.best(h)
			top[pass] = s.appendFew(nil, nodes, h, 3, -1)
		}
		require.Equal(t, best[0], best[1])
		require.Equal(t, top[0], top[1])
	})
}

// TestMulChains checks mulChains's choice against a longer measurement of
// the same two chains: where one is clearly faster (by a third or more;
// the CPUs measured differ by 1.7 times or more), vpmullqFast must name it.
func TestMulChains(t *testing.T) {
	if !asmKernels || !haveKernels {
		t.Skip("no assembly kernels here")
	}
	mulChains()
	long, short := chainTime(vpmullqChain), chainTime(mulcChain)
	t.Logf("1,000 VPMULLQ: %v, 1,000 MULC: %v, vpmullqFast=%d", long, short, vpmullqFast)
	switch {
	case float64(long) < float64(short)/1.33:
		require.Equal(t, uint8(1), vpmullqFast, "VPMULLQ is faster here")
	case float64(short) < float64(long)/1.33:
		require.Equal(t, uint8(0), vpmullqFast, "MULC is faster here")
	}
}

// chainTime is the fastest of 50 timings of chain(1000).
func chainTime(chain func(int)) time.Duration {
	best := time.Duration(1 << 62)
	for range 50 {
		start := time.Now()
		chain(1000)
		best = min(best, time.Since(start))
	}
	return best
}
