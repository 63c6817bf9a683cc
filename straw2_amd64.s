//go:build amd64 && !purego

#include "textflag.h"

// The kernels of straw2_wide.go: each lane of a ZMM register scores one
// node, m = mix64(h ^ seed), by the steps of mix64 in hash.go (SplitMix64's
// finalizer): VPMULLQ is AVX512DQ's 64-bit multiply, the low half of the
// product as in Go. VPCMPUQ with predicate 6 (not less or equal) is an
// unsigned greater-than; VMOVDQA64 under a mask moves only the lanes it
// sets.

// laneIota is each lane's first node index.
DATA laneIota<>+0(SB)/8, $0
DATA laneIota<>+8(SB)/8, $1
DATA laneIota<>+16(SB)/8, $2
DATA laneIota<>+24(SB)/8, $3
DATA laneIota<>+32(SB)/8, $4
DATA laneIota<>+40(SB)/8, $5
DATA laneIota<>+48(SB)/8, $6
DATA laneIota<>+56(SB)/8, $7
GLOBL laneIota<>(SB), RODATA|NOPTR, $64

// MAXLANES sets every lane of Z13 to the largest lane of Z4, by three
// rounds that swap halves, then quarters, then eighths, and keep the
// larger; K1 gets the lane that holds it (one, as scores are distinct).
#define MAXLANES \
	VSHUFI64X2 $0x4e, Z4, Z4, Z13   \
	VPMAXUQ    Z13, Z4, Z13         \
	VSHUFI64X2 $0xb1, Z13, Z13, Z14 \
	VPMAXUQ    Z14, Z13, Z13        \
	VPSHUFD    $0x4e, Z13, Z14      \
	VPMAXUQ    Z14, Z13, Z13        \
	VPCMPEQQ   Z13, Z4, K1

// MIX64 sets Z7 to mix64(Z0 ^ Z7), using Z8.
#define MIX64 \
	VPXORQ  Z7, Z0, Z7 \
	VPSRLQ  $30, Z7, Z8 \
	VPXORQ  Z8, Z7, Z7  \
	VPMULLQ Z1, Z7, Z7  \
	VPSRLQ  $27, Z7, Z8 \
	VPXORQ  Z8, Z7, Z7  \
	VPMULLQ Z2, Z7, Z7  \
	VPSRLQ  $31, Z7, Z8 \
	VPXORQ  Z8, Z7, Z7

// TAIL jumps to label if it ran before (DX is set) or no seeds are left;
// else it sets K7 to the lanes of the len mod 8 seeds left at SI and loads
// them into Z7 (0 in the other lanes).
#define TAIL(label) \
	TESTL DX, DX               \
	JNZ   label                \
	MOVL  $1, DX               \
	MOVQ  seeds_len+16(FP), CX \
	ANDQ  $7, CX               \
	JZ    label                \
	MOVL  $1, AX               \
	SHLL  CX, AX               \
	DECL  AX                   \
	KMOVB AX, K7               \
	VMOVDQU64.Z (SI), K7, Z7

// CONSTS sets Z0 to h, Z1 and Z2 to mix64's multipliers and Z3 to 8 in
// every lane, SI to the seeds, CX to their count / 8, and DI to st; K7
// to all lanes, and DX to 0.
#define CONSTS \
	VPBROADCASTQ h+0(FP), Z0         \
	MOVQ         $0xbf58476d1ce4e5b9, AX \
	VPBROADCASTQ AX, Z1              \
	MOVQ         $0x94d049bb133111eb, AX \
	VPBROADCASTQ AX, Z2              \
	MOVQ         $8, AX              \
	VPBROADCASTQ AX, Z3              \
	MOVQ         seeds_base+8(FP), SI \
	MOVQ         seeds_len+16(FP), CX \
	SHRQ         $3, CX              \
	MOVQ         st+32(FP), DI        \
	KXNORB       K7, K7, K7           \
	XORL         DX, DX

// MULC sets Z7 to Z7 times a constant whose low 32 bits are in the low
// half of lo's lanes and high 32 bits in hi's, from three 32-bit
// multiplies (VPMULUDQ) and the schoolbook sum of their low 64 bits, using
// Z8 and Z17. By Intel's published latencies its chain is 9 cycles against
// VPMULLQ's 15, for seven instructions against VPMULLQ's three
// micro-operations.
#define MULC(lo, hi) \
	VPSRLQ   $32, Z7, Z8 \
	VPMULUDQ lo, Z8, Z8  \
	VPMULUDQ hi, Z7, Z17 \
	VPMULUDQ lo, Z7, Z7  \
	VPADDQ   Z17, Z8, Z8 \
	VPSLLQ   $32, Z8, Z8 \
	VPADDQ   Z8, Z7, Z7

// MIX64SHORT is MIX64 by MULC, with mix64's multipliers' high halves in
// Z15 and Z16: the same values with a shorter chain and more work.
#define MIX64SHORT \
	VPXORQ  Z7, Z0, Z7 \
	VPSRLQ  $30, Z7, Z8 \
	VPXORQ  Z8, Z7, Z7  \
	MULC(Z1, Z15)       \
	VPSRLQ  $27, Z7, Z8 \
	VPXORQ  Z8, Z7, Z7  \
	MULC(Z2, Z16)       \
	VPSRLQ  $31, Z7, Z8 \
	VPXORQ  Z8, Z7, Z7

// KEEPBEST keeps, in the lanes of K7, the larger of Z4 and the scores Z7
// in Z4 and the index of the larger in Z5, then moves the next indexes in
// Z6 on by 8.
#define KEEPBEST \
	VPCMPUQ   $6, Z4, Z7, K7, K1 \
	VPMAXUQ   Z7, Z4, K7, Z4     \
	VMOVDQA64 Z6, K1, Z5         \
	VPADDQ    Z3, Z6, Z6

// BESTOF returns best8's results, the largest lane of Z4 and its index.
#define BESTOF \
	MAXLANES                        \
	VPCOMPRESSQ Z5, K1, Z14         \
	VMOVQ       X13, best+48(FP)    \
	VMOVQ       X14, bi+56(FP)      \
	VZEROUPPER                      \
	RET

// func best8(h uint64, seeds []uint64, st *wideBest, resume bool) (best, bi uint64)
TEXT ·best8(SB), NOSPLIT, $0-64
	CONSTS
	TESTQ DI, DI
	JZ    bestFresh
	CMPB  resume+40(FP), $0
	JEQ   bestFresh
	VMOVDQU64 0(DI), Z4   // best score
	VMOVDQU64 64(DI), Z5  // its index
	VMOVDQU64 128(DI), Z6 // next index
	JMP       bestStart

bestFresh:
	// Registers rather than st: a 64-byte load of what Go stored 8 bytes
	// at a time would wait for the stores to drain.
	VPXORQ    Z4, Z4, Z4
	VPXORQ    Z5, Z5, Z5
	VMOVDQU64 laneIota<>(SB), Z6
	TESTQ     DI, DI
	JNZ       bestStart
	CMPB      ·vpmullqFast(SB), $0
	JNE       bestStart
	CMPQ      CX, $1
	JLS       bestShort

bestStart:
	TESTQ CX, CX
	JZ    bestTail

bestLoop:
	VMOVDQU64 (SI), Z7

bestScore:
	MIX64
	KEEPBEST
	ADDQ $64, SI
	DECQ CX
	JNZ  bestLoop

bestTail:
	TAIL(bestDone)
	MOVQ $1, CX
	JMP  bestScore

bestDone:
	TESTQ     DI, DI
	JZ        bestMerge
	VMOVDQU64 Z4, 0(DI)
	VMOVDQU64 Z5, 64(DI)
	VMOVDQU64 Z6, 128(DI)

bestMerge:
	BESTOF

bestShort:
	// Up to 15 nodes without st, where VPMULLQ's chain is the longer
	// (vpmullqFast is clear): a lookup of a few nodes waits on the chain
	// of one or two vectors' scores, so MIX64SHORT's shorter chain pays
	// for its extra work, which the loop above, scoring many vectors at
	// once, could not afford. (On an Intel Emerald Rapids, 8-node lookups
	// of 80-byte keys were 12–20% faster in interleaved runs of
	// BenchmarkLookup; ranking alone, 12 nodes at a time with nothing to
	// wait on, was 14–19% slower. On an AMD EPYC Zen 4, whose VPMULLQ
	// takes 3 cycles, the loop above was 8–15% faster at 8 and 12 nodes,
	// fastest of 400 interleaved rounds: see mulChains.)
	VPSRLQ $32, Z1, Z15
	VPSRLQ $32, Z2, Z16
	TESTQ  CX, CX
	JZ     shortTail
	VMOVDQU64 (SI), Z7
	MIX64SHORT
	KEEPBEST
	ADDQ $64, SI

shortTail:
	TAIL(shortMerge)
	MIX64SHORT
	KEEPBEST

shortMerge:
	BESTOF

// func top3x8(h uint64, seeds []uint64, st *wideTop3, resume bool) (i0, i1, i2 uint64)
TEXT ·top3x8(SB), NOSPLIT, $0-72
	CONSTS
	TESTQ DI, DI
	JZ    top3Fresh
	CMPB  resume+40(FP), $0
	JEQ   top3Fresh
	VMOVDQU64 0(DI), Z4    // t0, the best score
	VMOVDQU64 64(DI), Z5   // t1
	VMOVDQU64 128(DI), Z6  // t2
	VMOVDQU64 192(DI), Z9  // i0, t0's index
	VMOVDQU64 256(DI), Z10 // i1
	VMOVDQU64 320(DI), Z11 // i2
	VMOVDQU64 384(DI), Z12 // next index
	JMP       top3Start

top3Fresh:
	VPXORQ    Z4, Z4, Z4
	VPXORQ    Z5, Z5, Z5
	VPXORQ    Z6, Z6, Z6
	VPXORQ    Z9, Z9, Z9
	VPXORQ    Z10, Z10, Z10
	VPXORQ    Z11, Z11, Z11
	VMOVDQU64 laneIota<>(SB), Z12

top3Start:
	TESTQ CX, CX
	JZ    top3Tail

top3Loop:
	VMOVDQU64 (SI), Z7

top3Score:
	MIX64
	// The scores go through an insertion network of max and min, whose
	// chain from one node to the next is one instruction a slot; the
	// masks, from the old slots, move the indexes the same way, from the
	// bottom up so that each reads a slot before it is overwritten.
	VPCMPUQ   $6, Z6, Z7, K7, K3 // K3: m > t2, in the lanes of K7
	VPCMPUQ   $6, Z5, Z7, K7, K2 // K2: m > t1
	VPCMPUQ   $6, Z4, Z7, K7, K1 // K1: m > t0
	VPMINUQ   Z7, Z4, Z13        // what slot 0 passes down
	VPMAXUQ   Z7, Z4, K7, Z4
	VPMINUQ   Z13, Z5, Z14       // what slot 1 passes down
	VPMAXUQ   Z13, Z5, K7, Z5
	VPMAXUQ   Z14, Z6, K7, Z6
	VMOVDQA64 Z12, K3, Z11
	VMOVDQA64 Z10, K2, Z11
	VMOVDQA64 Z12, K2, Z10
	VMOVDQA64 Z9, K1, Z10
	VMOVDQA64 Z12, K1, Z9
	VPADDQ    Z3, Z12, Z12
	ADDQ      $64, SI
	DECQ      CX
	JNZ       top3Loop

top3Tail:
	TAIL(top3Done)
	MOVQ $1, CX
	JMP  top3Score

top3Done:
	TESTQ     DI, DI
	JZ        top3Merge
	VMOVDQU64 Z4, 0(DI)
	VMOVDQU64 Z5, 64(DI)
	VMOVDQU64 Z6, 128(DI)
	VMOVDQU64 Z9, 192(DI)
	VMOVDQU64 Z10, 256(DI)
	VMOVDQU64 Z11, 320(DI)
	VMOVDQU64 Z12, 384(DI)

top3Merge:
	// The best three of all lanes: three times, take the largest first
	// slot and move its lane's list up by one.
	MAXLANES
	VPCOMPRESSQ Z9, K1, Z14
	VMOVQ       X14, i0+48(FP)
	VMOVDQA64   Z5, K1, Z4
	VMOVDQA64   Z10, K1, Z9
	VMOVDQA64   Z6, K1, Z5
	VMOVDQA64   Z11, K1, Z10
	VPXORQ      Z6, Z6, K1, Z6
	MAXLANES
	VPCOMPRESSQ Z9, K1, Z14
	VMOVQ       X14, i1+56(FP)
	VMOVDQA64   Z5, K1, Z4
	VMOVDQA64   Z10, K1, Z9
	MAXLANES
	VPCOMPRESSQ Z9, K1, Z14
	VMOVQ       X14, i2+64(FP)
	VZEROUPPER
	RET

// func vpmullqChain(n int)
//
// n dependent VPMULLQ by mix64's first multiplier: the latency that a
// few-node lookup waits on twice.
TEXT ·vpmullqChain(SB), NOSPLIT, $0-8
	MOVQ         n+0(FP), CX
	MOVQ         $0xbf58476d1ce4e5b9, AX
	VPBROADCASTQ AX, Z1
	VMOVDQA64    Z1, Z7

vpmullqLoop:
	VPMULLQ Z1, Z7, Z7
	DECQ    CX
	JNZ     vpmullqLoop
	VZEROUPPER
	RET

// func mulcChain(n int)
//
// n dependent MULC by the same multiplier: what MIX64SHORT waits on
// instead.
TEXT ·mulcChain(SB), NOSPLIT, $0-8
	MOVQ         n+0(FP), CX
	MOVQ         $0xbf58476d1ce4e5b9, AX
	VPBROADCASTQ AX, Z1
	VPSRLQ       $32, Z1, Z15
	VMOVDQA64    Z1, Z7

mulcLoop:
	MULC(Z1, Z15)
	DECQ CX
	JNZ  mulcLoop
	VZEROUPPER
	RET

// func cpuid(leaf, sub uint32) (a, b, c, d uint32)
TEXT ·cpuid(SB), NOSPLIT, $0-24
	MOVL leaf+0(FP), AX
	MOVL sub+4(FP), CX
	CPUID
	MOVL AX, a+8(FP)
	MOVL BX, b+12(FP)
	MOVL CX, c+16(FP)
	MOVL DX, d+20(FP)
	RET

// func xgetbv() (lo, hi uint32)
TEXT ·xgetbv(SB), NOSPLIT, $0-8
	MOVL $0, CX
	XGETBV
	MOVL AX, lo+0(FP)
	MOVL DX, hi+4(FP)
	RET
