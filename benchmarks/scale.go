package benchmarks

import (
	"runtime"

	"github.com/keyplace/chash"
)

// ScaleNodeCounts are the memberships the scaling report measures every
// algorithm at. The short mode (go test -short) stops at 1,000.
var ScaleNodeCounts = []int{8, 64, 1000, 10_000, 100_000}

// ScaleKeySizes are the key lengths of the scaling report.
var ScaleKeySizes = []int{13, 80}

// ScaleAlgorithms lists the algorithms of the scaling report: those the
// report compares (ComparedAlgorithms).
func ScaleAlgorithms() []chash.Algorithm { return ComparedAlgorithms() }

// ScaleOptions are the options the scaling report builds algorithm a with at
// n nodes: the defaults, except that Maglev's table grows with the
// membership, as its authors advise (M of about 100 n keeps each node
// within about 1% of its share), from the default 65,537 up to the largest
// table chash allows.
func ScaleOptions(a chash.Algorithm, n int) []chash.Option {
	if a == chash.AlgorithmMaglev {
		return []chash.Option{chash.WithTableSize(MaglevTableFor(n))}
	}
	return nil
}

// MaglevTableFor returns the smallest prime at least max(65537, 100·n), or
// the largest prime chash accepts (below 1<<24) if that is smaller.
func MaglevTableFor(n int) int {
	const limit = 1 << 24
	m := max(MaglevTable, 100*n)
	if m >= limit {
		for m = limit; !isPrime(m); m-- {
		}
		return m
	}
	for !isPrime(m) {
		m++
	}
	return m
}

func isPrime(n int) bool {
	if n < 2 {
		return false
	}
	for d := 2; d*d <= n; d++ {
		if n%d == 0 {
			return false
		}
	}
	return true
}

// Retained builds copies placers with build (at least one) and returns the
// last with the heap bytes each keeps in use once garbage is collected:
// what a placer keeps alive, beyond what building it allocated and
// dropped. Several copies average out the runtime's own small allocations.
func Retained(copies int, build func() (chash.Placer, error)) (chash.Placer, float64, error) {
	copies = max(copies, 1)
	kept := make([]chash.Placer, copies)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range kept {
		p, err := build()
		if err != nil {
			return nil, 0, err
		}
		kept[i] = p
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(kept)
	return kept[copies-1], (float64(after.HeapAlloc) - float64(before.HeapAlloc)) / float64(copies), nil
}
