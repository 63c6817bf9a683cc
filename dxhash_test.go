package chash_test

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/chashtest"
	"github.com/keyplace/chash/internal/conformance"
)

func TestContractDx(t *testing.T) { chashtest.TestPlacer(t, dxSpec()) }

// dxSpec is the contract of DxHash with the default options: a departure
// is measured through Derive (Next), which keeps the places of the members
// that stay.
func dxSpec() chashtest.Spec {
	return chashtest.Spec{
		New:     conformance.Constructor(chash.NewDx),
		Ordered: true,
		MaxCV:   0.02, MaxPeak: 1.05, ShareTol: 0.05,
		Add: func(p chash.Placer, n chash.Node) (chash.Placer, error) {
			return conformance.AsPlacer(p.(*chash.Dx).Add(n))
		},
		Remove: func(p chash.Placer, id string) (chash.Placer, error) {
			return conformance.AsPlacer(p.(*chash.Dx).Remove(id))
		},
		Next: chash.Derive,
		Zero: &chash.Dx{},
		Variants: []func() (chash.Placer, error){
			func() (chash.Placer, error) {
				return conformance.AsPlacer(chash.NewDx(chashtest.Nodes(10), chash.WithHasher(chash.XXHashSeed(7))))
			},
			func() (chash.Placer, error) {
				return conformance.AsPlacer(chash.NewDx(chashtest.Nodes(10), chash.WithCapacity(10)))
			},
		},
	}
}

func TestDxGolden(t *testing.T) {
	p, err := chash.NewDx(chashtest.Nodes(10))
	require.NoError(t, err)
	conformance.Golden(t, "dx-10", p)
	q, err := p.Remove("node-3", "node-7")
	require.NoError(t, err)
	conformance.Golden(t, "dx-10-rm-3-7", q)
	s, err := chash.NewDx(chashtest.Nodes(40), chash.WithHasher(chash.XXHashSeed(7)))
	require.NoError(t, err)
	s, err = s.Add(chash.Node{ID: "node-40"})
	require.NoError(t, err)
	conformance.Golden(t, "dx-40-seed-7-add-40", s)
}

// TestDxVectors replays every scenario of testdata/dxhash/vectors.tsv,
// written by the authors' C++ DxHash (testdata/dxhash/gen), and checks
// every addition, the array's size and every key's node. Where the
// reference gave up (-1), the engine must return the one working node
// (the scenario that triggers it has one left).
func TestDxVectors(t *testing.T) {
	scenarios := readScenarios(t, "testdata/dxhash/vectors.tsv", 2)
	require.GreaterOrEqual(t, len(scenarios), 19)
	rows, mismatches, gaveUp := 0, 0, 0
	for _, s := range scenarios {
		total, err1 := strconv.Atoi(s.fields[0])
		working, err2 := strconv.Atoi(s.fields[1])
		size, err3 := strconv.Atoi(s.fields[3])
		require.NoError(t, err1)
		require.NoError(t, err2)
		require.NoError(t, err3)
		e, err := chash.NewDxEngine(total, working)
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
		require.Equal(t, size, e.Size(), s.name)
		text, err := e.MarshalText()
		require.NoError(t, err)
		var back chash.DxEngine
		require.NoError(t, back.UnmarshalText(text), "%s", s.name)
		for _, r := range s.rows {
			key, err1 := strconv.ParseUint(r[0], 10, 32)
			want, err2 := strconv.ParseUint(r[1], 10, 32)
			require.NoError(t, err1)
			require.NoError(t, err2)
			rows++
			got := e.Bucket(key)
			require.Equal(t, got, back.Bucket(key), "%s: read back", s.name)
			if want == 1<<32-1 {
				gaveUp++
				require.Equal(t, 1, e.Len(), "%s: the reference gave up with %d working", s.name, e.Len())
				require.True(t, e.Working(got), "%s: key %d", s.name, key)
				continue
			}
			if got != int(want) {
				mismatches++
				t.Errorf("%s: key %d: node %d, reference %d", s.name, key, got, want)
			}
		}
	}
	t.Logf("%d scenarios, %d keys, %d mismatches, %d where the reference gave up", len(scenarios), rows, mismatches, gaveUp)
	require.GreaterOrEqual(t, rows, 2500)
	require.Positive(t, gaveUp)
}

// TestDxSample checks the engine against the project's shared sample of
// the reference's output (testdata/dxhash/reference_sample.txt).
func TestDxSample(t *testing.T) {
	engine := func(name string) *chash.DxEngine {
		n, w, ops := sampleName(t, name)
		e, err := chash.NewDxEngine(n, w)
		require.NoError(t, err)
		for _, b := range ops {
			require.NoError(t, e.Remove(b), name)
		}
		return &e
	}
	engines := map[string]*chash.DxEngine{}
	lines := readSample(t, "testdata/dxhash/reference_sample.txt", "dx")
	for _, f := range lines {
		if engines[f[0]] == nil {
			engines[f[0]] = engine(f[0])
		}
		key, _ := strconv.ParseUint(f[1], 10, 32)
		want, err := strconv.Atoi(f[2])
		require.NoError(t, err)
		assert.Equal(t, want, engines[f[0]].Bucket(key), "%s %s", f[0], f[1])
	}
	for _, f := range readSample(t, "testdata/dxhash/reference_sample.txt", "dxadd") {
		e := engine(f[0])
		b, err := e.Add()
		require.NoError(t, err)
		assert.Equal(t, "added="+strconv.Itoa(b), f[1], f[0])
	}
	require.GreaterOrEqual(t, len(lines), 60)
}

func TestDxEngine(t *testing.T) {
	e, err := chash.NewDxEngine(16, 10)
	require.NoError(t, err)
	require.NoError(t, e.Remove(3))
	text, _ := e.MarshalText()
	assert.Equal(t, "dx:16/3,10-15", string(text))
	assert.ErrorIs(t, e.Remove(3), chash.ErrUnknownNode)
	assert.ErrorIs(t, e.Remove(16), chash.ErrUnknownNode)
	one, _ := chash.NewDxEngine(3, 1)
	assert.ErrorIs(t, one.Remove(0), chash.ErrNoNodes)
	for _, c := range [][2]int{{0, 0}, {3, 0}, {3, 4}, {1<<24 + 1, 1}} {
		_, err := chash.NewDxEngine(c[0], c[1])
		assert.ErrorIs(t, err, chash.ErrInvalidOption, "%v", c)
	}
	// Growth doubles the array when it is full.
	full, _ := chash.NewDxEngine(8, 8)
	b, err := full.Add()
	require.NoError(t, err)
	assert.Equal(t, 16, full.Size())
	assert.True(t, full.Working(b))
	var zero chash.DxEngine
	assert.Equal(t, -1, zero.Bucket(1))
	b, err = zero.Add()
	require.NoError(t, err)
	assert.Equal(t, 0, b)
	assert.Equal(t, 0, zero.Bucket(12345))
	var nilEngine *chash.DxEngine
	assert.Equal(t, -1, nilEngine.Bucket(1))
	_, err = nilEngine.Add()
	assert.Error(t, err)
}

// TestDxFrom rebuilds a placer from its engine's text and its members, as
// another process of a fleet would.
func TestDxFrom(t *testing.T) {
	p, err := chash.NewDx(chashtest.Nodes(20))
	require.NoError(t, err)
	p, err = p.Remove("node-5", "node-12", "node-19")
	require.NoError(t, err)
	e := p.Engine()
	text, err := e.MarshalText()
	require.NoError(t, err)
	var shared chash.DxEngine
	require.NoError(t, shared.UnmarshalText(text))
	q, err := chash.NewDxFrom(shared, p.Nodes())
	require.NoError(t, err)
	assert.Equal(t, chash.Fingerprint(p), chash.Fingerprint(q))
	for _, k := range chashtest.Keys(2000) {
		require.Equal(t, p.LookupString(k), q.LookupString(k))
	}
	_, err = chash.NewDxFrom(shared, chashtest.Nodes(3))
	assert.ErrorIs(t, err, chash.ErrInvalidState)
}

func FuzzDxEngineText(f *testing.F) {
	for _, s := range []string{"dx:16/3,10-15", "dx:1/", "dx:1024/0-1022", "dx:0/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var e chash.DxEngine
		if e.UnmarshalText([]byte(s)) != nil {
			return
		}
		text, err := e.MarshalText()
		require.NoError(t, err)
		var back chash.DxEngine
		require.NoError(t, back.UnmarshalText(text), "%q re-read as %q", s, text)
		again, _ := back.MarshalText()
		require.Equal(t, string(text), string(again))
		if e.Len() > 0 {
			for key := uint64(0); key < 3; key++ {
				require.True(t, e.Working(e.Bucket(key)))
			}
		}
	})
}

func FuzzNewDx(f *testing.F) {
	f.Add("a,b,c", []byte{0, 1}, "b")
	f.Fuzz(func(t *testing.T, ids string, weights []byte, remove string) {
		p, err := chash.NewDx(conformance.FuzzNodes(ids, weights))
		if err != nil {
			return
		}
		if q, err := p.Remove(remove); err == nil {
			chashtest.CheckPlacer(t, q)
		}
		chashtest.CheckPlacer(t, p)
	})
}

// DxHash forgets the order of removals: the same members removed in two
// orders give one placement.
func ExampleNewDx() {
	p, err := chash.NewDx(chashtest.Nodes(6))
	if err != nil {
		panic(err)
	}
	a, _ := p.Remove("node-1", "node-4")
	b, _ := p.Remove("node-4", "node-1")
	e := a.Engine()
	state, _ := e.MarshalText()
	fmt.Println(string(state), chash.Fingerprint(a) == chash.Fingerprint(b))
	// Output:
	// dx:8/1,4,6,7 true
}
