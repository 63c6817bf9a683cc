package shardmap_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/chashtest"
	"github.com/keyplace/chash/internal/conformance"
	"github.com/keyplace/chash/internal/measure"
	"github.com/keyplace/chash/shardmap"
)

// verifyMap checks every constraint of m independently of the package's
// own check, and that m is a Placer whose lists are its replicas.
func verifyMap(t testing.TB, m *shardmap.Map) {
	t.Helper()
	if err := mapViolation(m); err != nil {
		t.Fatal(err)
	}
	for _, key := range chashtest.Keys(50) {
		reps := m.AppendReplicas(nil, m.PartitionString(key))
		require.Equal(t, reps[0], m.LookupString(key))
		require.Equal(t, reps, m.AppendTopKString(nil, key, m.Replicas()))
		chashtest.CheckTopK(t.(*testing.T), m, key, m.Len()+1)
	}
}

// mapViolation returns the first broken constraint of m, or nil, checked
// from the constraints as Map and Spec state them.
func mapViolation(m *shardmap.Map) error {
	spec, members := m.Spec(), m.Members()
	// The rule of partition p: its zones (nil: any), the zones it must
	// span, and the replicas each zone must keep (ZoneReplicas).
	type rule struct {
		zones []string
		exact map[string]int
		from  int
		to    int
	}
	rules := []rule{{from: 0, to: spec.Partitions}}
	if len(spec.ZoneReplicas) > 0 {
		rules[0].exact = map[string]int{}
		for _, z := range spec.ZoneReplicas {
			rules[0].exact[z.Zone] = z.Replicas
			rules[0].zones = append(rules[0].zones, z.Zone)
		}
	}
	for _, r := range spec.Residency {
		rules = append(rules, rule{zones: r.Zones, from: r.From, to: r.To})
	}
	ruleOf := func(p int) rule {
		for _, r := range rules[1:] {
			if r.from <= p && p < r.to {
				return r
			}
		}
		return rules[0]
	}
	allowed := func(r rule, n chash.Node) bool {
		return r.zones == nil || slices.Contains(r.zones, n.Zone) && n.Zone != ""
	}
	need := func(r rule) int {
		domains := map[string]bool{}
		for _, n := range members {
			if n.Weight > 0 && allowed(r, n) {
				domains[measure.DomainOf(n)] = true
			}
		}
		return min(spec.Replicas, len(domains))
	}
	count := map[string]int{}
	for p := 0; p < spec.Partitions; p++ {
		r := ruleOf(p)
		reps := m.AppendReplicas(nil, p)
		if len(reps) != spec.Replicas {
			return fmt.Errorf("partition %d has %d replicas", p, len(reps))
		}
		zones, perZone := map[string]bool{}, map[string]int{}
		for i, n := range reps {
			if n.Weight == 0 {
				return fmt.Errorf("partition %d on draining %s", p, n.ID)
			}
			if slices.ContainsFunc(reps[:i], func(o chash.Node) bool { return o.ID == n.ID }) {
				return fmt.Errorf("partition %d twice on %s", p, n.ID)
			}
			if !allowed(r, n) {
				return fmt.Errorf("partition %d on %s, outside its zones %v", p, n.ID, r.zones)
			}
			zones[measure.DomainOf(n)] = true
			perZone[n.Zone]++
			count[n.ID]++
		}
		if r.exact != nil {
			if !maps.Equal(r.exact, perZone) {
				return fmt.Errorf("partition %d keeps %v per zone, want %v", p, perZone, r.exact)
			}
		} else if len(zones) < need(r) {
			return fmt.Errorf("partition %d spans %d zones, want %d", p, len(zones), need(r))
		}
	}
	for _, n := range members {
		bound := shareBound(spec, members, n)
		if float64(count[n.ID]) > bound {
			return fmt.Errorf("%s holds %d, bound %v", n.ID, count[n.ID], bound)
		}
	}
	for _, pin := range spec.Pins {
		if got := m.AppendReplicas(nil, pin.Partition)[0].ID; got != pin.Node {
			return fmt.Errorf("partition %d primary %s, pinned to %s", pin.Partition, got, pin.Node)
		}
	}
	return nil
}

// shareBound is node n's bound as Map states it: ceil(c·S), at most P.
func shareBound(spec shardmap.Spec, members []chash.Node, n chash.Node) float64 {
	total, zone := 0.0, map[string]float64{}
	for _, o := range members {
		total += o.Weight
		zone[o.Zone] += o.Weight
	}
	var share float64
	switch {
	case len(spec.ZoneReplicas) > 0:
		for _, z := range spec.ZoneReplicas {
			if z.Zone == n.Zone {
				share = float64(spec.Partitions*z.Replicas) * n.Weight / zone[n.Zone]
			}
		}
	case len(spec.Residency) > 0:
		rest := spec.Partitions
		for _, r := range spec.Residency {
			rest -= r.To - r.From
			if slices.Contains(r.Zones, n.Zone) && n.Zone != "" {
				w := 0.0
				for _, z := range r.Zones {
					w += zone[z]
				}
				share += float64((r.To-r.From)*spec.Replicas) * n.Weight / w
			}
		}
		share += float64(rest*spec.Replicas) * n.Weight / total
	default:
		share = float64(spec.Partitions*spec.Replicas) * n.Weight / total
	}
	return min(math.Ceil(spec.LoadFactor*share-1e-9), float64(spec.Partitions))
}

// replayPlan applies pl to from, checking the plan's guarantees at every
// step, serially and batch by batch, and that it ends at to, in to's
// order.
func replayPlan(t testing.TB, from, to *shardmap.Map, pl shardmap.Plan, sizes ...shardmap.PartitionSize) {
	t.Helper()
	bound := map[string]int{}
	for _, m := range []*shardmap.Map{from, to} {
		for _, n := range m.Members() {
			held, b := m.Load(n.ID)
			bound[n.ID] = max(bound[n.ID], b, held)
		}
	}
	state := make([][]string, from.Partitions())
	count := map[string]int{}
	for p := range state {
		state[p] = measure.IDs(from.AppendReplicas(nil, p))
		for _, id := range state[p] {
			count[id]++
		}
	}
	minLive := min(from.Replicas(), to.Replicas()) - 1
	promoted := make([]string, len(state)) // the old primary, once promoted
	promotedIn := make([]int, len(state))
	adds, at := 0, 0
	for b, batch := range pl.Batches {
		steps := pl.Steps[at : at+batch.Steps]
		at += batch.Steps
		require.NotEmpty(t, steps, "batch %d", b)
		// The batch's promises, from the state before it.
		in, out, removes, touched := map[string]int{}, map[string]int{}, map[int]int{}, map[int]int{}
		bytesIn, bytesOut := map[string]int64{}, map[string]int64{}
		alone := map[int]bool{}
		copies := 0
		for _, st := range steps {
			require.Equal(t, b, st.Batch, "step %+v", st)
			p := st.Partition
			touched[p]++
			switch st.Kind {
			case shardmap.StepAdd:
				in[st.Node]++
				out[state[p][0]]++
				copies++
				require.LessOrEqual(t, count[st.Node]+in[st.Node], bound[st.Node], "batch %d %+v: node over its bound", b, st)
				if pl.Limits.CopiesIn > 0 {
					require.LessOrEqual(t, in[st.Node], pl.Limits.CopiesIn, "batch %d: copies into %s", b, st.Node)
				}
				if pl.Limits.CopiesOut > 0 {
					require.LessOrEqual(t, out[state[p][0]], pl.Limits.CopiesOut, "batch %d: copies out of %s", b, state[p][0])
				}
				if len(sizes) > 0 {
					bytesIn[st.Node] += sizes[p].Bytes
					bytesOut[state[p][0]] += sizes[p].Bytes
				}
			case shardmap.StepRemove:
				removes[p]++
				require.GreaterOrEqual(t, len(state[p])-removes[p], minLive, "batch %d %+v: too few live replicas", b, st)
				if st.Node == promoted[p] {
					require.Greater(t, b, promotedIn[p], "batch %d %+v: the old primary removed in its promotion's batch", b, st)
				}
			case shardmap.StepPromote, shardmap.StepOrder:
				alone[p] = true
			}
		}
		if lim := pl.Limits.BytesInFlight; lim > 0 && len(sizes) > 0 {
			for id, n := range bytesIn {
				require.True(t, n <= lim || in[id] == 1, "batch %d: %d bytes into %s in %d copies", b, n, id, in[id])
			}
			for id, n := range bytesOut {
				require.True(t, n <= lim || out[id] == 1, "batch %d: %d bytes out of %s in %d copies", b, n, id, out[id])
			}
		}
		for p := range alone {
			require.Equal(t, 1, touched[p], "batch %d: partition %d's promotion or order shares its batch", b, p)
		}
		require.Equal(t, copies, batch.Copies, "batch %d", b)
		// The serial promises, step by step.
		for i, st := range steps {
			p := st.Partition
			reps := state[p]
			if promoted[p] != "" && !(st.Kind == shardmap.StepRemove && st.Node == promoted[p]) && st.Kind != shardmap.StepOrder {
				t.Fatalf("batch %d step %d %+v: partition %d changed after its primary", b, i, st, p)
			}
			switch st.Kind {
			case shardmap.StepAdd:
				require.NotContains(t, reps, st.Node, "step %d", i)
				state[p] = append(reps, st.Node)
				count[st.Node]++
				adds++
				require.LessOrEqual(t, count[st.Node], bound[st.Node], "step %d %+v: node over its bound", i, st)
			case shardmap.StepRemove:
				j := slices.Index(reps, st.Node)
				require.Greater(t, j, 0, "step %d %+v: the primary removed before a promotion", i, st)
				state[p] = slices.Delete(reps, j, j+1)
				count[st.Node]--
				require.GreaterOrEqual(t, len(state[p]), minLive, "step %d %+v: too few live replicas", i, st)
			case shardmap.StepPromote:
				j := slices.Index(reps, st.Node)
				require.Greater(t, j, 0, "step %d", i)
				require.Equal(t, st.From, reps[0], "step %d", i)
				reps[0], reps[j] = reps[j], reps[0]
				promoted[p], promotedIn[p] = st.From, b
				// Everything but the old primary's removal is done.
				want := measure.IDs(to.AppendReplicas(nil, p))
				for _, id := range reps {
					require.True(t, id == st.From || slices.Contains(want, id), "step %d: promote before %s left", i, id)
				}
				require.Subset(t, reps, want, "step %d: promote before every copy", i)
			case shardmap.StepOrder:
				require.ElementsMatch(t, reps, st.Replicas, "step %d: order of other replicas", i)
				state[p] = slices.Clone(st.Replicas)
			}
		}
	}
	require.Equal(t, len(pl.Steps), at, "the batches hold every step")
	require.Equal(t, adds, pl.Moves)
	for p := range state {
		require.Equal(t, measure.IDs(to.AppendReplicas(nil, p)), state[p], "partition %d, in order", p)
	}
}

// TestContractMap runs the contract on a shard map of 4,096 partitions and
// two replicas, whose membership changes by Rebalance (Next): a new node
// takes its share of primaries, a departed one hands its own over, and no
// primary moves between the other nodes (measured 0).
func TestContractMap(t *testing.T) {
	build := func(nodes []chash.Node, scale float64, replicas int) (chash.Placer, error) {
		scaled := slices.Clone(nodes)
		for i := range scaled {
			scaled[i].Weight *= scale
		}
		return conformance.AsPlacer(shardmap.New(scaled, shardmap.Spec{Partitions: 4096, Replicas: max(1, min(replicas, len(nodes)))}))
	}
	chashtest.TestPlacer(t, chashtest.Spec{
		New:  func(nodes []chash.Node) (chash.Placer, error) { return build(nodes, 1, 2) },
		Zero: &shardmap.Map{},
		// Weight 1: a shard map reads 0 as draining.
		Nodes: func(n int) []chash.Node {
			nodes := chashtest.Nodes(n)
			for i := range nodes {
				nodes[i].Weight = 1
			}
			return nodes
		},
		Weighted: true,
		Derive:   true,
		Next: func(p chash.Placer, nodes []chash.Node) (chash.Placer, error) {
			m := p.(*shardmap.Map)
			return conformance.AsPlacer(m.Rebalance(nodes, m.Spec()))
		},
		// Weight vectors with one replica: with two, a node of a hundredth
		// of the weight could not hold the second replica of every
		// partition that two nodes must.
		NewScaled: func(nodes []chash.Node, unit float64) (chash.Placer, error) { return build(nodes, 1/unit, 1) },
		MaxCV:     0.03, MaxPeak: 1.06, ShareTol: 0.1,
		Variants: []func() (chash.Placer, error){
			func() (chash.Placer, error) {
				return conformance.AsPlacer(shardmap.New(mapNodes(10, 10), shardmap.Spec{Partitions: 4096, Replicas: 3}))
			},
			func() (chash.Placer, error) {
				return conformance.AsPlacer(shardmap.New(mapNodes(10, 10), shardmap.Spec{Partitions: 4096, Replicas: 2, Seed: 7}))
			},
		},
	})
}

// The zero Map and a nil *Map have no partitions: Partition is -1 and
// nothing is placed (a nil *Map panicked in every method).
func TestMapZero(t *testing.T) {
	for _, m := range []*shardmap.Map{nil, {}} {
		assert.Equal(t, -1, m.PartitionString("k"))
		assert.Equal(t, -1, m.Partition([]byte("k")))
		assert.Equal(t, chash.Node{}, m.LookupString("k"))
		assert.Empty(t, m.AppendTopKString(nil, "k", 3))
		assert.Empty(t, m.AppendReplicas(nil, 0))
		assert.Zero(t, m.Len()+m.Partitions()+m.Replicas())
		assert.Equal(t, chash.FingerprintNone, chash.Fingerprint(m))
	}
	b, err := json.Marshal((*shardmap.Map)(nil))
	require.NoError(t, err)
	assert.Equal(t, "null", string(b))
}

// mapNodes is zonedNodes with weight 1: a shard map reads weight 0 as
// draining.
func mapNodes(n, z int) []chash.Node {
	nodes := conformance.ZonedNodes(n, z)
	for i := range nodes {
		nodes[i].Weight = 1
	}
	return nodes
}

func mustMap(t testing.TB, nodes []chash.Node, spec shardmap.Spec) *shardmap.Map {
	t.Helper()
	m, err := shardmap.New(nodes, spec)
	require.NoError(t, err)
	return m
}

// moved counts replicas on a node in to that were not on it in from.
func moved(from, to *shardmap.Map) int {
	n := 0
	for p := 0; p < from.Partitions(); p++ {
		o := measure.IDs(from.AppendReplicas(nil, p))
		for _, id := range measure.IDs(to.AppendReplicas(nil, p)) {
			if !slices.Contains(o, id) {
				n++
			}
		}
	}
	return n
}

func TestShardMapBuild(t *testing.T) {
	nodes := mapNodes(12, 3)
	spec := shardmap.Spec{Partitions: 1024, Replicas: 3}
	m := mustMap(t, nodes, spec)
	verifyMap(t, m)
	require.Equal(t, uint64(1), m.Version())
	primaries := map[string]int{}
	for p := 0; p < m.Partitions(); p++ {
		primaries[m.AppendReplicas(nil, p)[0].ID]++
	}
	for _, n := range nodes {
		c, b := m.Load(n.ID)
		assert.InDelta(t, 1024*3/12.0, float64(c), 1, "%s replicas (bound %d)", n.ID, b)
		assert.InDelta(t, 1024/12.0, float64(primaries[n.ID]), 1024/12.0*0.1, "%s primaries", n.ID)
	}
	// Rebalancing the same membership moves nothing.
	same, err := m.Rebalance(nodes, m.Spec())
	require.NoError(t, err)
	require.Equal(t, uint64(2), same.Version())
	require.Zero(t, moved(m, same))
	pl, err := shardmap.PlanMoves(m, same, nil)
	require.NoError(t, err)
	require.Empty(t, pl.Steps)
}

// Movement against the minimum: a node added must receive its share, a
// node removed or drained must hand over its replicas; the map moves
// little more.
func TestShardMapMovement(t *testing.T) {
	spec := shardmap.Spec{Partitions: 4096, Replicas: 3}
	nodes := mapNodes(12, 4)
	for i := range nodes {
		nodes[i].Weight = float64(1 + i%3)
	}
	m := mustMap(t, nodes, spec)
	verifyMap(t, m)
	cases := map[string][]chash.Node{
		"add":    append(slices.Clone(nodes), chash.Node{ID: "node-new", Weight: 2, Zone: "z1"}),
		"remove": slices.Delete(slices.Clone(nodes), 4, 5),
		"drain":  slices.Clone(nodes),
		"weight": slices.Clone(nodes),
	}
	cases["drain"][7].Weight = 0
	cases["weight"][2].Weight *= 2
	for name, next := range cases {
		after, err := m.Rebalance(next, m.Spec())
		require.NoError(t, err, name)
		verifyMap(t, after)
		var minimum int
		switch name {
		case "add":
			minimum = int(3 * 4096 * 2 / (sumWeight(next)))
			primaries := 0
			for p := 0; p < 4096; p++ {
				if after.AppendReplicas(nil, p)[0].ID == "node-new" {
					primaries++
				}
			}
			fair := 4096 * 2 / sumWeight(next)
			t.Logf("add: the new node has %d primaries, fair share %.0f", primaries, fair)
			assert.InDelta(t, fair, float64(primaries), 0.25*fair, "the new node's primaries")
		case "remove":
			minimum, _ = m.Load(nodes[4].ID)
		case "drain":
			minimum, _ = m.Load(nodes[7].ID)
			c, _ := after.Load(nodes[7].ID)
			require.Zero(t, c)
		case "weight":
			before, _ := m.Load(nodes[2].ID)
			minimum = int(3*4096*nodes[2].Weight*2/sumWeight(next)) - before
		}
		got := moved(m, after)
		t.Logf("%s: %d replicas moved, minimum %d (%.3f×)", name, got, minimum, float64(got)/float64(minimum))
		assert.LessOrEqual(t, float64(got), 1.1*float64(minimum), name)
		assert.GreaterOrEqual(t, got, minimum-1, name)
		pl, err := shardmap.PlanMoves(m, after, uniformSizes(4096))
		require.NoError(t, err, name)
		replayPlan(t, m, after, pl)
		require.Equal(t, int64(got)*1000, pl.Bytes)
	}
}

func sumWeight(nodes []chash.Node) float64 {
	w := 0.0
	for _, n := range nodes {
		w += n.Weight
	}
	return w
}

func uniformSizes(p int) []shardmap.PartitionSize {
	out := make([]shardmap.PartitionSize, p)
	for i := range out {
		out[i] = shardmap.PartitionSize{Bytes: 1000, Keys: 10}
	}
	return out
}

func TestShardMapPins(t *testing.T) {
	nodes := mapNodes(6, 3)
	spec := shardmap.Spec{Partitions: 64, Replicas: 2, Pins: []shardmap.Pin{{Partition: 3, Node: "node-5"}, {Partition: 0, Node: "node-0"}}}
	m := mustMap(t, nodes, spec)
	verifyMap(t, m)
	// A new pin is a promotion or one copy, never more.
	spec.Pins = append(spec.Pins, shardmap.Pin{Partition: 9, Node: "node-1"})
	after, err := m.Rebalance(nodes, spec)
	require.NoError(t, err)
	verifyMap(t, after)
	require.LessOrEqual(t, moved(m, after), 2)
	pl, err := shardmap.PlanMoves(m, after, nil)
	require.NoError(t, err)
	replayPlan(t, m, after, pl)

	for name, c := range map[string]struct {
		spec  shardmap.Spec
		nodes []chash.Node
		err   error
	}{
		"unknown pin":   {shardmap.Spec{Partitions: 4, Replicas: 1, Pins: []shardmap.Pin{{0, "nope"}}}, nodes, chash.ErrUnknownNode},
		"pin range":     {shardmap.Spec{Partitions: 4, Replicas: 1, Pins: []shardmap.Pin{{4, "node-1"}}}, nodes, chash.ErrInvalidOption},
		"pinned twice":  {shardmap.Spec{Partitions: 4, Replicas: 1, Pins: []shardmap.Pin{{1, "node-1"}, {1, "node-2"}}}, nodes, chash.ErrInvalidOption},
		"pins overload": {shardmap.Spec{Partitions: 6, Replicas: 1, LoadFactor: 1, Pins: []shardmap.Pin{{0, "node-1"}, {1, "node-1"}}}, nodes, shardmap.ErrConstraint},
		"pin drained":   {shardmap.Spec{Partitions: 4, Replicas: 1, Pins: []shardmap.Pin{{0, "d"}}}, append(slices.Clone(nodes), chash.Node{ID: "d", Weight: 0}), shardmap.ErrConstraint},
		"replicas":      {shardmap.Spec{Partitions: 4, Replicas: 7}, nodes, shardmap.ErrConstraint},
		"zones":         {shardmap.Spec{Partitions: 30, Replicas: 3, LoadFactor: 1.1}, skewedZones(), shardmap.ErrConstraint},
		"load factor":   {shardmap.Spec{Partitions: 4, Replicas: 1, LoadFactor: 0.5}, nodes, chash.ErrInvalidOption},
		"partitions":    {shardmap.Spec{Partitions: 0, Replicas: 1}, nodes, chash.ErrInvalidOption},
		"no nodes":      {shardmap.Spec{Partitions: 4, Replicas: 1}, nil, chash.ErrNoNodes},
		"weight":        {shardmap.Spec{Partitions: 4, Replicas: 1}, []chash.Node{{ID: "a", Weight: -1}}, chash.ErrInvalidWeight},
		"duplicate":     {shardmap.Spec{Partitions: 4, Replicas: 1}, []chash.Node{{ID: "a", Weight: 1}, {ID: "a", Weight: 1}}, chash.ErrDuplicateID},
	} {
		_, err := shardmap.New(c.nodes, c.spec)
		require.ErrorIs(t, err, c.err, name)
		t.Logf("%s: %v", name, err)
	}
	_, err = m.Rebalance(nodes, shardmap.Spec{Partitions: 65, Replicas: 2})
	require.ErrorIs(t, err, chash.ErrInvalidOption)
}

// skewedZones has one heavy zone and two light ones: three replicas in
// three zones would put the light zones above their bounds.
func skewedZones() []chash.Node {
	return []chash.Node{{ID: "a1", Weight: 10, Zone: "a"}, {ID: "a2", Weight: 10, Zone: "a"}, {ID: "b", Weight: 1, Zone: "b"}, {ID: "c", Weight: 1, Zone: "c"}}
}

func TestShardMapJSON(t *testing.T) {
	nodes := mapNodes(5, 3)
	nodes[4].Zone = ""
	m := mustMap(t, nodes, shardmap.Spec{Partitions: 16, Replicas: 3, Seed: 1 << 63, Pins: []shardmap.Pin{{Partition: 2, Node: "node-4"}}})
	data, err := json.Marshal(m)
	require.NoError(t, err)
	back, err := shardmap.Parse(data)
	require.NoError(t, err)
	require.Equal(t, m.Fingerprint(), back.Fingerprint())
	again, err := json.Marshal(back)
	require.NoError(t, err)
	require.Equal(t, data, again)
	var viaJSON shardmap.Map
	require.NoError(t, json.Unmarshal(data, &viaJSON))
	for _, key := range chashtest.Keys(1000) {
		require.Equal(t, m.AppendTopKString(nil, key, 3), back.AppendTopKString(nil, key, 3))
	}
	var doc map[string]any
	require.NoError(t, json.Unmarshal(data, &doc))
	for name, c := range map[string]struct {
		edit func(d map[string]any)
		err  error
	}{
		"fingerprint":  {func(d map[string]any) { d["fingerprint"] = "0000000000000000" }, shardmap.ErrInvalid},
		"format":       {func(d map[string]any) { d["format"] = "chash.shardmap/9" }, shardmap.ErrInvalid},
		"unknown node": {func(d map[string]any) { d["assignment"].([]any)[0].([]any)[1] = "ghost" }, shardmap.ErrInvalid},
		"short":        {func(d map[string]any) { d["assignment"] = d["assignment"].([]any)[1:] }, shardmap.ErrInvalid},
		"replicas":     {func(d map[string]any) { d["replicas"] = 2.0 }, shardmap.ErrInvalid},
		"twice":        {func(d map[string]any) { a := d["assignment"].([]any)[0].([]any); a[1] = a[0] }, shardmap.ErrConstraint},
		"pin":          {func(d map[string]any) { d["pins"].([]any)[0].(map[string]any)["node"] = "node-0" }, shardmap.ErrConstraint},
		"field":        {func(d map[string]any) { d["extra"] = 1 }, shardmap.ErrInvalid},
		"order":        {func(d map[string]any) { n := d["nodes"].([]any); n[0], n[1] = n[1], n[0] }, shardmap.ErrInvalid},
		"weight":       {func(d map[string]any) { d["nodes"].([]any)[0].(map[string]any)["weight"] = -1.0 }, shardmap.ErrInvalid},
	} {
		var d map[string]any
		require.NoError(t, json.Unmarshal(data, &d))
		c.edit(d)
		bad, err := json.Marshal(d)
		require.NoError(t, err)
		_, err = shardmap.Parse(bad)
		require.ErrorIs(t, err, c.err, name)
		t.Logf("%s: %v", name, err)
	}
	for _, bad := range [][]byte{nil, []byte("{"), []byte("[]"), append(slices.Clone(data), "{}"...), bytes.Repeat([]byte("["), 10000)} {
		_, err := shardmap.Parse(bad)
		require.ErrorIs(t, err, shardmap.ErrInvalid)
	}
}

func TestShardMapAllocs(t *testing.T) {
	if testing.CoverMode() != "" {
		t.Skip("coverage instrumentation allocates")
	}
	m := mustMap(t, mapNodes(12, 3), shardmap.Spec{Partitions: 256, Replicas: 3})
	buf := make([]chash.Node, 0, 5)
	assert.Zero(t, testing.AllocsPerRun(1000, func() {
		_ = m.LookupString("user:1")
		buf = m.AppendTopKString(buf[:0], "user:1", 5)
	}))
}

// FuzzShardMap builds maps of random fleets with zones, weights, drains
// and pins, changes the fleet, rebalances and plans: every map built must
// satisfy every constraint and every plan its guarantees.
func FuzzShardMap(f *testing.F) {
	f.Add([]byte{3, 7, 1, 2, 5, 9, 0, 4, 4, 1, 8, 2})
	f.Add([]byte{200, 1, 1, 0, 0, 0, 0, 0, 0})
	f.Add([]byte("a fleet of weights and zones and pins"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		nodes, spec, next := fuzzFleet(data)
		m, err := shardmap.New(nodes, spec)
		if err != nil {
			requireNamed(t, err)
			return
		}
		verifyMap(t, m)
		after, err := m.Rebalance(next, fuzzPins(spec, next))
		if err != nil {
			requireNamed(t, err)
			return
		}
		verifyMap(t, after)
		pl, err := shardmap.PlanMoves(m, after, nil)
		if err != nil {
			requireNamed(t, err)
			return
		}
		replayPlan(t, m, after, pl)
		// In batches within limits read from the data, with sizes.
		at := func(i int) int { return int(data[i%len(data)]) }
		lim := shardmap.Limits{CopiesIn: at(10) % 4, CopiesOut: at(11) % 4, BytesInFlight: int64(at(12) % 5000)}
		sizes := make([]shardmap.PartitionSize, m.Partitions())
		for p := range sizes {
			sizes[p].Bytes = int64(at(13+p) * 10)
		}
		pl, err = shardmap.PlanBatches(m, after, sizes, lim)
		if err != nil {
			requireNamed(t, err)
			return
		}
		replayPlan(t, m, after, pl, sizes...)
	})
}

func requireNamed(t *testing.T, err error) {
	for _, e := range []error{shardmap.ErrConstraint, chash.ErrInvalidOption, chash.ErrInvalidWeight, chash.ErrUnknownNode, chash.ErrNoNodes, chash.ErrDuplicateID, chash.ErrEmptyID} {
		if errors.Is(err, e) {
			return
		}
	}
	t.Fatalf("unnamed error: %v", err)
}

// fuzzFleet reads a fleet, a spec and a changed fleet from data.
func fuzzFleet(data []byte) ([]chash.Node, shardmap.Spec, []chash.Node) {
	at := func(i int) int {
		if len(data) == 0 {
			return 0
		}
		return int(data[i%len(data)])
	}
	n := 1 + at(0)%12
	weights := []float64{1, 1, 2, 0.5, 0, 3}
	var nodes []chash.Node
	for i := 0; i < n; i++ {
		z := at(3+2*i) % 5
		zone := ""
		if z > 0 {
			zone = fmt.Sprintf("z%d", z)
		}
		nodes = append(nodes, chash.Node{ID: fmt.Sprintf("n%d", i), Weight: weights[at(4+2*i)%len(weights)], Zone: zone})
	}
	spec := shardmap.Spec{Partitions: 1 + at(1)%64, Replicas: 1 + at(2)%4, LoadFactor: 1 + float64(at(5)%8)/8}
	spec = fuzzPins(spec, nodes)
	next := slices.Clone(nodes)
	switch i := at(6) % n; at(7) % 4 {
	case 0:
		next = append(next, chash.Node{ID: "new", Weight: weights[at(8)%len(weights)], Zone: fmt.Sprintf("z%d", at(9)%5)})
	case 1:
		next = slices.Delete(next, i, i+1)
	case 2:
		next[i].Weight = 0
	case 3:
		next[i].Weight = 4
	}
	return nodes, spec, next
}

// fuzzPins pins a few partitions to live nodes of the fleet.
func fuzzPins(spec shardmap.Spec, nodes []chash.Node) shardmap.Spec {
	spec.Pins = nil
	for p := 0; p < spec.Partitions && len(nodes) > 0; p += 7 {
		n := nodes[(p/7)%len(nodes)]
		if n.Weight > 0 && p%3 == 0 {
			spec.Pins = append(spec.Pins, shardmap.Pin{Partition: p, Node: n.ID})
		}
	}
	return spec
}

// FuzzParseShardMap: loading arbitrary bytes never panics, and a map that
// loads encodes back to a map that loads the same.
func FuzzParseShardMap(f *testing.F) {
	m, err := shardmap.New(mapNodes(4, 2), shardmap.Spec{Partitions: 4, Replicas: 2, Pins: []shardmap.Pin{{Partition: 1, Node: "node-0"}}})
	require.NoError(f, err)
	data, err := json.Marshal(m)
	require.NoError(f, err)
	f.Add(data)
	f.Add([]byte(`{"format":"chash.shardmap/1"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := shardmap.Parse(data)
		if err != nil {
			return
		}
		again, err := json.Marshal(m)
		require.NoError(t, err)
		back, err := shardmap.Parse(again)
		require.NoError(t, err)
		require.Equal(t, m.Fingerprint(), back.Fingerprint())
	})
}

func BenchmarkShardMapLookup(b *testing.B) {
	m := mustMap(b, mapNodes(64, 3), shardmap.Spec{Partitions: 4096, Replicas: 3})
	keys := chashtest.Keys(1024)
	b.Run("lookup", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			_ = m.LookupString(keys[i&1023])
		}
	})
	b.Run("top3", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]chash.Node, 0, 3)
		for i := 0; i < b.N; i++ {
			buf = m.AppendTopKString(buf[:0], keys[i&1023], 3)
		}
	})
}

func BenchmarkShardMapRebalance(b *testing.B) {
	nodes := mapNodes(64, 4)
	m := mustMap(b, nodes, shardmap.Spec{Partitions: 4096, Replicas: 3})
	next := append(slices.Clone(nodes), chash.Node{ID: "node-new", Weight: 1, Zone: "z1"})
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		after, err := m.Rebalance(next, m.Spec())
		if err != nil {
			b.Fatal(err)
		}
		if _, err := shardmap.PlanMoves(m, after, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// Over random fleets without pins whose partitions must span R zones, a map
// is refused exactly when no placement exists: one replica per partition
// and zone fits iff the zones' room, Σ min(P, Σ bounds of the zone's
// nodes), reaches P·R (within a zone any split of its replicas over its
// nodes works).
func TestShardMapRefusesOnlyInfeasible(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	built, refused := 0, 0
	for i := 0; i < 5000; i++ {
		data := make([]byte, 40)
		rng.Read(data)
		nodes, spec, _ := fuzzFleet(data)
		spec.Pins = nil
		room, need, ok := zoneRoom(nodes, spec)
		if !ok || need != spec.Replicas {
			continue
		}
		_, err := shardmap.New(nodes, spec)
		if room >= spec.Partitions*spec.Replicas {
			require.NoError(t, err, "%v %+v", nodes, spec)
			built++
		} else {
			require.ErrorIs(t, err, shardmap.ErrConstraint, "%v %+v", nodes, spec)
			refused++
		}
	}
	t.Logf("%d fleets built, %d refused", built, refused)
	require.Greater(t, built, 1000)
	require.Greater(t, refused, 100)
}

// zoneRoom returns the zones' room for replicas, the zones each partition
// must span, and whether any node has positive weight.
func zoneRoom(nodes []chash.Node, spec shardmap.Spec) (room, need int, ok bool) {
	total := 0.0
	for _, n := range nodes {
		total += n.Weight
	}
	if total == 0 {
		return 0, 0, false
	}
	perZone := map[string]int{}
	for _, n := range nodes {
		if n.Weight > 0 {
			perZone[measure.DomainOf(n)] += int(math.Ceil(spec.LoadFactor*float64(spec.Partitions*spec.Replicas)*n.Weight/total - 1e-9))
		}
	}
	for _, c := range perZone {
		room += min(c, spec.Partitions)
	}
	return room, min(spec.Replicas, len(perZone)), true
}

// BenchmarkNew builds maps of 64 nodes in 4 zones, R = 3, at growing
// partition counts, and a tight fleet (12 nodes in 2 zones, c = 1.075)
// whose bounds leave little room (BenchmarkScale goes to 2^20).
func BenchmarkNew(b *testing.B) {
	for _, p := range []int{1024, 4096, 16384} {
		b.Run(fmt.Sprintf("nodes=64/partitions=%d", p), func(b *testing.B) {
			nodes := mapNodes(64, 4)
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := shardmap.New(nodes, shardmap.Spec{Partitions: p, Replicas: 3}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("tight/nodes=12/partitions=4096", func(b *testing.B) {
		nodes := mapNodes(12, 2)
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, err := shardmap.New(nodes, shardmap.Spec{Partitions: 4096, Replicas: 2, LoadFactor: 1.075}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
