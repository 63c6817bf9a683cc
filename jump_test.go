package chash_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/chashtest"
	"github.com/keyplace/chash/internal/conformance"
	"github.com/keyplace/chash/internal/measure"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestContractJump(t *testing.T) { chashtest.TestPlacer(t, jumpSpec()) }

// jumpSpec is the contract of jump hash with the default options.
func jumpSpec() chashtest.Spec {
	return chashtest.Spec{
		New:        conformance.Constructor(chash.NewJump),
		Ordered:    true,
		RemoveLast: true,
		MaxCV:      0.02, MaxPeak: 1.05, ShareTol: 0.05,
		Collateral: 0,
		Add: func(p chash.Placer, n chash.Node) (chash.Placer, error) {
			return p.(*chash.Jump).Add(n)
		},
		Remove: func(p chash.Placer, id string) (chash.Placer, error) {
			return p.(*chash.Jump).Remove(id)
		},
		Zero:   &chash.Jump{},
		Derive: true,
		Variants: []func() (chash.Placer, error){
			func() (chash.Placer, error) {
				return chash.NewJump(chashtest.Nodes(10), chash.WithHasher(chash.XXHashSeed(7)))
			},
			func() (chash.Placer, error) { return chash.NewJumpBack(chashtest.Nodes(10)) },
		},
	}
}

func TestJumpGolden(t *testing.T) {
	for _, tc := range []struct {
		name  string
		nodes []chash.Node
		opts  []chash.Option
	}{
		{"jump-10", chashtest.Nodes(10), nil},
		{"jump-40-seed-7", chashtest.Nodes(40), []chash.Option{chash.WithHasher(chash.XXHashSeed(7))}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := chash.NewJump(tc.nodes, tc.opts...)
			require.NoError(t, err)
			conformance.Golden(t, tc.name, p)
		})
	}
}

const jumpVectors = "testdata/jump_vectors.txt"

// TestJumpHashVectors checks JumpHash against outputs of the paper's
// function compiled with gcc (testdata/jump_vectors.c).
func TestJumpHashVectors(t *testing.T) {
	f, err := os.Open(jumpVectors)
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		var key uint64
		var buckets, want int
		_, err := fmt.Sscan(line, &key, &buckets, &want)
		require.NoError(t, err, "%s: %q", jumpVectors, line)
		assert.Equal(t, want, chash.JumpHash(key, buckets), "JumpHash(%d, %d) against the reference", key, buckets)
		n++
	}
	require.NoError(t, sc.Err())
	require.GreaterOrEqual(t, n, 2000, "vectors in %s", jumpVectors)
}

// TestJumpHashVectorsReproduce recompiles the reference generator, when a
// C compiler is available, and checks that it still prints the committed
// vectors.
func TestJumpHashVectorsReproduce(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles C")
	}
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("no gcc")
	}
	bin := filepath.Join(t.TempDir(), "jv")
	out, err := exec.Command(gcc, "-O2", "-std=c99", "-o", bin, "testdata/jump_vectors.c").CombinedOutput()
	require.NoError(t, err, "gcc: %s", out)
	got, err := exec.Command(bin).Output()
	require.NoError(t, err)
	want, err := os.ReadFile(jumpVectors)
	require.NoError(t, err)
	// The header names the compiler version, which may differ.
	_, g, _ := bytes.Cut(got, []byte("\n"))
	require.True(t, bytes.Equal(g, after(want)), "gcc output differs from %s", jumpVectors)
}

func after(b []byte) []byte {
	_, rest, _ := bytes.Cut(b, []byte("\n"))
	return rest
}

func TestJumpHashEdges(t *testing.T) {
	for _, b := range []int{0, -1, math.MinInt} {
		for _, key := range []uint64{0, 1, math.MaxUint64} {
			assert.Zero(t, chash.JumpHash(key, b), "JumpHash(%d, %d)", key, b)
		}
	}
	// Beyond the paper's 32-bit range: in range, and still consistent.
	// Only where int holds such counts (not on 32-bit platforms).
	for _, wide := range []int64{1<<31 + 1, 1 << 40, math.MaxInt64 - 1} {
		if int64(int(wide)) != wide {
			continue
		}
		b := int(wide)
		for i := uint64(0); i < 2000; i++ {
			key := i * 0x9e3779b97f4a7c15
			got, next := chash.JumpHash(key, b), chash.JumpHash(key, b+1)
			require.True(t, got >= 0 && got < b && (next == got || next == b), "JumpHash(%d, %d) = %d, with one more bucket %d", key, b, got, next)
		}
	}
}

// TestJumpHashMovement grows the bucket count one at a time: about
// 1/(n+1) of keys move, all into the new bucket.
func TestJumpHashMovement(t *testing.T) {
	const keys = 100_000
	for _, n := range []int{1, 2, 9, 10, 99, 1000} {
		moved := 0
		for i := uint64(0); i < keys; i++ {
			key := i * 0xbf58476d1ce4e5b9
			a, b := chash.JumpHash(key, n), chash.JumpHash(key, n+1)
			if a != b {
				require.Equal(t, n, b, "n=%d: key %d moved from %d, not to the new bucket", n, key, a)
				moved++
			}
		}
		want := float64(keys) / float64(n+1)
		assert.InDelta(t, want, float64(moved), 5*math.Sqrt(want), "n=%d -> %d: keys moved", n, n+1)
	}
}

func TestJumpWeights(t *testing.T) {
	for _, ws := range [][]float64{{3, 3, 3}, {0, 1, 0}, {0.25, 0.25}} {
		nodes := make([]chash.Node, len(ws))
		for i, w := range ws {
			nodes[i] = chash.Node{ID: fmt.Sprint(i), Weight: w}
		}
		_, err := chash.NewJump(nodes)
		assert.NoError(t, err, "weights %v", ws)
	}
	j, err := chash.NewJump([]chash.Node{{ID: "a", Weight: 2}, {ID: "b", Weight: 2}})
	require.NoError(t, err)
	d, err := j.Add(chash.Node{ID: "c"})
	assert.ErrorIs(t, err, chash.ErrInvalidWeight, "Add of weight 1 to weight 2")
	assert.Nil(t, d, "Add of weight 1 to weight 2")
	d, err = j.Add(chash.Node{ID: "c", Weight: 2})
	if assert.NoError(t, err, "Add of equal weight") {
		assert.Equal(t, 3, d.Len(), "Add of equal weight")
	}
}

func TestJumpRemove(t *testing.T) {
	j, err := chash.NewJump(chashtest.Nodes(10))
	require.NoError(t, err)
	_, err = j.Remove("node-4")
	if assert.ErrorIs(t, err, chash.ErrNotLast, "Remove(middle)") {
		assert.Contains(t, err.Error(), `"node-4" is bucket 4 of 10`, "Remove(middle) names the node")
	}
	_, err = j.Remove("node-9", "node-7")
	assert.ErrorIs(t, err, chash.ErrNotLast, "Remove(last, not second-last)")
	d, err := j.Remove("node-8", "node-9", "node-9")
	require.NoError(t, err)
	assert.Equal(t, measure.IDs(chashtest.Nodes(8)), measure.IDs(d.Nodes()), "after removing the last two")
	_, err = j.Remove("nope")
	assert.ErrorIs(t, err, chash.ErrUnknownNode, "Remove(unknown)")
	_, err = j.Remove(measure.IDs(j.Nodes())...)
	assert.ErrorIs(t, err, chash.ErrNoNodes, "Remove(all)")
	assert.Equal(t, 10, j.Len(), "Remove changed the receiver")
}

// TestJumpReplace swaps a middle node: only its keys move, all to the
// replacement.
func TestJumpReplace(t *testing.T) {
	nodes := chashtest.Nodes(10)
	j, err := chash.NewJump(nodes)
	require.NoError(t, err)
	r, err := j.Replace("node-4", chash.Node{ID: "node-4b"})
	require.NoError(t, err)
	before, after := conformance.Owners(j), conformance.Owners(r)
	moved := 0
	for i := range before {
		if before[i] != after[i] {
			moved++
			require.True(t, before[i] == "node-4" && after[i] == "node-4b", "key moved from %s to %s", before[i], after[i])
		}
		if before[i] == "node-4" {
			require.Equal(t, "node-4b", after[i], "a key of node-4 went elsewhere")
		}
	}
	assert.NotZero(t, moved, "no key moved to the replacement")
	_, err = j.Replace("node-4", chash.Node{ID: "node-5"})
	assert.ErrorIs(t, err, chash.ErrDuplicateID, "Replace with an existing ID")
	_, err = j.Replace("node-4", chash.Node{ID: "x", Weight: 2})
	assert.ErrorIs(t, err, chash.ErrInvalidWeight, "Replace with another weight")
	_, err = j.Replace("nope", chash.Node{ID: "x"})
	assert.ErrorIs(t, err, chash.ErrUnknownNode, "Replace(unknown)")
	same, err := j.Replace("node-4", chash.Node{ID: "node-4"})
	if assert.NoError(t, err, "Replace with itself") {
		assert.Equal(t, before, conformance.Owners(same), "Replace with itself")
	}
}

// TestJumpTopK checks the secondaries: every node is in the top 3 of
// about 3/n of keys, whole rankings (past the 16 jump-drawn choices) are
// complete, and appending a bucket changes a ranking first at the new
// bucket.
func TestJumpTopK(t *testing.T) {
	const n = 10
	j, err := chash.NewJump(chashtest.Nodes(n))
	require.NoError(t, err)
	grown, err := j.Add(chash.Node{ID: "node-10"})
	require.NoError(t, err)
	count := map[string]int{}
	// byRank[r] counts, per node, the keys for which it is choice r+1.
	byRank := [3]map[string]int{{}, {}, {}}
	a := make([]chash.Node, 0, 3)
	b := make([]chash.Node, 0, 3)
	keys := chashtest.Keys(conformance.NumKeys)
	for _, k := range keys {
		a = j.AppendTopKString(a[:0], k, 3)
		for r, nd := range a {
			count[nd.ID]++
			byRank[r][nd.ID]++
		}
		b = grown.AppendTopKString(b[:0], k, 3)
		for i := range a {
			if a[i] != b[i] {
				require.Equal(t, "node-10", b[i].ID, "key %q: top 3 %v became %v", k, measure.IDs(a), measure.IDs(b))
				break
			}
		}
	}
	// Every node, not only those that appear: a node absent from every
	// top 3 must fail here too.
	for _, nd := range j.Nodes() {
		share := float64(count[nd.ID]) / float64(len(keys))
		assert.InDelta(t, 1, share*n/3, 0.03, "%s is in the top 3 of %.4f of keys, want %.4f", nd.ID, share, 3.0/n)
		for r := range byRank {
			c := byRank[r][nd.ID]
			assert.InDelta(t, 1, float64(c)*n/float64(len(keys)), 0.05, "%s is choice %d of %d keys, want about %d", nd.ID, r+1, c, len(keys)/n)
		}
	}
	assert.Len(t, count, n, "distinct nodes in the top 3 lists")
	big, err := chash.NewJump(chashtest.Nodes(40))
	require.NoError(t, err)
	for _, k := range keys[:2000] {
		got := measure.IDs(big.AppendTopKString(nil, k, 40))
		slices.Sort(got)
		require.Len(t, slices.Compact(got), 40, "key %q: distinct nodes in the whole ranking", k)
	}
}

func FuzzJumpHash(f *testing.F) {
	f.Add(uint64(0), 1)
	f.Add(uint64(math.MaxUint64), math.MaxInt)
	f.Add(uint64(12345), -7)
	f.Fuzz(func(t *testing.T, key uint64, buckets int) {
		got := chash.JumpHash(key, buckets)
		require.True(t, got >= 0 && got < max(buckets, 1), "JumpHash(%d, %d) = %d: out of range", key, buckets, got)
		if buckets > 0 && buckets < math.MaxInt {
			next := chash.JumpHash(key, buckets+1)
			require.True(t, next == got || next == buckets, "JumpHash(%d, %d) = %d but with one more bucket %d", key, buckets, got, next)
		}
	})
}

func FuzzJump(f *testing.F) {
	f.Add("a,b,c", []byte{0, 0, 0}, "key", 2, uint64(0))
	f.Add(strings.Repeat("n,", 20)+"z", []byte{}, "k", 30, uint64(3))
	f.Add("a,b", []byte{1, 2}, "", -1, uint64(9))
	f.Fuzz(func(t *testing.T, idList string, weights []byte, key string, k int, seed uint64) {
		nodes := conformance.FuzzNodes(idList, weights)
		p, err := chash.NewJump(nodes, chash.WithHasher(chash.XXHashSeed(seed)))
		if err != nil {
			require.Nil(t, p, "non-nil placer with an error")
			return
		}
		chashtest.CheckTopK(t, p, key, k%60)
		last := nodes[len(nodes)-1].ID
		if d, err := p.Remove(last); err == nil {
			chashtest.CheckTopK(t, d, key, k%60)
		}
	})
}

func ExampleJumpHash() {
	// The bucket of key 1 among 10, then among 11: unchanged, or the new one.
	fmt.Println(chash.JumpHash(1, 10), chash.JumpHash(1, 11))
	// Output: 6 6
}

func ExampleNewJump() {
	shards := []chash.Node{{ID: "shard-0"}, {ID: "shard-1"}, {ID: "shard-2"}}
	j, err := chash.NewJump(shards)
	if err != nil {
		panic(err)
	}
	fmt.Println(j.LookupString("user:42").ID)
	// Output: shard-0
}

func ExampleJump_Remove() {
	j, err := chash.NewJump(chashtest.Nodes(4))
	if err != nil {
		panic(err)
	}
	_, err = j.Remove("node-1")
	fmt.Println(errors.Is(err, chash.ErrNotLast))
	fmt.Println(err)
	smaller, err := j.Remove("node-3") // the last bucket: only its keys move
	fmt.Println(smaller.Len(), err)
	// Output:
	// true
	// chash: jump can remove only the last node: "node-1" is bucket 1 of 4; removing it would renumber buckets 2 to 3 and move most of their keys (use Replace to swap it in place)
	// 3 <nil>
}
