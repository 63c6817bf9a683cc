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

func TestContractMemento(t *testing.T) { chashtest.TestPlacer(t, mementoSpec()) }

// mementoSpec is the contract of MementoHash with the default options. A
// departure is measured through Derive (Next), which keeps the buckets of
// the members that stay: New over the remaining nodes would renumber them.
func mementoSpec() chashtest.Spec {
	return chashtest.Spec{
		New:     conformance.Constructor(chash.NewMemento),
		Ordered: true,
		MaxCV:   0.02, MaxPeak: 1.05, ShareTol: 0.05,
		Add: func(p chash.Placer, n chash.Node) (chash.Placer, error) {
			return conformance.AsPlacer(p.(*chash.Memento).Add(n))
		},
		Remove: func(p chash.Placer, id string) (chash.Placer, error) {
			return conformance.AsPlacer(p.(*chash.Memento).Remove(id))
		},
		Next: chash.Derive,
		Zero: &chash.Memento{},
		Variants: []func() (chash.Placer, error){
			func() (chash.Placer, error) {
				return conformance.AsPlacer(chash.NewMemento(chashtest.Nodes(10), chash.WithHasher(chash.XXHashSeed(7))))
			},
			func() (chash.Placer, error) { // the same members in other buckets
				p, err := chash.NewMemento(chashtest.Nodes(11))
				if err != nil {
					return nil, err
				}
				return conformance.AsPlacer(p.Remove("node-4"))
			},
		},
	}
}

func TestMementoGolden(t *testing.T) {
	ten := chashtest.Nodes(10)
	p, err := chash.NewMemento(ten)
	require.NoError(t, err)
	conformance.Golden(t, "memento-10", p)
	q, err := p.Remove("node-3", "node-7")
	require.NoError(t, err)
	conformance.Golden(t, "memento-10-rm-3-7", q)
	s, err := chash.NewMemento(chashtest.Nodes(40), chash.WithHasher(chash.XXHashSeed(7)))
	require.NoError(t, err)
	s, err = s.Remove("node-20", "node-39", "node-0")
	require.NoError(t, err)
	conformance.Golden(t, "memento-40-seed-7-rm-20-39-0", s)
}

// TestMementoVectors replays every scenario of testdata/memento/vectors.tsv,
// written by the authors' C++ MementoEngine (testdata/memento/gen), and
// checks every addition and every key's bucket, and that the state read
// back from its text places every key alike.
func TestMementoVectors(t *testing.T) {
	scenarios := readScenarios(t, "testdata/memento/vectors.tsv", 1)
	require.GreaterOrEqual(t, len(scenarios), 20)
	rows, mismatches := 0, 0
	for _, s := range scenarios {
		n, err := strconv.Atoi(s.fields[0])
		require.NoError(t, err)
		e, err := chash.NewMementoEngine(n)
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
		var back chash.MementoEngine
		require.NoError(t, back.UnmarshalText(text), "%s: %s", s.name, text)
		for _, r := range s.rows {
			want, err := strconv.Atoi(r[1])
			require.NoError(t, err)
			rows++
			if e.BucketString(r[0]) != want || e.Bucket([]byte(r[0])) != want || back.BucketString(r[0]) != want {
				mismatches++
				t.Errorf("%s: key %q: bucket %d, %d read back; reference %d", s.name, r[0], e.BucketString(r[0]), back.BucketString(r[0]), want)
			}
		}
	}
	t.Logf("%d scenarios, %d keys, %d mismatches", len(scenarios), rows, mismatches)
	require.GreaterOrEqual(t, rows, 2500)
}

// TestMementoSample checks the engine against the project's shared sample
// of the reference's output (testdata/memento/reference_sample.txt).
func TestMementoSample(t *testing.T) {
	engines := map[string]*chash.MementoEngine{}
	engine := func(name string) *chash.MementoEngine {
		if e, ok := engines[name]; ok {
			return e
		}
		n, _, ops := sampleName(t, name)
		e, err := chash.NewMementoEngine(n)
		require.NoError(t, err)
		for _, b := range ops {
			if b < 0 {
				_, err = e.Add()
			} else {
				err = e.Remove(b)
			}
			require.NoError(t, err, name)
		}
		engines[name] = &e
		return &e
	}
	lines := readSample(t, "testdata/memento/reference_sample.txt", "memento")
	for _, f := range lines {
		want, err := strconv.Atoi(f[2])
		require.NoError(t, err)
		assert.Equal(t, want, engine(f[0]).BucketString(f[1]), "%s %s", f[0], f[1])
	}
	for _, f := range readSample(t, "testdata/memento/reference_sample.txt", "mementoadd") {
		e := engine(f[0]).Clone()
		b, err := e.Add()
		require.NoError(t, err)
		assert.Equal(t, "readded="+strconv.Itoa(b), f[1], f[0])
	}
	require.GreaterOrEqual(t, len(lines), 100)
}

// TestMementoEngine checks the engine's own rules: jump's shrinking
// removal of the last bucket, LIFO additions that restore the state,
// errors, and a random walk of removals and additions against the state
// read back from its text.
func TestMementoEngine(t *testing.T) {
	e, err := chash.NewMementoEngine(10)
	require.NoError(t, err)
	require.NoError(t, e.Remove(9)) // shrinks, as jump does
	assert.Equal(t, 9, e.Size())
	assert.Empty(t, e.Removed())
	require.NoError(t, e.Remove(8)) // nothing remembered yet: shrinks again
	assert.Equal(t, 8, e.Size())
	require.NoError(t, e.Remove(3))
	require.NoError(t, e.Remove(7))
	assert.Equal(t, []int{3, 7}, e.Removed())
	assert.Equal(t, 6, e.Len())
	assert.False(t, e.Working(3))
	assert.ErrorIs(t, e.Remove(3), chash.ErrUnknownNode)
	assert.ErrorIs(t, e.Remove(8), chash.ErrUnknownNode)
	assert.ErrorIs(t, e.Remove(-1), chash.ErrUnknownNode)
	text, _ := e.MarshalText()
	assert.Equal(t, "memento:8/3,7", string(text))
	b, _ := e.Add()
	assert.Equal(t, 7, b)
	b, _ = e.Add()
	assert.Equal(t, 3, b)
	b, _ = e.Add()
	assert.Equal(t, 8, b)

	var zero chash.MementoEngine
	assert.Equal(t, -1, zero.BucketString("k"))
	b, err = zero.Add()
	require.NoError(t, err)
	assert.Equal(t, 0, b)
	assert.Equal(t, 0, zero.BucketString("k"))
	assert.ErrorIs(t, zero.Remove(0), chash.ErrNoNodes)
	var nilEngine *chash.MementoEngine
	assert.Equal(t, -1, nilEngine.Bucket(nil))
	assert.Equal(t, 0, nilEngine.Len())
	_, err = chash.NewMementoEngine(-1)
	assert.ErrorIs(t, err, chash.ErrInvalidOption)
}

// TestMementoEngineWalk removes and adds buckets at random, 2,000 steps,
// checking after each that the engine and the state read back from its
// text agree on 200 keys and on every bucket's state; the replacement
// set's deletions must keep every entry reachable.
func TestMementoEngineWalk(t *testing.T) {
	e, _ := chash.NewMementoEngine(300)
	keys := chashtest.Keys(200)
	seed := uint64(1)
	next := func() uint64 { seed = seed*6364136223846793005 + 1442695040888963407; return seed >> 33 }
	for step := 0; step < 2000; step++ {
		if next()%3 == 0 || e.Len() < 2 {
			_, err := e.Add()
			require.NoError(t, err)
		} else {
			for {
				b := int(next() % uint64(e.Size()))
				if e.Working(b) {
					require.NoError(t, e.Remove(b))
					break
				}
			}
		}
		if step%50 != 0 {
			continue
		}
		text, _ := e.MarshalText()
		var back chash.MementoEngine
		require.NoError(t, back.UnmarshalText(text), string(text))
		for b := 0; b < e.Size(); b++ {
			require.Equal(t, back.Working(b), e.Working(b), "step %d bucket %d", step, b)
		}
		for _, k := range keys {
			got := e.BucketString(k)
			require.True(t, e.Working(got))
			require.Equal(t, back.BucketString(k), got, "step %d key %q", step, k)
		}
	}
}

// TestMementoFrom rebuilds a placer from its engine's text and its members,
// as another process of a fleet would.
func TestMementoFrom(t *testing.T) {
	p, err := chash.NewMemento(chashtest.Nodes(20))
	require.NoError(t, err)
	p, err = p.Remove("node-5", "node-12", "node-19")
	require.NoError(t, err)
	e := p.Engine()
	text, err := e.MarshalText()
	require.NoError(t, err)
	var shared chash.MementoEngine
	require.NoError(t, shared.UnmarshalText(text))
	q, err := chash.NewMementoFrom(shared, p.Nodes())
	require.NoError(t, err)
	assert.Equal(t, chash.Fingerprint(p), chash.Fingerprint(q))
	for _, k := range chashtest.Keys(2000) {
		require.Equal(t, p.LookupString(k), q.LookupString(k))
	}
	_, err = chash.NewMementoFrom(shared, chashtest.Nodes(3))
	assert.ErrorIs(t, err, chash.ErrInvalidState)
	// The nodes given take the working buckets in order, so another
	// order is another placement.
	r, err := chash.NewMementoFrom(shared, reversed(p.Nodes()))
	require.NoError(t, err)
	assert.NotEqual(t, chash.Fingerprint(p), chash.Fingerprint(r))
}

func FuzzMementoEngineText(f *testing.F) {
	for _, s := range []string{"memento:10/7,3", "memento:10/", "memento:1000/5-300,999", "memento:0/", "memento:3/0,1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var e chash.MementoEngine
		if e.UnmarshalText([]byte(s)) != nil {
			return
		}
		text, err := e.MarshalText()
		require.NoError(t, err)
		var back chash.MementoEngine
		require.NoError(t, back.UnmarshalText(text), "%q re-read as %q", s, text)
		again, _ := back.MarshalText()
		require.Equal(t, string(text), string(again))
		if e.Len() > 0 {
			for _, k := range []string{"a", "b", "c"} {
				require.True(t, e.Working(e.BucketString(k)))
			}
		}
	})
}

func FuzzNewMemento(f *testing.F) {
	f.Add("a,b,c", []byte{0, 1}, "b")
	f.Fuzz(func(t *testing.T, ids string, weights []byte, remove string) {
		p, err := chash.NewMemento(conformance.FuzzNodes(ids, weights))
		if err != nil {
			return
		}
		if q, err := p.Remove(remove); err == nil {
			chashtest.CheckPlacer(t, q)
		}
		chashtest.CheckPlacer(t, p)
	})
}

// A fleet loses a server in the middle: only that server's keys move, and
// the engine's state, shared beside the member list, lets every other
// process build the same placement.
func ExampleNewMemento() {
	nodes := []chash.Node{{ID: "cache-a"}, {ID: "cache-b"}, {ID: "cache-c"}, {ID: "cache-d"}}
	p, err := chash.NewMemento(nodes)
	if err != nil {
		panic(err)
	}
	q, err := p.Remove("cache-b")
	if err != nil {
		panic(err)
	}
	moved := 0
	for i := 0; i < 1000; i++ {
		key := fmt.Sprintf("user:%d", i)
		if before, after := p.LookupString(key), q.LookupString(key); before != after {
			if before.ID != "cache-b" {
				panic("a key moved between servers that stayed")
			}
			moved++
		}
	}
	e := q.Engine()
	state, _ := e.MarshalText()
	fmt.Println("moved:", moved, "of 1000, all from cache-b")
	fmt.Println("state:", string(state))

	// Another process, given the members and the state, agrees.
	var shared chash.MementoEngine
	if err := shared.UnmarshalText(state); err != nil {
		panic(err)
	}
	r, err := chash.NewMementoFrom(shared, q.Nodes())
	if err != nil {
		panic(err)
	}
	fmt.Println("same placement:", chash.Fingerprint(r) == chash.Fingerprint(q))
	// Output:
	// moved: 242 of 1000, all from cache-b
	// state: memento:4/1
	// same placement: true
}
