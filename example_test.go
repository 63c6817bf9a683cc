package chash_test

import (
	"fmt"
	"log"

	"github.com/keyplace/chash"
)

func Example() {
	ring, err := chash.NewRing([]chash.Node{{ID: "cache-a"}, {ID: "cache-b"}, {ID: "cache-c"}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(ring.LookupString("user:42").ID)
	// Output: cache-a
}

// A service picks the algorithm from its configuration.
func ExampleNew() {
	a, err := chash.ParseAlgorithm("ring")
	if err != nil {
		log.Fatal(err)
	}
	p, err := chash.New(a, []chash.Node{{ID: "shard-1"}, {ID: "shard-2"}}, chash.WithVnodes(200))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(a, p.Len(), p.LookupString("order:1001").ID)
	// Output: ring 2 shard-2
}

// Replicas: the first node is the owner, the next are where copies go.
func ExampleRing_AppendTopKString() {
	ring, err := chash.NewRing([]chash.Node{{ID: "a"}, {ID: "b"}, {ID: "c"}, {ID: "d"}})
	if err != nil {
		log.Fatal(err)
	}
	buf := make([]chash.Node, 0, 3) // reused across requests: no allocation
	for _, n := range ring.AppendTopKString(buf[:0], "photo:7", 3) {
		fmt.Print(n.ID, " ")
	}
	fmt.Println()
	// Output: d a b
}

// A node of weight 2 gets about twice the keys of a node of weight 1.
func ExampleNode_weight() {
	ring, err := chash.NewRing([]chash.Node{{ID: "small", Weight: 1}, {ID: "big", Weight: 2}})
	if err != nil {
		log.Fatal(err)
	}
	count := map[string]int{}
	for i := 0; i < 30000; i++ {
		count[ring.LookupString(fmt.Sprint("key-", i)).ID]++
	}
	fmt.Printf("big/small = %.1f\n", float64(count["big"])/float64(count["small"]))
	// Output: big/small = 2.0
}

// Weights in bytes of capacity: the ring counts points per weight unit.
func ExampleWithWeightUnit() {
	nodes := []chash.Node{{ID: "disk-64g", Weight: 64 << 30}, {ID: "disk-32g", Weight: 32 << 30}}
	if _, err := chash.NewRing(nodes); err != nil {
		fmt.Println("without a unit: too large")
	}
	ring, err := chash.NewRing(nodes, chash.WithWeightUnit(1<<30)) // 160 points per GiB
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(ring.Points(), "points")
	// Output:
	// without a unit: too large
	// 15360 points
}

// A Holder lets requests keep reading while membership changes.
func ExampleHolder() {
	ring, err := chash.NewRing([]chash.Node{{ID: "a"}, {ID: "b"}, {ID: "c"}})
	if err != nil {
		log.Fatal(err)
	}
	current := chash.NewHolder(ring)

	// Request path: lock-free, allocation-free.
	before := current.LookupString("session:9").ID

	// Membership change: derive a new ring and swap it in, after checking
	// the error.
	grown, err := ring.Add(chash.Node{ID: "d"})
	if err != nil {
		log.Fatal(err)
	}
	current.Store(grown)
	after := current.LookupString("session:9").ID
	fmt.Println(before, "->", after, "nodes:", current.Len())
	// Output: c -> c nodes: 4
}

// Generic code changes membership, weights included, without knowing the
// algorithm.
func ExampleDerive() {
	p, err := chash.New(chash.AlgorithmMaglev, []chash.Node{{ID: "a"}, {ID: "b"}, {ID: "c"}})
	if err != nil {
		log.Fatal(err)
	}
	q, err := chash.Derive(p, []chash.Node{{ID: "a"}, {ID: "b", Weight: 2}, {ID: "c"}})
	if err != nil {
		log.Fatal(err)
	}
	m, err := chash.Diff(p, q)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%T, %.0f%% of keys moved\n", q, 100*m.Moved)
	// Output: *chash.Maglev, 17% of keys moved
}

// A secret seed keeps keys and node IDs chosen by an attacker from being
// aimed at one node; every process that must agree uses the same seed.
func ExampleXXHashSeed() {
	nodes := []chash.Node{{ID: "a"}, {ID: "b"}, {ID: "c"}}
	plain, err := chash.NewRendezvous(nodes)
	if err != nil {
		log.Fatal(err)
	}
	seeded, err := chash.NewRendezvous(nodes, chash.WithHasher(chash.XXHashSeed(0x5eed)))
	if err != nil {
		log.Fatal(err)
	}
	m, err := chash.Diff(plain, seeded)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("a different placement: %.0f%% of keys differ\n", 100*m.Moved)
	// Output: a different placement: 67% of keys differ
}

// Replace retires a node in the middle of a Jump: its bucket, and only its
// keys, go to the replacement.
func ExampleJump_Replace() {
	j, err := chash.NewJump([]chash.Node{{ID: "shard-0"}, {ID: "shard-1"}, {ID: "shard-2"}})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := j.Remove("shard-1"); err != nil {
		fmt.Println("remove: not the last bucket")
	}
	k, err := j.Replace("shard-1", chash.Node{ID: "shard-1b"})
	if err != nil {
		log.Fatal(err)
	}
	m, err := chash.Diff(j, k)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(k.Nodes()[1].ID, fmt.Sprintf("%.0f%% moved", 100*m.Moved))
	// Output:
	// remove: not the last bucket
	// shard-1b 33% moved
}

// Three replicas in three zones: the first is the ring's owner, the others
// the most preferred nodes of the zones it lacks.
func ExampleNewZoned() {
	ring, err := chash.NewRing([]chash.Node{
		{ID: "a1", Zone: "eu-1a"}, {ID: "a2", Zone: "eu-1a"},
		{ID: "b1", Zone: "eu-1b"}, {ID: "b2", Zone: "eu-1b"},
		{ID: "c1", Zone: "eu-1c"}, {ID: "c2", Zone: "eu-1c"},
	})
	if err != nil {
		panic(err)
	}
	zoned, err := chash.NewZoned(ring)
	if err != nil {
		panic(err)
	}
	buf := make([]chash.Node, 0, 3) // reused across requests: no allocation
	for _, n := range zoned.AppendTopKString(buf[:0], "photo:7", 3) {
		fmt.Print(n.ID, "@", n.Zone, " ")
	}
	fmt.Println()
	// Output: c1@eu-1c b1@eu-1b a2@eu-1a
}
