package chash_test

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
	"testing"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/chashtest"
	"github.com/keyplace/chash/internal/conformance"
	"github.com/keyplace/chash/internal/measure"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// maglevCollateral bounds the fraction of all keys that move between
// untouched nodes when one of 10 or 100 nodes is added, removed or
// reweighted at M = 65537 (measured 0.0019 to 0.0066).
const maglevCollateral = 0.008

func TestContractMaglev(t *testing.T) { chashtest.TestPlacer(t, maglevSpec()) }

// maglevSpec is the contract of Maglev with the default options.
func maglevSpec() chashtest.Spec {
	return chashtest.Spec{
		New:      conformance.Constructor(chash.NewMaglev),
		Weighted: true,
		MaxCV:    0.03, MaxPeak: 1.05, ShareTol: 0.04,
		Collateral: maglevCollateral,
		Spread:     1.5,
		Add: func(p chash.Placer, n chash.Node) (chash.Placer, error) {
			return p.(*chash.Maglev).Add(n)
		},
		Remove: func(p chash.Placer, id string) (chash.Placer, error) {
			return p.(*chash.Maglev).Remove(id)
		},
		Zero:   &chash.Maglev{},
		Derive: true,
		Variants: []func() (chash.Placer, error){
			func() (chash.Placer, error) { return chash.NewMaglev(chashtest.Nodes(10), chash.WithTableSize(1009)) },
			func() (chash.Placer, error) {
				return chash.NewMaglev(chashtest.Nodes(10), chash.WithHasher(chash.XXHashSeed(7)))
			},
		},
	}
}

func TestMaglevGolden(t *testing.T) {
	for _, tc := range []struct {
		name  string
		nodes []chash.Node
		opts  []chash.Option
	}{
		{"maglev-10", chashtest.Nodes(10), nil},
		{"maglev-weighted", []chash.Node{{ID: "a", Weight: 1}, {ID: "b", Weight: 2}, {ID: "c", Weight: 0.5}, {ID: "d", Weight: 4}}, nil},
		{"maglev-10-size-1009-seed-7", chashtest.Nodes(10), []chash.Option{chash.WithTableSize(1009), chash.WithHasher(chash.XXHashSeed(7))}},
		{"maglev-300", chashtest.Nodes(300), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := chash.NewMaglev(tc.nodes, tc.opts...)
			require.NoError(t, err)
			conformance.Golden(t, tc.name, g)
		})
	}
}

// refMaglev is the documented population, written as plainly as possible:
// it returns the table as indices into the nodes sorted by ID, whose IDs h
// hashes. Every claim walks the node's own list: no shared positions, no
// ranked tail.
func refMaglev(nodes []chash.Node, m int, h chash.Hasher) []int {
	nodes = slices.Clone(nodes)
	slices.SortFunc(nodes, func(a, b chash.Node) int { return cmpString(a.ID, b.ID) })
	offset, skip := make([]int, len(nodes)), make([]int, len(nodes))
	stride, pass, next := make([]uint64, len(nodes)), make([]uint64, len(nodes)), make([]int, len(nodes))
	maxw := 0.0
	for _, n := range nodes {
		maxw = max(maxw, weight(n))
	}
	for i, n := range nodes {
		h := h.Sum64String(n.ID)
		offset[i] = int(h % uint64(m))
		skip[i] = int(conformance.Mix64(h^0x6d61676c65762d73)%uint64(m-1)) + 1
		stride[i] = uint64(math.Round(min(maxw/weight(n), 1<<24) * (1 << 32)))
	}
	table := make([]int, m)
	for s := range table {
		table[s] = -1
	}
	for filled := 0; filled < m; filled++ {
		i := 0 // the node with the least pass, then the lowest ID
		for j := range nodes {
			if pass[j] < pass[i] {
				i = j
			}
		}
		pass[i] += stride[i]
		// Entry j of node i's list, in 64 bits: j·skip exceeds an int32.
		entry := func() int { return int((uint64(offset[i]) + uint64(next[i])*uint64(skip[i])) % uint64(m)) }
		for table[entry()] >= 0 {
			next[i]++
		}
		table[entry()] = i
		next[i]++
	}
	return table
}

func weight(n chash.Node) float64 {
	if n.Weight == 0 {
		return 1
	}
	return n.Weight
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// TestMaglevReference checks the table against refMaglev: entry counts,
// and the owner of 100,000 keys looked up as documented (⌊h·M/2⁶⁴⌋).
func TestMaglevReference(t *testing.T) {
	type refCase struct {
		nodes []chash.Node
		m     int
		h     chash.Hasher
		name  string
	}
	// IDs whose hashes are equal (which share one walk) or M apart (which
	// share an offset), among ordinary ones; the keys hash as with XXHash.
	crafted := slices.Concat(chashtest.Nodes(20), evilNodes(12))
	weighted := slices.Clone(crafted)
	for i := range weighted {
		weighted[i].Weight = float64(1 + i%3)
	}
	same, apart := craftedHasher{base: 12345}, func(m int) chash.Hasher { return craftedHasher{base: 777, step: uint64(m)} }
	all := []refCase{
		{slices.Concat(chashtest.Nodes(2), evilNodes(3)), 5, same, "equal-hashes"},
		{crafted, 1009, same, "equal-hashes"},
		{crafted, 1009, apart(1009), "equal-offsets"},
		{weighted, 1009, same, "equal-hashes-weighted"},
		{crafted, 65537, same, "equal-hashes"},
		{crafted, 65537, apart(65537), "equal-offsets"},
	}
	cases := []struct {
		nodes []chash.Node
		m     int
	}{
		{chashtest.Nodes(1), 2},
		{chashtest.Nodes(2), 2},
		{chashtest.Nodes(3), 3},
		{chashtest.Nodes(10), 1009},
		{chashtest.Nodes(10), 65537},
		{chashtest.Nodes(100), 65537},
		{chashtest.Nodes(300), 1009},
		{chashtest.Nodes(1000), 65537},
		{[]chash.Node{{ID: "w1", Weight: 1}, {ID: "w2", Weight: 2}, {ID: "w3", Weight: 3}, {ID: "w4", Weight: 4}}, 65537},
		{[]chash.Node{{ID: "tiny", Weight: 1e-30}, {ID: "big", Weight: 1e30}, {ID: "mid", Weight: 0.37}}, 1009},
		// Unequal weights whose strides round to equal ones: the weighted
		// schedule must then be the round robin of equal weights.
		{[]chash.Node{{ID: "a", Weight: 1}, {ID: "b", Weight: 1 + 1e-12}, {ID: "c", Weight: 1}}, 1009},
		// A large table, whose last 809 entries are claimed by rank.
		{chashtest.Nodes(10), 655373},
	}
	if testing.Short() {
		cases, all = cases[:5], all[:4]
	}
	for _, c := range cases {
		all = append(all, refCase{c.nodes, c.m, chash.XXHash, "xxhash"})
	}
	keys := chashtest.Keys(conformance.NumKeys)
	for _, c := range all {
		t.Run(fmt.Sprintf("n=%d/M=%d/%s", len(c.nodes), c.m, c.name), func(t *testing.T) {
			g, err := chash.NewMaglev(c.nodes, chash.WithTableSize(c.m), chash.WithHasher(c.h))
			require.NoError(t, err)
			table := refMaglev(c.nodes, c.m, c.h)
			want := make([]int, len(c.nodes))
			for _, i := range table {
				want[i]++
			}
			require.Equal(t, want, g.Entries(), "entries against the reference")
			nodes := g.Nodes()
			for _, k := range keys {
				s, _ := bits.Mul64(c.h.Sum64String(k), uint64(c.m))
				require.Equal(t, nodes[table[s]], g.LookupString(k), "Lookup(%q) against the reference", k)
			}
		})
	}
}

func spread(counts []int) (lo, hi int) {
	return slices.Min(counts), slices.Max(counts)
}

func TestMaglevEntries(t *testing.T) {
	for _, n := range []int{10, 100, 1000} {
		g, err := chash.NewMaglev(chashtest.Nodes(n))
		require.NoError(t, err)
		lo, hi := spread(g.Entries())
		t.Logf("%d nodes, M=%d: entries per node %d to %d", n, g.TableSize(), lo, hi)
		assert.LessOrEqual(t, hi-lo, 1, "%d equal nodes: entries differ", n)
	}
	nodes := []chash.Node{{ID: "w1", Weight: 1}, {ID: "w2", Weight: 2}, {ID: "w3", Weight: 3}, {ID: "w4", Weight: 4}}
	for _, m := range []int{1009, 65537, 655373} {
		g, err := chash.NewMaglev(nodes, chash.WithTableSize(m))
		require.NoError(t, err)
		for i, e := range g.Entries() {
			ideal := float64(m) * nodes[i].Weight / 10
			t.Logf("M=%d weight %v: %d entries, share %.5f (ideal %.0f, %.5f)", m, nodes[i].Weight, e, float64(e)/float64(m), ideal, ideal/float64(m))
			assert.InDelta(t, ideal, float64(e), 2, "M=%d weight %v: entries", m, nodes[i].Weight)
		}
	}
	// An extreme weight still leaves every node an entry.
	g, err := chash.NewMaglev([]chash.Node{{ID: "a", Weight: 1e-300}, {ID: "b", Weight: 1e300}}, chash.WithTableSize(7))
	require.NoError(t, err)
	assert.Equal(t, []int{1, 6}, g.Entries(), "weights 1e-300 and 1e300: entries")
}

func TestMaglevTableSize(t *testing.T) {
	for _, m := range []int{-1, 0, 1, 4, 65536, 1 << 25} {
		_, err := chash.NewMaglev(chashtest.Nodes(3), chash.WithTableSize(m))
		assert.ErrorIs(t, err, chash.ErrInvalidOption, "WithTableSize(%d)", m)
	}
	g, err := chash.NewMaglev(chashtest.Nodes(3), chash.WithTableSize(3))
	require.NoError(t, err)
	assert.Equal(t, []int{1, 1, 1}, g.Entries(), "3 nodes in 3 entries")
	_, err = chash.NewMaglev(chashtest.Nodes(4), chash.WithTableSize(3))
	assert.ErrorIs(t, err, chash.ErrInvalidOption, "4 nodes in 3 entries")
	_, err = g.Add(chash.Node{ID: "x"})
	assert.ErrorIs(t, err, chash.ErrInvalidOption, "Add past the table size")
	assert.Equal(t, 3, g.TableSize())
	g, err = chash.NewMaglev(chashtest.Nodes(1))
	if assert.NoError(t, err, "default table size") {
		assert.Equal(t, chash.DefaultTableSize, g.TableSize(), "default table size")
	}
}

// TestMaglevWide covers the 2- and 3-byte tables: every node of M = N
// equal nodes holds exactly one entry, and lookups agree with Entries.
func TestMaglevWide(t *testing.T) {
	sizes := [][2]int{{257, 257}, {1000, 1009}, {70001, 70001}}
	if testing.Short() {
		sizes = sizes[:2]
	}
	for _, c := range sizes {
		g, err := chash.NewMaglev(chashtest.Nodes(c[0]), chash.WithTableSize(c[1]))
		require.NoError(t, err)
		lo, hi := spread(g.Entries())
		assert.LessOrEqual(t, hi-lo, 1, "%d nodes, M=%d: entries %d to %d", c[0], c[1], lo, hi)
		seen := map[string]bool{}
		for _, k := range chashtest.Keys(20_000) {
			seen[g.LookupString(k).ID] = true
		}
		// 20,000 keys over M entries reach nearly every node; a wrong entry
		// width would reach only a few, or panic.
		assert.GreaterOrEqual(t, len(seen), min(c[0], 20_000)*8/10, "%d nodes: nodes 20,000 keys reached", c[0])
	}
}

// TestMaglevDisruption measures keys moving between untouched nodes when
// one node is removed or added, trying ten different nodes each way.
func TestMaglevDisruption(t *testing.T) {
	for _, c := range []struct {
		n, m, tries int
		bound       float64
	}{{10, 65537, 10, maglevCollateral}, {100, 65537, 10, maglevCollateral}, {100, 655373, 3, 0.003}, {100, 1009, 3, 0.06}} {
		if testing.Short() {
			c.tries = 2
		}
		nodes := chashtest.Nodes(c.n)
		g, err := chash.NewMaglev(nodes, chash.WithTableSize(c.m))
		require.NoError(t, err)
		before := conformance.Owners(g)
		for _, what := range []string{"remove", "add"} {
			lo, hi, sum := 1.0, 0.0, 0.0
			for i := 0; i < c.tries; i++ {
				id := nodes[i*c.n/c.tries].ID
				var d *chash.Maglev
				if what == "remove" {
					d, err = g.Remove(id)
				} else {
					id = fmt.Sprintf("extra-%d", i)
					d, err = g.Add(chash.Node{ID: id})
				}
				require.NoError(t, err)
				_, collateral := measure.Moves(before, conformance.Owners(d), id)
				lo, hi, sum = min(lo, collateral), max(hi, collateral), sum+collateral
			}
			t.Logf("n=%d M=%d %s (%d tries): collateral min %.5f mean %.5f max %.5f", c.n, c.m, what, c.tries, lo, sum/float64(c.tries), hi)
			assert.LessOrEqual(t, hi, c.bound, "n=%d M=%d %s: collateral", c.n, c.m, what)
		}
	}
}

func TestMaglevAddRemove(t *testing.T) {
	g, err := chash.NewMaglev(chashtest.Nodes(5))
	require.NoError(t, err)
	_, err = g.Remove("node-9")
	assert.ErrorIs(t, err, chash.ErrUnknownNode, "Remove(unknown)")
	_, err = g.Remove("node-0", "node-1", "node-2", "node-3", "node-4")
	assert.ErrorIs(t, err, chash.ErrNoNodes, "Remove(all)")
	_, err = g.Add(chash.Node{ID: "node-1"})
	assert.ErrorIs(t, err, chash.ErrDuplicateID, "Add(member)")
	_, err = g.Add(chash.Node{ID: "x", Weight: -1})
	assert.ErrorIs(t, err, chash.ErrInvalidWeight, "Add(weight -1)")
	d, err := g.Add(chash.Node{ID: "b", Weight: 2}, chash.Node{ID: "a", Weight: 0.5})
	require.NoError(t, err)
	d, err = d.Remove("node-2", "node-0")
	require.NoError(t, err)
	want, err := chash.NewMaglev([]chash.Node{{ID: "node-4"}, {ID: "a", Weight: 0.5}, {ID: "node-1"}, {ID: "b", Weight: 2}, {ID: "node-3"}})
	require.NoError(t, err)
	assert.Equal(t, conformance.Owners(want), conformance.Owners(d), "Add then Remove places keys differently from New with the same nodes")
	assert.Equal(t, want.Nodes(), d.Nodes(), "Add then Remove against New with the same nodes")
	assert.Equal(t, 5, g.Len(), "the original changed")
}

// TestMaglevTopKAll asks for every node, which exercises the fallback
// after the probes, including at M = N where probing finds few nodes.
func TestMaglevTopKAll(t *testing.T) {
	for _, c := range [][2]int{{10, 11}, {50, 53}, {100, 65537}, {7, 7}} {
		g, err := chash.NewMaglev(chashtest.Nodes(c[0]), chash.WithTableSize(c[1]))
		require.NoError(t, err)
		buf := make([]chash.Node, 0, c[0])
		for _, k := range chashtest.Keys(2000) {
			buf = g.AppendTopKString(buf[:0], k, c[0])
			ids := make([]string, len(buf))
			for i, n := range buf {
				ids[i] = n.ID
			}
			slices.Sort(ids)
			require.Len(t, slices.Compact(ids), c[0], "n=%d M=%d key %q: top %d = %v", c[0], c[1], k, c[0], buf)
			require.Equal(t, g.LookupString(k), buf[0], "n=%d M=%d key %q: top %d = %v", c[0], c[1], k, c[0], buf)
		}
	}
}

func FuzzMaglev(f *testing.F) {
	f.Add("a,b,c", []byte{0, 1, 2}, 65537, "key", 3)
	f.Add("a", []byte{}, 2, "", 1)
	f.Add("x,y,z,w", []byte{6, 1}, 3, "k", 9)
	f.Add("n1,n2,n3", []byte{5, 9}, 4, "zz", -2)
	f.Add("p,q,r,s,t,u", []byte{8, 4}, 7, "key-7", 6)
	f.Fuzz(func(t *testing.T, ids string, weights []byte, m int, key string, k int) {
		nodes := conformance.FuzzNodes(ids, weights)
		if len(nodes) > 64 {
			return
		}
		m = m % (1 << 20) // keep each build fast; larger sizes are rejected or slow
		g, err := chash.NewMaglev(nodes, chash.WithTableSize(m))
		if err != nil {
			require.Nil(t, g, "non-nil Maglev with an error")
			return
		}
		chashtest.CheckTopK(t, g, key, k%80)
	})
}

func ExampleNewMaglev() {
	g, err := chash.NewMaglev([]chash.Node{{ID: "cache-a"}, {ID: "cache-b"}, {ID: "cache-c", Weight: 2}})
	if err != nil {
		panic(err)
	}
	fmt.Println(g.LookupString("user:42"))
	fmt.Println(g.AppendTopKString(nil, "user:42", 2))
	fmt.Println(g.TableSize(), g.Entries())
	// Output:
	// {cache-a 1 }
	// [{cache-a 1 } {cache-c 2 }]
	// 65537 [16385 16384 32768]
}

// BenchmarkMaglevBuild measures building tables of 10, 100 and 1,000
// equal nodes at the default size and at ten times it.
func BenchmarkMaglevBuild(b *testing.B) {
	for _, m := range []int{65537, 655373} {
		for _, n := range []int{10, 100, 1000} {
			nodes := chashtest.Nodes(n)
			b.Run(fmt.Sprintf("M=%d/nodes=%d", m, n), func(b *testing.B) {
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					_, err := chash.NewMaglev(nodes, chash.WithTableSize(m))
					require.NoError(b, err)
				}
			})
		}
	}
}
