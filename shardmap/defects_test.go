package shardmap_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/bits"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/internal/measure"
	"github.com/keyplace/chash/shardmap"
)

// counts returns each member's replicas and primaries in m.
func counts(m *shardmap.Map) (replicas, primaries map[string]int) {
	replicas, primaries = map[string]int{}, map[string]int{}
	for p := 0; p < m.Partitions(); p++ {
		for j, n := range m.AppendReplicas(nil, p) {
			replicas[n.ID]++
			if j == 0 {
				primaries[n.ID]++
			}
		}
	}
	return replicas, primaries
}

// requireNearFresh asserts that every node of m holds within tol replicas
// and tol primaries of what a fresh build of its nodes and spec gives it.
func requireNearFresh(t *testing.T, m *shardmap.Map, tol int) {
	t.Helper()
	fresh, err := shardmap.New(m.Members(), m.Spec())
	require.NoError(t, err)
	gotR, gotP := counts(m)
	wantR, wantP := counts(fresh)
	for _, n := range m.Nodes() {
		assert.InDelta(t, wantR[n.ID], gotR[n.ID], float64(tol), "%s replicas (a fresh build gives %d)", n.ID, wantR[n.ID])
		assert.InDelta(t, wantP[n.ID], gotP[n.ID], float64(tol), "%s primaries (a fresh build gives %d)", n.ID, wantP[n.ID])
	}
}

// Defect 1: a node added to a full zone (R = 3 over 3 zones) must take its
// fair share of its zone, 1,024 of 4,096 partitions beside three
// zone-mates, within ±1, moving no more than that target requires; it got
// 412 while its zone-mates kept 1,228, and a second rebalance moved nothing.
func TestAddToFullZone(t *testing.T) {
	nodes := mapNodes(9, 3)
	m := mustMap(t, nodes, shardmap.Spec{Partitions: 4096, Replicas: 3})
	next := append(slices.Clone(nodes), chash.Node{ID: "node-new", Weight: 1, Zone: nodes[0].Zone})
	after, err := m.Rebalance(next, m.Spec())
	require.NoError(t, err)
	verifyMap(t, after)
	got, _ := after.Load("node-new")
	t.Logf("the added node holds %d replicas (fair 1024)", got)
	requireNearFresh(t, after, 1)
	// The minimum for that target: the added node must reach 1,023.
	minimum := 1023
	mv := moved(m, after)
	t.Logf("moved %d, minimum %d: %.3f×", mv, minimum, float64(mv)/float64(minimum))
	assert.LessOrEqual(t, mv, minimum+1)
	again, err := after.Rebalance(next, after.Spec())
	require.NoError(t, err)
	assert.Zero(t, moved(after, again), "a second rebalance moves nothing")
}

// Defect 1 with zones of unequal weight: the heavy zone is capped at one
// replica of each partition, so a node added to it shares that cap with
// its zone-mates (it got 0).
func TestAddToCappedZone(t *testing.T) {
	nodes := []chash.Node{{ID: "a1", Weight: 1, Zone: "a"}, {ID: "b1", Weight: 3, Zone: "b"}, {ID: "b2", Weight: 3, Zone: "b"}, {ID: "c1", Weight: 1, Zone: "c"}}
	m := mustMap(t, nodes, shardmap.Spec{Partitions: 64, Replicas: 2, LoadFactor: 3})
	next := append(slices.Clone(nodes), chash.Node{ID: "b3", Weight: 3, Zone: "b"})
	after, err := m.Rebalance(next, m.Spec())
	require.NoError(t, err)
	verifyMap(t, after)
	got, _ := after.Load("b3")
	t.Logf("b3 holds %d replicas", got)
	requireNearFresh(t, after, 1)
	assert.GreaterOrEqual(t, got, 20, "b3 shares zone b's 64 replicas with b1 and b2")
}

// Defect 3: a load factor of 1e16 or more says "no bound"; it was refused
// as "the zones have 0" (the bound overflowed int), and on 386 even 1e9
// overflowed a 32-bit int.
func TestHugeLoadFactor(t *testing.T) {
	for _, c := range []float64{1e9, 1e16, 1e300} {
		m, err := shardmap.New(mapNodes(6, 3), shardmap.Spec{Partitions: 1024, Replicas: 3, LoadFactor: c})
		require.NoError(t, err, "c=%v", c)
		verifyMap(t, m)
		for _, n := range m.Nodes() {
			held, bound := m.Load(n.ID)
			assert.LessOrEqual(t, held, bound, "c=%v %s", c, n.ID)
			assert.Equal(t, 1024, bound, "c=%v: no node can hold more than one replica of each partition", c)
		}
		data, err := m.MarshalJSON()
		require.NoError(t, err)
		_, err = shardmap.Parse(data)
		require.NoError(t, err, "c=%v", c)
	}
}

// craftCollisions returns n distinct 64-byte IDs whose XXH64 (seed 0) is
// the same: XXH64 keeps four 64-bit lanes, and a lane's round,
// rotl(acc + x·P2, 31)·P1, is invertible in its input word x, so a second
// 32-byte stripe can bring the lanes of any first stripe to one state.
// Length and tail being equal, so is the hash.
func craftCollisions(n int) []string {
	var p1, p2 uint64 = 11400714785074694791, 14029467366897019727
	inv := func(a uint64) uint64 { // a⁻¹ mod 2⁶⁴ for odd a, by Newton's iteration
		x := a
		for range 6 {
			x *= 2 - a*x
		}
		return x
	}
	round := func(acc, x uint64) uint64 { return bits.RotateLeft64(acc+x*p2, 31) * p1 }
	lanes := func(stripe []byte, v [4]uint64) [4]uint64 {
		for j := range v {
			v[j] = round(v[j], binary.LittleEndian.Uint64(stripe[8*j:]))
		}
		return v
	}
	start := [4]uint64{p1 + p2, p2, 0, -p1}
	target := lanes([]byte("the shared second stripe, 32 B!!"), lanes([]byte("the shared first stripe, 32 B!!!"), start))
	ids := make([]string, n)
	for i := range ids {
		first := []byte(fmt.Sprintf("colliding node %-17d", i))
		v := lanes(first, start)
		second := make([]byte, 32)
		for j := range v {
			want := bits.RotateLeft64(target[j]*inv(p1), -31)
			binary.LittleEndian.PutUint64(second[8*j:], (want-v[j])*inv(p2))
		}
		ids[i] = string(first) + string(second)
	}
	return ids
}

// Defect 4: past R, AppendTopK ranks the other nodes by a score of the
// partition and the node's ID hash; IDs of one hash tied, and all but one
// of them were skipped: 4 of 8 nodes for every key.
func TestAppendTopKCollidingIDs(t *testing.T) {
	ids := craftCollisions(8)
	for _, id := range ids[1:] {
		require.Equal(t, xxhash.Sum64String(ids[0]), xxhash.Sum64String(id))
	}
	var nodes []chash.Node
	for i, id := range ids {
		nodes = append(nodes, chash.Node{ID: id, Weight: 1, Zone: fmt.Sprint("z", i%4)})
	}
	m := mustMap(t, nodes, shardmap.Spec{Partitions: 64, Replicas: 3})
	verifyMap(t, m)
	for _, key := range []string{"a", "b", "user:42"} {
		top := measure.IDs(m.AppendTopKString(nil, key, 8))
		assert.Len(t, top, 8, "key %q", key)
		slices.Sort(top)
		assert.Len(t, slices.Compact(top), 8, "key %q: distinct nodes", key)
	}
}

// canonicalText writes m's canonical text from its public accessors, as
// the format (see Parse) describes it, for a control plane in another
// language to compare with.
func canonicalText(m *shardmap.Map) string {
	var b strings.Builder
	num := func(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }
	s := m.Spec()
	observed := 0
	if m.Observed() {
		observed = 1
	}
	fmt.Fprintf(&b, "chash.shardmap/2\nversion=%d\nseed=%d\npartitions=%d\nreplicas=%d\nload_factor=%s\ntolerance=%d\nobserved=%d\n",
		m.Version(), s.Seed, s.Partitions, s.Replicas, num(s.LoadFactor), s.Tolerance, observed)
	for _, n := range m.Members() {
		fmt.Fprintf(&b, "node=%s %s %s\n", strconv.Quote(n.ID), num(n.Weight), strconv.Quote(n.Zone))
	}
	for _, p := range s.Pins {
		fmt.Fprintf(&b, "pin=%d %s\n", p.Partition, strconv.Quote(p.Node))
	}
	for _, z := range s.ZoneReplicas {
		fmt.Fprintf(&b, "zone_replicas=%s %d\n", strconv.Quote(z.Zone), z.Replicas)
	}
	for _, r := range s.Residency {
		fmt.Fprintf(&b, "residency=%d %d", r.From, r.To)
		for _, z := range r.Zones {
			fmt.Fprintf(&b, " %s", strconv.Quote(z))
		}
		b.WriteString("\n")
	}
	for p := 0; p < m.Partitions(); p++ {
		fmt.Fprintf(&b, "part=%d", p)
		for _, n := range m.AppendReplicas(nil, p) {
			fmt.Fprintf(&b, " %s", strconv.Quote(n.ID))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// Defect 6: the canonical text writes numbers as the shortest decimal in
// plain notation (1000000, not 1e+06, which was the text of format 1),
// so the fingerprint is the XXH64 of text any language can write.
func TestCanonicalNumbers(t *testing.T) {
	nodes := []chash.Node{{ID: "a", Weight: 1e6, Zone: "x"}, {ID: "b", Weight: 1e6, Zone: "y"}, {ID: "c", Weight: 2e6, Zone: "z"}, {ID: "d", Weight: 0.00001}}
	m := mustMap(t, nodes, shardmap.Spec{Partitions: 8, Replicas: 2, LoadFactor: 1e16, Pins: []shardmap.Pin{{Partition: 1, Node: "c"}}})
	text := canonicalText(m)
	assert.Contains(t, text, `node="a" 1000000 "x"`)
	assert.Contains(t, text, `node="d" 0.00001 ""`)
	assert.Contains(t, text, "load_factor=10000000000000000\n")
	assert.Equal(t, fmt.Sprintf("%016x", xxhash.Sum64String(text)), fmt.Sprintf("%016x", m.Checksum()))
	var doc struct{ Fingerprint string }
	data, err := m.MarshalJSON()
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &doc))
	assert.Equal(t, fmt.Sprintf("%016x", xxhash.Sum64String(text)), doc.Fingerprint)
}

// Documents of format 1 still load when their fingerprint matches under
// format 1's rules ('g' numbers: 1e+06), on 386 as on amd64 (the first
// was written with c = 1e9, whose bound overflowed a 32-bit int), and are
// written back as format 2.
func TestParseFormat1(t *testing.T) {
	for _, name := range []string{"v1-load-factor-1e9.json", "v1-weights-1e6.json"} {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		require.NoError(t, err)
		m, err := shardmap.Parse(data)
		require.NoError(t, err, name)
		verifyMap(t, m)
		again, err := m.MarshalJSON()
		require.NoError(t, err)
		require.Contains(t, string(again), `"format": "chash.shardmap/2"`)
		back, err := shardmap.Parse(again)
		require.NoError(t, err)
		require.Equal(t, m.Fingerprint(), back.Fingerprint())
		// Tampering breaks the format-1 fingerprint.
		bad := bytes.Replace(data, []byte(`"version": 1,`), []byte(`"version": 2,`), 1)
		_, err = shardmap.Parse(bad)
		require.ErrorIs(t, err, shardmap.ErrInvalid, name)
		// Format 2's fields are not format 1's.
		bad = bytes.Replace(data, []byte(`"version": 1,`), []byte(`"version": 1, "tolerance": 1,`), 1)
		_, err = shardmap.Parse(bad)
		require.ErrorIs(t, err, shardmap.ErrInvalid, name)
	}
}

// Defect 6: encoding/json matches field names regardless of case, so
// "FORMAT" passed for "format"; the format names its fields exactly, each
// once.
func TestParseExactFields(t *testing.T) {
	m := mustMap(t, mapNodes(4, 2), shardmap.Spec{Partitions: 4, Replicas: 2, Pins: []shardmap.Pin{{Partition: 1, Node: "node-0"}}})
	data, err := m.MarshalJSON()
	require.NoError(t, err)
	for name, edit := range map[string]func(string) string{
		"FORMAT":  func(s string) string { return strings.Replace(s, `"format"`, `"FORMAT"`, 1) },
		"Seed":    func(s string) string { return strings.Replace(s, `"seed"`, `"Seed"`, 1) },
		"twice":   func(s string) string { return strings.Replace(s, `"seed": 0,`, `"seed": 0, "seed": 0,`, 1) },
		"node ID": func(s string) string { return strings.Replace(s, `{"id": "node-0"`, `{"ID": "node-0"`, 1) },
		"node extra": func(s string) string {
			return strings.Replace(s, `{"id": "node-0",`, `{"id": "node-0", "rack": "r",`, 1)
		},
		"pin Node": func(s string) string { return strings.Replace(s, `"node": "node-0"`, `"Node": "node-0"`, 1) },
		"missing":  func(s string) string { return strings.Replace(s, `  "tolerance": 1,`+"\n", "", 1) },
		"trailing": func(s string) string { return s + "{}" },
	} {
		text := edit(string(data))
		_, err := shardmap.Parse([]byte(text))
		require.ErrorIs(t, err, shardmap.ErrInvalid, name)
		t.Logf("%s: %v", name, err)
	}
	_, err = shardmap.Parse(data)
	require.NoError(t, err)
}

// minimumMoves returns the least number of replicas any map within the
// tolerance of after's targets copies from m: max(D, L+E), for D the
// replicas the nodes below target−tolerance lack, L the replicas after
// must place that m holds on no node of after within its bound, E those
// above target+tolerance (see Map). It checks that Moved agrees.
func minimumMoves(t testing.TB, m, after *shardmap.Map) int {
	t.Helper()
	loads, err := after.Loads(nil)
	require.NoError(t, err)
	before, _ := counts(m)
	tol := after.Spec().Tolerance
	kept, d, e := 0, 0, 0
	for _, n := range loads {
		if n.Weight == 0 {
			continue
		}
		c := min(before[n.ID], n.Bound)
		kept += c
		d += max(0, n.Target-tol-c)
		e += max(0, c-min(n.Target+tol, n.Bound))
	}
	least := max(d, after.Partitions()*after.Replicas()-kept+e)
	mv, got, err := shardmap.Moved(m, after)
	require.NoError(t, err)
	require.Equal(t, least, got, "Moved's minimum")
	require.Equal(t, moved(m, after), mv, "Moved's count")
	return least
}
