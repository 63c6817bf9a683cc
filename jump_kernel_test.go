// The kernel exists on amd64 only, and the bucket counts past 2^31 below
// do not fit a 32-bit int.

//go:build amd64 && !purego

package chash

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestJumpKernelIsJumpGo checks jumpFMA, the assembly of jumpHash where
// the CPU has FMA, against jumpGo, its Go form, for random keys at bucket
// counts of every magnitude up to 2^53, the most jumpHash is given, and for
// keys whose walks end before, at and after the fixed steps. Without the
// assembly jumpFMA is jumpGo and the test is skipped.
func TestJumpKernelIsJumpGo(t *testing.T) {
	if !jumpKernel {
		t.Skip("jumpHash runs jumpGo on this CPU")
	}
	rng := rand.New(rand.NewPCG(11, 12))
	counts := []int{1, 2, 3, 4, 5, 7, 8, 9, 63, 64, 65, 1000, 1 << 20, math.MaxInt32, 1 << 31, 1<<31 + 1, 1<<53 - 1, 1 << 53}
	keys := 100_000
	if testing.Short() {
		keys = 10_000
	}
	for range keys {
		key := rng.Uint64()
		for _, n := range counts {
			require.Equal(t, jumpGo(key, n), jumpFMA(key, n), "key %#x, %d buckets", key, n)
		}
		n := 1 + int(rng.Uint64()>>(11+rng.IntN(53)))
		require.Equal(t, jumpGo(key, n), jumpFMA(key, n), "key %#x, %d buckets", key, n)
	}
	for _, key := range []uint64{0, 1, math.MaxUint64, 1 << 63} {
		for _, n := range counts {
			require.Equal(t, jumpGo(key, n), jumpFMA(key, n), "key %#x, %d buckets", key, n)
		}
	}
}

// FuzzJumpKernel compares jumpFMA with jumpGo for any key and any bucket
// count jumpHash is given (1 to 2^53).
func FuzzJumpKernel(f *testing.F) {
	f.Add(uint64(0), uint64(0))
	f.Add(uint64(math.MaxUint64), uint64(7))
	f.Add(uint64(12345), uint64(1<<53-1))
	f.Fuzz(func(t *testing.T, key, buckets uint64) {
		if !jumpKernel {
			t.Skip("jumpHash runs jumpGo on this CPU")
		}
		n := int(1 + buckets%(1<<53))
		require.Equal(t, jumpGo(key, n), jumpFMA(key, n), "key %#x, %d buckets", key, n)
	})
}

// BenchmarkJumpKernel compares jumpFMA with jumpGo on pre-hashed keys: a
// stream of independent lookups, as a service makes them.
func BenchmarkJumpKernel(b *testing.B) {
	for _, n := range []int{8, 64, 1000} {
		for _, k := range []struct {
			name string
			f    func(uint64, int) int
		}{{"go", jumpGo}, {"asm", jumpFMA}} {
			b.Run(fmt.Sprintf("%s/buckets=%d", k.name, n), func(b *testing.B) {
				if k.name == "asm" && !jumpKernel {
					b.Skip("no FMA")
				}
				s, key := 0, uint64(1)
				for i := 0; i < b.N; i++ {
					key = mix64(key + phi)
					s += k.f(key, n)
				}
				benchSink = s
			})
		}
	}
}

var benchSink int
