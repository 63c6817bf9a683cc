package chash_test

import (
	"fmt"

	"github.com/keyplace/chash"
)

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
