package chash_test

import (
	"fmt"
	"testing"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/chashtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// indexLookup is the index-returning lookup of Ring, Rendezvous and Jump.
type indexLookup interface {
	chash.Placer
	LookupIndex(key []byte) int
	LookupIndexString(key string) int
}

// TestLookupIndex checks that LookupIndex and LookupIndexString name, in
// Nodes(), the node Lookup returns, with and without a hasher option and
// with weights, that they allocate nothing, and that an empty placer (nil
// or the zero value) answers -1.
func TestLookupIndex(t *testing.T) {
	weighted := chashtest.Nodes(20)
	for i := range weighted {
		weighted[i].Weight = float64(1 + i%3)
	}
	build := map[string]func([]chash.Node, ...chash.Option) (indexLookup, error){
		"ring":       func(ns []chash.Node, o ...chash.Option) (indexLookup, error) { return chash.NewRing(ns, o...) },
		"rendezvous": func(ns []chash.Node, o ...chash.Option) (indexLookup, error) { return chash.NewRendezvous(ns, o...) },
		"jump":       func(ns []chash.Node, o ...chash.Option) (indexLookup, error) { return chash.NewJump(ns, o...) },
	}
	keys := chashtest.Keys(2000)
	for name, newP := range build {
		cases := map[string][]chash.Node{"1": chashtest.Nodes(1), "8": chashtest.Nodes(8), "1000": chashtest.Nodes(1000)}
		if name != "jump" {
			cases["weighted"] = weighted
		}
		for cname, nodes := range cases {
			for _, opts := range [][]chash.Option{nil, {chash.WithHasher(chash.XXHashSeed(3))}} {
				p, err := newP(nodes, opts...)
				require.NoError(t, err)
				members := p.Nodes()
				for _, k := range keys {
					want := p.LookupString(k)
					i := p.LookupIndexString(k)
					require.True(t, i >= 0 && i < len(members), "%s/%s: index %d", name, cname, i)
					require.Equal(t, want, members[i], "%s/%s key %q", name, cname, k)
					require.Equal(t, i, p.LookupIndex([]byte(k)), "%s/%s key %q", name, cname, k)
				}
				key, skey := []byte("user:42"), "user:42"
				allocs := testing.AllocsPerRun(100, func() {
					sinkIndex += p.LookupIndex(key) + p.LookupIndexString(skey)
				})
				assert.Zero(t, allocs, "%s/%s allocates", name, cname)
			}
		}
	}
	empties := map[string]indexLookup{
		"nil ring": (*chash.Ring)(nil), "zero ring": &chash.Ring{},
		"nil rendezvous": (*chash.Rendezvous)(nil), "zero rendezvous": &chash.Rendezvous{},
		"nil jump": (*chash.Jump)(nil), "zero jump": &chash.Jump{},
	}
	for name, p := range empties {
		assert.Equal(t, -1, p.LookupIndex([]byte("k")), name)
		assert.Equal(t, -1, p.LookupIndexString("k"), name)
	}
}

var sinkIndex int

// ExampleJump_LookupIndexString keeps per-node data (here, addresses) in
// the order the nodes were given, and finds a key's by its bucket.
func ExampleJump_LookupIndexString() {
	addrs := []string{"10.0.0.1:6379", "10.0.0.2:6379", "10.0.0.3:6379"}
	nodes := make([]chash.Node, len(addrs))
	for i := range addrs {
		nodes[i] = chash.Node{ID: fmt.Sprintf("cache-%d", i)}
	}
	p, err := chash.NewJump(nodes)
	if err != nil {
		panic(err)
	}
	i := p.LookupIndexString("user:42")
	fmt.Println(addrs[i], p.LookupString("user:42").ID)
	// Output: 10.0.0.1:6379 cache-0
}
