package chash_test

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/chashtest"
	"github.com/keyplace/chash/internal/conformance"
	"github.com/keyplace/chash/internal/measure"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// jumpLCG is one step of jump hash's generator (Lamping and Veach 2014).
func jumpLCG(key uint64) uint64 { return key*2862933555777941757 + 1 }

// TestJumpHashLoopExit pins the loop's exit test at equality. Each step
// computes f = (b+1)·2^31/(r+1), r the generator's top 31 bits, and stops
// when f reaches the bucket count. When r+1 is a power of two 2^t the
// quotient is exact, f = (b+1)·2^(31-t), and a bucket count equal to f
// makes the comparison decide: with "f >= buckets" the answer is b, with
// "f > buckets" the loop jumps to j = buckets and returns that, one past
// the last bucket.
//
// The keys are found backwards: choose the state after the step with the
// wanted top bits, then undo the step with the generator's inverse.
func TestJumpHashLoopExit(t *testing.T) {
	// First step: r = 2^21-1, f = 1·2^10 = 1024.
	const first = uint64(8250950918642078430)
	require.Equal(t, uint64(1<<21-1), jumpLCG(first)>>33)
	assert.Equal(t, 0, chash.JumpHash(first, 1024))
	// Second step: the first gives f in (1, 2), so j = 1; then r = 2^20-1
	// and f = 2·2^11 = 4096.
	const second = uint64(14032347646093745108)
	r1 := jumpLCG(second) >> 33
	require.Equal(t, 1, int(float64(1<<31)/float64(r1+1)))
	require.Equal(t, uint64(1<<20-1), jumpLCG(jumpLCG(second))>>33)
	assert.Equal(t, 1, chash.JumpHash(second, 4096))
	for _, tc := range []struct {
		key     uint64
		buckets int
	}{{first, 1024}, {second, 4096}} {
		for b := tc.buckets - 2; b <= tc.buckets+2; b++ {
			got := chash.JumpHash(tc.key, b)
			assert.True(t, got >= 0 && got < b, "JumpHash(%d, %d) = %d: out of range", tc.key, b, got)
			next := chash.JumpHash(tc.key, b+1)
			assert.True(t, next == got || next == b, "JumpHash(%d, %d) = %d, with one more bucket %d", tc.key, b, got, next)
		}
	}
}

// TestJumpTopKPast16 checks whole rankings, where choices past the 16th
// follow in bucket order from a hashed start: distinct members, and each
// shorter ranking a prefix of the longer ones.
func TestJumpTopKPast16(t *testing.T) {
	for _, n := range []int{16, 17, 18, 20, 33, 100} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			j, err := chash.NewJump(chashtest.Nodes(n))
			require.NoError(t, err)
			members := measure.IDs(j.Nodes())
			seventeenth := map[string]int{}
			for _, key := range pinKeys(300, 6) {
				full := j.AppendTopKString(nil, key, n)
				require.Len(t, full, n)
				ids := measure.IDs(full)
				require.ElementsMatch(t, members, ids, "key %q: whole ranking is not every member once", key)
				for k := 1; k < n; k++ {
					require.Equal(t, full[:k], j.AppendTopKString(nil, key, k), "key %q: top %d is not a prefix of top %d", key, k, n)
				}
				require.Equal(t, full, j.AppendTopK(nil, []byte(key), n+5))
				if n > 16 {
					seventeenth[ids[16]]++
				}
			}
			if n > 16 {
				// The 17th choice is spread, not always the same node.
				assert.Greater(t, len(seventeenth), min(n-16, 3), "17th choices: %v", seventeenth)
			}
		})
	}
}

// TestJumpShares: each of n buckets owns exactly 1/n, exact and in bucket
// order; keys agree within sampling noise.
func TestJumpShares(t *testing.T) {
	nodes := chashtest.Nodes(7)
	slices.Reverse(nodes) // bucket order, not ID order
	j, err := chash.NewJump(nodes)
	require.NoError(t, err)
	for _, p := range []chash.Placer{j, chash.NewHolder(j)} {
		o, err := chash.Shares(p)
		require.NoError(t, err)
		assert.True(t, o.Exact)
		assert.Zero(t, o.Samples)
		require.Len(t, o.Shares, len(nodes))
		load := measure.Load(conformance.Owners(j), measure.IDs(nodes))
		sum := 0.0
		for i, s := range o.Shares {
			assert.Equal(t, chash.Node{ID: nodes[i].ID, Weight: 1}, s.Node)
			assert.Equal(t, 1.0/7, s.Fraction)
			sum += s.Fraction
			sigma := math.Sqrt(conformance.NumKeys * (1.0 / 7) * (6.0 / 7))
			assert.InDelta(t, conformance.NumKeys/7.0, load[i], 5*sigma, "%s", s.Node.ID)
		}
		assert.InDelta(t, 1, sum, 1e-15)
		assert.Equal(t, []float64{1, 1, 1, 1, 1, 1, 1}, o.Loads())
		assert.Zero(t, o.CV())
		assert.Equal(t, 1.0, o.Peak())
	}
}

// TestJumpRankingChecksum pins whole rankings of 40 buckets for 10,000
// keys, choices past the 16th included, which the golden files (top 3)
// do not reach. The constant was computed once and frozen.
func TestJumpRankingChecksum(t *testing.T) {
	j, err := chash.NewJump(chashtest.Nodes(40))
	require.NoError(t, err)
	got := topKChecksum(j, chashtest.Keys(10_000), 40)
	assert.Equal(t, uint64(0xa68c61b8825b634d), got, "checksum %#x", got)
}

// paperJump is the loop of Lamping and Veach's paper, written as it is
// there (its j an integer converted back each time): the reference that
// JumpHash's faster chain must equal bit for bit.
func paperJump(key uint64, buckets int) int {
	b, _ := paperWalk(key, buckets)
	return b
}

// paperWalk is paperJump that also counts the loop's steps: the buckets
// visited, each followed by one product.
func paperWalk(key uint64, buckets int) (bucket, steps int) {
	if buckets <= 0 {
		return 0, 1
	}
	limit := float64(buckets)
	b, j := int64(-1), int64(0)
	for {
		b = j
		steps++
		key = jumpLCG(key)
		f := float64(b+1) * (float64(1<<31) / float64(int64(key>>33)+1))
		if f >= limit {
			return int(b), steps
		}
		j = int64(f)
	}
}

// TestJumpHashPastItsFixedSteps checks JumpHash where its loop changes
// course: it runs bits.Len(buckets) steps whatever the key, then goes on
// only while still below the limit. Keys are sorted by the paper's count of
// steps into those that end within the fixed steps, exactly at their end,
// and after them, up to the longest walk (every bucket visited); each
// class must occur, and each key agree with the paper.
func TestJumpHashPastItsFixedSteps(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{3, 5, 7, 8, 9, 16, 64, 1000} {
		fixed := bits.Len(uint(n))
		var within, at, past, longest int
		for range 200_000 {
			key := rng.Uint64()
			want, steps := paperWalk(key, n)
			switch {
			case steps < fixed:
				within++
			case steps == fixed:
				at++
			default:
				past++
			}
			if steps == n {
				longest++
			}
			require.Equal(t, want, chash.JumpHash(key, n), "key %#x, %d buckets, %d steps", key, n, steps)
		}
		assert.Positive(t, within, "%d buckets: keys ending before step %d", n, fixed)
		assert.Positive(t, at, "%d buckets: keys ending at step %d", n, fixed)
		assert.Positive(t, past, "%d buckets: keys going past step %d", n, fixed)
		if n <= 8 { // 1/n! of keys visit every bucket
			assert.Positive(t, longest, "%d buckets: keys visiting every bucket", n)
		}
	}
}

// TestJumpHashIsThePaperLoop compares JumpHash with paperJump for random
// keys at bucket counts of every magnitude, including the edges of the
// 32-bit range and of exact float64 integers (2^53), where JumpHash changes
// method.
func TestJumpHashIsThePaperLoop(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	counts := []int{1, 2, 3, 7, 8, 10, 64, 1000, 1 << 20, math.MaxInt32}
	if math.MaxInt > math.MaxInt32 { // 64-bit ints
		for _, c := range []uint64{1 << 31, 1<<31 + 1, 1<<53 - 1, 1 << 53, 1<<53 + 1, 1<<53 + 2, 1 << 62, math.MaxInt64} {
			counts = append(counts, int(c))
		}
	}
	keys := 50_000
	if testing.Short() {
		keys = 5_000
	}
	for range keys {
		key := rng.Uint64()
		n := 1 + rng.IntN(1<<20)
		require.Equal(t, paperJump(key, n), chash.JumpHash(key, n), "key %#x, %d buckets", key, n)
		for _, n := range counts {
			require.Equal(t, paperJump(key, n), chash.JumpHash(key, n), "key %#x, %d buckets", key, n)
		}
	}
	// Large bucket counts drawn at random, with keys that are small or
	// have few bits, as unmixed keys would.
	for range keys / 10 {
		n := int(rng.Uint64() >> (1 + rng.IntN(63)))
		for _, key := range []uint64{rng.Uint64(), uint64(rng.IntN(100)), 1 << rng.IntN(64)} {
			require.Equal(t, paperJump(key, n), chash.JumpHash(key, n), "key %#x, %d buckets", key, n)
		}
	}
}
