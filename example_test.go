package chash_test

import (
	"fmt"

	"github.com/keyplace/chash"
)

func Example() {
	ring, err := chash.NewRing([]chash.Node{{ID: "cache-a"}, {ID: "cache-b"}, {ID: "cache-c"}})
	if err != nil {
		panic(err)
	}
	fmt.Println(ring.LookupString("user:42").ID)
	// Output: cache-a
}

// A service picks the algorithm from its configuration.
func ExampleNew() {
	a, err := chash.ParseAlgorithm("ring")
	if err != nil {
		panic(err)
	}
	p, err := chash.New(a, []chash.Node{{ID: "shard-1"}, {ID: "shard-2"}}, chash.WithVnodes(200))
	if err != nil {
		panic(err)
	}
	fmt.Println(a, p.Len(), p.LookupString("order:1001").ID)
	// Output: ring 2 shard-2
}

// Replicas: the first node is the owner, the next are where copies go.
func ExampleRing_AppendTopKString() {
	ring, _ := chash.NewRing([]chash.Node{{ID: "a"}, {ID: "b"}, {ID: "c"}, {ID: "d"}})
	buf := make([]chash.Node, 0, 3) // reused across requests: no allocation
	for _, n := range ring.AppendTopKString(buf[:0], "photo:7", 3) {
		fmt.Print(n.ID, " ")
	}
	fmt.Println()
	// Output: d a b
}

// A node of weight 2 gets about twice the keys of a node of weight 1.
func ExampleNode_weight() {
	ring, _ := chash.NewRing([]chash.Node{{ID: "small", Weight: 1}, {ID: "big", Weight: 2}})
	count := map[string]int{}
	for i := 0; i < 30000; i++ {
		count[ring.LookupString(fmt.Sprint("key-", i)).ID]++
	}
	fmt.Printf("big/small = %.1f\n", float64(count["big"])/float64(count["small"]))
	// Output: big/small = 2.0
}

// A Holder lets requests keep reading while membership changes.
func ExampleHolder() {
	ring, _ := chash.NewRing([]chash.Node{{ID: "a"}, {ID: "b"}, {ID: "c"}})
	current := chash.NewHolder(ring)

	// Request path: lock-free, allocation-free.
	before := current.LookupString("session:9").ID

	// Membership change: derive a new ring and swap it in.
	grown, err := ring.Add(chash.Node{ID: "d"})
	if err != nil {
		panic(err)
	}
	current.Store(grown)
	after := current.LookupString("session:9").ID
	fmt.Println(before, "->", after, "nodes:", current.Len())
	// Output: c -> c nodes: 4
}
