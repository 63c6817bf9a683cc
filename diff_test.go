package chash_test

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/chashtest"
	"github.com/keyplace/chash/internal/conformance"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// opaque hides a placer's structure, so Diff and Shares must sample it.
type opaque struct{ chash.Placer }

func ring(t testing.TB, n int, opts ...chash.Option) *chash.Ring {
	t.Helper()
	r, err := chash.NewRing(chashtest.Nodes(n), opts...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func diff(t testing.TB, a, b chash.Placer) chash.Movement {
	t.Helper()
	m, err := chash.Diff(a, b)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// checkMovement checks the invariants of any Movement.
func checkMovement(t *testing.T, m chash.Movement) {
	t.Helper()
	var sum, moved float64
	for _, f := range m.Flows {
		if !(f.Fraction > 0) {
			t.Errorf("flow %v: fraction not positive", f)
		}
		sum += f.Fraction
		if f.From != f.To {
			moved += f.Fraction
		}
	}
	if math.Abs(sum-1) > 1e-9 || math.Abs(moved-m.Moved) > 1e-9 {
		t.Errorf("flows sum to %v (want 1), moved ones to %v (Moved %v)", sum, moved, m.Moved)
	}
	if m.Exact != (m.Samples == 0) {
		t.Errorf("Exact %v with Samples %d", m.Exact, m.Samples)
	}
}

func TestDiffRingAddIsExactAndGoesToNewNode(t *testing.T) {
	for _, n := range []int{10, 1000} {
		old, new := ring(t, n), ring(t, n+1)
		m := diff(t, old, new)
		checkMovement(t, m)
		if !m.Exact {
			t.Fatalf("%d -> %d: ring diff not exact", n, n+1)
		}
		added := fmt.Sprintf("node-%d", n)
		for _, f := range m.Flows {
			if f.From != f.To && f.To != added {
				t.Errorf("%d -> %d: %v moves keys between old nodes", n, n+1, f)
			}
		}
		o, err := chash.Shares(new)
		if err != nil {
			t.Fatal(err)
		}
		var share float64
		for _, s := range o.Shares {
			if s.Node.ID == added {
				share = s.Fraction
			}
		}
		if math.Abs(m.Moved-share) > 1e-12 {
			t.Errorf("%d -> %d: moved %v, but the new node owns %v", n, n+1, m.Moved, share)
		}
		// 160 points a node: a node's share is within 30% of fair.
		if r := m.Moved * float64(n+1); r < 0.7 || r > 1.3 {
			t.Errorf("%d -> %d: moved %v, %.2f times the ideal 1/%d", n, n+1, m.Moved, r, n+1)
		}
	}
}

// The exact merge must agree with placing real keys.
func TestDiffExactMatchesKeys(t *testing.T) {
	a := ring(t, 10, chash.WithVnodes(8))
	b, err := a.Remove("node-3")
	if err != nil {
		t.Fatal(err)
	}
	b, err = b.Add(chash.Node{ID: "x", Weight: 2}, chash.Node{ID: "y"})
	if err != nil {
		t.Fatal(err)
	}
	m := diff(t, a, b)
	keys := chashtest.Keys(conformance.NumKeys)
	pairs := map[chash.Flow]int{}
	for _, k := range keys {
		pairs[chash.Flow{From: a.LookupString(k).ID, To: b.LookupString(k).ID}]++
	}
	for _, f := range m.Flows {
		got := float64(pairs[chash.Flow{From: f.From, To: f.To}]) / float64(len(keys))
		// Five binomial standard errors.
		if tol := 5 * math.Sqrt(f.Fraction*(1-f.Fraction)/float64(len(keys))); math.Abs(got-f.Fraction) > tol+1e-4 {
			t.Errorf("flow %s -> %s: exact %.5f, keys %.5f", f.From, f.To, f.Fraction, got)
		}
		delete(pairs, chash.Flow{From: f.From, To: f.To})
	}
	if len(pairs) > 0 {
		t.Errorf("keys flow along pairs Diff did not report: %v", pairs)
	}
}

func TestDiffSampledMatchesExact(t *testing.T) {
	a, b := ring(t, 10), ring(t, 11)
	exact := diff(t, a, b)
	got := diff(t, opaque{a}, opaque{b})
	checkMovement(t, got)
	if got.Exact || got.Samples != chash.SampleKeys {
		t.Fatalf("opaque placers: Exact %v, Samples %d", got.Exact, got.Samples)
	}
	se := math.Sqrt(exact.Moved * (1 - exact.Moved) / chash.SampleKeys)
	if math.Abs(got.Moved-exact.Moved) > 5*se {
		t.Errorf("sampled moved %v, exact %v (5 s.e. = %v)", got.Moved, exact.Moved, 5*se)
	}
	if again := diff(t, opaque{a}, opaque{b}); again.Moved != got.Moved || len(again.Flows) != len(got.Flows) {
		t.Errorf("sampling is not deterministic: %v then %v", got.Moved, again.Moved)
	}
}

func TestDiffIdenticalMovesNothing(t *testing.T) {
	a := ring(t, 7)
	for _, m := range []chash.Movement{diff(t, a, ring(t, 7)), diff(t, opaque{a}, a)} {
		checkMovement(t, m)
		if m.Moved != 0 || len(m.Flows) != 7 {
			t.Errorf("same placement: moved %v over %d flows", m.Moved, len(m.Flows))
		}
	}
}

func TestDiffModNReference(t *testing.T) {
	a, b := modN(10), modN(11)
	m := diff(t, a, b)
	checkMovement(t, m)
	// mod 10 and mod 11 agree on 10 residues in 110.
	if want := 1 - 1.0/11; math.Abs(m.Moved-want) > 0.002 {
		t.Errorf("mod-N 10 -> 11 moved %v, want %v", m.Moved, want)
	}
}

// Rings with different hashers cannot be merged: the result is sampled.
func TestDiffDifferentHashers(t *testing.T) {
	a, b := ring(t, 10), ring(t, 10, chash.WithHasher(chash.XXHashSeed(1)))
	m := diff(t, a, b)
	checkMovement(t, m)
	if m.Exact || m.Moved < 0.8 {
		t.Errorf("different seeds: exact %v, moved %v (want sampled, about 0.9)", m.Exact, m.Moved)
	}
	c := ring(t, 10, chash.WithHasher(sliceHasher{make([]byte, 1)}))
	d := ring(t, 11, chash.WithHasher(sliceHasher{make([]byte, 1)}))
	if m := diff(t, c, d); m.Exact || m.Moved > 0.2 {
		t.Errorf("incomparable hasher: exact %v, moved %v", m.Exact, m.Moved)
	}
}

// sliceHasher is xxhash behind a type that == cannot compare.
type sliceHasher struct{ pad []byte }

func (sliceHasher) Sum64(b []byte) uint64       { return chash.XXHash.Sum64(b) }
func (sliceHasher) Sum64String(s string) uint64 { return chash.XXHash.Sum64String(s) }

func TestDiffErrors(t *testing.T) {
	a := ring(t, 3)
	for name, pair := range map[string][2]chash.Placer{
		"nil old":      {nil, a},
		"nil new":      {a, nil},
		"empty holder": {a, new(chash.Holder)},
	} {
		if _, err := chash.Diff(pair[0], pair[1]); !errors.Is(err, chash.ErrNoNodes) {
			t.Errorf("%s: err %v, want ErrNoNodes", name, err)
		}
	}
	if _, err := chash.Diff(a, liar{a}); !errors.Is(err, chash.ErrUnknownNode) {
		t.Errorf("non-member owner: err %v, want ErrUnknownNode", err)
	}
	if _, err := chash.Shares(nil); !errors.Is(err, chash.ErrNoNodes) {
		t.Errorf("Shares(nil): err %v, want ErrNoNodes", err)
	}
	if m := diff(t, chash.NewHolder(a), chash.NewHolder(ring(t, 4))); !m.Exact {
		t.Error("Diff of Holders of rings is not exact")
	}
}

// Views of any type (a Load() Placer, here one of another package's
// kind) and zone-aware wrappers are measured as the placer they serve:
// exactly, and as that placer is.
func TestDiffThroughViews(t *testing.T) {
	a, b := ring(t, 4), ring(t, 5)
	want := diff(t, a, b)
	got := diff(t, view{a}, zonedOf(t, a))
	if !got.Exact {
		t.Error("Diff of a view and a Zoned of the same ring is not exact")
	}
	if got.Moved != 0 {
		t.Errorf("Diff of a view and a Zoned of the same ring moved %v", got.Moved)
	}
	if m := diff(t, view{view{a}}, zonedOf(t, b)); !m.Exact || m.Moved != want.Moved {
		t.Errorf("through views: exact %v, moved %v; directly moved %v", m.Exact, m.Moved, want.Moved)
	}
	s, err := chash.Shares(view{a})
	if err != nil || !s.Exact {
		t.Errorf("Shares of a view: exact %v, err %v", s.Exact, err)
	}
	if _, err := chash.Shares(view{(*chash.Holder)(nil)}); !errors.Is(err, chash.ErrNoNodes) {
		t.Errorf("Shares of a view of a nil Holder: err %v, want ErrNoNodes", err)
	}
}

func zonedOf(t *testing.T, p chash.Placer) *chash.Zoned {
	t.Helper()
	z, err := chash.NewZoned(p)
	if err != nil {
		t.Fatal(err)
	}
	return z
}

// view is a placer that serves another through Load, as a membership
// watcher does.
type view struct{ chash.Placer }

func (v view) Load() chash.Placer { return v.Placer }

// liar returns a node that is not a member.
type liar struct{ chash.Placer }

func (liar) Lookup([]byte) chash.Node { return chash.Node{ID: "stranger", Weight: 1} }

func TestSharesExactAndSampled(t *testing.T) {
	nodes := []chash.Node{{ID: "a", Weight: 1}, {ID: "b", Weight: 2}, {ID: "c", Weight: 3}, {ID: "d", Weight: 4}}
	r, err := chash.NewRing(nodes, chash.WithVnodes(1000))
	if err != nil {
		t.Fatal(err)
	}
	exact, err := chash.Shares(r)
	if err != nil {
		t.Fatal(err)
	}
	sampled, err := chash.Shares(opaque{r})
	if err != nil {
		t.Fatal(err)
	}
	if !exact.Exact || sampled.Exact || sampled.Samples != chash.SampleKeys {
		t.Fatalf("exact %+v, sampled %+v", exact.Exact, sampled.Exact)
	}
	var sum float64
	for i, s := range exact.Shares {
		sum += s.Fraction
		if s.Node != nodes[i] {
			t.Errorf("share %d is of %v, want %v", i, s.Node, nodes[i])
		}
		if d := math.Abs(s.Fraction - sampled.Shares[i].Fraction); d > 0.003 {
			t.Errorf("%s: exact %.4f, sampled %.4f", s.Node.ID, s.Fraction, sampled.Shares[i].Fraction)
		}
		// 1,000 points a unit of weight: within 10% of weight/10.
		if want := s.Node.Weight / 10; math.Abs(s.Fraction/want-1) > 0.1 {
			t.Errorf("%s: share %.4f, want about %.4f", s.Node.ID, s.Fraction, want)
		}
	}
	if math.Abs(sum-1) > 1e-9 {
		t.Errorf("shares sum to %v", sum)
	}
	if cv, peak := exact.CV(), exact.Peak(); cv > 0.06 || peak > 1.1 || peak < 1 {
		t.Errorf("weighted ring of 1,000 points: CV %.3f, peak %.3f", cv, peak)
	}
}

// The ring's exact arc CV follows sqrt((n-1)/(n·v+1)), the spread of n·v
// uniform points, averaged over hash seeds.
func TestSharesRingCVTheory(t *testing.T) {
	seeds := 100
	if testing.Short() {
		seeds = 20
	}
	for _, v := range []int{1, 100, 1000} {
		var sum float64
		for s := 1; s <= seeds; s++ {
			o, err := chash.Shares(ring(t, 10, chash.WithVnodes(v), chash.WithHasher(chash.XXHashSeed(uint64(s)))))
			if err != nil {
				t.Fatal(err)
			}
			sum += o.CV()
		}
		theory := math.Sqrt(9 / float64(10*v+1))
		if mean := sum / float64(seeds); math.Abs(mean/theory-1) > 0.2 {
			t.Errorf("v=%d: mean CV %.3f over %d seeds, theory %.3f", v, mean, seeds, theory)
		}
	}
}

func BenchmarkDiffRing1000(b *testing.B) {
	old, new := ring(b, 1000), ring(b, 1001)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		diff(b, old, new)
	}
}

func BenchmarkDiffSampled10(b *testing.B) {
	old, new := opaque{ring(b, 10)}, opaque{ring(b, 11)}
	for i := 0; i < b.N; i++ {
		diff(b, old, new)
	}
}

func FuzzDiff(f *testing.F) {
	f.Add("a,b,c", "a,b,c,d", 1.0, 4, uint64(0))
	f.Add("a", "b", 0.0, 1, uint64(9))
	f.Add("x,y", "y,z", math.NaN(), 0, uint64(1))
	f.Fuzz(func(t *testing.T, olds, news string, w float64, vnodes int, seed uint64) {
		parse := func(s string) []chash.Node {
			var out []chash.Node
			for i, id := range strings.Split(s, ",") {
				out = append(out, chash.Node{ID: id, Weight: float64(i%3) * w})
			}
			return out
		}
		opts := []chash.Option{chash.WithVnodes(vnodes%300 + 1), chash.WithHasher(chash.XXHashSeed(seed))}
		a, errA := chash.NewRing(parse(olds), opts...)
		b, errB := chash.NewRing(parse(news), opts...)
		if errA != nil || errB != nil {
			return
		}
		m, err := chash.Diff(a, b)
		if err != nil {
			t.Fatal(err)
		}
		checkMovement(t, m)
		o, err := chash.Shares(b)
		if err != nil || len(o.Shares) != b.Len() {
			t.Fatalf("Shares: %v, %d shares of %d nodes", err, len(o.Shares), b.Len())
		}
	})
}

// modNPlacer is hash % n, the reference consistent placement improves on.
type modNPlacer struct{ nodes []chash.Node }

func modN(n int) chash.Placer { return modNPlacer{chashtest.Nodes(n)} }

func (m modNPlacer) Lookup(k []byte) chash.Node {
	n := m.nodes[chash.XXHash.Sum64(k)%uint64(len(m.nodes))]
	n.Weight = 1
	return n
}
func (m modNPlacer) LookupString(k string) chash.Node { return m.Lookup([]byte(k)) }
func (m modNPlacer) AppendTopK(dst []chash.Node, k []byte, n int) []chash.Node {
	if n <= 0 {
		return dst
	}
	return append(dst, m.Lookup(k))
}
func (m modNPlacer) AppendTopKString(dst []chash.Node, k string, n int) []chash.Node {
	return m.AppendTopK(dst, []byte(k), n)
}
func (m modNPlacer) Nodes() []chash.Node { return m.nodes }
func (m modNPlacer) Len() int            { return len(m.nodes) }

func ExampleDiff() {
	nodes := make([]chash.Node, 10)
	for i := range nodes {
		nodes[i] = chash.Node{ID: "cache-" + strconv.Itoa(i)}
	}
	old, _ := chash.NewRing(nodes)
	new, _ := old.Add(chash.Node{ID: "cache-10"})
	m, _ := chash.Diff(old, new)
	fmt.Printf("moved %.2f%% of keys (exact: %v)\n", 100*m.Moved, m.Exact)
	var toNew float64
	for _, f := range m.Flows {
		if f.From != f.To && f.To == "cache-10" {
			toNew += f.Fraction
		}
	}
	fmt.Printf("moved to cache-10: %.2f%%\n", 100*toNew)
	// Output:
	// moved 8.12% of keys (exact: true)
	// moved to cache-10: 8.12%
}

func ExampleShares() {
	r, _ := chash.NewRing([]chash.Node{{ID: "a"}, {ID: "b", Weight: 2}}, chash.WithVnodes(1000))
	o, _ := chash.Shares(r)
	for _, s := range o.Shares {
		fmt.Printf("%s %.3f\n", s.Node.ID, s.Fraction)
	}
	fmt.Printf("CV of load against fair share: %.3f\n", o.CV())
	// Output:
	// a 0.342
	// b 0.658
	// CV of load against fair share: 0.019
}

// The closed forms agree with sampling.
func TestDiffAnalyticMatchesSampling(t *testing.T) {
	w := []chash.Node{{ID: "a", Weight: 1}, {ID: "b", Weight: 2}, {ID: "c", Weight: 3}, {ID: "d", Weight: 0.5}}
	r1, err := chash.NewRendezvous(w)
	require.NoError(t, err)
	r2, err := chash.NewRendezvous([]chash.Node{w[0], w[2], w[3], {ID: "e", Weight: 2}, {ID: "f"}})
	require.NoError(t, err)
	j1, err := chash.NewJump(chashtest.Nodes(7))
	require.NoError(t, err)
	j2, err := j1.Add(chash.Node{ID: "x"}, chash.Node{ID: "y"})
	require.NoError(t, err)
	j3, err := j2.Replace("node-2", chash.Node{ID: "z"})
	require.NoError(t, err)
	for _, tc := range []struct {
		name     string
		old, new chash.Placer
	}{
		{"rendezvous", r1, r2}, {"rendezvous back", r2, r1},
		{"jump grow", j1, j2}, {"jump shrink", j2, j1}, {"jump grow and replace", j1, j3},
	} {
		exact, err := chash.Diff(tc.old, tc.new)
		require.NoError(t, err)
		require.True(t, exact.Exact, tc.name)
		sampled, err := chash.Diff(hide{tc.old}, hide{tc.new})
		require.NoError(t, err)
		require.False(t, sampled.Exact)
		assert.InDelta(t, sampled.Moved, exact.Moved, 0.003, tc.name)
		flows := map[[2]string]float64{}
		for _, f := range sampled.Flows {
			flows[[2]string{f.From, f.To}] = f.Fraction
		}
		sum := 0.0
		for _, f := range exact.Flows {
			sum += f.Fraction
			assert.InDelta(t, f.Fraction, flows[[2]string{f.From, f.To}], 0.003, "%s: %s -> %s", tc.name, f.From, f.To)
		}
		assert.InDelta(t, 1, sum, 1e-9)
	}
	sh, err := chash.Shares(r1)
	require.NoError(t, err)
	assert.True(t, sh.Exact)
	assert.InDelta(t, 2.0/6.5, sh.Shares[1].Fraction, 1e-12)
}

// hide passes a placer through without its concrete type, forcing Diff to
// sample.
type hide struct{ chash.Placer }

// Maglev tables and bounded partitions are step functions of the hash:
// Diff is exact, between tables and against rings, and agrees with sampling.
func TestDiffTablesExact(t *testing.T) {
	g1, err := chash.NewMaglev(chashtest.Nodes(10))
	require.NoError(t, err)
	g2, err := g1.Add(chash.Node{ID: "node-10"})
	require.NoError(t, err)
	r, err := chash.NewRing(chashtest.Nodes(10))
	require.NoError(t, err)
	b1, err := chash.NewBounded(chashtest.Nodes(10))
	require.NoError(t, err)
	b2, err := b1.Add(chash.Node{ID: "node-10"})
	require.NoError(t, err)
	for _, tc := range []struct {
		name     string
		old, new chash.Placer
	}{
		{"maglev add", g1, g2}, {"ring to maglev", r, g2}, {"maglev to ring", g1, r},
		{"bounded add", b1, b2}, {"bounded to maglev", b1, g1},
	} {
		exact, err := chash.Diff(tc.old, tc.new)
		require.NoError(t, err)
		require.True(t, exact.Exact, tc.name)
		sampled, err := chash.Diff(hide{tc.old}, hide{tc.new})
		require.NoError(t, err)
		assert.InDelta(t, sampled.Moved, exact.Moved, 0.003, tc.name)
	}
	sh, err := chash.Shares(g1)
	require.NoError(t, err)
	require.True(t, sh.Exact)
	for i, e := range g1.Entries() {
		assert.InDelta(t, float64(e)/65537, sh.Shares[i].Fraction, 1e-9)
	}
}

// Loads, CV and Peak stay finite and right at extreme weights.
func TestSharesStatisticsAtExtremeWeights(t *testing.T) {
	for _, w := range []float64{math.MaxFloat64, math.MaxFloat64 / 3, 1e300, 5e-324, 1e-310, 1e-300} {
		nodes := []chash.Node{{ID: "a", Weight: w}, {ID: "b", Weight: w}, {ID: "c", Weight: w}}
		p, err := chash.NewRendezvous(nodes)
		if err != nil {
			continue // outside rendezvous's weight range; Maglev takes any
		}
		o, err := chash.Shares(p)
		require.NoError(t, err)
		assert.InDelta(t, 0, o.CV(), 1e-9, "weight %v", w)
		assert.InDelta(t, 1, o.Peak(), 1e-9, "weight %v", w)
	}
	for _, w := range []float64{math.MaxFloat64, 1e300, 5e-324, 1e-310} {
		o := chash.Ownership{Shares: []chash.Share{
			{Node: chash.Node{ID: "a", Weight: w}, Fraction: 0.25},
			{Node: chash.Node{ID: "b", Weight: w}, Fraction: 0.25},
			{Node: chash.Node{ID: "c", Weight: w}, Fraction: 0.5},
		}}
		loads := o.Loads()
		assert.InDeltaSlice(t, []float64{0.75, 0.75, 1.5}, loads, 1e-9, "weight %v", w)
		assert.False(t, math.IsNaN(o.CV()) || math.IsInf(o.CV(), 0), "weight %v: CV %v", w, o.CV())
		assert.InDelta(t, 1.5, o.Peak(), 1e-9, "weight %v", w)
	}
	o := chash.Ownership{Shares: []chash.Share{
		{Node: chash.Node{ID: "huge", Weight: math.MaxFloat64}, Fraction: 0.5},
		{Node: chash.Node{ID: "tiny", Weight: 5e-324}, Fraction: 0.5},
	}}
	assert.True(t, math.IsInf(o.Peak(), 1))
	assert.True(t, math.IsInf(o.CV(), 1))
}
