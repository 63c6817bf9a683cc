package chash_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/chashtest"
	"github.com/keyplace/chash/internal/conformance"
	"github.com/keyplace/chash/internal/measure"
	"github.com/keyplace/chash/shardmap"
)

func zoneKeys(t *testing.T) []string {
	if testing.Short() {
		return chashtest.Keys(10_000)
	}
	return chashtest.Keys(100_000)
}

// TestContractZoned runs the contract on a Zoned over each algorithm, with
// the wrapped algorithm's bounds and nodes in three zones: Zoned places as
// the placer it wraps, and its lists span the zones.
func TestContractZoned(t *testing.T) {
	for _, c := range []struct {
		name string
		spec chashtest.Spec
	}{
		{"Ring", ringSpec()},
		{"Rendezvous", rendezvousSpec()},
		{"Jump", jumpSpec()},
		{"JumpBack", jumpBackSpec()},
		{"Maglev", maglevSpec()},
		{"Bounded", boundedSpec()},
	} {
		t.Run(c.name, func(t *testing.T) { chashtest.TestPlacer(t, zonedSpec(c.spec)) })
	}
}

// zonedSpec is the contract of a Zoned over the placers s describes.
func zonedSpec(s chashtest.Spec) chashtest.Spec {
	wrap := func(p chash.Placer, err error) (chash.Placer, error) {
		if err != nil {
			return nil, err
		}
		return conformance.AsPlacer(chash.NewZoned(p))
	}
	inner := func(p chash.Placer) chash.Placer { return p.(*chash.Zoned).Placer() }
	newInner, scaled, add, remove := s.New, s.NewScaled, s.Add, s.Remove
	s.New = func(nodes []chash.Node) (chash.Placer, error) { return wrap(newInner(nodes)) }
	if scaled != nil {
		s.NewScaled = func(nodes []chash.Node, unit float64) (chash.Placer, error) { return wrap(scaled(nodes, unit)) }
	}
	if add != nil {
		s.Add = func(p chash.Placer, n chash.Node) (chash.Placer, error) { return wrap(add(inner(p), n)) }
	}
	if remove != nil {
		s.Remove = func(p chash.Placer, id string) (chash.Placer, error) { return wrap(remove(inner(p), id)) }
	}
	variants := s.Variants
	s.Variants = nil
	for _, v := range variants {
		s.Variants = append(s.Variants, func() (chash.Placer, error) { return wrap(v()) })
	}
	s.Zero = &chash.Zoned{}
	s.ZoneAware = true
	s.Wrap = func(p chash.Placer) (chash.Placer, error) { return conformance.AsPlacer(chash.NewZoned(p)) }
	return s
}

func mustZoned(t *testing.T, a chash.Algorithm, nodes []chash.Node) *chash.Zoned {
	t.Helper()
	p, err := chash.New(a, nodes)
	require.NoError(t, err)
	z, err := chash.NewZoned(p)
	require.NoError(t, err)
	return z
}

func zonesOf(list []chash.Node) map[string]int {
	m := map[string]int{}
	for _, n := range list {
		m[n.Zone]++
	}
	return m
}

// Every list of k <= z nodes spans k zones, for every algorithm; longer
// lists span all z zones in their first z places.
func TestZonedSpan(t *testing.T) {
	keys := zoneKeys(t)
	for _, a := range chash.Algorithms() {
		for _, z := range []int{3, 4} {
			zp := mustZoned(t, a, conformance.ZonedNodes(64, z))
			require.Equal(t, z, zp.Zones())
			buf := make([]chash.Node, 0, 8)
			for _, k := range []int{1, 2, z, z + 2} {
				keys := keys
				// The full count for k = z; under the race detector only
				// for the two O(1)-ish placers.
				slow := a != chash.AlgorithmRing && a != chash.AlgorithmRendezvous
				if k != z || raceEnabled && slow {
					keys = keys[:10_000]
				}
				for _, key := range keys {
					buf = zp.AppendTopKString(buf[:0], key, k)
					require.Len(t, buf, k)
					require.Equal(t, zp.LookupString(key), buf[0], "%v key %q", a, key)
					spanned := len(zonesOf(buf[:min(k, z)]))
					require.Equal(t, min(k, z), spanned, "%v z=%d k=%d key %q: %v", a, z, k, key, buf)
					if key == keys[0] {
						chashtest.CheckTopK(t, zp, key, k)
						require.Equal(t, buf, zp.AppendTopK(nil, []byte(key), k))
					}
				}
			}
		}
	}
}

// Lists are prefixes of the wrapped placer's preference order chosen
// greedily: checked against a direct computation from the full order.
func TestZonedGreedy(t *testing.T) {
	nodes := conformance.ZonedNodes(20, 3)
	nodes[0].Zone, nodes[1].Zone = "", "" // two domains of their own
	for _, a := range []chash.Algorithm{chash.AlgorithmRing, chash.AlgorithmRendezvous} {
		zp := mustZoned(t, a, nodes)
		require.Equal(t, 5, zp.Zones())
		for _, key := range chashtest.Keys(2000) {
			full := zp.Placer().AppendTopKString(nil, key, len(nodes))
			for _, k := range []int{2, 5, 7} {
				require.Equal(t, greedy(full, k, 5), zp.AppendTopKString(nil, key, k), "%v %q k=%d", a, key, k)
			}
		}
	}
}

// Long lists (past place.BigK) and more than 64 domains take bitmaps in
// every path (the ring's walk, rendezvous' ranking, the general path):
// each gives the greedy choice too, for every algorithm.
func TestZonedGreedyLong(t *testing.T) {
	for _, tc := range []struct{ n, zones, alone int }{{200, 3, 0}, {300, 100, 20}} {
		nodes := conformance.ZonedNodes(tc.n, tc.zones)
		for i := range tc.alone {
			nodes[i*7].Zone = ""
		}
		domains := tc.zones + tc.alone
		if tc.alone == 0 {
			domains = tc.zones
		}
		for _, a := range chash.Algorithms() {
			zp := mustZoned(t, a, nodes)
			require.Equal(t, domains, zp.Zones(), "%v", a)
			var dst []chash.Node
			for _, key := range chashtest.Keys(60) {
				full := zp.Placer().AppendTopKString(nil, key, len(nodes))
				for _, k := range []int{2, 40, 70, 150, tc.n} {
					dst = zp.AppendTopKString(dst[:0], key, k)
					require.Equal(t, greedy(full, k, domains), dst, "%v n=%d %q k=%d", a, tc.n, key, k)
				}
			}
		}
	}
}

// Without zones every node is its own domain (here more than 64 of them),
// and the lists are the wrapped placer's own.
func TestZonedNoZones(t *testing.T) {
	for _, a := range chash.Algorithms() {
		zp := mustZoned(t, a, chashtest.Nodes(100))
		require.Equal(t, 100, zp.Zones())
		for _, key := range chashtest.Keys(500) {
			require.Equal(t, zp.Placer().AppendTopKString(nil, key, 4), zp.AppendTopKString(nil, key, 4), "%v %q", a, key)
		}
	}
}

// greedy is the zone-aware choice, written plainly.
func greedy(order []chash.Node, k, zones int) []chash.Node {
	var out []chash.Node
	seen := map[string]bool{}
	for _, n := range order {
		if len(out) == k || len(seen) == zones {
			break
		}
		d := n.Zone
		if d == "" {
			d = "\x00" + n.ID
		}
		if !seen[d] {
			seen[d] = true
			out = append(out, n)
		}
	}
	for _, n := range order {
		if len(out) == k {
			break
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// Removing a node changes only the lists that held it, each by that node
// and one other.
func TestZonedRemove(t *testing.T) {
	keys := zoneKeys(t)
	for _, a := range []chash.Algorithm{chash.AlgorithmRing, chash.AlgorithmRendezvous} {
		for _, z := range []int{3, 4} {
			nodes := conformance.ZonedNodes(64, z)
			before, after := mustZoned(t, a, nodes), mustZoned(t, a, slices.Delete(slices.Clone(nodes), 5, 6))
			gone := nodes[5].ID
			changed := 0
			for _, key := range keys {
				old, cur := before.AppendTopKString(nil, key, 3), after.AppendTopKString(nil, key, 3)
				if !slices.ContainsFunc(old, func(n chash.Node) bool { return n.ID == gone }) {
					require.Equal(t, old, cur, "%v z=%d key %q: list without %s changed", a, z, key, gone)
					continue
				}
				changed++
				out, in := setDiff(old, cur), setDiff(cur, old)
				require.Equal(t, []string{gone}, out, "%v key %q: %v -> %v", a, key, old, cur)
				require.Len(t, in, 1, "%v key %q: %v -> %v", a, key, old, cur)
			}
			assert.InDelta(t, 3.0/64, float64(changed)/float64(len(keys)), 0.015, "%v z=%d: lists holding the node", a, z)
		}
	}
}

func setDiff(a, b []chash.Node) []string {
	var out []string
	for _, n := range a {
		if !slices.ContainsFunc(b, func(m chash.Node) bool { return m.ID == n.ID }) {
			out = append(out, n.ID)
		}
	}
	return out
}

// Zones of equal weight hold equal shares of the replicas whatever their
// make-up; the first replica follows node weights exactly; unequal zones
// follow a weighted draw without replacement.
func TestZonedShares(t *testing.T) {
	keys := zoneKeys(t)
	// Four zones of weight 8 each, built differently.
	var nodes []chash.Node
	for z, shape := range [][2]int{{1, 8}, {8, 1}, {4, 2}, {2, 4}} {
		for i := 0; i < shape[0]; i++ {
			nodes = append(nodes, chash.Node{ID: fmt.Sprintf("n%d-%d", z, i), Weight: float64(shape[1]), Zone: fmt.Sprintf("z%d", z)})
		}
	}
	for _, a := range []chash.Algorithm{chash.AlgorithmRing, chash.AlgorithmRendezvous} {
		zp := mustZoned(t, a, nodes)
		for _, k := range []int{1, 2, 3} {
			got := zoneShares(zp, keys, k)
			for zone, s := range got {
				assert.InDelta(t, 0.25, s, 0.02, "%v k=%d zone %s", a, k, zone)
			}
		}
	}
	// Zones of weight 1, 2, 3, 4 (one node each of that weight, plus
	// filler nodes so that zones are not single nodes).
	nodes = nodes[:0]
	w := []float64{1, 2, 3, 4}
	for z := range w {
		for i := 0; i < 4; i++ {
			nodes = append(nodes, chash.Node{ID: fmt.Sprintf("m%d-%d", z, i), Weight: w[z], Zone: fmt.Sprintf("z%d", z)})
		}
	}
	for _, a := range []chash.Algorithm{chash.AlgorithmRing, chash.AlgorithmRendezvous} {
		zp := mustZoned(t, a, nodes)
		for _, k := range []int{1, 2} {
			got := zoneShares(zp, keys, k)
			for z := range w {
				want := drawShare(w, z, k)
				assert.InDelta(t, want, got[fmt.Sprintf("z%d", z)], 0.02, "%v k=%d zone z%d", a, k, z)
			}
		}
	}
}

// zoneShares returns each zone's fraction of the replicas in top-k lists.
func zoneShares(p chash.Placer, keys []string, k int) map[string]float64 {
	out := map[string]float64{}
	buf := make([]chash.Node, 0, k)
	for _, key := range keys {
		for _, n := range p.AppendTopKString(buf[:0], key, k) {
			out[n.Zone]++
		}
	}
	for z := range out {
		out[z] /= float64(len(keys) * k)
	}
	return out
}

// drawShare is zone i's expected share of the replicas when k (1 or 2)
// zones are drawn without replacement in proportion to weight w.
func drawShare(w []float64, i, k int) float64 {
	total := 0.0
	for _, x := range w {
		total += x
	}
	p := w[i] / total
	if k == 2 {
		for j, x := range w {
			if j != i {
				p += x / total * w[i] / (total - x)
			}
		}
	}
	return p / float64(k)
}

// Losing a whole zone changes only the lists that touched it, and their
// new members are spread over the surviving zones and nodes.
func TestZonedZoneLoss(t *testing.T) {
	keys := zoneKeys(t)
	for _, a := range []chash.Algorithm{chash.AlgorithmRing, chash.AlgorithmRendezvous} {
		nodes := conformance.ZonedNodes(64, 4)
		rest := slices.DeleteFunc(slices.Clone(nodes), func(n chash.Node) bool { return n.Zone == "z0" })
		before, after := mustZoned(t, a, nodes), mustZoned(t, a, rest)
		gained := map[string]int{}
		byZone := map[string]int{}
		moved := 0
		for _, key := range keys {
			old, cur := before.AppendTopKString(nil, key, 2), after.AppendTopKString(nil, key, 2)
			if zonesOf(old)["z0"] == 0 {
				require.Equal(t, old, cur, "%v key %q", a, key)
				continue
			}
			for _, id := range setDiff(cur, old) {
				gained[id]++
				byZone[cur[slices.IndexFunc(cur, func(n chash.Node) bool { return n.ID == id })].Zone]++
				moved++
			}
		}
		require.Len(t, byZone, 3, "%v: every surviving zone takes some", a)
		for z, c := range byZone {
			assert.InDelta(t, 1.0/3, float64(c)/float64(moved), 0.03, "%v zone %s", a, z)
		}
		for id, c := range gained {
			assert.Less(t, float64(c)/float64(moved), 2.5/float64(len(rest)), "%v: %s took too many", a, id)
		}
		require.Len(t, gained, len(rest), "%v: every survivor takes some", a)
	}
}

func TestZonedAllocs(t *testing.T) {
	if testing.CoverMode() != "" || raceEnabled {
		t.Skip("coverage instrumentation allocates, and the race detector makes sync.Pool drop scratch buffers")
	}
	keys := chashtest.Keys(256)
	bkeys := make([][]byte, len(keys))
	for i := range keys {
		bkeys[i] = []byte(keys[i])
	}
	for _, a := range chash.Algorithms() {
		zp := mustZoned(t, a, conformance.ZonedNodes(64, 3))
		buf := make([]chash.Node, 0, 3)
		i := 0
		allocs := testing.AllocsPerRun(2000, func() {
			buf = zp.AppendTopKString(buf[:0], keys[i%256], 3)
			buf = zp.AppendTopK(buf[:0], bkeys[i%256], 3)
			i++
		})
		assert.Zero(t, allocs, "%v", a)
	}
}

func TestZonedErrors(t *testing.T) {
	_, err := chash.NewZoned(nil)
	require.ErrorIs(t, err, chash.ErrNilPlacer)
	r, err := chash.NewRing(conformance.ZonedNodes(4, 2))
	require.NoError(t, err)
	_, err = chash.NewZoned(chash.NewHolder(r))
	require.ErrorIs(t, err, chash.ErrInvalidOption)
	_, err = chash.NewZoned(new(chash.Holder))
	require.ErrorIs(t, err, chash.ErrInvalidOption)
	zp, err := chash.NewZoned(r)
	require.NoError(t, err)
	require.Empty(t, zp.AppendTopKString(nil, "k", 0))
	require.Len(t, zp.AppendTopKString(nil, "k", 9), 4)
}

// BenchmarkZonedTopK compares zone-aware top-3 with plain top-3 at 64
// nodes in 3 zones, for each algorithm, in the same run.
func BenchmarkZonedTopK(b *testing.B) {
	keys := chashtest.Keys(1024)
	for _, a := range chash.Algorithms() {
		p, err := chash.New(a, conformance.ZonedNodes(64, 3))
		require.NoError(b, err)
		zp, err := chash.NewZoned(p)
		require.NoError(b, err)
		b.Run(fmt.Sprintf("%v/ratio", a), func(b *testing.B) { zonedRatio(b, p, zp, keys) })
		for _, c := range []struct {
			name string
			p    chash.Placer
		}{{"plain", p}, {"zoned", zp}} {
			b.Run(fmt.Sprintf("%v/%s", a, c.name), func(b *testing.B) {
				b.ReportAllocs()
				buf := make([]chash.Node, 0, 3)
				for i := 0; i < b.N; i++ {
					buf = c.p.AppendTopKString(buf[:0], keys[i&1023], 3)
				}
			})
		}
	}
}

// zonedRatio times zone-aware and plain top-3 in alternating chunks, so
// that both see the same machine load, and reports zoned/plain.
func zonedRatio(b *testing.B, p, zp chash.Placer, keys []string) {
	buf := make([]chash.Node, 0, 3)
	var spent [2]time.Duration
	for done := 0; done < b.N; done += 256 {
		for j, q := range []chash.Placer{p, zp} {
			t0 := time.Now()
			for i := 0; i < 256; i++ {
				buf = q.AppendTopKString(buf[:0], keys[(done+i)&1023], 3)
			}
			spent[j] += time.Since(t0)
		}
	}
	b.ReportMetric(float64(spent[1])/float64(spent[0]), "zoned/plain")
}

// The zero values have no members and answer emptily; a typed nil placer
// is refused.
func TestZeroValues(t *testing.T) {
	var z chash.Zoned
	require.Equal(t, chash.Node{}, z.LookupString("k"))
	require.Equal(t, chash.Node{}, z.Lookup([]byte("k")))
	require.Empty(t, z.AppendTopKString(nil, "k", 3))
	require.Empty(t, z.Nodes())
	var s chash.Shuffle
	require.Empty(t, s.Subset("t", 3))
	require.Zero(t, s.Len()+s.Zones())
	_, err := s.Placer("t", 3)
	require.ErrorIs(t, err, chash.ErrNoNodes)
	var m shardmap.Map
	require.Equal(t, chash.Node{}, m.LookupString("k"))
	require.Empty(t, m.AppendTopKString(nil, "k", 3))
	require.Empty(t, m.AppendReplicas(nil, 0))
	require.Zero(t, m.Len())
	_, err = chash.NewZoned((*chash.Ring)(nil))
	require.ErrorIs(t, err, chash.ErrNilPlacer)
	_, err = chash.NewZoned(&chash.Ring{})
	require.ErrorIs(t, err, chash.ErrNoNodes)
}

// FuzzZoned wraps rings and rendezvous placers of random fleets with
// zones: every list is distinct members starting with Lookup and spans
// min(k, zones) zones.
func FuzzZoned(f *testing.F) {
	f.Add("a,b,c,d,e", []byte{0, 1, 2, 1, 0}, "key", 3)
	f.Add("x,y", []byte{5, 5}, "", 9)
	f.Fuzz(func(t *testing.T, idList string, zones []byte, key string, k int) {
		nodes := conformance.FuzzNodes(idList, zones)
		for i := range nodes {
			if i < len(zones) && zones[i]%4 != 0 {
				nodes[i].Zone = fmt.Sprintf("z%d", zones[i]%4)
			}
		}
		for _, a := range []chash.Algorithm{chash.AlgorithmRing, chash.AlgorithmRendezvous, chash.AlgorithmMaglev} {
			p, err := chash.New(a, nodes)
			if err != nil {
				continue
			}
			zp, err := chash.NewZoned(p)
			require.NoError(t, err)
			k := k % 20
			chashtest.CheckTopK(t, zp, key, k)
			top := zp.AppendTopKString(nil, key, k)
			spanned := map[string]bool{}
			for _, n := range top[:min(len(top), zp.Zones())] {
				spanned[measure.DomainOf(n)] = true
			}
			require.Len(t, spanned, min(len(top), zp.Zones()), "%v %v", a, top)
		}
	})
}

// viewOf is a placer that serves another, as a membership watcher does.
type viewOf struct{ chash.Placer }

func (v viewOf) Load() chash.Placer { return v.Placer }

// TestZonedRefusesViews: a view whose members change (a Holder, a
// watcher: any placer with Load) is refused with a message that says what
// to do, instead of a Zoned that keeps its first members for good (a Zoned
// over an etcd watcher kept 3 nodes after the fleet grew to 6).
func TestZonedRefusesViews(t *testing.T) {
	r, err := chash.NewRing(conformance.ZonedNodes(6, 3))
	require.NoError(t, err)
	for _, p := range []chash.Placer{chash.NewHolder(r), viewOf{r}} {
		_, err := chash.NewZoned(p)
		require.ErrorIs(t, err, chash.ErrInvalidOption)
		assert.Contains(t, err.Error(), "wrap each placer it serves")
	}
}
