package prometheus_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/keyplace/chash"
	chashprom "github.com/keyplace/chash/adapters/prometheus"
	"github.com/keyplace/chash/balance"
	"github.com/keyplace/chash/chashtest"
	"github.com/keyplace/chash/member"
	"github.com/keyplace/chash/member/membertest"
	"github.com/keyplace/chash/shardmap"
	"github.com/keyplace/chash/status"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fleet is everything the collectors watch, over n nodes in 3 zones.
type fleet struct {
	tracker *status.Tracker
	lb      *balance.Balancer
	hot     *balance.HotKeys
	smap    *chash.Holder
	members *chashprom.MembershipCollector
	leases  []balance.Lease
}

// heard is a membership source whose last word is fixed.
type heard time.Time

func (h heard) LastHeard() time.Time { return time.Time(h) }

// nilSource is a source type whose nil pointer is given, as a nil
// watcher would be.
type nilSource struct{}

func (*nilSource) LastHeard() time.Time { return time.Time{} }

// errLeaseLost stands for an adapter's own sentinel.
var errLeaseLost = errors.New("etcd: lease lost")

func newFleet(t testing.TB, n int, opts ...chashprom.Option) (*fleet, []prometheus.Collector) {
	t.Helper()
	nodes := chashtest.Nodes(n)
	for i := range nodes {
		nodes[i].Zone = fmt.Sprintf("zone-%d", i%3)
		nodes[i].Weight = float64(1 + i%2)
	}
	ring, err := chash.NewRing(nodes)
	require.NoError(t, err)
	f := &fleet{tracker: status.NewTracker(nil)}
	require.NoError(t, f.tracker.Build(func() (chash.Placer, error) { return ring, nil }))
	f.hot, err = balance.NewHotKeys(balance.HotKeysConfig{Threshold: 1.0 / 64, Sample: 1, Window: 1 << 12})
	require.NoError(t, err)
	f.lb, err = balance.New(ring, balance.WithHotKeys(f.hot, 3))
	require.NoError(t, err)
	for i := range 4000 {
		f.hot.ObserveString("hot")
		f.hot.ObserveString(fmt.Sprint("cold:", i))
	}
	for i := range 300 {
		key := fmt.Sprint("user:", i)
		if i%3 == 0 {
			key = "hot"
		}
		l, err := f.lb.AcquireString(key)
		require.NoError(t, err)
		f.leases = append(f.leases, l)
	}
	m, err := shardmap.New(nodes, shardmap.Spec{Partitions: 4 * n, Replicas: 3})
	require.NoError(t, err)
	f.smap = chash.NewHolder(m)
	mopts := append([]chashprom.Option{chashprom.WithErrorKind("lease_lost", errLeaseLost)}, opts...)
	f.members, err = chashprom.NewMembershipCollector(heard(time.Now().Add(-3*time.Second)), mopts...)
	require.NoError(t, err)
	placement, err := chashprom.NewPlacementCollector(f.tracker, opts...)
	require.NoError(t, err)
	balancer, err := chashprom.NewBalancerCollector(f.lb, opts...)
	require.NoError(t, err)
	shards, err := chashprom.NewShardMapCollector(f.smap, opts...)
	require.NoError(t, err)
	return f, []prometheus.Collector{placement, balancer, f.members, shards}
}

func gather(t testing.TB, cs ...prometheus.Collector) map[string]*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(cs...)
	mfs, err := reg.Gather()
	require.NoError(t, err)
	out := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

// value returns the value of the series of name whose labels include the
// given name=value pairs.
func value(t testing.TB, mfs map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	t.Helper()
	mf, ok := mfs[name]
	require.True(t, ok, "no %s", name)
	for _, m := range mf.GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		match := true
		for i := 0; i+1 < len(labels); i += 2 {
			match = match && got[labels[i]] == labels[i+1]
		}
		if !match {
			continue
		}
		if m.Gauge != nil {
			return m.GetGauge().GetValue()
		}
		return m.GetCounter().GetValue()
	}
	t.Fatalf("no %s%v", name, labels)
	return 0
}

// The collectors' names, help and types pass Prometheus's linter, with
// and without the per-node series, and a pedantic registry accepts them.
func TestLint(t *testing.T) {
	for _, opts := range [][]chashprom.Option{nil, {chashprom.WithPerNode(), chashprom.WithConstLabels(prometheus.Labels{"placer": "cache"})}} {
		_, cs := newFleet(t, 12, opts...)
		for _, c := range cs {
			problems, err := testutil.CollectAndLint(c)
			require.NoError(t, err)
			assert.Empty(t, problems, "%T", c)
		}
		gather(t, cs...)
	}
}

// By default the series do not grow with the fleet: at most about 30 for
// a placement, whatever the number of nodes.
func TestSeriesBounded(t *testing.T) {
	for _, n := range []int{3, 100, 1000} {
		_, cs := newFleet(t, n)
		counts := make([]int, len(cs))
		for i, c := range cs {
			counts[i] = testutil.CollectAndCount(c)
		}
		assert.LessOrEqual(t, counts[0], 30, "placement at %d nodes", n)
		assert.Equal(t, []int{11, 8, 13, 8}, counts, "placement, balancer, membership, shard map series at %d nodes (3 zones)", n)
	}
	_, cs := newFleet(t, 100, chashprom.WithPerNode())
	assert.Equal(t, 11+2*100, testutil.CollectAndCount(cs[0]))
	assert.Equal(t, 8+4*100, testutil.CollectAndCount(cs[1]))
	assert.Equal(t, 8+3*100, testutil.CollectAndCount(cs[3]))
}

func TestPlacementValues(t *testing.T) {
	f, cs := newFleet(t, 12, chashprom.WithPerNode())
	mfs := gather(t, cs[0])
	assert.EqualValues(t, 12, value(t, mfs, "chash_placement_members"))
	assert.EqualValues(t, 4, value(t, mfs, "chash_placement_zone_members", "zone", "zone-1"))
	assert.EqualValues(t, 1, value(t, mfs, "chash_placement_info", "algorithm", "ring", "fingerprint", f.tracker.Fingerprint()))
	assert.EqualValues(t, 2, value(t, mfs, "chash_placement_revision"), "NewTracker(nil), then Build")
	assert.EqualValues(t, 1, value(t, mfs, "chash_placement_builds_total"))
	assert.Positive(t, value(t, mfs, "chash_placement_build_seconds_total"))
	assert.InDelta(t, float64(f.tracker.LastChange().UnixNano())/1e9, value(t, mfs, "chash_placement_last_change_timestamp_seconds"), 1e-3)
	// chash.Shares sees through the tracker to its ring: exact.
	own, err := chash.Shares(f.tracker)
	require.NoError(t, err)
	require.True(t, own.Exact)
	require.NoError(t, err)
	assert.Equal(t, own.Peak(), value(t, mfs, "chash_placement_load_peak_ratio"))
	assert.Equal(t, own.CV(), value(t, mfs, "chash_placement_load_cv_ratio"))
	for _, s := range own.Shares {
		assert.Equal(t, s.Fraction, value(t, mfs, "chash_placement_node_share_ratio", "node", s.Node.ID))
	}
	assert.InDelta(t, 2.0/18, value(t, mfs, "chash_placement_node_fair_share_ratio", "node", "node-1"), 1e-12)

	// A change is seen at the next scrape.
	grown, err := chash.NewMaglev(chashtest.Nodes(20))
	require.NoError(t, err)
	f.tracker.Store(grown)
	mfs = gather(t, cs[0])
	assert.EqualValues(t, 20, value(t, mfs, "chash_placement_members"))
	assert.EqualValues(t, 1, value(t, mfs, "chash_placement_info", "algorithm", "maglev", "fingerprint", chash.Fingerprint(grown)))
	assert.EqualValues(t, 20, value(t, mfs, "chash_placement_zone_members", "zone", ""))
	assert.EqualValues(t, 3, value(t, mfs, "chash_placement_revision"))
}

// A membership watcher's builds and their time are exported.
func TestPlacementOfWatcher(t *testing.T) {
	var fleet membertest.Memory
	var ms []member.Member
	for _, n := range chashtest.Nodes(8) {
		ms = append(ms, member.Member{ID: n.ID, Addr: "127.0.0.1:1"})
	}
	require.NoError(t, fleet.Set(ms))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := member.Follow(ctx, fleet.Source(), func(nodes []chash.Node) (chash.Placer, error) { return chash.NewMaglev(nodes) })
	require.NoError(t, err)
	defer w.Close()
	require.NoError(t, w.Wait(ctx))
	c, err := chashprom.NewPlacementCollector(w)
	require.NoError(t, err)
	mfs := gather(t, c)
	assert.EqualValues(t, w.Builds(), value(t, mfs, "chash_placement_builds_total"))
	assert.Positive(t, value(t, mfs, "chash_placement_build_seconds_total"))
	assert.EqualValues(t, 8, value(t, mfs, "chash_placement_members"))
}

// A plain placer has members, zones and a fingerprint but no revision or
// builds; an empty Holder exports an empty placement.
func TestPlacementOfPlainPlacers(t *testing.T) {
	ring, _ := chash.NewRing(chashtest.Nodes(5))
	c, err := chashprom.NewPlacementCollector(ring)
	require.NoError(t, err)
	mfs := gather(t, c)
	assert.NotContains(t, mfs, "chash_placement_revision")
	assert.NotContains(t, mfs, "chash_placement_builds_total")
	assert.Contains(t, mfs, "chash_placement_last_change_timestamp_seconds", "when the collector first saw it")

	var empty chash.Holder
	c, err = chashprom.NewPlacementCollector(&empty)
	require.NoError(t, err)
	mfs = gather(t, c)
	assert.EqualValues(t, 0, value(t, mfs, "chash_placement_members"))
	assert.EqualValues(t, 1, value(t, mfs, "chash_placement_info", "algorithm", "", "fingerprint", chash.FingerprintNone))

	var typedNil *chash.Ring
	_, err = chashprom.NewPlacementCollector(typedNil)
	assert.ErrorIs(t, err, chash.ErrNilPlacer)
	_, err = chashprom.NewBalancerCollector(nil)
	assert.ErrorIs(t, err, chash.ErrNilPlacer)
	_, err = chashprom.NewShardMapCollector(nil)
	assert.ErrorIs(t, err, chash.ErrNilPlacer)
}

// viewed is a placer with a member view, as a member.Watcher and an etcd
// watcher are.
type viewed struct {
	chash.Placer
	view *member.View
}

func (v viewed) View() *member.View { return v.view }

// A member watcher's view gives the revision (its Version) and the time
// of the last change (Built).
func TestPlacementOfMemberView(t *testing.T) {
	ring, _ := chash.NewRing(chashtest.Nodes(3))
	built := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	c, err := chashprom.NewPlacementCollector(viewed{ring, &member.View{Version: 42, Built: built, Placer: ring}})
	require.NoError(t, err)
	mfs := gather(t, c)
	assert.EqualValues(t, 42, value(t, mfs, "chash_placement_revision"))
	assert.EqualValues(t, built.Unix(), value(t, mfs, "chash_placement_last_change_timestamp_seconds"))
}

// Zones past the limit are counted together; a zone named like the
// bucket merges with it rather than making a duplicate series.
func TestZonesCapped(t *testing.T) {
	nodes := chashtest.Nodes(40)
	for i := range nodes {
		nodes[i].Zone = fmt.Sprint("z", i%20)
	}
	nodes[0].Zone = "_other"
	ring, _ := chash.NewRing(nodes)
	c, err := chashprom.NewPlacementCollector(ring, chashprom.WithMaxZones(4))
	require.NoError(t, err)
	mfs := gather(t, c)
	assert.Len(t, mfs["chash_placement_zone_members"].GetMetric(), 5)
	var sum float64
	for _, m := range mfs["chash_placement_zone_members"].GetMetric() {
		sum += m.GetGauge().GetValue()
	}
	assert.EqualValues(t, 40, sum)
	_, err = chashprom.NewPlacementCollector(ring, chashprom.WithMaxZones(-1))
	assert.ErrorIs(t, err, chash.ErrInvalidOption)
}

// Hostile and invalid-UTF-8 IDs make valid, distinct label values.
func TestHostileIDs(t *testing.T) {
	nodes := []chash.Node{{ID: "a\xffb", Zone: "\xfe"}, {ID: "a\xfeb"}, {ID: "a\uFFFDb"}, {ID: `"}` + "\n" + `chash_evil 1`}}
	ring, err := chash.NewRing(nodes)
	require.NoError(t, err)
	c, err := chashprom.NewPlacementCollector(ring, chashprom.WithPerNode())
	require.NoError(t, err)
	mfs := gather(t, c)
	assert.Len(t, mfs["chash_placement_node_share_ratio"].GetMetric(), 4)
	problems, err := testutil.CollectAndLint(c)
	require.NoError(t, err)
	assert.Empty(t, problems)
}

func TestBalancerValues(t *testing.T) {
	f, cs := newFleet(t, 12, chashprom.WithPerNode())
	st := f.lb.Stats()
	mfs := gather(t, cs[1])
	assert.EqualValues(t, 300, value(t, mfs, "chash_balancer_in_flight_requests"))
	assert.EqualValues(t, balance.DefaultLoadFactor, value(t, mfs, "chash_balancer_load_factor_ratio"))
	var away, spread uint64
	for _, n := range st.Nodes {
		away += n.Away
		spread += n.Spread
		assert.EqualValues(t, n.InFlight, value(t, mfs, "chash_balancer_node_in_flight_requests", "node", n.ID))
	}
	assert.EqualValues(t, st.Spills, value(t, mfs, "chash_balancer_spills_total"))
	assert.EqualValues(t, away, value(t, mfs, "chash_balancer_served_away_total"))
	assert.EqualValues(t, spread, value(t, mfs, "chash_balancer_spread_reads_total"))
	assert.Positive(t, spread, "the hot key's reads spread")
	assert.EqualValues(t, 1, value(t, mfs, "chash_balancer_hot_keys"))
	assert.Greater(t, value(t, mfs, "chash_balancer_hottest_key_share_ratio"), 0.3)

	// The totals never go down when nodes leave.
	before := value(t, mfs, "chash_balancer_served_away_total")
	small, err := chash.NewRing(chashtest.Nodes(2))
	require.NoError(t, err)
	require.NoError(t, f.lb.SetPlacer(small))
	mfs = gather(t, cs[1])
	assert.GreaterOrEqual(t, value(t, mfs, "chash_balancer_served_away_total"), before)
}

func TestMembershipErrors(t *testing.T) {
	f, cs := newFleet(t, 3)
	for _, err := range []error{
		fmt.Errorf("%w: key /x", errLeaseLost),
		fmt.Errorf("etcd: %w: key /y", member.ErrBadMember),
		fmt.Errorf("etcd: watch: %w", member.ErrSilent),
		fmt.Errorf("etcd: watch: %w", fmt.Errorf("etcd: no valid members: %w", chash.ErrNoNodes)),
		fmt.Errorf("etcd: read: %w", context.DeadlineExceeded),
		fmt.Errorf("build: %w", chash.ErrDuplicateID),
		errors.New("etcd: watch closed"),
		nil,
	} {
		f.members.Report(err)
	}
	mfs := gather(t, cs[2])
	for kind, want := range map[string]float64{"lease_lost": 1, "bad_member": 1, "silent": 1, "refused": 0, "behind": 0, "spec": 0,
		"no_members": 1, "timeout": 1, "canceled": 0, "invalid": 1, "other": 1} {
		assert.Equal(t, want, value(t, mfs, "chash_membership_errors_total", "kind", kind), kind)
	}
	assert.InDelta(t, 3, value(t, mfs, "chash_membership_staleness_seconds"), 1)

	_, err := chashprom.NewMembershipCollector(nil, chashprom.WithErrorKind("timeout", errLeaseLost))
	assert.ErrorIs(t, err, chash.ErrInvalidOption)
	_, err = chashprom.NewMembershipCollector(nil, chashprom.WithErrorKind("Bad Kind", errLeaseLost))
	assert.ErrorIs(t, err, chash.ErrInvalidOption)
	c, err := chashprom.NewMembershipCollector(nil)
	require.NoError(t, err)
	mfs = gather(t, c)
	assert.NotContains(t, mfs, "chash_membership_staleness_seconds", "no source, no staleness")
	c.SetSource(heard(time.Now()))
	mfs = gather(t, c)
	assert.Contains(t, mfs, "chash_membership_staleness_seconds", "a source set later")
	var none *nilSource
	c.SetSource(none)
	assert.NotContains(t, gather(t, c), "chash_membership_staleness_seconds")
	var zero chashprom.MembershipCollector
	zero.Report(errLeaseLost) // does nothing, does not panic
}

func TestShardMapValues(t *testing.T) {
	f, cs := newFleet(t, 6, chashprom.WithPerNode())
	m := f.smap.Load().(*shardmap.Map)
	mfs := gather(t, cs[3])
	assert.EqualValues(t, 1, value(t, mfs, "chash_shardmap_version"))
	assert.EqualValues(t, 24, value(t, mfs, "chash_shardmap_partitions"))
	assert.EqualValues(t, 3, value(t, mfs, "chash_shardmap_replication_factor"))
	var replicas float64
	for _, n := range m.Members() {
		r, bound := m.Load(n.ID)
		assert.EqualValues(t, r, value(t, mfs, "chash_shardmap_node_replicas", "node", n.ID))
		assert.LessOrEqual(t, r, bound)
		replicas += value(t, mfs, "chash_shardmap_node_replicas", "node", n.ID)
	}
	assert.EqualValues(t, 24*3, replicas)
	assert.LessOrEqual(t, value(t, mfs, "chash_shardmap_replicas_max_bound_ratio"), 1.0)

	// Drain a node: the next scrape sees version 2 and the drained node.
	nodes := append(m.Members(), chash.Node{ID: "node-6", Zone: "zone-0", Weight: 1})
	nodes[0].Weight = 0
	next, err := m.Rebalance(nodes, m.Spec())
	require.NoError(t, err)
	f.smap.Store(next)
	mfs = gather(t, cs[3])
	assert.EqualValues(t, 2, value(t, mfs, "chash_shardmap_version"))
	assert.EqualValues(t, 1, value(t, mfs, "chash_shardmap_draining_members"))
	assert.EqualValues(t, 0, value(t, mfs, "chash_shardmap_node_replicas", "node", nodes[0].ID))

	var empty chash.Holder
	c, err := chashprom.NewShardMapCollector(&empty)
	require.NoError(t, err)
	assert.Equal(t, 1, testutil.CollectAndCount(c))
}

func TestOptions(t *testing.T) {
	ring, _ := chash.NewRing(chashtest.Nodes(3))
	for _, o := range []chashprom.Option{
		chashprom.WithConstLabels(prometheus.Labels{"node": "x"}),
		chashprom.WithConstLabels(prometheus.Labels{"0bad": "x"}),
		chashprom.WithConstLabels(prometheus.Labels{"__reserved": "x"}),
		chashprom.WithErrorKind("x", nil),
	} {
		_, err := chashprom.NewPlacementCollector(ring, o)
		assert.ErrorIs(t, err, chash.ErrInvalidOption)
	}
	_, err := chashprom.NewPlacementCollector(ring, nil)
	assert.NoError(t, err, "a nil option is ignored")
}

// The collectors are not on the lookup path: lookups through the tracker
// they watch allocate nothing, between scrapes as before any, and run
// race-free while a goroutine scrapes without pause (this test is the
// race test under -race).
func TestLookupsWhileScraped(t *testing.T) {
	f, cs := newFleet(t, 50, chashprom.WithPerNode())
	reg := prometheus.NewRegistry()
	reg.MustRegister(cs...)
	keys := chashtest.Keys(64)
	lookups := func() {
		for _, k := range keys {
			f.tracker.LookupString(k)
		}
	}
	// AllocsPerRun counts every goroutine's allocations, so the scrapes
	// run between the measurements, not during them.
	for range 3 {
		_, err := reg.Gather()
		require.NoError(t, err)
		assert.Zero(t, testing.AllocsPerRun(200, lookups))
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			_, _ = reg.Gather()
		}
	}()
	for range 200 {
		lookups()
	}
	cancel()
	<-done
	assert.True(t, strings.HasPrefix(f.tracker.Fingerprint(), "ring-"))
}
