//go:build !amd64 || purego

package chash

// haveKernels is set: without the assembly the kernels are their Go
// models, which run anywhere.
const haveKernels = true

// asmKernels is set where the kernels are assembly rather than their Go
// models.
const asmKernels = false

// wide is never set without the assembly: the Go models of the kernels
// are slower than the scalar loops. Tests set it to check the merging.
var wide = false

func best8(h uint64, seeds []uint64, st *wideBest, resume bool) (best, bi uint64) {
	return best8Go(h, seeds, st, resume)
}

func top3x8(h uint64, seeds []uint64, st *wideTop3, resume bool) (i0, i1, i2 uint64) {
	return top3x8Go(h, seeds, st, resume)
}

// vpmullqFast is never set without the assembly.
var vpmullqFast uint8

// mulChains has nothing to choose without the assembly.
func mulChains() {}

// vpmullqChain and mulcChain are never called without the assembly.
func vpmullqChain(int) {}

func mulcChain(int) {}
