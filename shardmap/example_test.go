package shardmap_test

import (
	"fmt"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/shardmap"
)

// A map of 8 partitions, 3 replicas each in three zones; a key's list is
// its partition's replicas, primary first.
func ExampleNew() {
	nodes := []chash.Node{
		{ID: "a1", Weight: 1, Zone: "a"}, {ID: "a2", Weight: 1, Zone: "a"},
		{ID: "b1", Weight: 1, Zone: "b"}, {ID: "b2", Weight: 1, Zone: "b"},
		{ID: "c1", Weight: 1, Zone: "c"}, {ID: "c2", Weight: 1, Zone: "c"},
	}
	m, err := shardmap.New(nodes, shardmap.Spec{Partitions: 8, Replicas: 3, Pins: []shardmap.Pin{{Partition: 0, Node: "c2"}}})
	if err != nil {
		panic(err)
	}
	p := m.PartitionString("user:42")
	fmt.Print("partition ", p, " version ", m.Version(), "\n")
	fmt.Print("replicas:")
	for _, n := range m.AppendTopKString(nil, "user:42", 3) {
		fmt.Print(" ", n.ID)
	}
	fmt.Println()
	fmt.Println("partition 0's primary:", m.AppendReplicas(nil, 0)[0].ID)
	// Output:
	// partition 6 version 1
	// replicas: a1 b2 c1
	// partition 0's primary: c2
}

// Draining a node (weight 0) and adding one: the plan copies each
// replica before it removes the old one, and moves primaries last, in
// batches whose steps may run at once.
func ExamplePlanMoves() {
	nodes := []chash.Node{
		{ID: "a1", Weight: 1, Zone: "a"}, {ID: "a2", Weight: 1, Zone: "a"},
		{ID: "b1", Weight: 1, Zone: "b"}, {ID: "b2", Weight: 1, Zone: "b"},
	}
	old, err := shardmap.New(nodes, shardmap.Spec{Partitions: 4, Replicas: 2})
	if err != nil {
		panic(err)
	}
	nodes[1].Weight = 0 // drain a2
	nodes = append(nodes, chash.Node{ID: "a3", Weight: 1, Zone: "a"})
	next, err := old.Rebalance(nodes, old.Spec())
	if err != nil {
		panic(err)
	}
	plan, err := shardmap.PlanMoves(old, next, nil)
	if err != nil {
		panic(err)
	}
	for _, st := range plan.Steps {
		if st.Kind == shardmap.StepPromote {
			fmt.Println("batch", st.Batch, st.Kind, st.Partition, st.Node, "replacing", st.From)
		} else {
			fmt.Println("batch", st.Batch, st.Kind, st.Partition, st.Node)
		}
	}
	fmt.Println(plan.Moves, "replicas copied in", len(plan.Batches), "batches")
	// Output:
	// batch 0 add 0 a3
	// batch 0 add 3 a3
	// batch 0 remove 3 a2
	// batch 1 promote 0 a3 replacing a2
	// batch 2 remove 0 a2
	// 2 replicas copied in 3 batches
}
