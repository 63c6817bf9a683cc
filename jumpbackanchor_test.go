package chash_test

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
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

func TestContractJumpBackAnchor(t *testing.T) {
	chashtest.TestPlacer(t, chashtest.Spec{
		New:     conformance.Constructor(chash.NewJumpBackAnchor),
		Ordered: true,
		MaxCV:   0.02, MaxPeak: 1.05, ShareTol: 0.05,
		Add: func(p chash.Placer, n chash.Node) (chash.Placer, error) {
			return p.(*chash.JumpBackAnchor).Add(n)
		},
		Remove: func(p chash.Placer, id string) (chash.Placer, error) {
			return p.(*chash.JumpBackAnchor).Remove(id)
		},
		Next:   chash.Derive,
		Zero:   &chash.JumpBackAnchor{},
		Derive: true,
		Variants: []func() (chash.Placer, error){
			func() (chash.Placer, error) {
				return chash.NewJumpBackAnchor(chashtest.Nodes(10), chash.WithHasher(chash.XXHashSeed(7)))
			},
			func() (chash.Placer, error) { return chash.NewJumpBack(chashtest.Nodes(10)) },
			func() (chash.Placer, error) {
				p, err := chash.NewJumpBackAnchor(chashtest.Nodes(11))
				if err != nil {
					return nil, err
				}
				return p.Remove("node-3")
			},
		},
	})
}

func TestJumpBackAnchorGolden(t *testing.T) {
	p, err := chash.NewJumpBackAnchor(chashtest.Nodes(10))
	require.NoError(t, err)
	conformance.Golden(t, "jumpbackanchor-10", p)
	q, err := chash.NewJumpBackAnchor(chashtest.Nodes(40), chash.WithHasher(chash.XXHashSeed(7)))
	require.NoError(t, err)
	q, err = q.Remove("node-3", "node-17", "node-39", "node-0")
	require.NoError(t, err)
	conformance.Golden(t, "jumpbackanchor-40-removed-4-seed-7", q)
}

// TestJumpBackAnchorVectors replays the histories of
// testdata/jumpbackanchor/vectors.tsv, printed by hash4j's own
// ConsistentJumpBackAnchorBucketSetHasher (testdata/jumpbackanchor/gen),
// on a JumpBackAnchorEngine: every bucket added, every removal's outcome,
// every serialised state, every key's bucket, also from an engine restored
// from the state, and whether setState accepts a state must agree.
func TestJumpBackAnchorVectors(t *testing.T) {
	f, err := os.Open("testdata/jumpbackanchor/vectors.tsv")
	require.NoError(t, err)
	defer f.Close()
	var e, restored chash.JumpBackAnchorEngine
	lines, buckets := 0, 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		c := strings.Split(line, "\t")
		lines++
		switch c[0] {
		case "new":
			e, restored = chash.JumpBackAnchorEngine{}, chash.JumpBackAnchorEngine{}
		case "add":
			for _, want := range expandRuns(t, c[2]) {
				got, err := e.Add()
				require.NoError(t, err, line)
				require.Equal(t, want, got, line)
			}
		case "remove":
			b, _ := strconv.Atoi(c[2])
			err := e.Remove(b)
			require.Equal(t, c[3] == "1", err == nil, "%s: %v", line, err)
			if err != nil {
				require.ErrorIs(t, err, chash.ErrUnknownNode)
			}
		case "state":
			got, err := e.MarshalBinary()
			require.NoError(t, err)
			require.Equal(t, c[2], hex.EncodeToString(got), line)
			require.NoError(t, restored.UnmarshalBinary(got), line)
		case "bucket":
			key, err := strconv.ParseUint(c[2], 16, 64)
			require.NoError(t, err, line)
			want, _ := strconv.Atoi(c[3])
			require.Equal(t, want, e.Bucket(key), line)
			require.Equal(t, want, restored.Bucket(key), "%s: from the restored state", line)
			buckets++
		case "setstate":
			data, err := hex.DecodeString(c[1])
			require.NoError(t, err, line)
			var s chash.JumpBackAnchorEngine
			err = s.UnmarshalBinary(data)
			require.Equal(t, c[2] == "1", err == nil, "%s: %v", line, err)
			if err != nil {
				require.ErrorIs(t, err, chash.ErrInvalidState)
			}
		default:
			t.Fatalf("unknown line %q", line)
		}
	}
	require.NoError(t, sc.Err())
	require.GreaterOrEqual(t, buckets, 1800)
	t.Logf("%d lines, %d lookups agree", lines, buckets)
}

// expandRuns reads "0-9,12" as 0, 1, ..., 9, 12.
func expandRuns(t *testing.T, s string) []int {
	var out []int
	for _, part := range strings.Split(s, ",") {
		a, b, ok := strings.Cut(part, "-")
		lo, err := strconv.Atoi(a)
		require.NoError(t, err, s)
		hi := lo
		if ok {
			hi, err = strconv.Atoi(b)
			require.NoError(t, err, s)
		}
		for v := lo; v <= hi; v++ {
			out = append(out, v)
		}
	}
	return out
}

// TestJumpBackAnchorSharedSample checks the project's shared sample of
// hash4j's outputs (testdata/jumpbackanchor/shared_sample.txt, a copy of
// shared/vectors/algorithms/jumpbackanchor_hash4j.sample.txt), whose
// scenario names are the histories: add10-rm3-rm7-add is 10 buckets added,
// bucket 3 then 7 removed, and one bucket added.
func TestJumpBackAnchorSharedSample(t *testing.T) {
	f, err := os.Open("testdata/jumpbackanchor/shared_sample.txt")
	require.NoError(t, err)
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		c := strings.Fields(sc.Text())
		if len(c) < 3 || strings.HasPrefix(c[0], "#") {
			continue
		}
		e, _ := replayScenario(t, c[1])
		switch c[0] {
		case "jbastate":
			got, _ := e.MarshalBinary()
			require.Equal(t, c[2], hex.EncodeToString(got), sc.Text())
		case "jba":
			key, err := strconv.ParseUint(c[2], 16, 64)
			require.NoError(t, err)
			want, _ := strconv.Atoi(c[3])
			require.Equal(t, want, e.Bucket(key), sc.Text())
		case "jbaadd":
			e2, readded := replayScenario(t, c[1]+"-add")
			require.Equal(t, c[2], "readded="+strconv.Itoa(readded(e2)), sc.Text())
		}
		n++
	}
	require.NoError(t, sc.Err())
	require.GreaterOrEqual(t, n, 90)
}

// replayScenario builds the engine a sample scenario name describes, and
// a function that reports the bucket its trailing "-add" returned.
func replayScenario(t *testing.T, name string) (*chash.JumpBackAnchorEngine, func(*chash.JumpBackAnchorEngine) int) {
	var e chash.JumpBackAnchorEngine
	last := -1
	for _, step := range strings.Split(name, "-") {
		switch {
		case strings.HasPrefix(step, "add") && len(step) > 3:
			n, err := strconv.Atoi(step[3:])
			require.NoError(t, err, name)
			for range n {
				_, err := e.Add()
				require.NoError(t, err)
			}
		case step == "add":
			b, err := e.Add()
			require.NoError(t, err)
			last = b
		case strings.HasPrefix(step, "rm"):
			b, err := strconv.Atoi(step[2:])
			require.NoError(t, err, name)
			require.NoError(t, e.Remove(b), name)
		default:
			t.Fatalf("scenario %q: step %q", name, step)
		}
	}
	return &e, func(*chash.JumpBackAnchorEngine) int { return last }
}

// TestJumpBackAnchorVectorsReproduce rebuilds the vectors from hash4j's
// sources when HASH4J names a checkout of it and a JDK is installed, and
// checks that they are the committed ones.
func TestJumpBackAnchorVectorsReproduce(t *testing.T) {
	src := os.Getenv("HASH4J")
	if testing.Short() || src == "" {
		t.Skip("set HASH4J to a checkout of github.com/dynatrace-oss/hash4j to rebuild the vectors")
	}
	if _, err := exec.LookPath("javac"); err != nil {
		t.Skip("no javac")
	}
	got, err := exec.Command("sh", filepath.Join("testdata", "jumpbackanchor", "gen", "build.sh"), src).Output()
	require.NoError(t, err)
	want, err := os.ReadFile(filepath.Join("testdata", "jumpbackanchor", "vectors.tsv"))
	require.NoError(t, err)
	require.True(t, bytes.Equal(got, want), "hash4j's output differs from testdata/jumpbackanchor/vectors.tsv")
}

func TestJumpBackAnchorEngineEdges(t *testing.T) {
	var e chash.JumpBackAnchorEngine
	assert.Equal(t, -1, e.Bucket(1))
	assert.ErrorIs(t, e.Remove(0), chash.ErrUnknownNode)
	b, err := e.Add()
	require.NoError(t, err)
	assert.Equal(t, 0, b)
	assert.Equal(t, 0, e.Bucket(math.MaxUint64))
	require.NoError(t, e.Remove(0))
	assert.Equal(t, 0, e.Len())
	assert.Equal(t, -1, e.Bucket(1))
	_, err = chash.NewJumpBackAnchorEngine(-1)
	assert.ErrorIs(t, err, chash.ErrInvalidOption)
	_, err = chash.NewJumpBackAnchorEngine(1<<24 + 1)
	assert.ErrorIs(t, err, chash.ErrTooLarge)
	full, err := chash.NewJumpBackAnchorEngine(1 << 24)
	require.NoError(t, err)
	_, err = full.Add()
	assert.ErrorIs(t, err, chash.ErrTooLarge)
	assert.ErrorIs(t, e.UnmarshalBinary([]byte{0, 0, 0, 2}), chash.ErrTooLarge)
	// A copy made with Clone is independent.
	e, _ = chash.NewJumpBackAnchorEngine(10)
	c := e.Clone()
	require.NoError(t, c.Remove(4))
	assert.Equal(t, 10, e.Len())
	assert.Equal(t, []int{0, 1, 2, 3, 5, 6, 7, 8, 9}, c.Buckets())
	assert.Equal(t, 10, c.Range())
}

// TestJumpBackAnchorDrain removes all but one of 2,000 nodes, in a random
// order and in hash4j's slow order (0, then the last down to 2): lookups
// still end, on the nodes that remain.
func TestJumpBackAnchorDrain(t *testing.T) {
	const n = 2000
	rng := rand.New(rand.NewPCG(5, 6))
	slow := []string{"node-0"}
	for i := n - 1; i >= 2; i-- {
		slow = append(slow, fmt.Sprintf("node-%d", i))
	}
	for name, ids := range map[string][]string{
		"random": measure.IDs(chashtest.Nodes(n))[:n-1],
		"slow":   slow,
	} {
		if name == "random" {
			rng.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
		}
		p, err := chash.NewJumpBackAnchor(chashtest.Nodes(n))
		require.NoError(t, err)
		p, err = p.Remove(ids...)
		require.NoError(t, err)
		live := measure.IDs(p.Nodes())
		for _, k := range chashtest.Keys(2000) {
			require.Contains(t, live, p.LookupString(k).ID, name)
		}
		chashtest.CheckPlacer(t, p)
		_, err = p.Remove(live...)
		assert.ErrorIs(t, err, chash.ErrNoNodes)
	}
}

// TestJumpBackAnchorRestore rebuilds a placer from its Nodes and its
// engine's bytes, as another process would: same fingerprint, same
// placement.
func TestJumpBackAnchorRestore(t *testing.T) {
	p, err := chash.NewJumpBackAnchor(chashtest.Nodes(30))
	require.NoError(t, err)
	p, err = p.Remove("node-4", "node-29", "node-11")
	require.NoError(t, err)
	p, err = p.Add(chash.Node{ID: "new-a"})
	require.NoError(t, err)
	e := p.Engine()
	state, err := e.MarshalBinary()
	require.NoError(t, err)
	var got chash.JumpBackAnchorEngine
	require.NoError(t, got.UnmarshalBinary(state))
	q, err := chash.NewJumpBackAnchorFrom(got, p.Nodes())
	require.NoError(t, err)
	assert.Equal(t, chash.Fingerprint(p), chash.Fingerprint(q))
	keys := chashtest.Keys(5000)
	assert.Equal(t, measure.Owners(p, keys), measure.Owners(q, keys))
	_, err = chash.NewJumpBackAnchorFrom(got, p.Nodes()[1:])
	assert.ErrorIs(t, err, chash.ErrInvalidState)
	// Derive keeps members' buckets whatever the order of the set.
	nodes := p.Nodes()
	slices.Reverse(nodes)
	d, err := chash.Derive(p, nodes)
	require.NoError(t, err)
	assert.Equal(t, chash.Fingerprint(p), chash.Fingerprint(d))
}

func TestJumpBackAnchorMembership(t *testing.T) {
	p, err := chash.NewJumpBackAnchor(chashtest.Nodes(10))
	require.NoError(t, err)
	_, err = p.Remove("nope")
	assert.ErrorIs(t, err, chash.ErrUnknownNode)
	_, err = p.Remove("node-1", "node-1")
	assert.ErrorIs(t, err, chash.ErrUnknownNode)
	_, err = p.Remove(measure.IDs(p.Nodes())...)
	assert.ErrorIs(t, err, chash.ErrNoNodes)
	_, err = p.Add(chash.Node{ID: "x", Weight: 2})
	assert.ErrorIs(t, err, chash.ErrInvalidWeight)
	_, err = p.Add(chash.Node{ID: "node-3"})
	assert.ErrorIs(t, err, chash.ErrDuplicateID)
	_, err = chash.NewJumpBackAnchor(nil)
	assert.ErrorIs(t, err, chash.ErrNoNodes)
	r, err := p.Replace("node-4", chash.Node{ID: "node-4b"})
	require.NoError(t, err)
	for _, k := range chashtest.Keys(5000) {
		if a, b := p.LookupString(k).ID, r.LookupString(k).ID; a != b {
			require.Equal(t, "node-4", a)
			require.Equal(t, "node-4b", b)
		}
	}
	_, err = p.Replace("node-4", chash.Node{ID: "node-5"})
	assert.ErrorIs(t, err, chash.ErrDuplicateID)
	var zero *chash.JumpBackAnchor
	_, err = zero.Remove("a")
	assert.ErrorIs(t, err, chash.ErrUnknownNode)
	_, err = zero.Replace("a", chash.Node{ID: "b"})
	assert.ErrorIs(t, err, chash.ErrUnknownNode)
	q, err := zero.Add(chash.Node{ID: "a"})
	require.NoError(t, err)
	assert.Equal(t, 1, q.Len())
	ze := zero.Engine()
	assert.Equal(t, 0, ze.Len())
}

func FuzzJumpBackAnchorEngine(f *testing.F) {
	f.Add([]byte{10, 0, 0, 0, 3, 0, 0, 0, 7, 0, 0, 0}, uint64(1))
	f.Add([]byte{0, 0, 0, 0}, uint64(2))
	f.Add([]byte{255, 255, 255, 127, 1, 0, 0, 0}, uint64(3))
	f.Fuzz(func(t *testing.T, data []byte, key uint64) {
		var e chash.JumpBackAnchorEngine
		if err := e.UnmarshalBinary(data); err != nil {
			return
		}
		out, err := e.MarshalBinary()
		if err != nil || !bytes.Equal(out, data) {
			t.Fatalf("state %x reads back as %x (%v)", data, out, err)
		}
		b := e.Bucket(key)
		if e.Len() == 0 {
			if b != -1 {
				t.Fatalf("an empty engine gave bucket %d", b)
			}
			return
		}
		if !slices.Contains(e.Buckets(), b) {
			t.Fatalf("state %x: key %x to bucket %d, not a working one", data, key, b)
		}
	})
}

func FuzzJumpBackAnchor(f *testing.F) {
	f.Add("a,b,c", []byte{0, 0, 0}, "key", 2, uint64(0), uint8(1))
	f.Add("a,b,c,d,e,f", []byte{}, "k", 30, uint64(3), uint8(0xff))
	f.Fuzz(func(t *testing.T, idList string, weights []byte, key string, k int, seed uint64, drop uint8) {
		nodes := conformance.FuzzNodes(idList, weights)
		p, err := chash.NewJumpBackAnchor(nodes, chash.WithHasher(chash.XXHashSeed(seed)))
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

// BenchmarkJumpBackAnchor measures JumpBackAnchor's lookups beside
// JumpBack's at 10^3 and 10^6 nodes, with 0, 10 and 50% of the nodes
// removed at random, on 13-byte keys; BenchmarkHash/key=13 is the bare
// hash of the same keys. The engine cases look up pre-hashed keys.
func BenchmarkJumpBackAnchor(b *testing.B) {
	bs, ss := conformance.BenchKeys(13)
	hs := make([]uint64, len(bs))
	for i, k := range bs {
		hs[i] = xxhash.Sum64(k)
	}
	mask := len(hs) - 1
	for _, n := range []int{1000, 1_000_000} {
		nodes := bigNodes()[:n]
		jb, err := chash.NewJumpBack(nodes)
		require.NoError(b, err)
		b.Run(fmt.Sprintf("jumpback/nodes=%d/key=13", n), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				sinkNode = jb.LookupString(ss[i&mask])
			}
		})
		rng := rand.New(rand.NewPCG(1, uint64(n)))
		order := rng.Perm(n)
		for _, pct := range []int{0, 10, 50} {
			p, err := chash.NewJumpBackAnchor(nodes)
			require.NoError(b, err)
			var ids []string
			for _, i := range order[:n*pct/100] {
				ids = append(ids, nodes[i].ID)
			}
			if len(ids) > 0 {
				p, err = p.Remove(ids...)
				require.NoError(b, err)
			}
			b.Run(fmt.Sprintf("anchor/nodes=%d/removed=%d%%/key=13", n, pct), func(b *testing.B) {
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					sinkNode = p.LookupString(ss[i&mask])
				}
			})
			e := p.Engine()
			b.Run(fmt.Sprintf("engine/nodes=%d/removed=%d%%", n, pct), func(b *testing.B) {
				b.ReportAllocs()
				s := 0
				for i := 0; i < b.N; i++ {
					s += e.Bucket(hs[i&mask])
				}
				sink = uint64(s)
			})
		}
	}
}

func ExampleNewJumpBackAnchor() {
	p, err := chash.NewJumpBackAnchor(chashtest.Nodes(5))
	if err != nil {
		panic(err)
	}
	// Any node can leave; only its keys move.
	q, err := p.Remove("node-1")
	if err != nil {
		panic(err)
	}
	// What every process must share: the members and the engine's state
	// (hash4j's getState bytes).
	e := q.Engine()
	state, err := e.MarshalBinary()
	if err != nil {
		panic(err)
	}
	fmt.Println(measure.IDs(q.Nodes()), hex.EncodeToString(state))

	// Another process restores the same placement.
	var got chash.JumpBackAnchorEngine
	if err := got.UnmarshalBinary(state); err != nil {
		panic(err)
	}
	r, err := chash.NewJumpBackAnchorFrom(got, q.Nodes())
	if err != nil {
		panic(err)
	}
	fmt.Println(r.LookupString("user:42").ID == q.LookupString("user:42").ID)
	// Output:
	// [node-0 node-2 node-3 node-4] 0500000001000000
	// true
}

func ExampleJumpBackAnchorEngine() {
	// hash4j's bucket set: 10 buckets, bucket 3 then 7 removed.
	e, err := chash.NewJumpBackAnchorEngine(10)
	if err != nil {
		panic(err)
	}
	if err := e.Remove(3); err != nil {
		panic(err)
	}
	if err := e.Remove(7); err != nil {
		panic(err)
	}
	state, _ := e.MarshalBinary()
	fmt.Println(e.Len(), hex.EncodeToString(state), e.Bucket(0x736ae31d6e461e0d))
	// Output: 8 0a0000000300000007000000 4
}
