package chash_test

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/chashtest"
	"github.com/keyplace/chash/internal/conformance"
)

func TestContractAnchor(t *testing.T) { chashtest.TestPlacer(t, anchorSpec()) }

// anchorSpec is the contract of AnchorHash with room for at least 16
// members: a departure is measured through Derive (Next), which keeps the
// buckets of the members that stay.
func anchorSpec() chashtest.Spec {
	return chashtest.Spec{
		New: func(nodes []chash.Node) (chash.Placer, error) {
			return conformance.AsPlacer(chash.NewAnchor(nodes, chash.WithCapacity(max(16, len(nodes)))))
		},
		Ordered: true,
		MaxCV:   0.02, MaxPeak: 1.05, ShareTol: 0.05,
		Add: func(p chash.Placer, n chash.Node) (chash.Placer, error) {
			return conformance.AsPlacer(p.(*chash.Anchor).Add(n))
		},
		Remove: func(p chash.Placer, id string) (chash.Placer, error) {
			return conformance.AsPlacer(p.(*chash.Anchor).Remove(id))
		},
		Next: chash.Derive,
		Zero: &chash.Anchor{},
		Variants: []func() (chash.Placer, error){
			func() (chash.Placer, error) {
				return conformance.AsPlacer(chash.NewAnchor(chashtest.Nodes(10), chash.WithCapacity(16), chash.WithHasher(chash.XXHashSeed(7))))
			},
			func() (chash.Placer, error) {
				return conformance.AsPlacer(chash.NewAnchor(chashtest.Nodes(10), chash.WithCapacity(32)))
			},
			func() (chash.Placer, error) { // the same members in other buckets
				p, err := chash.NewAnchor(chashtest.Nodes(11), chash.WithCapacity(16))
				if err != nil {
					return nil, err
				}
				return conformance.AsPlacer(p.Remove("node-4"))
			},
		},
	}
}

func TestAnchorGolden(t *testing.T) {
	p, err := chash.NewAnchor(chashtest.Nodes(10), chash.WithCapacity(16))
	require.NoError(t, err)
	conformance.Golden(t, "anchor-10-capacity-16", p)
	q, err := p.Remove("node-3", "node-7")
	require.NoError(t, err)
	conformance.Golden(t, "anchor-10-capacity-16-rm-3-7", q)
	s, err := chash.NewAnchor(chashtest.Nodes(40), chash.WithHasher(chash.XXHashSeed(7)))
	require.NoError(t, err)
	s, err = s.Remove("node-20", "node-39", "node-0")
	require.NoError(t, err)
	conformance.Golden(t, "anchor-40-seed-7-rm-20-39-0", s)
}

// TestAnchorVectors replays every scenario of testdata/anchor/vectors.tsv,
// written by the authors' C++ AnchorHash (testdata/anchor/gen), and checks
// every addition and every key's bucket, and that the state read back
// from its text places every key alike.
func TestAnchorVectors(t *testing.T) {
	scenarios := readScenarios(t, "testdata/anchor/vectors.tsv", 2)
	require.GreaterOrEqual(t, len(scenarios), 20)
	rows, mismatches := 0, 0
	for _, s := range scenarios {
		capacity, err1 := strconv.Atoi(s.fields[0])
		working, err2 := strconv.Atoi(s.fields[1])
		require.NoError(t, err1)
		require.NoError(t, err2)
		e, err := chash.NewAnchorEngine(capacity, working)
		require.NoError(t, err)
		for _, op := range s.ops {
			if op.add {
				b, err := e.Add()
				require.NoError(t, err)
				require.Equal(t, op.b, b, "%s: Add", s.name)
			} else {
				require.NoError(t, e.Remove(op.b), "%s: Remove(%d)", s.name, op.b)
			}
		}
		text, err := e.MarshalText()
		require.NoError(t, err)
		var back chash.AnchorEngine
		require.NoError(t, back.UnmarshalText(text), "%s", s.name)
		for _, r := range s.rows {
			key, err1 := strconv.ParseUint(r[0], 16, 64)
			seed, err2 := strconv.ParseUint(r[1], 10, 64)
			want, err3 := strconv.Atoi(r[2])
			require.NoError(t, err1)
			require.NoError(t, err2)
			require.NoError(t, err3)
			rows++
			if got := e.Bucket(key, seed); got != want || back.Bucket(key, seed) != want {
				mismatches++
				t.Errorf("%s: key %s seed %d: bucket %d, %d read back; reference %d", s.name, r[0], seed, got, back.Bucket(key, seed), want)
			}
		}
	}
	t.Logf("%d scenarios, %d keys, %d mismatches", len(scenarios), rows, mismatches)
	require.GreaterOrEqual(t, rows, 2500)
}

// TestAnchorSample checks the engine against the project's shared sample
// of the reference's output (testdata/anchor/reference_sample.txt).
func TestAnchorSample(t *testing.T) {
	engine := func(name string) *chash.AnchorEngine {
		a, w, ops := sampleName(t, name)
		e, err := chash.NewAnchorEngine(a, w)
		require.NoError(t, err)
		for _, b := range ops {
			if b < 0 {
				_, err = e.Add()
			} else {
				err = e.Remove(b)
			}
			require.NoError(t, err, name)
		}
		return &e
	}
	engines := map[string]*chash.AnchorEngine{}
	lines := readSample(t, "testdata/anchor/reference_sample.txt", "anchor")
	for _, f := range lines {
		if engines[f[0]] == nil {
			engines[f[0]] = engine(f[0])
		}
		key, _ := strconv.ParseUint(f[1], 16, 64)
		seed, _ := strconv.ParseUint(f[2], 10, 64)
		want, err := strconv.Atoi(f[3])
		require.NoError(t, err)
		assert.Equal(t, want, engines[f[0]].Bucket(key, seed), "%s %s", f[0], f[1])
	}
	for _, f := range readSample(t, "testdata/anchor/reference_sample.txt", "anchoradd") {
		e := engine(f[0])
		b, err := e.Add()
		require.NoError(t, err)
		assert.Equal(t, "readded="+strconv.Itoa(b), f[1], f[0])
	}
	require.GreaterOrEqual(t, len(lines), 150)
}

// TestCRC32C checks the software CRC-32C against the standard library's
// (which inverts before and after) through the Anchor engine's first
// bucket: with every bucket working, a key's bucket is crc mod capacity.
func TestCRC32C(t *testing.T) {
	tab := crc32.MakeTable(crc32.Castagnoli)
	e, err := chash.NewAnchorEngine(1<<24, 1<<24)
	require.NoError(t, err)
	var buf [8]byte
	for i := uint64(0); i < 2000; i++ {
		key, seed := i*0x9E3779B97F4A7C15, i*i*0x2545F4914F6CDD1D
		binary.LittleEndian.PutUint64(buf[:], key)
		raw := ^crc32.Update(^uint32(seed), tab, buf[:])
		require.Equal(t, int(raw%(1<<24)), e.Bucket(key, seed), "key %x seed %x", key, seed)
	}
}

func TestAnchorEngine(t *testing.T) {
	e, err := chash.NewAnchorEngine(16, 10)
	require.NoError(t, err)
	assert.Equal(t, []int{15, 14, 13, 12, 11, 10}, e.Removed())
	require.NoError(t, e.Remove(3))
	text, _ := e.MarshalText()
	assert.Equal(t, "anchor:16/15-10,3", string(text))
	assert.ErrorIs(t, e.Remove(3), chash.ErrUnknownNode)
	assert.ErrorIs(t, e.Remove(16), chash.ErrUnknownNode)
	for want := range []int{3, 10, 11, 12, 13, 14, 15} {
		_ = want
		_, err := e.Add()
		require.NoError(t, err)
	}
	_, err = e.Add()
	assert.ErrorIs(t, err, chash.ErrTooLarge, "a full anchor")
	one, _ := chash.NewAnchorEngine(3, 1)
	assert.ErrorIs(t, one.Remove(0), chash.ErrNoNodes)
	for _, c := range [][2]int{{0, 0}, {3, 0}, {3, 4}, {1<<24 + 1, 1}} {
		_, err := chash.NewAnchorEngine(c[0], c[1])
		assert.ErrorIs(t, err, chash.ErrInvalidOption, "%v", c)
	}
	var zero chash.AnchorEngine
	assert.Equal(t, -1, zero.Bucket(1, 2))
	_, err = zero.Add()
	assert.ErrorIs(t, err, chash.ErrTooLarge)
	var nilEngine *chash.AnchorEngine
	assert.Equal(t, -1, nilEngine.Bucket(1, 2))

	// A full placer refuses a new member; one with room takes it.
	p, err := chash.NewAnchor(chashtest.Nodes(4))
	require.NoError(t, err)
	_, err = p.Add(chash.Node{ID: "x"})
	assert.ErrorIs(t, err, chash.ErrTooLarge)
	_, err = chash.NewAnchor(chashtest.Nodes(4), chash.WithCapacity(3))
	assert.ErrorIs(t, err, chash.ErrInvalidOption)
	_, err = chash.NewAnchor(chashtest.Nodes(4), chash.WithCapacity(1<<25))
	assert.ErrorIs(t, err, chash.ErrInvalidOption)
}

// TestAnchorFrom rebuilds a placer from its engine's text and its members,
// as another process of a fleet would.
func TestAnchorFrom(t *testing.T) {
	p, err := chash.NewAnchor(chashtest.Nodes(20), chash.WithCapacity(64))
	require.NoError(t, err)
	p, err = p.Remove("node-5", "node-12", "node-19")
	require.NoError(t, err)
	e := p.Engine()
	text, err := e.MarshalText()
	require.NoError(t, err)
	var shared chash.AnchorEngine
	require.NoError(t, shared.UnmarshalText(text))
	q, err := chash.NewAnchorFrom(shared, p.Nodes())
	require.NoError(t, err)
	assert.Equal(t, chash.Fingerprint(p), chash.Fingerprint(q))
	for _, k := range chashtest.Keys(2000) {
		require.Equal(t, p.LookupString(k), q.LookupString(k))
	}
	_, err = chash.NewAnchorFrom(shared, chashtest.Nodes(3))
	assert.ErrorIs(t, err, chash.ErrInvalidState)
}

func FuzzAnchorEngineText(f *testing.F) {
	for _, s := range []string{"anchor:16/15-10,3", "anchor:1/", "anchor:1000/999-10,5", "anchor:0/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var e chash.AnchorEngine
		if e.UnmarshalText([]byte(s)) != nil {
			return
		}
		text, err := e.MarshalText()
		require.NoError(t, err)
		var back chash.AnchorEngine
		require.NoError(t, back.UnmarshalText(text), "%q re-read as %q", s, text)
		again, _ := back.MarshalText()
		require.Equal(t, string(text), string(again))
		if e.Len() > 0 {
			for key := uint64(0); key < 3; key++ {
				require.True(t, e.Working(e.Bucket(key, 0)))
			}
		}
	})
}

func FuzzNewAnchor(f *testing.F) {
	f.Add("a,b,c", []byte{0, 1}, "b", uint8(4))
	f.Fuzz(func(t *testing.T, ids string, weights []byte, remove string, capacity uint8) {
		p, err := chash.NewAnchor(conformance.FuzzNodes(ids, weights), chash.WithCapacity(max(1, int(capacity))))
		if err != nil {
			return
		}
		if q, err := p.Remove(remove); err == nil {
			chashtest.CheckPlacer(t, q)
		}
		chashtest.CheckPlacer(t, p)
	})
}

// An anchor of eight buckets serves five backends: any of them can leave,
// and a new one takes the bucket freed last.
func ExampleNewAnchor() {
	nodes := []chash.Node{{ID: "b0"}, {ID: "b1"}, {ID: "b2"}, {ID: "b3"}, {ID: "b4"}}
	p, err := chash.NewAnchor(nodes, chash.WithCapacity(8))
	if err != nil {
		panic(err)
	}
	q, err := p.Remove("b2")
	if err != nil {
		panic(err)
	}
	r, err := q.Add(chash.Node{ID: "b5"})
	if err != nil {
		panic(err)
	}
	e := r.Engine()
	state, _ := e.MarshalText()
	fmt.Println(r.Nodes())
	fmt.Println(string(state))
	// Output:
	// [{b0 1 } {b1 1 } {b5 1 } {b3 1 } {b4 1 }]
	// anchor:8/7-5
}
