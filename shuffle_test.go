package chash_test

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
	"sync"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/chashtest"
	"github.com/keyplace/chash/internal/conformance"
)

// TestContractShuffle runs the contract on a Shuffle's subsets, taking
// tenants for keys: a tenant's subset of k nodes is its top k. The subsets
// are rendezvous hashing's zone-aware lists, with its bounds.
func TestContractShuffle(t *testing.T) {
	s := rendezvousSpec()
	s.New = func(nodes []chash.Node) (chash.Placer, error) {
		sh, err := chash.NewShuffle(nodes)
		if err != nil {
			return nil, err
		}
		return subsets{sh}, nil
	}
	s.NewScaled = nil
	s.Add, s.Remove = nil, nil
	s.Derive = false
	s.Zero = subsets{&chash.Shuffle{}}
	s.ZoneAware = true
	s.Variants = []func() (chash.Placer, error){
		func() (chash.Placer, error) {
			sh, err := chash.NewShuffle(chashtest.Nodes(10), chash.WithHasher(chash.XXHashSeed(7)))
			return subsets{sh}, err
		},
	}
	chashtest.TestPlacer(t, s)
}

// subsets is the Placer of a Shuffle's subsets: a key is a tenant, and its
// top k nodes the tenant's subset of size k. Its own zero value holds a
// nil *Shuffle, which must behave as empty as the zero Shuffle does.
type subsets struct{ *chash.Shuffle }

// subsetBuf holds the one-node subsets of Lookup, which would otherwise
// escape to the heap through the rendezvous placer's interface.
var subsetBuf = sync.Pool{New: func() any { return new([]chash.Node) }}

func (s subsets) Lookup(key []byte) chash.Node { return s.LookupString(unsafeString(key)) }

func (s subsets) LookupString(key string) chash.Node {
	b := subsetBuf.Get().(*[]chash.Node)
	*b = s.AppendSubset((*b)[:0], key, 1)
	var n chash.Node
	if len(*b) > 0 {
		n = (*b)[0]
	}
	clear(*b)
	subsetBuf.Put(b)
	return n
}

func (s subsets) AppendTopK(dst []chash.Node, key []byte, k int) []chash.Node {
	return s.AppendSubset(dst, unsafeString(key), k)
}

func (s subsets) AppendTopKString(dst []chash.Node, key string, k int) []chash.Node {
	return s.AppendSubset(dst, key, k)
}

// Fingerprint is that of the rendezvous placer whose zone-aware lists the
// subsets are, which Shuffle does not expose: its subset of all the nodes.
func (s subsets) Fingerprint() string {
	p, err := s.Placer("fingerprint", s.Len())
	if err != nil {
		return chash.FingerprintNone
	}
	return chash.Fingerprint(p)
}

func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

func tenants(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("tenant-%d", i)
	}
	return out
}

func mustShuffle(t *testing.T, nodes []chash.Node) *chash.Shuffle {
	t.Helper()
	s, err := chash.NewShuffle(nodes)
	require.NoError(t, err)
	return s
}

// Adding or removing one node changes only the subsets that must change,
// each by exactly one node.
func TestShuffleStable(t *testing.T) {
	nodes := conformance.ZonedNodes(100, 5)
	base := mustShuffle(t, nodes)
	added := mustShuffle(t, append(slices.Clone(nodes), chash.Node{ID: "node-new", Zone: "z2"}))
	removed := mustShuffle(t, slices.Delete(slices.Clone(nodes), 42, 43))
	var in, out int
	for _, tn := range tenants(10_000) {
		s := base.Subset(tn, 5)
		require.Len(t, zonesOf(s), 5, "%s: one node per zone", tn)
		a := added.Subset(tn, 5)
		if setDiff(a, s) == nil {
			require.Equal(t, s, a, "%s", tn)
		} else {
			in++
			require.Equal(t, []string{"node-new"}, setDiff(a, s), "%s", tn)
			require.Len(t, setDiff(s, a), 1, "%s", tn)
		}
		r := removed.Subset(tn, 5)
		if !slices.ContainsFunc(s, func(n chash.Node) bool { return n.ID == "node-42" }) {
			require.Equal(t, s, r, "%s", tn)
		} else {
			out++
			require.Equal(t, []string{"node-42"}, setDiff(s, r), "%s", tn)
			require.Len(t, setDiff(r, s), 1, "%s", tn)
		}
	}
	// The new node joins zone z2 (21 nodes), so it enters about 1/21 of
	// the subsets; node-42 is in about 1/20.
	assert.InDelta(t, 10_000.0/21, float64(in), 70)
	assert.InDelta(t, 10_000.0/20, float64(out), 70)
}

// Overlaps between tenants' subsets follow the combinatorial
// probabilities: hypergeometric without zones, binomial per zone with them.
func TestShuffleOverlap(t *testing.T) {
	n, size, count := 100, 5, 10_000
	if testing.Short() {
		count = 3000
	}
	pairs := float64(count) * float64(count-1) / 2
	for _, zones := range []int{0, 5} {
		nodes := conformance.ZonedNodes(n, max(zones, 1))
		if zones == 0 {
			for i := range nodes {
				nodes[i].Zone = ""
			}
		}
		got := overlaps(mustShuffle(t, nodes), n, size, count)
		for j := 0; j <= size; j++ {
			var p float64
			if zones == 0 { // C(5,j)·C(95,5-j)/C(100,5)
				p = binom(size, j) * binom(n-size, size-j) / binom(n, size)
			} else { // each zone's node matches with probability 1/20
				q := float64(zones) / float64(n)
				p = binom(size, j) * math.Pow(q, float64(j)) * math.Pow(1-q, float64(size-j))
			}
			want := p * pairs
			// Sampling noise is about sqrt(want); pairs are not
			// independent, so allow four times that and 3%.
			tol := 4*math.Sqrt(want) + 0.03*want + 2
			t.Logf("zones=%d: %d shared: %d pairs, expected %.1f", zones, j, got[j], want)
			assert.InDelta(t, want, float64(got[j]), tol, "zones=%d, %d nodes shared", zones, j)
		}
	}
}

// overlaps counts, over all pairs of count tenants, how many share j nodes.
func overlaps(s *chash.Shuffle, n, size, count int) []int {
	index := map[string]int{}
	for i, nd := range s.Nodes() {
		index[nd.ID] = i
	}
	masks := make([][2]uint64, count)
	buf := make([]chash.Node, 0, size)
	for i, tn := range tenants(count) {
		for _, nd := range s.AppendSubset(buf[:0], tn, size) {
			b := index[nd.ID]
			masks[i][b/64] |= 1 << (b % 64)
		}
	}
	got := make([]int, size+1)
	for i := range masks {
		a := masks[i]
		for _, b := range masks[i+1:] {
			got[bits.OnesCount64(a[0]&b[0])+bits.OnesCount64(a[1]&b[1])]++
		}
	}
	return got
}

func binom(n, k int) float64 {
	r := 1.0
	for i := 0; i < k; i++ {
		r = r * float64(n-i) / float64(i+1)
	}
	return r
}

// A tenant's placer uses only its subset, crosses its zones and is the
// same in every process.
func TestShufflePlacer(t *testing.T) {
	s := mustShuffle(t, conformance.ZonedNodes(30, 3))
	sub := s.Subset("acme", 6)
	require.Len(t, sub, 6)
	p, err := s.Placer("acme", 6)
	require.NoError(t, err)
	require.ElementsMatch(t, sub, p.Nodes())
	for _, key := range tenants(1000) {
		top := p.AppendTopKString(nil, key, 3)
		require.Len(t, zonesOf(top), 3)
		require.Contains(t, sub, top[0])
	}
	_, err = s.Placer("acme", 0)
	require.ErrorIs(t, err, chash.ErrInvalidOption)
	require.Empty(t, s.Subset("acme", -1))
	require.Len(t, s.Subset("acme", 99), 30)
	_, err = chash.NewShuffle(nil)
	require.ErrorIs(t, err, chash.ErrNoNodes)
}

func TestShuffleAllocs(t *testing.T) {
	if testing.CoverMode() != "" {
		t.Skip("coverage instrumentation allocates")
	}
	s := mustShuffle(t, conformance.ZonedNodes(100, 5))
	buf := make([]chash.Node, 0, 5)
	assert.Zero(t, testing.AllocsPerRun(1000, func() { buf = s.AppendSubset(buf[:0], "tenant-7", 5) }))
}

func BenchmarkShuffleSubset(b *testing.B) {
	s, err := chash.NewShuffle(conformance.ZonedNodes(100, 5))
	require.NoError(b, err)
	ts := tenants(1024)
	buf := make([]chash.Node, 0, 5)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		buf = s.AppendSubset(buf[:0], ts[i&1023], 5)
	}
}

// Each tenant gets five of the nine nodes, in all three zones; a noisy
// tenant takes down only its own five.
func ExampleShuffle() {
	var nodes []chash.Node
	for _, zone := range []string{"a", "b", "c"} {
		for i := 1; i <= 3; i++ {
			nodes = append(nodes, chash.Node{ID: fmt.Sprintf("%s%d", zone, i), Zone: zone})
		}
	}
	s, err := chash.NewShuffle(nodes)
	if err != nil {
		panic(err)
	}
	for _, tenant := range []string{"acme", "globex"} {
		fmt.Print(tenant, ":")
		for _, n := range s.Subset(tenant, 5) {
			fmt.Print(" ", n.ID)
		}
		fmt.Println()
	}
	// Output:
	// acme: a2 c3 b3 c1 a1
	// globex: a1 b2 c3 a3 a2
}
