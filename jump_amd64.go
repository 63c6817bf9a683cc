//go:build amd64 && !purego

package chash

// jumpKernel is set when jumpHash calls jumpFMA: where the CPU has FMA
// and AVX (for its VEX encodings) and the operating system saves the
// registers AVX uses. Tests clear it to check jumpGo against the kernel.
var jumpKernel = hasFMA()

// jumpFMA is jumpGo in assembly (jump_amd64.s), for 1 to 2^53 buckets.
//
//go:noescape
func jumpFMA(key uint64, buckets int) int

// hasFMA reports whether the CPU has FMA and AVX and the operating system
// saves the XMM and YMM registers (Intel's Software Developer's Manual,
// vol. 1, 14.3 and 14.5.3: CPUID leaf 1's ECX bits 12, 27 and 28, and
// XCR0 bits 1 and 2).
func hasFMA() bool {
	const fma, osxsave, avx = 1 << 12, 1 << 27, 1 << 28
	if _, _, c, _ := cpuid(1, 0); c&(fma|osxsave|avx) != fma|osxsave|avx {
		return false
	}
	lo, _ := xgetbv()
	return lo&6 == 6
}
