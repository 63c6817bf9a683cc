package chash_test

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/chashtest"
	"github.com/keyplace/chash/internal/conformance"
	"github.com/keyplace/chash/internal/measure"
)

func TestContractFlip(t *testing.T) {
	chashtest.TestPlacer(t, chashtest.Spec{
		New:        conformance.Constructor(chash.NewFlip),
		Ordered:    true,
		RemoveLast: true,
		MaxCV:      0.02, MaxPeak: 1.05, ShareTol: 0.05,
		Add: func(p chash.Placer, n chash.Node) (chash.Placer, error) {
			return p.(*chash.Flip).Add(n)
		},
		Remove: func(p chash.Placer, id string) (chash.Placer, error) {
			return p.(*chash.Flip).Remove(id)
		},
		Zero:   &chash.Flip{},
		Derive: true,
		Variants: []func() (chash.Placer, error){
			func() (chash.Placer, error) {
				return chash.NewFlip(chashtest.Nodes(10), chash.WithHasher(chash.XXHashSeed(7)))
			},
			func() (chash.Placer, error) { return chash.NewJumpBack(chashtest.Nodes(10)) },
		},
	})
}

func TestFlipGolden(t *testing.T) {
	for _, tc := range []struct {
		name  string
		nodes []chash.Node
		opts  []chash.Option
	}{
		{"flip-10", chashtest.Nodes(10), nil},
		{"flip-40-seed-7", chashtest.Nodes(40), []chash.Option{chash.WithHasher(chash.XXHashSeed(7))}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := chash.NewFlip(tc.nodes, tc.opts...)
			require.NoError(t, err)
			conformance.Golden(t, tc.name, p)
		})
	}
}

// TestFlipHashVectorsReproduce rebuilds the vectors from Datadog's crate
// when FLIPHASH_RS names a checkout of it and rustc is installed, and
// checks that they are the committed ones.
func TestFlipHashVectorsReproduce(t *testing.T) {
	src := os.Getenv("FLIPHASH_RS")
	if testing.Short() || src == "" {
		t.Skip("set FLIPHASH_RS to a checkout of github.com/DataDog/fliphash-rs to rebuild the vectors")
	}
	if _, err := exec.LookPath("rustc"); err != nil {
		t.Skip("no rustc")
	}
	got, err := exec.Command("sh", filepath.Join("testdata", "fliphash", "gen", "build.sh"), src).Output()
	require.NoError(t, err)
	want, err := os.ReadFile(filepath.Join("testdata", "fliphash", "vectors.tsv"))
	require.NoError(t, err)
	require.True(t, bytes.Equal(got, want), "the crate's output differs from testdata/fliphash/vectors.tsv")
}

func TestFlipHashEdges(t *testing.T) {
	for _, b := range []int{1, 0, -1, math.MinInt} {
		for _, key := range []uint64{0, 1, math.MaxUint64} {
			assert.Zero(t, chash.FlipHash(key, b), "FlipHash(%d, %d)", key, b)
		}
	}
	for _, wide := range []int64{1<<31 + 1, 1 << 40, math.MaxInt64 - 1} {
		if int64(int(wide)) != wide {
			continue // a 32-bit int
		}
		b := int(wide)
		for i := uint64(0); i < 2000; i++ {
			key := i * 0x9e3779b97f4a7c15
			got, next := chash.FlipHash(key, b), chash.FlipHash(key, b+1)
			require.True(t, got >= 0 && got < b && (next == got || next == b), "FlipHash(%d, %d) = %d, with one more bucket %d", key, b, got, next)
		}
	}
}

// TestFlipHashMonotone is the defining property, per key: with one more
// bucket a key stays where it was or moves to the new bucket, at every count
// from 1 to 3,000 and around powers of two up to 2^62.
func TestFlipHashMonotone(t *testing.T) {
	var counts []int
	for n := 1; n < 3000; n++ {
		counts = append(counts, n)
	}
	for s := 12; s <= 62; s++ {
		for d := -3; d <= 2; d++ {
			if n := int64(1)<<s + int64(d); int64(int(n)) == n {
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
			if n == math.MaxInt {
				continue // n+1 overflows (2^31-1 on 386)
			}
			a, b := chash.FlipHash(key, n), chash.FlipHash(key, n+1)
			if a < 0 || a >= n || (b != a && b != n) {
				t.Fatalf("key %016x: %d buckets give %d, %d buckets give %d", key, n, a, n+1, b)
			}
		}
	}
}

// TestFlipHashBalance checks that keys spread evenly (a chi-squared bound),
// and that growing from n to n+1 buckets moves about 1/(n+1) of them.
func TestFlipHashBalance(t *testing.T) {
	const keys = 200_000
	for _, n := range []int{2, 3, 10, 64, 100, 1000} {
		load := make([]int, n)
		moved := 0
		for i := uint64(0); i < keys; i++ {
			key := i * 0xbf58476d1ce4e5b9
			a := chash.FlipHash(key, n)
			load[a]++
			if chash.FlipHash(key, n+1) != a {
				moved++
			}
		}
		chi := 0.0
		mean := float64(keys) / float64(n)
		for _, l := range load {
			chi += (float64(l) - mean) * (float64(l) - mean) / mean
		}
		assert.Less(t, chi, float64(n-1)+6*math.Sqrt(2*float64(n-1))+10, "n=%d: chi² %.1f", n, chi)
		want := float64(keys) / float64(n+1)
		assert.InDelta(t, want, float64(moved), 5*math.Sqrt(want), "n=%d -> %d: keys moved", n, n+1)
	}
}

func TestFlipMembership(t *testing.T) {
	p, err := chash.NewFlip(chashtest.Nodes(10))
	require.NoError(t, err)
	_, err = p.Remove("node-4")
	assert.ErrorIs(t, err, chash.ErrNotLast)
	_, err = p.Remove("nope")
	assert.ErrorIs(t, err, chash.ErrUnknownNode)
	_, err = p.Remove(measure.IDs(p.Nodes())...)
	assert.ErrorIs(t, err, chash.ErrNoNodes)
	_, err = p.Add(chash.Node{ID: "x", Weight: 2})
	assert.ErrorIs(t, err, chash.ErrInvalidWeight)
	_, err = chash.NewFlip(nil)
	assert.ErrorIs(t, err, chash.ErrNoNodes)
	assert.True(t, chash.IsPositional(p))

	d, err := p.Remove("node-8", "node-9")
	require.NoError(t, err)
	assert.Equal(t, measure.IDs(chashtest.Nodes(8)), measure.IDs(d.Nodes()))

	r, err := p.Replace("node-4", chash.Node{ID: "node-4b"})
	require.NoError(t, err)
	for _, k := range chashtest.Keys(5000) {
		a, b := p.LookupString(k).ID, r.LookupString(k).ID
		if a != b {
			require.Equal(t, "node-4", a)
			require.Equal(t, "node-4b", b)
		}
	}
	var zero *chash.Flip
	_, err = zero.Remove("a")
	assert.ErrorIs(t, err, chash.ErrUnknownNode)
	_, err = zero.Replace("a", chash.Node{ID: "b"})
	assert.ErrorIs(t, err, chash.ErrUnknownNode)
	q, err := zero.Add(chash.Node{ID: "a"})
	require.NoError(t, err)
	assert.Equal(t, 1, q.Len())
}

func FuzzFlipHash(f *testing.F) {
	f.Add(uint64(0), 1)
	f.Add(uint64(math.MaxUint64), math.MaxInt)
	f.Add(uint64(12345), -7)
	f.Fuzz(func(t *testing.T, key uint64, buckets int) {
		got := chash.FlipHash(key, buckets)
		if got < 0 || got >= max(buckets, 1) {
			t.Fatalf("FlipHash(%d, %d) = %d: out of range", key, buckets, got)
		}
		if buckets > 0 && buckets < math.MaxInt {
			if next := chash.FlipHash(key, buckets+1); next != got && next != buckets {
				t.Fatalf("FlipHash(%d, %d) = %d but with one more bucket %d", key, buckets, got, next)
			}
		}
	})
}

func FuzzFlip(f *testing.F) {
	f.Add("a,b,c", []byte{0, 0, 0}, "key", 2, uint64(0))
	f.Add("a,b", []byte{1, 2}, "", -1, uint64(9))
	f.Fuzz(func(t *testing.T, idList string, weights []byte, key string, k int, seed uint64) {
		nodes := conformance.FuzzNodes(idList, weights)
		p, err := chash.NewFlip(nodes, chash.WithHasher(chash.XXHashSeed(seed)))
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

// bigNodes returns 10^6 nodes, built once for the benchmarks.
var bigNodes = sync.OnceValue(func() []chash.Node { return chashtest.Nodes(1_000_000) })

// BenchmarkFlipHash measures FlipHash beside JumpBackHash and JumpHash on
// the same pre-hashed keys, and each after the hash of a 13-byte key, at
// 10^3 and 10^6 buckets; BenchmarkHash/key=13 is the bare hash they are
// compared with. The flip/placer cases are Flip.LookupString.
func BenchmarkFlipHash(b *testing.B) {
	bs, ss := conformance.BenchKeys(13)
	hs := make([]uint64, len(bs))
	for i, k := range bs {
		hs[i] = xxhash.Sum64(k)
	}
	mask := len(hs) - 1
	engines := []struct {
		name string
		f    func(uint64, int) int
	}{{"flip", chash.FlipHash}, {"jumpback", chash.JumpBackHash}, {"jump", chash.JumpHash}}
	for _, n := range []int{1000, 1_000_000} {
		for _, e := range engines {
			b.Run(fmt.Sprintf("%s/buckets=%d", e.name, n), func(b *testing.B) {
				b.ReportAllocs()
				s := 0
				for i := 0; i < b.N; i++ {
					s += e.f(hs[i&mask], n)
				}
				sink = uint64(s)
			})
		}
		b.Run(fmt.Sprintf("flip+hash/buckets=%d/key=13", n), func(b *testing.B) {
			b.ReportAllocs()
			s := 0
			for i := 0; i < b.N; i++ {
				s += chash.FlipHash(xxhash.Sum64(bs[i&mask]), n)
			}
			sink = uint64(s)
		})
		b.Run(fmt.Sprintf("flip/placer/nodes=%d/key=13", n), func(b *testing.B) {
			p, err := chash.NewFlip(bigNodes()[:n])
			require.NoError(b, err)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				sinkNode = p.LookupString(ss[i&mask])
			}
		})
	}
}

func ExampleFlipHash() {
	// The bucket of a key among 10, then among 11: unchanged, or the new one.
	fmt.Println(chash.FlipHash(1, 10), chash.FlipHash(1, 11))
	// Output: 9 9
}

func ExampleNewFlip() {
	shards := []chash.Node{{ID: "shard-0"}, {ID: "shard-1"}, {ID: "shard-2"}}
	p, err := chash.NewFlip(shards)
	if err != nil {
		panic(err)
	}
	fmt.Println(p.LookupString("user:42").ID)
	// Output: shard-1
}
