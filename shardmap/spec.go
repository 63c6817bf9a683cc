package shardmap

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/keyplace/chash"
)

// Shard map limits.
const (
	maxMapPartitions = 1 << 20
	maxMapReplicas   = 16
	// maxTolerance bounds Spec.Tolerance: past P·R it means nothing.
	maxTolerance = maxMapPartitions * maxMapReplicas
	// DefaultLoadFactor is a shard map's load factor c unless its spec
	// says otherwise: no node holds more than ceil(1.25·P·R·w/W) replicas.
	DefaultLoadFactor = 1.25
	// DefaultTolerance is a spec's Tolerance unless it says otherwise:
	// rebalancing leaves every node within one replica and one primary of
	// what a fresh build gives it.
	DefaultTolerance = 1
)

// Spec is what a shard map must satisfy. Its zero value is not a valid
// spec (New refuses 0 partitions); the zero value of each optional field
// (LoadFactor, Tolerance, Pins, ZoneReplicas, Residency, Seed) is its
// default.
type Spec struct {
	// Partitions is P, the fixed number of partitions keys hash into,
	// from 1 to 1<<20. It cannot change from one map to the next: every
	// key would move.
	Partitions int
	// Replicas is R, the replicas per partition, from 1 to 16. With
	// ZoneReplicas it may be 0, and then it is their sum.
	Replicas int
	// LoadFactor is c: no node holds more than ceil(c·S) replicas, S its
	// share (P·R·w/W for weight w of total W; see [Map]), and never more
	// than P, one of each partition. At least 1; 0 means
	// DefaultLoadFactor. A large factor such as 1e16 means no bound.
	LoadFactor float64
	// Tolerance is how far, in replicas and in primaries, [Map.Rebalance]
	// may leave a node from what a fresh build ([New]) of the same nodes
	// and spec gives it: the balance it buys against the replicas it
	// moves. 0 means DefaultTolerance (1, the tightest that does not move
	// replicas back and forth between nodes a fresh build rounds
	// differently); a larger value moves fewer replicas after a small
	// change. Where the constraints allow no closer placement the map
	// says how far it is ([Map.Distance]). New ignores it.
	Tolerance int
	// Pins put partitions' primaries on given nodes.
	Pins []Pin
	// ZoneReplicas, when set, fixes how many replicas of every partition
	// each zone keeps, as Cassandra's NetworkTopologyStrategy does per
	// data centre: {a 2, b 1} keeps two replicas in zone a, on distinct
	// nodes, and one in zone b. Their sum is R; nodes of other zones (and
	// nodes without a zone) hold nothing. Zones are named by chash.Node's
	// Zone, each at most once.
	ZoneReplicas []ZoneReplicas
	// Residency confines ranges of partitions to sets of zones: data that
	// must stay in a region. Each range's replicas are spread over the
	// nodes of its zones as a map's over all nodes (R distinct nodes,
	// min(R, z) distinct zones of its z). The ranges may not overlap;
	// partitions outside every range may use every node. Residency and
	// ZoneReplicas cannot be combined.
	Residency []Residency
	// Seed seeds the xxhash64 of keys to partitions and of node IDs to the
	// scores that break ties.
	Seed uint64
}

// Pin places a partition's primary replica on a node.
type Pin struct {
	Partition int
	Node      string
}

// ZoneReplicas is how many replicas of each partition a zone keeps (see
// Spec.ZoneReplicas).
type ZoneReplicas struct {
	Zone     string
	Replicas int
}

// Residency confines partitions From to To-1 to the nodes of Zones (see
// Spec.Residency).
type Residency struct {
	From, To int
	Zones    []string
}

// cloneSpec returns s with its slices copied.
func cloneSpec(s Spec) Spec {
	s.Pins = slices.Clone(s.Pins)
	s.ZoneReplicas = slices.Clone(s.ZoneReplicas)
	s.Residency = slices.Clone(s.Residency)
	for i := range s.Residency {
		s.Residency[i].Zones = slices.Clone(s.Residency[i].Zones)
	}
	return s
}

// checkMapInput validates spec and nodes and returns the nodes sorted by
// ID and the spec in canonical form: defaults resolved, pins, zone
// replicas, residency ranges and their zones sorted.
func checkMapInput(nodes []chash.Node, spec Spec) ([]chash.Node, Spec, error) {
	spec = cloneSpec(spec)
	if err := checkSpecShape(&spec); err != nil {
		return nil, spec, err
	}
	if len(nodes) == 0 {
		return nil, spec, fmt.Errorf("%w: shard map", chash.ErrNoNodes)
	}
	ns := slices.Clone(nodes)
	for i, n := range ns {
		switch {
		case n.ID == "":
			return nil, spec, fmt.Errorf("%w: node %d", chash.ErrEmptyID, i)
		case n.Weight < 0 || math.IsNaN(n.Weight) || math.IsInf(n.Weight, 0) || n.Weight > 1e12:
			return nil, spec, fmt.Errorf("%w: node %q has weight %v: a shard map accepts 0 (draining) to 1e12", chash.ErrInvalidWeight, n.ID, n.Weight)
		}
	}
	slices.SortFunc(ns, byID)
	for i := 1; i < len(ns); i++ {
		if ns[i].ID == ns[i-1].ID {
			return nil, spec, fmt.Errorf("%w: %q", chash.ErrDuplicateID, ns[i].ID)
		}
	}
	for i, p := range spec.Pins {
		switch {
		case p.Partition < 0 || p.Partition >= spec.Partitions:
			return nil, spec, fmt.Errorf("%w: pin of partition %d: want 0 to %d", chash.ErrInvalidOption, p.Partition, spec.Partitions-1)
		case i > 0 && spec.Pins[i-1].Partition == p.Partition:
			return nil, spec, fmt.Errorf("%w: partition %d pinned twice", chash.ErrInvalidOption, p.Partition)
		case indexByID(ns, p.Node) < 0:
			return nil, spec, fmt.Errorf("%w: pin of partition %d to %q", chash.ErrUnknownNode, p.Partition, p.Node)
		case ns[indexByID(ns, p.Node)].Weight == 0:
			return nil, spec, fmt.Errorf("%w: pin: partition %d is pinned to %q, which is draining (weight 0)", ErrConstraint, p.Partition, p.Node)
		}
	}
	return ns, spec, nil
}

// checkSpecShape checks the spec's own fields, resolves its defaults and
// sorts its lists.
func checkSpecShape(spec *Spec) error {
	if len(spec.ZoneReplicas) > 0 && spec.Replicas == 0 {
		for _, z := range spec.ZoneReplicas {
			if z.Replicas > 0 && z.Replicas <= maxMapReplicas {
				spec.Replicas += z.Replicas
			}
		}
	}
	switch {
	case spec.Partitions < 1 || spec.Partitions > maxMapPartitions:
		return fmt.Errorf("%w: shard map of %d partitions: want 1 to %d", chash.ErrInvalidOption, spec.Partitions, maxMapPartitions)
	case spec.Replicas < 1 || spec.Replicas > maxMapReplicas:
		return fmt.Errorf("%w: shard map of %d replicas: want 1 to %d", chash.ErrInvalidOption, spec.Replicas, maxMapReplicas)
	case spec.LoadFactor == 0:
		spec.LoadFactor = DefaultLoadFactor
	case !(spec.LoadFactor >= 1) || math.IsInf(spec.LoadFactor, 0):
		return fmt.Errorf("%w: shard map load factor %v: want a finite value >= 1 (1e16 for no bound)", chash.ErrInvalidOption, spec.LoadFactor)
	}
	switch {
	case spec.Tolerance == 0:
		spec.Tolerance = DefaultTolerance
	case spec.Tolerance < 0 || spec.Tolerance > maxTolerance:
		return fmt.Errorf("%w: shard map tolerance %d: want 1 to %d (0 for the default, %d)", chash.ErrInvalidOption, spec.Tolerance, maxTolerance, DefaultTolerance)
	}
	slices.SortFunc(spec.Pins, func(a, b Pin) int { return cmp.Compare(a.Partition, b.Partition) })
	if err := checkZoneReplicas(spec); err != nil {
		return err
	}
	return checkResidency(spec)
}

func checkZoneReplicas(spec *Spec) error {
	zr := spec.ZoneReplicas
	if len(zr) == 0 {
		spec.ZoneReplicas = nil
		return nil
	}
	if len(spec.Residency) > 0 {
		return fmt.Errorf("%w: ZoneReplicas and Residency together: the zone replicas already fix every partition's zones", chash.ErrInvalidOption)
	}
	slices.SortFunc(zr, func(a, b ZoneReplicas) int { return cmp.Compare(a.Zone, b.Zone) })
	sum := 0
	for i, z := range zr {
		switch {
		case z.Zone == "":
			return fmt.Errorf("%w: zone replicas: an empty zone name", chash.ErrInvalidOption)
		case i > 0 && zr[i-1].Zone == z.Zone:
			return fmt.Errorf("%w: zone replicas: zone %q given twice", chash.ErrInvalidOption, z.Zone)
		case z.Replicas < 1 || z.Replicas > maxMapReplicas:
			return fmt.Errorf("%w: zone replicas: zone %q with %d replicas: want 1 to %d", chash.ErrInvalidOption, z.Zone, z.Replicas, maxMapReplicas)
		}
		sum += z.Replicas
	}
	if sum != spec.Replicas {
		return fmt.Errorf("%w: zone replicas sum to %d, the spec has %d replicas", chash.ErrInvalidOption, sum, spec.Replicas)
	}
	return nil
}

func checkResidency(spec *Spec) error {
	rs := spec.Residency
	if len(rs) == 0 {
		spec.Residency = nil
		return nil
	}
	slices.SortFunc(rs, func(a, b Residency) int { return cmp.Compare(a.From, b.From) })
	for i := range rs {
		r := &rs[i]
		switch {
		case r.From < 0 || r.To > spec.Partitions || r.From >= r.To:
			return fmt.Errorf("%w: residency of partitions [%d, %d): want 0 <= from < to <= %d", chash.ErrInvalidOption, r.From, r.To, spec.Partitions)
		case i > 0 && rs[i-1].To > r.From:
			return fmt.Errorf("%w: residency ranges [%d, %d) and [%d, %d) overlap", chash.ErrInvalidOption, rs[i-1].From, rs[i-1].To, r.From, r.To)
		case len(r.Zones) == 0:
			return fmt.Errorf("%w: residency of partitions [%d, %d) names no zone", chash.ErrInvalidOption, r.From, r.To)
		}
		slices.Sort(r.Zones)
		for j, z := range r.Zones {
			if z == "" || j > 0 && r.Zones[j-1] == z {
				return fmt.Errorf("%w: residency of partitions [%d, %d): zone %q empty or given twice", chash.ErrInvalidOption, r.From, r.To, z)
			}
		}
	}
	return nil
}

// indexByID returns the position of the node with the given ID in nodes,
// which are sorted by ID, or -1.
func indexByID(nodes []chash.Node, id string) int {
	i, ok := slices.BinarySearchFunc(nodes, id, func(n chash.Node, id string) int { return cmp.Compare(n.ID, id) })
	if !ok {
		return -1
	}
	return i
}

// byID orders nodes by ID.
func byID(a, b chash.Node) int { return cmp.Compare(a.ID, b.ID) }
