package chash_test

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/chashtest"
	"github.com/keyplace/chash/internal/conformance"
	"github.com/keyplace/chash/internal/measure"
)

func TestContractChooseK(t *testing.T) {
	chashtest.TestPlacer(t, chashtest.Spec{
		New:     conformance.Constructor(chash.NewChooseK),
		Ordered: true,
		MaxCV:   0.02, MaxPeak: 1.05, ShareTol: 0.05,
		Add: func(p chash.Placer, n chash.Node) (chash.Placer, error) {
			return p.(*chash.ChooseK).Add(n)
		},
		Remove: func(p chash.Placer, id string) (chash.Placer, error) {
			return p.(*chash.ChooseK).Remove(id)
		},
		Next:   chash.Derive,
		Zero:   &chash.ChooseK{},
		Derive: true,
		Variants: []func() (chash.Placer, error){
			func() (chash.Placer, error) {
				return chash.NewChooseK(chashtest.Nodes(10), chash.WithHasher(chash.XXHashSeed(7)))
			},
			func() (chash.Placer, error) { return chash.NewJumpBackAnchor(chashtest.Nodes(10)) },
			func() (chash.Placer, error) {
				p, err := chash.NewChooseK(chashtest.Nodes(11))
				if err != nil {
					return nil, err
				}
				return p.Remove("node-3")
			},
		},
	})
}

func TestChooseKGolden(t *testing.T) {
	p, err := chash.NewChooseK(chashtest.Nodes(10))
	require.NoError(t, err)
	conformance.Golden(t, "choosek-10", p)
	q, err := chash.NewChooseK(chashtest.Nodes(40), chash.WithHasher(chash.XXHashSeed(7)))
	require.NoError(t, err)
	q, err = q.Remove("node-3", "node-17", "node-39", "node-0")
	require.NoError(t, err)
	conformance.Golden(t, "choosek-40-removed-4-seed-7", q)
}

// TestChooseKVectorsReproduce rebuilds the vectors from the crate when
// RUST_GEMS names a checkout of github/rust-gems and rustc is installed,
// and checks that they are the committed ones.
func TestChooseKVectorsReproduce(t *testing.T) {
	src := os.Getenv("RUST_GEMS")
	if testing.Short() || src == "" {
		t.Skip("set RUST_GEMS to a checkout of github.com/github/rust-gems to rebuild the vectors")
	}
	if _, err := exec.LookPath("rustc"); err != nil {
		t.Skip("no rustc")
	}
	got, err := exec.Command("sh", filepath.Join("testdata", "choosek", "gen", "build.sh"), src).Output()
	require.NoError(t, err)
	want, err := os.ReadFile(filepath.Join("testdata", "choosek", "vectors.tsv"))
	require.NoError(t, err)
	require.True(t, bytes.Equal(got, want), "the crate's output differs from testdata/choosek/vectors.tsv")
}

// TestChooseKDrain removes all but a few of 1,000 nodes (300 in -short and
// under the race detector): lookups and top-k still end on the nodes that
// remain, and agree with the whole ranking.
func TestChooseKDrain(t *testing.T) {
	n, keys := 1000, 100
	if testing.Short() || raceEnabled {
		n, keys = 300, 20
	}
	ids := measure.IDs(chashtest.Nodes(n))
	rand.New(rand.NewPCG(9, 10)).Shuffle(n, func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	for _, left := range []int{n / 30, 3, 1} {
		p, err := chash.NewChooseK(chashtest.Nodes(n))
		require.NoError(t, err)
		p, err = p.Remove(ids[:n-left]...)
		require.NoError(t, err)
		e := p.Engine()
		live := measure.IDs(p.Nodes())
		start := time.Now()
		for i, k := range chashtest.Keys(keys) {
			got := p.AppendTopKString(nil, k, 3)
			require.Len(t, got, min(3, left))
			require.Contains(t, live, got[0].ID)
			if i < 3 {
				// The slow path agrees with walking the whole ranking.
				h := xxhash.Sum64String(k)
				var want []int
				for _, s := range chash.AppendChooseK(nil, h, e.Size(), e.Size()) {
					if e.Working(s) && len(want) < 3 {
						want = append(want, s)
					}
				}
				require.Equal(t, want, e.AppendBuckets(nil, h, 3), "key %q", k)
			}
		}
		t.Logf("%d of %d slots working: %d top-3 lookups in %v", left, e.Size(), keys, time.Since(start))
	}
}

// TestChooseKRestore rebuilds a placer from its Nodes and its engine's
// bytes, as another process would.
func TestChooseKRestore(t *testing.T) {
	p, err := chash.NewChooseK(chashtest.Nodes(30))
	require.NoError(t, err)
	p, err = p.Remove("node-4", "node-29", "node-11")
	require.NoError(t, err)
	p, err = p.Add(chash.Node{ID: "new-a"})
	require.NoError(t, err)
	e := p.Engine()
	state, err := e.MarshalBinary()
	require.NoError(t, err)
	var got chash.ChooseKEngine
	require.NoError(t, got.UnmarshalBinary(state))
	q, err := chash.NewChooseKFrom(got, p.Nodes())
	require.NoError(t, err)
	assert.Equal(t, chash.Fingerprint(p), chash.Fingerprint(q))
	keys := chashtest.Keys(5000)
	assert.Equal(t, measure.Owners(p, keys), measure.Owners(q, keys))
	_, err = chash.NewChooseKFrom(got, p.Nodes()[1:])
	assert.ErrorIs(t, err, chash.ErrInvalidState)
	nodes := p.Nodes()
	slices.Reverse(nodes)
	d, err := chash.Derive(p, nodes)
	require.NoError(t, err)
	assert.Equal(t, chash.Fingerprint(p), chash.Fingerprint(d))
	for _, bad := range [][]byte{nil, {0x80}, {3, 1}, {3, 1, 3}, {3, 2, 1, 0}, {3, 0, 1}, {0x80, 0x80, 0x80, 0x10, 0}} {
		var e chash.ChooseKEngine
		assert.Error(t, e.UnmarshalBinary(bad), "%x", bad)
	}
}

func TestChooseKMembership(t *testing.T) {
	p, err := chash.NewChooseK(chashtest.Nodes(10))
	require.NoError(t, err)
	_, err = p.Remove("nope")
	assert.ErrorIs(t, err, chash.ErrUnknownNode)
	_, err = p.Remove(measure.IDs(p.Nodes())...)
	assert.ErrorIs(t, err, chash.ErrNoNodes)
	_, err = p.Add(chash.Node{ID: "x", Weight: 2})
	assert.ErrorIs(t, err, chash.ErrInvalidWeight)
	_, err = p.Add(chash.Node{ID: "node-3"})
	assert.ErrorIs(t, err, chash.ErrDuplicateID)
	_, err = chash.NewChooseK(nil)
	assert.ErrorIs(t, err, chash.ErrNoNodes)
	r, err := p.Replace("node-4", chash.Node{ID: "node-4b"})
	require.NoError(t, err)
	for _, k := range chashtest.Keys(3000) {
		if a, b := p.LookupString(k).ID, r.LookupString(k).ID; a != b {
			require.Equal(t, "node-4", a)
			require.Equal(t, "node-4b", b)
		}
	}
	var zero *chash.ChooseK
	_, err = zero.Remove("a")
	assert.ErrorIs(t, err, chash.ErrUnknownNode)
	q, err := zero.Add(chash.Node{ID: "a"})
	require.NoError(t, err)
	assert.Equal(t, 1, q.Len())
	var e chash.ChooseKEngine
	assert.Equal(t, -1, e.Bucket(1))
	assert.Empty(t, chash.AppendChooseK(nil, 1, 0, 3))
	assert.Equal(t, []int{0}, chash.AppendChooseK(nil, 1, 1, 3))
}

func FuzzChooseKEngine(f *testing.F) {
	f.Add([]byte{10, 2, 4, 3}, uint64(1), 3)
	f.Add([]byte{0, 0}, uint64(2), 1)
	f.Fuzz(func(t *testing.T, data []byte, key uint64, k int) {
		var e chash.ChooseKEngine
		if err := e.UnmarshalBinary(data); err != nil {
			return
		}
		out, _ := e.MarshalBinary()
		var back chash.ChooseKEngine
		if err := back.UnmarshalBinary(out); err != nil {
			t.Fatalf("state %x reads back with %v", out, err)
		}
		got := e.AppendBuckets(nil, key, k%20)
		if len(got) != min(max(k%20, 0), e.Len()) {
			t.Fatalf("state %x: %d slots for k=%d", data, len(got), k%20)
		}
		for i, s := range got {
			if !e.Working(s) || slices.Contains(got[:i], s) {
				t.Fatalf("state %x: slots %v", data, got)
			}
		}
	})
}

func FuzzChooseK(f *testing.F) {
	f.Add("a,b,c", []byte{0, 0, 0}, "key", 2, uint64(0), uint8(1))
	f.Add("a,b,c,d,e,f", []byte{}, "k", 30, uint64(3), uint8(0xfe))
	f.Fuzz(func(t *testing.T, idList string, weights []byte, key string, k int, seed uint64, drop uint8) {
		nodes := conformance.FuzzNodes(idList, weights)
		p, err := chash.NewChooseK(nodes, chash.WithHasher(chash.XXHashSeed(seed)))
		if err != nil {
			if p != nil {
				t.Fatal("non-nil placer with an error")
			}
			return
		}
		chashtest.CheckTopK(t, p, key, k%60)
		var ids []string
		for i, n := range nodes {
			if drop>>(i%8)&1 != 0 {
				ids = append(ids, n.ID)
			}
		}
		if d, err := p.Remove(ids...); err == nil {
			chashtest.CheckTopK(t, d, key, k%60)
		}
	})
}

// BenchmarkChooseK measures ChooseK's lookups at 10^3 and 10^6 nodes (and
// at 10^3 with 10% and 50% removed), and its top-3 at 64 nodes beside
// rendezvous' top-3, on 13-byte keys; BenchmarkHash/key=13 is the bare
// hash of the same keys.
func BenchmarkChooseK(b *testing.B) {
	_, ss := conformance.BenchKeys(13)
	mask := len(ss) - 1
	for _, n := range []int{1000, 1_000_000} {
		p, err := chash.NewChooseK(bigNodes()[:n])
		require.NoError(b, err)
		b.Run(fmt.Sprintf("lookup/nodes=%d/key=13", n), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				sinkNode = p.LookupString(ss[i&mask])
			}
		})
	}
	order := rand.New(rand.NewPCG(1, 2)).Perm(1000)
	for _, pct := range []int{10, 50} {
		p, err := chash.NewChooseK(bigNodes()[:1000])
		require.NoError(b, err)
		var ids []string
		for _, i := range order[:10*pct] {
			ids = append(ids, fmt.Sprintf("node-%d", i))
		}
		p, err = p.Remove(ids...)
		require.NoError(b, err)
		b.Run(fmt.Sprintf("lookup/nodes=1000/removed=%d%%/key=13", pct), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				sinkNode = p.LookupString(ss[i&mask])
			}
		})
	}
	ck, err := chash.NewChooseK(chashtest.Nodes(64))
	require.NoError(b, err)
	rv, err := chash.NewRendezvous(chashtest.Nodes(64))
	require.NoError(b, err)
	for _, c := range []struct {
		name string
		p    chash.Placer
	}{{"choosek", ck}, {"rendezvous", rv}} {
		b.Run(fmt.Sprintf("top3/%s/nodes=64/key=13", c.name), func(b *testing.B) {
			dst := make([]chash.Node, 0, 3)
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				dst = c.p.AppendTopKString(dst[:0], ss[i&mask], 3)
			}
		})
	}
}

func ExampleAppendChooseK() {
	// The first 3 of key 42's ranking of 10 slots, then of 11: at most one
	// slot changes, to the new slot 10.
	fmt.Println(chash.AppendChooseK(nil, 42, 10, 3), chash.AppendChooseK(nil, 42, 11, 3))
	// Output: [3 5 7] [3 5 7]
}

func ExampleNewChooseK() {
	p, err := chash.NewChooseK(chashtest.Nodes(5))
	if err != nil {
		panic(err)
	}
	// Three replicas, the first Lookup's.
	fmt.Println(measure.IDs(p.AppendTopKString(nil, "user:42", 3)))
	// Any node can leave, in any order: the state depends only on who is left.
	a, _ := p.Remove("node-1", "node-3")
	b, _ := p.Remove("node-3", "node-1")
	ea, eb := a.Engine(), b.Engine()
	sa, _ := ea.MarshalBinary()
	sb, _ := eb.MarshalBinary()
	fmt.Println(hex.EncodeToString(sa), bytes.Equal(sa, sb), chash.Fingerprint(a) == chash.Fingerprint(b))
	// Output:
	// [node-2 node-4 node-0]
	// 05020202 true true
}
