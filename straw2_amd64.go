//go:build amd64 && !purego

package chash

import (
	"sync"
	"time"
)

// haveKernels reports whether the kernels can run: whether the CPU and
// the operating system support the AVX-512 instructions they use (AVX512F
// and AVX512DQ, for VPMULLQ).
var haveKernels = hasAVX512()

// asmKernels is set where the kernels are assembly rather than their Go
// models.
const asmKernels = true

// wide is set when the wide path is taken, which is wherever the kernels
// can run. Tests clear it to check the scalar loops against the kernels.
var wide = haveKernels

// best8 scores the nodes of seeds for h, eight at a time, and returns the
// best score and its node's index. With st, it starts from the lanes in st
// if resume is set and leaves its lanes there; without, it starts afresh.
// It is in straw2_amd64.s; best8Go is its model.
//
//go:noescape
func best8(h uint64, seeds []uint64, st *wideBest, resume bool) (best, bi uint64)

// top3x8 is best8 for the best three nodes, best first: each lane keeps
// its best three. top3x8Go is its model.
//
//go:noescape
func top3x8(h uint64, seeds []uint64, st *wideTop3, resume bool) (i0, i1, i2 uint64)

func cpuid(leaf, sub uint32) (a, b, c, d uint32)
func xgetbv() (lo, hi uint32)

// hasAVX512 reports whether the CPU has AVX512F and AVX512DQ and the
// operating system saves the vector and mask registers they use (Intel's
// Software Developer's Manual, vol. 1, 15.2: CPUID leaf 7's EBX bits 16
// and 17, OSXSAVE, and XCR0 bits 1, 2, 5, 6 and 7).
func hasAVX512() bool {
	if max, _, _, _ := cpuid(0, 0); max < 7 {
		return false
	}
	if _, _, c, _ := cpuid(1, 0); c&(1<<27) == 0 {
		return false
	}
	if lo, _ := xgetbv(); lo&0xe6 != 0xe6 {
		return false
	}
	_, b, _, _ := cpuid(7, 0)
	return b&(1<<16) != 0 && b&(1<<17) != 0
}

// vpmullqFast is set (1) where best8 scores up to 15 nodes with VPMULLQ,
// as it scores more, rather than with MIX64SHORT's three 32-bit
// multiplies: where a 64-bit vector multiply takes less time than those
// multiplies' chain. No CPUID bit tells: on Intel's AVX-512 cores VPMULLQ
// is three micro-operations with a latency of 15 cycles, against 9 for
// the chain, while on AMD's Zen 4 it takes 3 cycles against 7. A lookup
// of 8 to 15 nodes waits on that latency twice, and the faster form was
// 12–20% faster on an Intel Emerald Rapids (the chain) and 8–15% faster on
// an AMD EPYC Zen 4 (VPMULLQ). It is read by the assembly, and written
// once, by mulChains, before the first placer of 8 to 15 nodes that uses
// best8 is built.
var vpmullqFast uint8

var mulOnce sync.Once

// mulChains measures, once, the two multiplications best8 can score a few
// nodes with, and sets vpmullqFast if VPMULLQ's chain took less time: the
// fastest of 7 alternating timings of 1,000 dependent multiplies each
// (some 2 to 5 microseconds), after one of each to bring the vector units
// up. The two differ by a factor of 1.7 or more on the CPUs measured, far
// beyond what the timer or a preemption (which only lengthens a timing)
// could reverse in the fastest of seven.
func mulChains() {
	mulOnce.Do(func() {
		if !haveKernels {
			return
		}
		const n = 1000
		vpmullqChain(n)
		mulcChain(n)
		long, short := time.Duration(1<<62), time.Duration(1<<62)
		for range 7 {
			start := time.Now()
			vpmullqChain(n)
			long = min(long, time.Since(start))
			start = time.Now()
			mulcChain(n)
			short = min(short, time.Since(start))
		}
		if long < short {
			vpmullqFast = 1
		}
	})
}

// vpmullqChain and mulcChain run n dependent multiplications each, by
// VPMULLQ and by MIX64SHORT's MULC (straw2_amd64.s).
//
//go:noescape
func vpmullqChain(n int)

//go:noescape
func mulcChain(n int)
