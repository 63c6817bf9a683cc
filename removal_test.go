package chash_test

import (
	"bufio"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/chashtest"
	"github.com/keyplace/chash/internal/conformance"
	"github.com/keyplace/chash/internal/measure"
)

// This file tests what Memento, Anchor and Dx share: the placers that can
// lose any member. Each algorithm's own file has its vectors and contract.

// vectorScenario is a scenario of a testdata/*/vectors.tsv file: the
// fields of its "scenario" line after the name, its operations, and its
// rows.
type vectorScenario struct {
	name   string
	fields []string
	ops    []vectorOp
	rows   [][]string
}

// vectorOp is an operation of a scenario: remove bucket b, or an addition
// that returned b.
type vectorOp struct {
	add bool
	b   int
}

// readScenarios reads a vectors file written by a generator under
// testdata/*/gen: "scenario" lines, whose field opsField holds the
// operations, each followed by its rows.
func readScenarios(t *testing.T, path string, opsField int) []*vectorScenario {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var out []*vectorScenario
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		fields := strings.Split(sc.Text(), "\t")
		if fields[0] == "scenario" {
			s := &vectorScenario{name: fields[1], fields: fields[2:]}
			s.ops = parseVectorOps(t, fields[2+opsField])
			out = append(out, s)
			continue
		}
		require.NotEmpty(t, out, "%s: a row before the first scenario", path)
		s := out[len(out)-1]
		require.Equal(t, s.name, fields[0], "%s: row of another scenario", path)
		s.rows = append(s.rows, fields[1:])
	}
	require.NoError(t, sc.Err())
	return out
}

func parseVectorOps(t *testing.T, s string) []vectorOp {
	if s == "-" {
		return nil
	}
	var ops []vectorOp
	for _, f := range strings.Split(s, ",") {
		b, err := strconv.Atoi(f[1:])
		require.NoError(t, err, f)
		ops = append(ops, vectorOp{add: f[0] == 'a', b: b})
	}
	return ops
}

// sampleName parses a scenario name of the shared samples, such as
// "a16w10-rm3-rm0..2-add": its numbers, then its operations (-1 for an
// addition).
var sampleNameRE = regexp.MustCompile(`^[a-zA-Z](\d+)(?:[wW](\d+))?((?:-rm\d+(?:\.\.\d+)?|-add)*)$`)

func sampleName(t *testing.T, name string) (n, w int, ops []int) {
	t.Helper()
	m := sampleNameRE.FindStringSubmatch(name)
	require.NotNil(t, m, "sample scenario %q", name)
	n, _ = strconv.Atoi(m[1])
	w = n
	if m[2] != "" {
		w, _ = strconv.Atoi(m[2])
	}
	for _, tok := range strings.Split(m[3], "-")[1:] {
		if tok == "add" {
			ops = append(ops, -1)
			continue
		}
		lo, hi, isRange := strings.Cut(strings.TrimPrefix(tok, "rm"), "..")
		a, _ := strconv.Atoi(lo)
		b := a
		if isRange {
			b, _ = strconv.Atoi(hi)
		}
		for i := a; i <= b; i++ {
			ops = append(ops, i)
		}
	}
	return n, w, ops
}

// readSample reads the lines of a shared sample that start with kind.
func readSample(t *testing.T, path, kind string) [][]string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var out [][]string
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == kind {
			out = append(out, f[1:])
		}
	}
	require.NotEmpty(t, out, "%s has no %q lines", path, kind)
	return out
}

// removable is what the tests below need of the placers that can lose
// any member (Memento, Anchor, Dx, JumpBackAnchor and ChooseK): the
// placer, with its Remove and Add.
type removable struct {
	chash.Placer
	remove func(ids ...string) (removable, error)
	add    func(nodes ...chash.Node) (removable, error)
}

// Fingerprint and Derive read through to the placer.
func (p removable) Fingerprint() string { return chash.Fingerprint(p.Placer) }

func (p removable) Derive(nodes []chash.Node) (chash.Placer, error) {
	return chash.Derive(p.Placer, nodes)
}

// removableOf adapts a placer to removable.
func removableOf[P interface {
	chash.Placer
	Remove(ids ...string) (P, error)
	Add(nodes ...chash.Node) (P, error)
}](p P) removable {
	return removable{
		Placer: p,
		remove: func(ids ...string) (removable, error) { return adapted(p.Remove(ids...)) },
		add:    func(nodes ...chash.Node) (removable, error) { return adapted(p.Add(nodes...)) },
	}
}

func adapted[P interface {
	chash.Placer
	Remove(ids ...string) (P, error)
	Add(nodes ...chash.Node) (P, error)
}](p P, err error) (removable, error) {
	if err != nil {
		return removable{}, err
	}
	return removableOf(p), nil
}

// removables builds each placer that can lose any member over nodes, by
// algorithm name.
func removables(t *testing.T, nodes []chash.Node) map[string]removable {
	t.Helper()
	out := map[string]removable{}
	for _, a := range chash.Algorithms() {
		if !a.Stateful() {
			continue
		}
		p, err := chash.New(a, nodes)
		require.NoError(t, err)
		switch q := p.(type) {
		case *chash.Memento:
			out[a.String()] = removableOf(q)
		case *chash.Anchor:
			out[a.String()] = removableOf(q)
		case *chash.Dx:
			out[a.String()] = removableOf(q)
		case *chash.JumpBackAnchor:
			out[a.String()] = removableOf(q)
		case *chash.ChooseK:
			out[a.String()] = removableOf(q)
		default:
			t.Fatalf("%v is stateful and not one of the five", a)
		}
	}
	require.Len(t, out, 5)
	return out
}

// randomIDs returns the IDs of count nodes of nodes chosen by r, in the
// order chosen.
func randomIDs(nodes []chash.Node, count int, r *rand.Rand) []string {
	ids := measure.IDs(nodes)
	r.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	return ids[:count]
}

// TestRemoveMiddleMovesOnlyItsKeys removes a member in the middle, from a
// fresh placer and from one that already lost 30 members at random: the
// keys of that member move, and no other key does. Adding it back, to the
// fresh placer, restores the placement where the engine gives the new
// member the bucket vacated last (all but Dx, which gives the first free
// place of a fixed sequence).
func TestRemoveMiddleMovesOnlyItsKeys(t *testing.T) {
	nodes := chashtest.Nodes(100)
	keys := chashtest.Keys(20_000)
	r := rand.New(rand.NewPCG(1, 2))
	for name, p := range removables(t, nodes) {
		for _, before := range []int{0, 30} {
			q, err := p.remove(randomIDs(nodes[51:], before, r)...)
			require.NoError(t, err)
			gone := nodes[50].ID
			after, err := q.remove(gone)
			require.NoError(t, err)
			a, b := measure.Owners(q, keys), measure.Owners(after, keys)
			moved := 0
			for i := range a {
				switch {
				case a[i] == gone:
					moved++
					assert.NotEqual(t, gone, b[i], "%s: key %q stays on the removed node", name, keys[i])
				case a[i] != b[i]:
					t.Fatalf("%s, %d removed before: key %q moved from %s to %s", name, before, keys[i], a[i], b[i])
				}
			}
			assert.InDelta(t, 1/float64(q.Len()), float64(moved)/float64(len(keys)), 0.5/float64(q.Len()), "%s: share of the removed node", name)
			if before == 0 && name != "dx" {
				back, err := after.add(nodes[50])
				require.NoError(t, err)
				assert.Equal(t, a, measure.Owners(back, keys), "%s: adding the removed member back", name)
				assert.Equal(t, chash.Fingerprint(q), chash.Fingerprint(back), name)
			}
		}
	}
}

// TestHistoryIndependent removes the same members in random orders, one
// at a time and all at once, and through Derive, from the placers whose
// algorithm is not history-dependent (Dx and ChooseK): every result gives
// the same top-3 lists and has the same fingerprint. (Memento's, Anchor's
// and JumpBackAnchor's placements depend on the order by design: see
// TestRemovableFingerprint.)
func TestHistoryIndependent(t *testing.T) {
	nodes := chashtest.Nodes(200)
	keys := chashtest.Keys(3_000)
	if testing.Short() || raceEnabled {
		keys = keys[:300]
	}
	r := rand.New(rand.NewPCG(3, 4))
	for name, p := range removables(t, nodes) {
		a, err := chash.ParseAlgorithm(name)
		require.NoError(t, err)
		if a.HistoryDependent() {
			continue
		}
		for _, k := range []int{1, 50, 150, 199} {
			gone := randomIDs(nodes, k, r)
			var want []string
			var wantFP string
			for trial := range 6 {
				order := slices.Clone(gone)
				r.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
				var q chash.Placer
				switch trial % 3 {
				case 0: // one at a time
					d := p
					for _, id := range order {
						d, err = d.remove(id)
						require.NoError(t, err)
					}
					q = d
				case 1: // all at once
					q, err = p.remove(order...)
					require.NoError(t, err)
				case 2: // Derive from the set that remains, in a shuffled order
					rest := slices.DeleteFunc(slices.Clone(nodes), func(n chash.Node) bool { return slices.Contains(gone, n.ID) })
					r.Shuffle(len(rest), func(i, j int) { rest[i], rest[j] = rest[j], rest[i] })
					q, err = chash.Derive(p, rest)
					require.NoError(t, err)
				}
				var got []string
				buf := make([]chash.Node, 0, 3)
				for _, key := range keys {
					buf = q.AppendTopKString(buf[:0], key, 3)
					got = append(got, strings.Join(measure.IDs(buf), ","))
				}
				if want == nil {
					want, wantFP = got, chash.Fingerprint(q)
					continue
				}
				require.Equal(t, want, got, "%s, %d removed: trial %d places keys differently", name, k, trial)
				require.Equal(t, wantFP, chash.Fingerprint(q), "%s, %d removed: trial %d", name, k, trial)
			}
		}
	}
}

// TestRemovedBalance measures the load of 100 members after 0, 10, 50 and
// 90% of them are removed at random: each working member's share stays
// within sampling noise of 1/n.
func TestRemovedBalance(t *testing.T) {
	nodes := chashtest.Nodes(100)
	numKeys := 200_000
	if testing.Short() || raceEnabled {
		numKeys = 20_000
	}
	keys := chashtest.Keys(numKeys)
	for name, p := range removables(t, nodes) {
		for _, pct := range []int{0, 10, 50, 90} {
			r := rand.New(rand.NewPCG(uint64(pct), 5))
			q, err := p.remove(randomIDs(nodes, pct, r)...)
			require.NoError(t, err)
			cv, peak := measure.Stats(measure.Load(measure.Owners(q, keys), measure.IDs(q.Nodes())))
			// One member's relative sd is about √(n/keys).
			sd := math.Sqrt(float64(q.Len()) / float64(numKeys))
			t.Logf("%s, %d%% removed: %d members, CV %.4f, peak/mean %.4f (sd of one %.4f)", name, pct, q.Len(), cv, peak, sd)
			assert.Less(t, cv, 1.3*sd+0.01, "%s, %d%% removed: CV", name, pct)
			assert.Less(t, peak, 1+4.5*sd+0.01, "%s, %d%% removed: peak/mean", name, pct)
		}
	}
}

// TestAlmostAllRemoved removes all members but one, and all but two, in
// random order: every lookup and top-k ends, on a member, without
// blowing up (Dx's reference gives up on about 1.8% of keys with one
// member left; Dx then scans for it).
func TestAlmostAllRemoved(t *testing.T) {
	// ChooseK's lookups cost O((n/w) log(n/w)) SipHash evaluations for w
	// of n slots working, milliseconds here: -short and the race detector
	// take fewer.
	nodes, keys := chashtest.Nodes(1000), chashtest.Keys(300)
	if testing.Short() || raceEnabled {
		nodes, keys = chashtest.Nodes(200), keys[:50]
	}
	for name, p := range removables(t, nodes) {
		for _, left := range []int{1, 2} {
			r := rand.New(rand.NewPCG(7, uint64(left)))
			gone := randomIDs(nodes, len(nodes)-left, r)
			q, err := p.remove(gone...)
			require.NoError(t, err)
			require.Equal(t, left, q.Len())
			_, err = q.remove(q.Nodes()[0].ID, q.Nodes()[len(q.Nodes())-1].ID)
			require.ErrorIs(t, err, chash.ErrNoNodes, "%s: removing every member", name)
			members := measure.IDs(q.Nodes())
			buf := make([]chash.Node, 0, 3)
			for _, k := range keys {
				got := q.LookupString(k).ID
				require.Contains(t, members, got, "%s with %d left: key %q", name, left, k)
				buf = q.AppendTopKString(buf[:0], k, 3)
				require.Len(t, buf, left)
				require.Equal(t, got, buf[0].ID)
			}
		}
	}
}

// TestRemovableErrors checks the membership errors the three share.
func TestRemovableErrors(t *testing.T) {
	nodes := chashtest.Nodes(5)
	for name, p := range removables(t, nodes) {
		_, err := p.remove("nope")
		assert.ErrorIs(t, err, chash.ErrUnknownNode, name)
		_, err = p.remove("node-1", "node-1")
		assert.ErrorIs(t, err, chash.ErrUnknownNode, "%s: the same ID twice", name)
		_, err = p.remove(measure.IDs(nodes)...)
		assert.ErrorIs(t, err, chash.ErrNoNodes, name)
		_, err = chash.Derive(p, nil)
		assert.ErrorIs(t, err, chash.ErrNoNodes, name)
		_, err = chash.Derive(p, append(chashtest.Nodes(2), chash.Node{ID: "x", Weight: 2}))
		assert.ErrorIs(t, err, chash.ErrInvalidWeight, name)
		_, err = chash.Derive(p, []chash.Node{{ID: "x", Weight: 3}})
		assert.ErrorIs(t, err, chash.ErrInvalidWeight, "%s: a new weight for every member", name)
		// A failed change leaves p as it was.
		assert.Equal(t, 5, p.Len(), name)
	}
}

// TestRemovableDerive checks Derive's rules: members keep their buckets,
// joining nodes take the buckets of leaving ones in ascending ID order,
// and the result does not depend on the order of the list.
func TestRemovableDerive(t *testing.T) {
	nodes := chashtest.Nodes(10)
	keys := chashtest.Keys(5_000)
	for name, p := range removables(t, nodes) {
		next := slices.Clone(nodes)
		next[2], next[6] = chash.Node{ID: "zz"}, chash.Node{ID: "aa"}
		q, err := chash.Derive(p, next)
		require.NoError(t, err)
		want := []string{"node-0", "node-1", "aa", "node-3", "node-4", "node-5", "zz", "node-7", "node-8", "node-9"}
		assert.Equal(t, want, measure.IDs(q.Nodes()), "%s: joining nodes replace leaving ones", name)
		before, after := measure.Owners(p, keys), measure.Owners(q, keys)
		for i := range before {
			if before[i] != "node-2" && before[i] != "node-6" {
				require.Equal(t, before[i], after[i], "%s: key %q moved between staying members", name, keys[i])
			}
		}
		slices.Reverse(next)
		r, err := chash.Derive(p, next)
		require.NoError(t, err)
		assert.Equal(t, chash.Fingerprint(q), chash.Fingerprint(r), "%s: Derive depends on the order of the list", name)
		// Leaving without joining, then joining: the joiners fill the
		// vacated buckets.
		fewer, err := chash.Derive(p, nodes[:7])
		require.NoError(t, err)
		assert.Equal(t, 7, fewer.Len())
		more, err := chash.Derive(fewer, append(slices.Clone(nodes[:7]), chash.Node{ID: "new"}))
		require.NoError(t, err)
		assert.Equal(t, 8, more.Len())
		assert.Contains(t, measure.IDs(more.Nodes()), "new")
	}
}

// TestRemovableFingerprint checks that the fingerprint covers the state:
// the same members after removals in different orders have different
// fingerprints exactly when they place keys differently.
func TestRemovableFingerprint(t *testing.T) {
	nodes := chashtest.Nodes(12)
	keys := chashtest.Keys(3_000)
	for name, p := range removables(t, nodes) {
		a, err := p.remove("node-3", "node-7")
		require.NoError(t, err)
		b, err := p.remove("node-7", "node-3")
		require.NoError(t, err)
		same := slices.Equal(measure.Owners(a, keys), measure.Owners(b, keys))
		assert.Equal(t, same, chash.Fingerprint(a) == chash.Fingerprint(b), "%s: fingerprints and placements disagree", name)
		alg, err := chash.ParseAlgorithm(name)
		require.NoError(t, err)
		assert.Equal(t, !alg.HistoryDependent(), same, "%s: only Dx and ChooseK forget the order of removals", name)
		assert.True(t, strings.HasPrefix(chash.Fingerprint(a), name+"-"), chash.Fingerprint(a))
	}
}

// TestEngineTextErrors feeds each engine's UnmarshalText malformed and
// unreachable states: each fails with ErrInvalidState (or ErrTooLarge)
// and leaves the engine unchanged.
func TestEngineTextErrors(t *testing.T) {
	type textEngine interface {
		MarshalText() ([]byte, error)
		UnmarshalText([]byte) error
	}
	m, _ := chash.NewMementoEngine(10)
	a, _ := chash.NewAnchorEngine(10, 8)
	d, _ := chash.NewDxEngine(16, 10)
	for name, c := range map[string]struct {
		e   textEngine
		bad []string
	}{
		"memento": {&m, []string{"", "memento", "memento:", "memento:x/", "anchor:10/", "memento:10/10", "memento:10/3,3",
			"memento:10/9", "memento:10/0-9", "memento:3/1,0,2", "memento:10/-1", "memento:10/1-", "memento:99999999999/",
			"memento:2147483647/0-2147483646"}},
		"anchor": {&a, []string{"anchor:10/10", "anchor:10/0-9", "anchor:10/1,1", "anchor:16777217/", "anchor:10/a", "dx:10/"}},
		"dx":     {&d, []string{"dx:16/16", "dx:16/0-15", "dx:16/2,2", "dx:16777217/", "dx:4/,", "dx:4/1-2-3"}},
	} {
		before, err := c.e.MarshalText()
		require.NoError(t, err)
		for _, s := range c.bad {
			err := c.e.UnmarshalText([]byte(s))
			require.Error(t, err, "%s: %q", name, s)
			assert.True(t, errors.Is(err, chash.ErrInvalidState) || errors.Is(err, chash.ErrTooLarge), "%s: %q: %v", name, s, err)
			after, _ := c.e.MarshalText()
			require.Equal(t, string(before), string(after), "%s: a failed UnmarshalText changed the engine", name)
		}
	}
}

// BenchmarkRemovable measures LookupString with 13-byte keys for the
// placers of this family (memento, anchor, dx and binomial) and their
// peers, at 10³ and 10⁶ nodes, with none and 10% of the nodes removed at
// random (binomial, jump and jumpback remove only the last ones: 0% only).
// The machine this runs on is shared, so each placer's lookups alternate,
// 1,024 keys at a time, with the bare xxhash of the same keys and with
// JumpBack's lookups at the same count: "ns/lookup" is the placer's own
// time, "x-hash" and "x-jumpback" its time over theirs in the same
// stretches (ns/op counts all three). Anchor's capacity is the node count.
func BenchmarkRemovable(b *testing.B) {
	_, ss := conformance.BenchKeys(13)
	for _, n := range []int{1000, 1_000_000} {
		nodes := chashtest.Nodes(n)
		gone := randomIDs(nodes, n/10, rand.New(rand.NewPCG(9, 9)))
		jb := benchRemovable(b, "jumpback", nodes, gone, 0)
		peers := []benchPeer{
			{"hash", func(k string) int { return int(xxhash.Sum64String(k)) }},
			{"jumpback", func(k string) int { return len(jb.LookupString(k).ID) }},
		}
		for _, name := range []string{"jumpback", "jump", "binomial", "memento", "anchor", "dx"} {
			for _, pct := range []int{0, 10} {
				p := benchRemovable(b, name, nodes, gone, pct)
				if p == nil {
					continue
				}
				b.Run(fmt.Sprintf("%s/nodes=%d/removed=%d%%", name, n, pct), func(b *testing.B) {
					benchInterleaved(b, ss, func(k string) int { return len(p.LookupString(k).ID) }, peers)
				})
			}
		}
	}
}

// benchPeer is a function a benchmark compares with.
type benchPeer struct {
	name string
	f    func(string) int
}

// benchInterleaved calls f on b.N keys of ss, 256 at a time, each batch
// followed by the same batch through each peer, and reports the median
// over batches of f's time per call ("ns/lookup") and of its time over
// each peer's ("x-" and the peer's name). Alternating short batches, and
// taking medians, keeps a shared machine's changing load out of the
// figures: a batch another process interrupts is an outlier.
func benchInterleaved(b *testing.B, ss []string, f func(string) int, peers []benchPeer) {
	const batch = 256
	b.ReportAllocs()
	mask := len(ss) - 1
	batches := (b.N + batch - 1) / batch
	own := make([]float64, 0, batches)
	ratios := make([][]float64, len(peers))
	for j := range ratios {
		ratios[j] = make([]float64, 0, batches)
	}
	acc := 0
	for done := 0; done < b.N; done += batch {
		end := min(done+batch, b.N)
		t := time.Now()
		for i := done; i < end; i++ {
			acc += f(ss[i&mask])
		}
		d := float64(time.Since(t))
		own = append(own, d/float64(end-done))
		for j, p := range peers {
			t = time.Now()
			for i := done; i < end; i++ {
				acc += p.f(ss[i&mask])
			}
			ratios[j] = append(ratios[j], d/max(1, float64(time.Since(t))))
		}
	}
	sink += uint64(acc)
	b.ReportMetric(median(own), "ns/lookup")
	for j, p := range peers {
		b.ReportMetric(median(ratios[j]), "x-"+p.name)
	}
}

func median(v []float64) float64 {
	slices.Sort(v)
	return v[len(v)/2]
}

// benchRemovable builds placer name over nodes with pct% of them (gone)
// removed, or returns nil where the algorithm cannot remove them.
func benchRemovable(b *testing.B, name string, nodes []chash.Node, gone []string, pct int) chash.Placer {
	b.Helper()
	var p chash.Placer
	var err error
	switch name {
	case "jumpback":
		p, err = conformance.AsPlacer(chash.NewJumpBack(nodes))
	case "jump":
		p, err = conformance.AsPlacer(chash.NewJump(nodes))
	case "binomial":
		p, err = conformance.AsPlacer(chash.NewBinomial(nodes))
	case "memento":
		p, err = conformance.AsPlacer(chash.NewMemento(nodes))
	case "anchor":
		p, err = conformance.AsPlacer(chash.NewAnchor(nodes))
	case "dx":
		p, err = conformance.AsPlacer(chash.NewDx(nodes))
	}
	if err != nil {
		b.Fatal(err)
	}
	if pct == 0 {
		return p
	}
	out := make(map[string]bool, len(gone))
	for _, id := range gone {
		out[id] = true
	}
	q, err := chash.Derive(p, slices.DeleteFunc(slices.Clone(nodes), func(n chash.Node) bool { return out[n.ID] }))
	if errors.Is(err, chash.ErrNotLast) {
		return nil
	}
	if err != nil {
		b.Fatal(err)
	}
	return q
}

// BenchmarkEngines measures the engine functions alone on the hash of
// 13-byte keys (hash, then bucket, with no node list to read) at 10³ and
// 10⁶ buckets, with none removed and, for the engines that can, 10%
// removed at random. As in BenchmarkRemovable, each alternates with the
// bare hash and with JumpBackHash at the same count and reports its time
// over theirs. MementoEngine hashes the key itself (XXH64, as its
// reference does); the others take the hash.
func BenchmarkEngines(b *testing.B) {
	_, ss := conformance.BenchKeys(13)
	for _, n := range []int{1000, 1_000_000} {
		peers := []benchPeer{
			{"hash", func(k string) int { return int(xxhash.Sum64String(k)) }},
			{"jumpback", func(k string) int { return chash.JumpBackHash(xxhash.Sum64String(k), n) }},
		}
		bench := func(name string, f func(string) int) {
			b.Run(name, func(b *testing.B) { benchInterleaved(b, ss, f, peers) })
		}
		bench(fmt.Sprintf("jumpback/buckets=%d", n), peers[1].f)
		bench(fmt.Sprintf("jump/buckets=%d", n), func(k string) int { return chash.JumpHash(xxhash.Sum64String(k), n) })
		bench(fmt.Sprintf("binomial/buckets=%d", n), func(k string) int { return chash.BinomialHash(xxhash.Sum64String(k), n) })
		r := rand.New(rand.NewPCG(9, uint64(n)))
		gone := r.Perm(n)[:n/10]
		for _, pct := range []int{0, 10} {
			m, _ := chash.NewMementoEngine(n)
			a, _ := chash.NewAnchorEngine(n, n)
			d, _ := chash.NewDxEngine(n, n)
			if pct > 0 {
				for _, g := range gone {
					if m.Remove(g) != nil || a.Remove(g) != nil || d.Remove(g) != nil {
						b.Fatal("remove")
					}
				}
			}
			suffix := fmt.Sprintf("/buckets=%d/removed=%d%%", n, pct)
			bench("memento"+suffix, m.BucketString)
			bench("anchor"+suffix, func(k string) int { return a.Bucket(xxhash.Sum64String(k), 0) })
			bench("dx"+suffix, func(k string) int { return d.Bucket(xxhash.Sum64String(k)) })
		}
	}
}
