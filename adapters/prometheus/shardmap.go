package prometheus

import (
	"fmt"
	"math"
	"sync"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/shardmap"
	prom "github.com/prometheus/client_golang/prometheus"
)

// ShardMapCollector exports a shard map: the map itself, or a view that
// holds one (a chash.Holder, a status.Tracker). Its series, 8 by default:
//
//	chash_shardmap_version                       gauge the map's version
//	chash_shardmap_partitions                    gauge P
//	chash_shardmap_replication_factor            gauge R, the replicas of each partition
//	chash_shardmap_members                       gauge members, draining ones included
//	chash_shardmap_draining_members              gauge members of weight 0
//	chash_shardmap_replicas_peak_ratio           gauge the largest replicas held over fair replicas P·R·w/W
//	chash_shardmap_primaries_peak_ratio          gauge the largest primaries held over fair primaries P·w/W
//	chash_shardmap_replicas_max_bound_ratio      gauge the largest replicas held over the node's bound ceil(c·P·R·w/W)
//
// and, with WithPerNode, for each member:
//
//	chash_shardmap_node_replicas{node}           gauge replicas it holds
//	chash_shardmap_node_primaries{node}          gauge partitions it is the primary of
//	chash_shardmap_node_fair_replicas{node}      gauge its fair replicas, P·R·w/W (0 when draining)
//
// When the view holds no shard map, only the version (0) is exported. A
// scrape costs O(1) while the map stays the same; the first after a
// change counts the replicas, O(P·R). Safe for concurrent use.
type ShardMapCollector struct {
	p   chash.Placer
	cfg config

	version, partitions, factor, members, draining, replicasPeak, primariesPeak, boundPeak *prom.Desc
	nodeReplicas, nodePrimaries, nodeFair                                                  *prom.Desc

	mu    sync.Mutex // guards cache
	cache *mapState
}

// mapState is what a scrape reports of one map, computed once per map.
type mapState struct {
	m                                      *shardmap.Map
	members, draining                      int
	replicasPeak, primariesPeak, boundPeak float64
	ids                                    []string
	replicas, primaries                    []int
	fair                                   []float64
}

var _ prom.Collector = (*ShardMapCollector)(nil)

// NewShardMapCollector returns the collector of the shard map p serves
// (see ShardMapCollector). It uses WithPerNode and WithConstLabels. It
// fails with chash.ErrNilPlacer for a nil p, typed or not, and with
// chash.ErrInvalidOption for a bad option.
func NewShardMapCollector(p chash.Placer, opts ...Option) (*ShardMapCollector, error) {
	if isNil(p) {
		return nil, fmt.Errorf("%w: prometheus.NewShardMapCollector", chash.ErrNilPlacer)
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	return &ShardMapCollector{p: p, cfg: cfg,
		version:       cfg.desc("shardmap_version", "The shard map's version: 1 for a new map, one more for each rebalance; 0 for none."),
		partitions:    cfg.desc("shardmap_partitions", "Partitions P of the shard map."),
		factor:        cfg.desc("shardmap_replication_factor", "Replicas R of each partition."),
		members:       cfg.desc("shardmap_members", "Members of the shard map, draining ones included."),
		draining:      cfg.desc("shardmap_draining_members", "Members of weight 0, which hold no replica."),
		replicasPeak:  cfg.desc("shardmap_replicas_peak_ratio", "The largest number of replicas a member holds over its fair number P·R·w/W."),
		primariesPeak: cfg.desc("shardmap_primaries_peak_ratio", "The largest number of primaries a member holds over its fair number P·w/W."),
		boundPeak:     cfg.desc("shardmap_replicas_max_bound_ratio", "The largest number of replicas a member holds over its bound ceil(c·P·R·w/W); at most 1."),
		nodeReplicas:  cfg.desc("shardmap_node_replicas", "Replicas a member holds.", "node"),
		nodePrimaries: cfg.desc("shardmap_node_primaries", "Partitions a member is the primary of.", "node"),
		nodeFair:      cfg.desc("shardmap_node_fair_replicas", "A member's fair number of replicas, P·R·w/W.", "node"),
	}, nil
}

// Describe sends the descriptions of every series the collector can
// export.
func (c *ShardMapCollector) Describe(ch chan<- *prom.Desc) {
	for _, d := range []*prom.Desc{c.version, c.partitions, c.factor, c.members, c.draining, c.replicasPeak, c.primariesPeak, c.boundPeak} {
		ch <- d
	}
	if c.cfg.perNode {
		ch <- c.nodeReplicas
		ch <- c.nodePrimaries
		ch <- c.nodeFair
	}
}

// Collect reads the map and sends its series.
func (c *ShardMapCollector) Collect(ch chan<- prom.Metric) {
	m, _ := current(c.p).(*shardmap.Map)
	if m == nil || m.Partitions() == 0 {
		send(ch, c.version, prom.GaugeValue, 0)
		return
	}
	st := c.state(m)
	gauge := func(d *prom.Desc, v float64, labels ...string) { send(ch, d, prom.GaugeValue, v, labels...) }
	gauge(c.version, float64(m.Version()))
	gauge(c.partitions, float64(m.Partitions()))
	gauge(c.factor, float64(m.Replicas()))
	gauge(c.members, float64(st.members))
	gauge(c.draining, float64(st.draining))
	gauge(c.replicasPeak, st.replicasPeak)
	gauge(c.primariesPeak, st.primariesPeak)
	gauge(c.boundPeak, st.boundPeak)
	if c.cfg.perNode {
		for i, id := range st.ids {
			gauge(c.nodeReplicas, float64(st.replicas[i]), id)
			gauge(c.nodePrimaries, float64(st.primaries[i]), id)
			gauge(c.nodeFair, st.fair[i], id)
		}
	}
}

func (c *ShardMapCollector) state(m *shardmap.Map) *mapState {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cache != nil && c.cache.m == m {
		return c.cache
	}
	c.cache = measureMap(m)
	return c.cache
}

// measureMap counts each member's replicas and primaries, O(P·R).
func measureMap(m *shardmap.Map) *mapState {
	members := m.Members()
	st := &mapState{m: m, members: len(members)}
	idx := make(map[string]int, len(members))
	ids := make([]string, len(members))
	var total float64
	for i, n := range members {
		idx[n.ID] = i
		ids[i] = n.ID
		total += n.Weight
		if n.Weight == 0 {
			st.draining++
		}
	}
	st.ids = labelValues(ids)
	st.replicas = make([]int, len(members))
	st.primaries = make([]int, len(members))
	st.fair = make([]float64, len(members))
	buf := make([]chash.Node, 0, m.Replicas())
	for p := range m.Partitions() {
		buf = m.AppendReplicas(buf[:0], p)
		for j, n := range buf {
			i := idx[n.ID]
			st.replicas[i]++
			if j == 0 {
				st.primaries[i]++
			}
		}
	}
	pr := float64(m.Partitions() * m.Replicas())
	c := m.Spec().LoadFactor
	for i, n := range members {
		if !(total > 0) || n.Weight == 0 {
			continue
		}
		st.fair[i] = pr * n.Weight / total
		st.replicasPeak = max(st.replicasPeak, float64(st.replicas[i])/st.fair[i])
		st.primariesPeak = max(st.primariesPeak, float64(st.primaries[i])/(st.fair[i]/float64(m.Replicas())))
		// The bound as shardmap computes it (mapBounds), without its O(P·R)
		// Load per node.
		if bound := math.Ceil(c*st.fair[i] - 1e-9); bound > 0 {
			st.boundPeak = max(st.boundPeak, float64(st.replicas[i])/bound)
		}
	}
	return st
}
