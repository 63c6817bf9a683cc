//go:build amd64 && !purego

#include "textflag.h"

// func jumpFMA(key uint64, buckets int) int
//
// jumpGo's loop (jump.go) with nothing else in it: the same products,
// truncations and conditional move, in 15 instructions a step. Compiled
// from Go for GOAMD64=v1, the loop takes about 36: before each of
// math.FMA and math.Trunc it tests whether the CPU has the instruction,
// and its never-taken calls of the software forms make the compiler
// spill and reload the loop's registers on every step. Converting into X2
// and truncating into X1 take their upper halves from X7, always zero, so
// that no step waits on the previous one through them. buckets must be 1
// to 2^53.
TEXT ·jumpFMA(SB), NOSPLIT, $0-24
	MOVQ       key+0(FP), AX
	MOVQ       buckets+8(FP), BX
	VXORPD     X7, X7, X7
	VCVTSI2SDQ BX, X7, X0              // limit
	BSRQ       BX, CX
	INCQ       CX                      // steps: bits.Len(buckets)
	MOVQ       $2862933555777941757, SI // the paper's multiplier
	MOVQ       $0x41e0000000000000, DX  // 2^31
	MOVQ       DX, X5
	VXORPD     X1, X1, X1              // t, the last bucket
	XORL       R8, R8                  // the result
	PCALIGN    $16

loop:
	IMULQ       SI, AX
	INCQ        AX
	MOVQ        AX, DX
	SHRQ        $33, DX
	INCQ        DX
	VCVTSI2SDQ  DX, X7, X2
	VDIVSD      X2, X5, X2             // r = 2^31 / (key>>33 + 1)
	VFMADD231SD X2, X1, X2             // f = t·r + r, rounded once
	VROUNDSD    $3, X2, X7, X1         // t = Trunc(f)
	VCVTTSD2SIQ X1, R9
	VUCOMISD    X0, X2
	CMOVQCS     R9, R8                 // f < limit: the result is t
	DECQ        CX
	JG          loop
	VUCOMISD    X0, X1
	JCS         loop                   // past the fixed steps, while t < limit
	MOVQ        R8, ret+16(FP)
	RET
