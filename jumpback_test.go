package chash_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/chashtest"
	"github.com/keyplace/chash/internal/conformance"
	"github.com/keyplace/chash/internal/measure"
)

func TestContractJumpBack(t *testing.T) { chashtest.TestPlacer(t, jumpBackSpec()) }

// jumpBackSpec is the contract of JumpBackHash with the default options.
func jumpBackSpec() chashtest.Spec {
	return chashtest.Spec{
		New:        conformance.Constructor(chash.NewJumpBack),
		Ordered:    true,
		RemoveLast: true,
		MaxCV:      0.02, MaxPeak: 1.05, ShareTol: 0.05,
		Collateral: 0,
		Add: func(p chash.Placer, n chash.Node) (chash.Placer, error) {
			return p.(*chash.JumpBack).Add(n)
		},
		Remove: func(p chash.Placer, id string) (chash.Placer, error) {
			return p.(*chash.JumpBack).Remove(id)
		},
		Zero:   &chash.JumpBack{},
		Derive: true,
		Variants: []func() (chash.Placer, error){
			func() (chash.Placer, error) {
				return chash.NewJumpBack(chashtest.Nodes(10), chash.WithHasher(chash.XXHashSeed(7)))
			},
		},
	}
}

func TestJumpBackGolden(t *testing.T) {
	for _, tc := range []struct {
		name  string
		nodes []chash.Node
		opts  []chash.Option
	}{
		{"jumpback-10", chashtest.Nodes(10), nil},
		{"jumpback-40-seed-7", chashtest.Nodes(40), []chash.Option{chash.WithHasher(chash.XXHashSeed(7))}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := chash.NewJumpBack(tc.nodes, tc.opts...)
			require.NoError(t, err)
			conformance.Golden(t, tc.name, p)
		})
	}
}

// readJumpBackVectors reads a file of key_hex, buckets, bucket rows.
func readJumpBackVectors(t *testing.T, path string) [][3]uint64 {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var out [][3]uint64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Split(sc.Text(), "\t")
		if len(fields) != 3 || fields[0] == "key_hex" {
			continue
		}
		key, err1 := strconv.ParseUint(fields[0], 16, 64)
		n, err2 := strconv.ParseUint(fields[1], 10, 64)
		b, err3 := strconv.ParseUint(fields[2], 10, 64)
		require.NoError(t, errors.Join(err1, err2, err3), "%s: %q", path, sc.Text())
		out = append(out, [3]uint64{key, n, b})
	}
	require.NoError(t, sc.Err())
	return out
}

// TestJumpBackHashHash4j checks JumpBackHash against buckets computed by
// hash4j itself (testdata/jumpback_hash4j_sample.tsv, from the project's
// shared vectors: ConsistentHashing.jumpBackHashSplitMix64() run on
// OpenJDK 17).
func TestJumpBackHashHash4j(t *testing.T) {
	vs := readJumpBackVectors(t, "testdata/jumpback_hash4j_sample.tsv")
	require.GreaterOrEqual(t, len(vs), 380)
	for _, v := range vs {
		assert.Equal(t, int(v[2]), chash.JumpBackHash(v[0], int(v[1])), "key %016x, %d buckets", v[0], v[1])
	}
}

// TestJumpBackHashVectors checks JumpBackHash against the output of a Java
// implementation of the published algorithm (testdata/JumpBackVectors.java),
// which covers every bucket-count width from 1 to 31 bits.
func TestJumpBackHashVectors(t *testing.T) {
	vs := readJumpBackVectors(t, "testdata/jumpback_vectors.tsv")
	require.GreaterOrEqual(t, len(vs), 2000)
	for _, v := range vs {
		assert.Equal(t, int(v[2]), chash.JumpBackHash(v[0], int(v[1])), "key %016x, %d buckets", v[0], v[1])
	}
}

// TestJumpBackHashVectorsReproduce runs the Java generator, when a JDK is
// installed, and checks that it still prints the committed vectors.
func TestJumpBackHashVectorsReproduce(t *testing.T) {
	if testing.Short() {
		t.Skip("runs java")
	}
	java, err := exec.LookPath("java")
	if err != nil {
		t.Skip("no java")
	}
	got, err := exec.Command(java, "testdata/JumpBackVectors.java").Output()
	require.NoError(t, err)
	want, err := os.ReadFile("testdata/jumpback_vectors.tsv")
	require.NoError(t, err)
	require.True(t, bytes.Equal(got, want), "java output differs from testdata/jumpback_vectors.tsv")
}

func TestJumpBackHashEdges(t *testing.T) {
	for _, b := range []int{1, 0, -1, math.MinInt} {
		for _, key := range []uint64{0, 1, math.MaxUint64} {
			assert.Equal(t, 0, chash.JumpBackHash(key, b), "JumpBackHash(%d, %d)", key, b)
		}
	}
	// Beyond hash4j's int range the count is taken as 2^31-1.
	for i := uint64(0); i < 2000; i++ {
		key := i * 0x9e3779b97f4a7c15
		want := chash.JumpBackHash(key, math.MaxInt32)
		for _, b := range []int64{math.MaxInt32 + 1, 1 << 40, math.MaxInt64} {
			if int64(int(b)) != b {
				continue // a 32-bit int
			}
			require.Equal(t, want, chash.JumpBackHash(key, int(b)), "key %d, %d buckets", key, b)
		}
	}
}

// TestJumpBackHashMonotone is the defining property, per key: with one
// more bucket a key stays where it was or moves to the new bucket, at every
// count from 1 to 3,000 and around powers of two up to 2^31-1.
func TestJumpBackHashMonotone(t *testing.T) {
	counts := []int{}
	for n := 1; n < 3000; n++ {
		counts = append(counts, n)
	}
	for s := 12; s <= 31; s++ {
		for d := -3; d <= 2; d++ {
			// In 64 bits, so that 1<<31 does not wrap on 32-bit platforms.
			if n := int64(1)<<s + int64(d); n < math.MaxInt32 {
				counts = append(counts, int(n))
			}
		}
	}
	keys := 2000
	if testing.Short() {
		keys = 300
	}
	for i := 0; i < keys; i++ {
		key := xxhash.Sum64String(strconv.Itoa(i))
		for _, n := range counts {
			a, b := chash.JumpBackHash(key, n), chash.JumpBackHash(key, n+1)
			if a < 0 || a >= n || (b != a && b != n) {
				t.Fatalf("key %016x: %d buckets give %d, %d buckets give %d", key, n, a, n+1, b)
			}
		}
	}
}

// TestJumpBackHashBalance checks that keys spread evenly, and that growing
// from n to n+1 buckets moves about 1/(n+1) of them.
func TestJumpBackHashBalance(t *testing.T) {
	const keys = 200_000
	for _, n := range []int{2, 3, 10, 64, 100, 1000} {
		load := make([]int, n+1)
		moved := 0
		for i := uint64(0); i < keys; i++ {
			key := i * 0xbf58476d1ce4e5b9
			a := chash.JumpBackHash(key, n)
			load[a]++
			if chash.JumpBackHash(key, n+1) != a {
				moved++
			}
		}
		chi := 0.0
		mean := float64(keys) / float64(n)
		for _, l := range load[:n] {
			chi += (float64(l) - mean) * (float64(l) - mean) / mean
		}
		// chi² with n-1 degrees of freedom: mean n-1, sd sqrt(2(n-1)).
		assert.Less(t, chi, float64(n-1)+6*math.Sqrt(2*float64(n-1))+10, "n=%d: chi² %.1f", n, chi)
		want := float64(keys) / float64(n+1)
		assert.InDelta(t, want, float64(moved), 5*math.Sqrt(want), "n=%d -> %d: keys moved", n, n+1)
	}
}

func TestJumpBackMembership(t *testing.T) {
	p, err := chash.NewJumpBack(chashtest.Nodes(10))
	require.NoError(t, err)
	_, err = p.Remove("node-4")
	assert.ErrorIs(t, err, chash.ErrNotLast)
	_, err = p.Remove("nope")
	assert.ErrorIs(t, err, chash.ErrUnknownNode)
	_, err = p.Remove(measure.IDs(p.Nodes())...)
	assert.ErrorIs(t, err, chash.ErrNoNodes)
	_, err = p.Add(chash.Node{ID: "x", Weight: 2})
	assert.ErrorIs(t, err, chash.ErrInvalidWeight)
	_, err = p.Replace("node-4", chash.Node{ID: "node-5"})
	assert.ErrorIs(t, err, chash.ErrDuplicateID)

	d, err := p.Remove("node-8", "node-9")
	require.NoError(t, err)
	assert.Equal(t, measure.IDs(chashtest.Nodes(8)), measure.IDs(d.Nodes()))

	r, err := p.Replace("node-4", chash.Node{ID: "node-4b"})
	require.NoError(t, err)
	before, after := conformance.Owners(p), conformance.Owners(r)
	moved := 0
	for i := range before {
		if before[i] != after[i] {
			moved++
			require.Equal(t, "node-4", before[i])
			require.Equal(t, "node-4b", after[i])
		}
		if before[i] == "node-4" {
			require.Equal(t, "node-4b", after[i])
		}
	}
	assert.Positive(t, moved)
	assert.Equal(t, 10, p.Len(), "the receiver changed")
}

// TestJumpBackTopK: each node is in the top 3 of about 3/n of keys, whole
// rankings are complete, a shorter list is a prefix of a longer one, and
// appending a bucket changes a ranking first at the new bucket.
func TestJumpBackTopK(t *testing.T) {
	const n = 10
	p, err := chash.NewJumpBack(chashtest.Nodes(n))
	require.NoError(t, err)
	grown, err := p.Add(chash.Node{ID: "node-10"})
	require.NoError(t, err)
	count := map[string]int{}
	var a, b, long []chash.Node
	keys := chashtest.Keys(conformance.NumKeys)
	for _, k := range keys {
		a = p.AppendTopKString(a[:0], k, 3)
		long = p.AppendTopKString(long[:0], k, n)
		require.Equal(t, a, long[:3], "key %q", k)
		for _, nd := range a {
			count[nd.ID]++
		}
		b = grown.AppendTopKString(b[:0], k, 3)
		for i := range a {
			if a[i] != b[i] {
				require.Equal(t, "node-10", b[i].ID, "key %q: top 3 %v became %v", k, measure.IDs(a), measure.IDs(b))
				break
			}
		}
	}
	for id, c := range count {
		share := float64(c) / float64(len(keys))
		assert.InDelta(t, 1, share*n/3, 0.03, "%s is in the top 3 of %.4f of keys", id, share)
	}
	big, err := chash.NewJumpBack(chashtest.Nodes(40))
	require.NoError(t, err)
	for _, k := range keys[:2000] {
		got := measure.IDs(big.AppendTopKString(nil, k, 40))
		slices.Sort(got)
		require.Len(t, slices.Compact(got), 40, "key %q: whole ranking", k)
	}
}

func TestJumpBackParse(t *testing.T) {
	a, err := chash.ParseAlgorithm(" JumpBack ")
	require.NoError(t, err)
	assert.Equal(t, chash.AlgorithmJumpBack, a)
	assert.Equal(t, "jumpback", a.String())
	p, err := chash.New(a, chashtest.Nodes(3))
	require.NoError(t, err)
	assert.IsType(t, &chash.JumpBack{}, p)
}

func FuzzJumpBackHash(f *testing.F) {
	f.Add(uint64(0), 1)
	f.Add(uint64(math.MaxUint64), math.MaxInt)
	f.Add(uint64(12345), -7)
	f.Fuzz(func(t *testing.T, key uint64, buckets int) {
		got := chash.JumpBackHash(key, buckets)
		if got < 0 || got >= max(buckets, 1) {
			t.Fatalf("JumpBackHash(%d, %d) = %d: out of range", key, buckets, got)
		}
		if buckets > 0 && buckets < math.MaxInt32 {
			if next := chash.JumpBackHash(key, buckets+1); next != got && next != buckets {
				t.Fatalf("JumpBackHash(%d, %d) = %d but with one more bucket %d", key, buckets, got, next)
			}
		}
	})
}

func FuzzJumpBack(f *testing.F) {
	f.Add("a,b,c", []byte{0, 0, 0}, "key", 2, uint64(0))
	f.Add(strings.Repeat("n,", 20)+"z", []byte{}, "k", 30, uint64(3))
	f.Add("a,b", []byte{1, 2}, "", -1, uint64(9))
	f.Fuzz(func(t *testing.T, idList string, weights []byte, key string, k int, seed uint64) {
		nodes := conformance.FuzzNodes(idList, weights)
		p, err := chash.NewJumpBack(nodes, chash.WithHasher(chash.XXHashSeed(seed)))
		if err != nil {
			if p != nil {
				t.Fatal("non-nil placer with an error")
			}
			return
		}
		chashtest.CheckTopK(t, p, key, k%60)
		if d, err := p.Remove(nodes[len(nodes)-1].ID); err == nil {
			chashtest.CheckTopK(t, d, key, k%60)
		}
	})
}

// BenchmarkJumpBackHash compares the bare functions on pre-hashed keys,
// and both with the hash of a 13-byte key, at 10 to 10⁶ buckets.
func BenchmarkJumpBackHash(b *testing.B) {
	bs, _ := conformance.BenchKeys(13)
	hs := make([]uint64, len(bs))
	for i, k := range bs {
		hs[i] = xxhash.Sum64(k)
	}
	mask := len(hs) - 1
	b.Run("hash/key=13", func(b *testing.B) {
		b.ReportAllocs()
		var s uint64
		for i := 0; i < b.N; i++ {
			s += xxhash.Sum64(bs[i&mask])
		}
		sink = s
	})
	// The floor of any JumpBackHash that agrees with hash4j: the hash and
	// the one SplitMix64 step every key needs before its first bucket.
	b.Run("hash+splitmix/key=13", func(b *testing.B) {
		b.ReportAllocs()
		var s uint64
		for i := 0; i < b.N; i++ {
			s += conformance.Mix64(xxhash.Sum64(bs[i&mask]) + 0x9e3779b97f4a7c15)
		}
		sink = s
	})
	// JumpBackHash's first step written into the loop, with no call: what
	// an inlined JumpBackHash would cost for the keys that need no retry
	// (at 64 buckets, none does).
	b.Run("firststep+hash/buckets=64/key=13", func(b *testing.B) {
		for i := range hs {
			if got, want := firstStep(hs[i], 63), chash.JumpBackHash(hs[i], 64); got != want {
				b.Fatalf("the benchmark's copy of the first step gives %d, JumpBackHash %d", got, want)
			}
		}
		b.ReportAllocs()
		s := 0
		for i := 0; i < b.N; i++ {
			s += firstStep(xxhash.Sum64(bs[i&mask]), 63)
		}
		sink = uint64(s)
	})
	// The first step alone on pre-hashed keys, with no call: the floor of
	// the bare function, beside which JumpHash's cost is set.
	b.Run("firststep/buckets=64", func(b *testing.B) {
		b.ReportAllocs()
		s := 0
		for i := 0; i < b.N; i++ {
			s += firstStep(hs[i&mask], 63)
		}
		sink = uint64(s)
	})
	for _, n := range []int{10, 64, 1000, 1_000_000} {
		// Direct calls, so that each function is inlined as a caller's
		// would be.
		b.Run(fmt.Sprintf("jumpback/buckets=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			s := 0
			for i := 0; i < b.N; i++ {
				s += chash.JumpBackHash(hs[i&mask], n)
			}
			sink = uint64(s)
		})
		b.Run(fmt.Sprintf("jump/buckets=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			s := 0
			for i := 0; i < b.N; i++ {
				s += chash.JumpHash(hs[i&mask], n)
			}
			sink = uint64(s)
		})
		b.Run(fmt.Sprintf("jumpback+hash/buckets=%d/key=13", n), func(b *testing.B) {
			b.ReportAllocs()
			s := 0
			for i := 0; i < b.N; i++ {
				s += chash.JumpBackHash(xxhash.Sum64(bs[i&mask]), n)
			}
			sink = uint64(s)
		})
		b.Run(fmt.Sprintf("jump+hash/buckets=%d/key=13", n), func(b *testing.B) {
			b.ReportAllocs()
			s := 0
			for i := 0; i < b.N; i++ {
				s += chash.JumpHash(xxhash.Sum64(bs[i&mask]), n)
			}
			sink = uint64(s)
		})
	}
}

// firstStep is JumpBackHash's first step for a power-of-two bucket count
// (mask = buckets-1), where the first range never straddles the count: a
// copy small enough to inline (TestInlining checks it), for
// BenchmarkJumpBackHash only.
func firstStep(key uint64, mask uint32) int {
	r := conformance.Mix64(key + 0x9e3779b97f4a7c15)
	x := uint32(r^r>>32) & mask
	if x == 0 {
		return 0
	}
	lo := uint32(1) << (bits.Len32(x) - 1)
	return int(lo + uint32(r>>(32*(bits.OnesCount32(x)&1)))&(lo-1))
}

func ExampleJumpBackHash() {
	// The bucket of a key among 10, then among 11: unchanged, or the new one.
	fmt.Println(chash.JumpBackHash(1, 10), chash.JumpBackHash(1, 11))
	// Output: 5 5
}

func ExampleNewJumpBack() {
	shards := []chash.Node{{ID: "shard-0"}, {ID: "shard-1"}, {ID: "shard-2"}}
	p, err := chash.NewJumpBack(shards)
	if err != nil {
		panic(err)
	}
	fmt.Println(p.LookupString("user:42").ID)
	// Output: shard-2
}
