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

// A node added to a full zone (3 replicas over 3 zones: every zone holds
// a replica of every partition) takes its fair share of the zone from its
// zone-mates, within the spec's tolerance of a fresh build, moving no
// more than that target requires.
func ExampleMap_Rebalance() {
	var nodes []chash.Node
	for _, z := range []string{"a", "b", "c"} {
		for i := 1; i <= 3; i++ {
			nodes = append(nodes, chash.Node{ID: fmt.Sprint(z, i), Weight: 1, Zone: z})
		}
	}
	m, err := shardmap.New(nodes, shardmap.Spec{Partitions: 1200, Replicas: 3})
	if err != nil {
		panic(err)
	}
	next, err := m.Rebalance(append(nodes, chash.Node{ID: "a4", Weight: 1, Zone: "a"}), m.Spec())
	if err != nil {
		panic(err)
	}
	held, _ := next.Load("a4")
	moved, least, _ := shardmap.Moved(m, next)
	replicas, primaries := next.Distance()
	fmt.Println("a4 holds", held, "of zone a's 1200")
	fmt.Println("moved", moved, "- the least for the tolerance:", least)
	fmt.Println("every node within", replicas, "replica and", primaries, "primary of a fresh build")
	// Output:
	// a4 holds 299 of zone a's 1200
	// moved 299 - the least for the tolerance: 299
	// every node within 1 replica and 1 primary of a fresh build
}

// Two replicas of every partition in data centre dc1 and one in dc2, as
// Cassandra's NetworkTopologyStrategy {dc1: 2, dc2: 1}.
func ExampleSpec_zoneReplicas() {
	nodes := []chash.Node{
		{ID: "n1", Weight: 1, Zone: "dc1"}, {ID: "n2", Weight: 1, Zone: "dc1"}, {ID: "n3", Weight: 1, Zone: "dc1"},
		{ID: "n4", Weight: 1, Zone: "dc2"}, {ID: "n5", Weight: 1, Zone: "dc2"},
	}
	m, err := shardmap.New(nodes, shardmap.Spec{Partitions: 6, ZoneReplicas: []shardmap.ZoneReplicas{{Zone: "dc1", Replicas: 2}, {Zone: "dc2", Replicas: 1}}})
	if err != nil {
		panic(err)
	}
	for p := range 3 {
		var zones []string
		for _, n := range m.AppendReplicas(nil, p) {
			zones = append(zones, n.ID+"@"+n.Zone)
		}
		fmt.Println("partition", p, zones)
	}
	// Output:
	// partition 0 [n3@dc1 n5@dc2 n2@dc1]
	// partition 1 [n1@dc1 n4@dc2 n3@dc1]
	// partition 2 [n2@dc1 n4@dc2 n1@dc1]
}

// A plan in batches of at most two copies into each node: the batches are
// the critical path, and with a throttle, a duration.
func ExamplePlanBatches() {
	var nodes []chash.Node
	for i := 1; i <= 4; i++ {
		nodes = append(nodes, chash.Node{ID: fmt.Sprint(i), Weight: 1, Zone: fmt.Sprint("rack-", i%2)})
	}
	m, err := shardmap.New(nodes, shardmap.Spec{Partitions: 16, Replicas: 2})
	if err != nil {
		panic(err)
	}
	next, err := m.Rebalance(append(nodes, chash.Node{ID: "5", Weight: 1, Zone: "rack-1"}, chash.Node{ID: "6", Weight: 1, Zone: "rack-0"}), m.Spec())
	if err != nil {
		panic(err)
	}
	sizes := make([]shardmap.PartitionSize, 16)
	for p := range sizes {
		sizes[p].Bytes = 1e9
	}
	pl, err := shardmap.PlanBatches(m, next, sizes, shardmap.Limits{CopiesIn: 2, Throttle: 100e6})
	if err != nil {
		panic(err)
	}
	fmt.Println(pl.Moves, "copies in", len(pl.Batches), "batches, about", pl.Seconds, "seconds")
	docs, err := pl.Kafka(m, "orders")
	if err != nil {
		panic(err)
	}
	fmt.Println(len(docs), "kafka-reassign-partitions documents; the first moves", len(docs[0].Partitions), "partitions")
	// Output:
	// 8 copies in 4 batches, about 50 seconds
	// 4 kafka-reassign-partitions documents; the first moves 3 partitions
}
