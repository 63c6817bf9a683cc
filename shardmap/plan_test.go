package shardmap_test

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/internal/measure"
	"github.com/keyplace/chash/shardmap"
)

// zoneFleet returns n nodes a zone over zones a, b, c, named a1, b1, ...
func zoneFleet(n int) []chash.Node {
	var nodes []chash.Node
	for _, z := range []string{"a", "b", "c"} {
		for i := 1; i <= n; i++ {
			nodes = append(nodes, chash.Node{ID: fmt.Sprintf("%s%d", z, i), Weight: 1, Zone: z})
		}
	}
	return nodes
}

// The expansion: 9 nodes in 3 zones, P = 4096, R = 3, one node
// added to each zone. The plan in batches, with at most 8 copies into and
// out of a node a batch, 8 GB in flight a node and partitions of 1 GB,
// replays batch by batch with every promise kept (replayPlan checks each
// batch from the state before it: bounds with all its copies counted,
// live replicas with all its removals, limits, promotions alone), and
// every node ends within ±1 of its fair share, the new ones with 1,024.
func TestBatchedExpansion(t *testing.T) {
	nodes := zoneFleet(3)
	m := mustMap(t, nodes, shardmap.Spec{Partitions: 4096, Replicas: 3})
	next := append(slices.Clone(nodes), chash.Node{ID: "a4", Weight: 1, Zone: "a"}, chash.Node{ID: "b4", Weight: 1, Zone: "b"}, chash.Node{ID: "c4", Weight: 1, Zone: "c"})
	after, err := m.Rebalance(next, m.Spec())
	require.NoError(t, err)
	verifyMap(t, after)
	requireNearFresh(t, after, 1)
	t.Logf("moved %d, minimum %d", moved(m, after), minimumMoves(t, m, after))
	assert.Equal(t, minimumMoves(t, m, after), moved(m, after))

	sizes := make([]shardmap.PartitionSize, 4096)
	for p := range sizes {
		sizes[p] = shardmap.PartitionSize{Bytes: 1e9, Keys: 1e6}
	}
	free, err := shardmap.PlanMoves(m, after, sizes)
	require.NoError(t, err)
	replayPlan(t, m, after, free, sizes...)
	lim := shardmap.Limits{CopiesIn: 8, CopiesOut: 8, BytesInFlight: 8e9, Throttle: 100e6}
	pl, err := shardmap.PlanBatches(m, after, sizes, lim)
	require.NoError(t, err)
	replayPlan(t, m, after, pl, sizes...)
	require.Equal(t, free.Moves, pl.Moves)
	require.Equal(t, free.Bytes, pl.Bytes)
	// Each new node receives about 1,023 copies, 8 a batch.
	in := map[string]int{}
	for _, st := range pl.Steps {
		if st.Kind == shardmap.StepAdd {
			in[st.Node]++
		}
	}
	most := 0
	for _, n := range in {
		most = max(most, n)
	}
	assert.GreaterOrEqual(t, len(pl.Batches), (most+7)/8)
	peak := int64(0)
	for _, b := range pl.Batches {
		assert.LessOrEqual(t, b.PeakNodeBytes, int64(8e9))
		peak = max(peak, b.Bytes)
	}
	t.Logf("no limits: %d batches; limits %+v: %d batches for %d copies (most into a node %d), %.0f GB, peak batch %.0f GB, %.0f s at the throttle",
		len(free.Batches), lim, len(pl.Batches), pl.Moves, most, float64(pl.Bytes)/1e9, float64(peak)/1e9, pl.Seconds)
	assert.InDelta(t, float64(most)*10, pl.Seconds, float64(most)*10*0.05+20, "each new node takes ~%d GB at 100 MB/s", most)
}

// A cycle of full nodes: with c = 1 every node is at its bound, so a swap
// of replicas between zones can only start with a removal ahead of its
// copy (the plan keeps R−1 live replicas meanwhile).
func TestPlanFullCycle(t *testing.T) {
	nodes := zoneFleet(2)
	spec := shardmap.Spec{Partitions: 60, Replicas: 2, LoadFactor: 1}
	m := mustMap(t, nodes, spec)
	// The same fleet, its weights swapped within zones: every node stays
	// at its bound, replicas trade places.
	next := slices.Clone(nodes)
	next[0].Weight, next[1].Weight = 1.5, 0.5
	after, err := m.Rebalance(next, spec)
	require.NoError(t, err)
	pl, err := shardmap.PlanMoves(m, after, nil)
	require.NoError(t, err)
	replayPlan(t, m, after, pl)
	t.Logf("%d moves in %d batches", pl.Moves, len(pl.Batches))
}

func TestPlanRefusals(t *testing.T) {
	m := mustMap(t, mapNodes(6, 3), shardmap.Spec{Partitions: 64, Replicas: 2})
	other := mustMap(t, mapNodes(6, 3), shardmap.Spec{Partitions: 65, Replicas: 2})
	for name, c := range map[string]struct {
		to    *shardmap.Map
		sizes []shardmap.PartitionSize
		lim   shardmap.Limits
	}{
		"partitions": {other, nil, shardmap.Limits{}},
		"sizes":      {m, make([]shardmap.PartitionSize, 3), shardmap.Limits{}},
		"negative":   {m, append(make([]shardmap.PartitionSize, 63), shardmap.PartitionSize{Bytes: -1}), shardmap.Limits{}},
		"overflow":   {m, append(make([]shardmap.PartitionSize, 62), shardmap.PartitionSize{Bytes: math.MaxInt64 / 2}, shardmap.PartitionSize{Bytes: math.MaxInt64 / 2}), shardmap.Limits{}},
		"limit":      {m, nil, shardmap.Limits{CopiesIn: -1}},
		"empty":      {&shardmap.Map{}, nil, shardmap.Limits{}},
	} {
		_, err := shardmap.PlanBatches(m, c.to, c.sizes, c.lim)
		require.ErrorIs(t, err, chash.ErrInvalidOption, name)
	}
}

// The order step: a plan ends each partition in the new map's order of
// secondaries (before, 7,627 of 758,537 replayed partitions did not).
func TestPlanOrder(t *testing.T) {
	nodes := zoneFleet(3)
	m := mustMap(t, nodes, shardmap.Spec{Partitions: 256, Replicas: 3, LoadFactor: 2})
	next := slices.Clone(nodes)
	next[3].Weight = 0 // drain b1
	after, err := m.Rebalance(next, m.Spec())
	require.NoError(t, err)
	pl, err := shardmap.PlanMoves(m, after, nil)
	require.NoError(t, err)
	replayPlan(t, m, after, pl) // ends in after's order, exactly
	// A pure reorder: the same replicas listed otherwise.
	doc, err := m.MarshalJSON()
	require.NoError(t, err)
	var d map[string]any
	require.NoError(t, json.Unmarshal(doc, &d))
	a := d["assignment"].([]any)[0].([]any)
	a[1], a[2] = a[2], a[1]
	d["version"] = 2.0
	d["fingerprint"] = "0"
	_, err = shardmap.Parse(mustJSON(t, d))
	require.ErrorIs(t, err, shardmap.ErrInvalid) // the fingerprint is checked
	reordered := reorderSecondaries(t, m, 0)
	pl, err = shardmap.PlanMoves(m, reordered, nil)
	require.NoError(t, err)
	require.Len(t, pl.Steps, 1)
	require.Equal(t, shardmap.StepOrder, pl.Steps[0].Kind)
	replayPlan(t, m, reordered, pl)
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

// reorderSecondaries returns m with partition p's last two replicas
// swapped, as an observed map (Import).
func reorderSecondaries(t *testing.T, m *shardmap.Map, p int) *shardmap.Map {
	t.Helper()
	var assignment [][]string
	for q := 0; q < m.Partitions(); q++ {
		ids := measure.IDs(m.AppendReplicas(nil, q))
		if q == p {
			ids[1], ids[2] = ids[2], ids[1]
		}
		assignment = append(assignment, ids)
	}
	got, err := shardmap.Import(m.Members(), m.Spec(), assignment)
	require.NoError(t, err)
	return got
}

// Kafka: a topic whose assignment ignores racks (all three replicas of
// some partitions in one rack) is imported as an observed map, rebalanced
// onto a grown cluster (rack-aware, fair, minimal), and the plan exported
// as one reassignment per batch; applying the batches in order, as
// kafka-reassign-partitions --execute would, gives the new map, and every
// document is what Kafka's parser accepts.
func TestKafka(t *testing.T) {
	var brokers []chash.Node
	for i := 1; i <= 6; i++ {
		brokers = append(brokers, chash.Node{ID: fmt.Sprint(i), Weight: 1, Zone: fmt.Sprintf("rack-%d", (i-1)/2)})
	}
	var cur strings.Builder
	cur.WriteString(`{"version":1,"partitions":[`)
	for p := 0; p < 48; p++ {
		if p > 0 {
			cur.WriteString(",")
		}
		// Replicas on brokers p, p+1, p+2 mod 6: racks repeat.
		fmt.Fprintf(&cur, `{"topic":"orders","partition":%d,"replicas":[%d,%d,%d],"log_dirs":["any","any","any"]}`, p, p%6+1, (p+1)%6+1, (p+2)%6+1)
	}
	cur.WriteString(`,{"topic":"other","partition":0,"replicas":[1]}]}`)
	assignment, topic, err := shardmap.ParseKafkaAssignment([]byte(cur.String()), "orders")
	require.NoError(t, err)
	require.Equal(t, "orders", topic)
	_, _, err = shardmap.ParseKafkaAssignment([]byte(cur.String()), "")
	require.ErrorIs(t, err, shardmap.ErrInvalid, "two topics: name one")
	observed, err := shardmap.Import(brokers, shardmap.Spec{}, assignment)
	require.NoError(t, err)
	require.True(t, observed.Observed())
	require.Error(t, mapViolation(observed), "the current assignment is not rack-aware")
	require.ErrorIs(t, observed.Check(), shardmap.ErrConstraint)
	data, err := observed.MarshalJSON()
	require.NoError(t, err)
	back, err := shardmap.Parse(data)
	require.NoError(t, err, "an observed map loads with its flag")
	require.True(t, back.Observed())

	grown := append(slices.Clone(brokers), chash.Node{ID: "7", Weight: 1, Zone: "rack-0"}, chash.Node{ID: "8", Weight: 1, Zone: "rack-1"}, chash.Node{ID: "9", Weight: 1, Zone: "rack-2"})
	target, err := observed.Rebalance(grown, observed.Spec())
	require.NoError(t, err)
	verifyMap(t, target)
	requireNearFresh(t, target, 1)
	pl, err := shardmap.PlanBatches(observed, target, nil, shardmap.Limits{CopiesIn: 2, CopiesOut: 2})
	require.NoError(t, err)
	replayPlan(t, observed, target, pl)
	docs, err := pl.Kafka(observed, "orders")
	require.NoError(t, err)
	require.Len(t, docs, len(pl.Batches))
	state := slices.Clone(assignment)
	for b, doc := range docs {
		raw, err := json.Marshal(doc)
		require.NoError(t, err)
		if b == 0 {
			t.Logf("batch 0: %s", raw)
		}
		// Kafka's rules: version 1, a partition at most once, a replica at
		// most once in a list, no empty list.
		require.Equal(t, 1, doc.Version)
		require.NotEmpty(t, doc.Partitions)
		seen := map[int]bool{}
		for _, kp := range doc.Partitions {
			require.Equal(t, "orders", kp.Topic)
			require.False(t, seen[kp.Partition])
			seen[kp.Partition] = true
			require.NotEmpty(t, kp.Replicas)
			ids := make([]string, len(kp.Replicas))
			for j, r := range kp.Replicas {
				ids[j] = fmt.Sprint(r)
			}
			sorted := slices.Clone(kp.Replicas)
			slices.Sort(sorted)
			require.Len(t, slices.Compact(sorted), len(kp.Replicas))
			state[kp.Partition] = ids
		}
	}
	for p := range state {
		require.Equal(t, measure.IDs(target.AppendReplicas(nil, p)), state[p], "partition %d", p)
	}
	// Node IDs that are not broker IDs are refused.
	m := mustMap(t, mapNodes(6, 3), shardmap.Spec{Partitions: 8, Replicas: 2})
	m2, err := m.Rebalance(append(mapNodes(6, 3), chash.Node{ID: "x", Weight: 1, Zone: "z0"}), m.Spec())
	require.NoError(t, err)
	pl2, err := shardmap.PlanMoves(m, m2, nil)
	require.NoError(t, err)
	_, err = pl2.Kafka(m, "t")
	require.ErrorIs(t, err, shardmap.ErrInvalid)
	for name, bad := range map[string]string{
		"version":   `{"version":2,"partitions":[{"topic":"t","partition":0,"replicas":[1]}]}`,
		"twice":     `{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1]},{"topic":"t","partition":0,"replicas":[2]}]}`,
		"gap":       `{"version":1,"partitions":[{"topic":"t","partition":1,"replicas":[1]}]}`,
		"repeat":    `{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,1]}]}`,
		"empty":     `{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[]}]}`,
		"factor":    `{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1]},{"topic":"t","partition":1,"replicas":[1,2]}]}`,
		"negative":  `{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[-1]}]}`,
		"unknown":   `{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1],"leader":1}]}`,
		"no topic":  `{"version":1,"partitions":[{"partition":0,"replicas":[1]}]}`,
		"not json":  `{"version":1,`,
		"no orders": `{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1]}]}`,
	} {
		topic := "t"
		if name == "no orders" {
			topic = "orders"
		}
		_, _, err := shardmap.ParseKafkaAssignment([]byte(bad), topic)
		require.ErrorIs(t, err, shardmap.ErrInvalid, name)
	}
}

// FuzzParseKafkaAssignment: reading arbitrary bytes as a Kafka assignment
// never panics, and what it accepts imports as a map of the brokers named.
func FuzzParseKafkaAssignment(f *testing.F) {
	f.Add([]byte(`{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2]},{"topic":"t","partition":1,"replicas":[2,3],"log_dirs":["any","any"]}]}`), "")
	f.Add([]byte(`{"partitions":[{"topic":"a","partition":0,"replicas":[0]},{"topic":"b","partition":0,"replicas":[1]}]}`), "b")
	f.Fuzz(func(t *testing.T, data []byte, topic string) {
		assignment, _, err := shardmap.ParseKafkaAssignment(data, topic)
		if err != nil {
			require.ErrorIs(t, err, shardmap.ErrInvalid)
			return
		}
		seen := map[string]bool{}
		var brokers []chash.Node
		for _, reps := range assignment {
			for _, id := range reps {
				if !seen[id] {
					seen[id] = true
					brokers = append(brokers, chash.Node{ID: id, Weight: 1})
				}
			}
		}
		m, err := shardmap.Import(brokers, shardmap.Spec{}, assignment)
		if err != nil {
			requireNamed(t, err)
			return
		}
		require.Equal(t, len(assignment), m.Partitions())
	})
}
