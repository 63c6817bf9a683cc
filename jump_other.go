//go:build !amd64 || purego

package chash

// jumpKernel is never set without the assembly.
var jumpKernel = false

// jumpFMA is jumpGo where there is no assembly.
func jumpFMA(key uint64, buckets int) int { return jumpGo(key, buckets) }
