package benchmarks

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/keyplace/chash"
)

// The family table (FAMILY.md, written by cmd/family) measures, on one
// machine and in one run, every algorithm published since jump that
// places keys on numbered buckets of equal share: jump and the
// constant-time replacements for it (positional: only the last bucket can
// leave), and those that can lose any member (stateful). No paper
// publishes all of them side by side.

// FamilyAlgorithms are the algorithms of the family table, in its order.
var FamilyAlgorithms = []chash.Algorithm{
	chash.AlgorithmJump, chash.AlgorithmJumpBack, chash.AlgorithmFlip, chash.AlgorithmBinomial,
	chash.AlgorithmAnchor, chash.AlgorithmMemento, chash.AlgorithmDx, chash.AlgorithmJumpBackAnchor,
	chash.AlgorithmChooseK,
}

// FamilyNodeCounts are the fleet sizes of the family table.
var FamilyNodeCounts = []int{1_000, 10_000, 100_000, 1_000_000}

// FamilyRemoved are the percentages of a fleet removed in the family
// table.
var FamilyRemoved = []int{0, 10, 50}

// FamilyPlacer returns algorithm a's placer of n nodes, node-0 to
// node-(n-1), with pct percent of them removed. A stateful algorithm
// (chash.Algorithm.Stateful) loses members drawn at random (a fixed seed),
// all in one Remove, so its engine records them as removed; an anchor's
// capacity is n. A positional one can lose only its last buckets: its
// fleet is the first n - n·pct/100 nodes, which is what removing as many
// members leaves it.
func FamilyPlacer(a chash.Algorithm, n, pct int) (chash.Placer, error) {
	nodes := familyNodes(n)
	gone := n * pct / 100
	if !a.Stateful() {
		return chash.New(a, nodes[:n-gone])
	}
	p, err := chash.New(a, nodes)
	if err != nil || gone == 0 {
		return p, err
	}
	r := rand.New(rand.NewPCG(uint64(n), uint64(pct)))
	ids := NodeIDs(n)
	r.Shuffle(n, func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	return removeMany(p, ids[:gone])
}

// removeMany calls p.Remove(ids...), in the order given, for a placer type
// whose Remove returns its own concrete type.
func removeMany(p chash.Placer, ids []string) (chash.Placer, error) {
	m := reflect.ValueOf(p).MethodByName("Remove")
	if !m.IsValid() {
		return nil, fmt.Errorf("%T: %w", p, errNoRemove)
	}
	out := m.CallSlice([]reflect.Value{reflect.ValueOf(ids)})
	if err, _ := out[1].Interface().(error); err != nil {
		return nil, err
	}
	return out[0].Interface().(chash.Placer), nil
}

// familyNodes returns node-0 to node-(n-1), built once for the last n
// asked, so that a placer's retained memory does not count its IDs.
func familyNodes(n int) []chash.Node {
	familyCache.Lock()
	defer familyCache.Unlock()
	if len(familyCache.nodes) != n {
		ids := NodeIDs(n)
		familyCache.nodes = make([]chash.Node, n)
		for i, id := range ids {
			familyCache.nodes[i] = chash.Node{ID: id}
		}
	}
	return familyCache.nodes
}

var familyCache struct {
	sync.Mutex
	nodes []chash.Node
}

// FamilyRow is one algorithm's line of the family table at one fleet size
// and share removed.
type FamilyRow struct {
	Algorithm  string `json:"algorithm"`
	Nodes      int    `json:"nodes"`       // the fleet before removals
	RemovedPct int    `json:"removed_pct"` // percent of it removed
	Members    int    `json:"members"`     // the members left
	// LookupNs is the median over interleaved rounds of a LookupString's
	// time, 13-byte keys; HashRatio the median over rounds of its quotient
	// by the bare xxhash of the same keys in the same round.
	LookupNs  float64 `json:"lookup_ns"`
	HashRatio float64 `json:"hash_ratio"`
	// Bytes is the heap the placer retains (its node list included: 40
	// bytes a member slot, the IDs' bytes not counted).
	Bytes float64 `json:"bytes"`
	// Moved is the fraction of keys that change member when a member in
	// the middle leaves (positional algorithms: by a rebuild without it,
	// the only way they have), and Collateral the fraction that move
	// between members that stay (ideal 0).
	Moved      float64 `json:"moved"`
	Collateral float64 `json:"collateral"`
	// PeakMean and CV are the busiest member's load over the mean and the
	// coefficient of variation of the members' loads, over BalanceKeys
	// keys; NoiseCV is the CV that sampling alone gives that many keys,
	// sqrt((members-1)/keys), so CV/NoiseCV near 1 is as even as chance.
	PeakMean    float64 `json:"peak_mean"`
	CV          float64 `json:"cv"`
	NoiseCV     float64 `json:"noise_cv"`
	BalanceKeys int     `json:"balance_keys"`
}

// FamilyConfig sets how much a family measurement samples.
type FamilyConfig struct {
	Rounds      int // interleaved rounds of lookups (each a batch of every placer and the hash)
	Batch       int // lookups a timed interval makes
	BalanceKeys int // keys counted for balance
	MoveKeys    int // keys compared for movement
}

// DefaultFamilyConfig is what cmd/family measures with.
var DefaultFamilyConfig = FamilyConfig{Rounds: 60, Batch: 4096, BalanceKeys: 1 << 21, MoveKeys: 1 << 20}

// MeasureFamily measures every family algorithm at n nodes with pct
// percent removed. Lookups are timed in rounds: each round times one
// batch of every placer and of the bare hash, in an order that rotates
// from round to round, so that load from other processes falls on all of
// them alike; the medians of the rounds are reported. progress, if not
// nil, is told what is being measured.
func MeasureFamily(n, pct int, cfg FamilyConfig, progress func(string)) ([]FamilyRow, error) {
	say := func(f string, args ...any) {
		if progress != nil {
			progress(fmt.Sprintf(f, args...))
		}
	}
	rows := make([]FamilyRow, len(FamilyAlgorithms))
	placers := make([]chash.Placer, len(FamilyAlgorithms))
	familyNodes(n) // outside the retained memory
	for i, a := range FamilyAlgorithms {
		say("%v: building %d nodes, %d%% removed", a, n, pct)
		copies := max(1, min(16, 100_000/n))
		p, bytes, err := Retained(copies, func() (chash.Placer, error) { return FamilyPlacer(a, n, pct) })
		if err != nil {
			return nil, fmt.Errorf("%v at %d nodes, %d%% removed: %w", a, n, pct, err)
		}
		placers[i] = p
		rows[i] = FamilyRow{Algorithm: a.String(), Nodes: n, RemovedPct: pct, Members: p.Len(), Bytes: bytes}
	}
	say("lookups at %d nodes, %d%% removed", n, pct)
	ns, ratio := familyLookups(placers, cfg)
	for i := range rows {
		rows[i].LookupNs, rows[i].HashRatio = ns[i], ratio[i]
	}
	for i, a := range FamilyAlgorithms {
		say("%v: movement and balance at %d nodes, %d%% removed", a, n, pct)
		var err error
		if rows[i].Moved, rows[i].Collateral, err = middleLeaves(a, placers[i], cfg.MoveKeys); err != nil {
			return nil, fmt.Errorf("%v at %d nodes: %w", a, n, err)
		}
		rows[i].PeakMean, rows[i].CV = familyBalance(placers[i], cfg.BalanceKeys)
		m := float64(placers[i].Len())
		rows[i].NoiseCV = math.Sqrt((m - 1) / float64(cfg.BalanceKeys))
		rows[i].BalanceKeys = cfg.BalanceKeys
	}
	return rows, nil
}

// familyLookups times LookupString of every placer and the bare hash in
// rotating interleaved rounds and returns, for each placer, the median
// ns a lookup and the median of its quotient by the hash's time in the
// same round.
func familyLookups(placers []chash.Placer, cfg FamilyConfig) (ns, ratio []float64) {
	keys := BenchKeys(13, BenchKeyCount)
	m := len(placers) + 1 // the hash last
	times := make([][]float64, m)
	at := make([]int, m)
	run := func(j int) float64 {
		start, k, sum := time.Now(), at[j], 0
		if j == len(placers) {
			for i := range cfg.Batch {
				sum += int(xxhash.Sum64String(keys.At(k+i)) & 7)
			}
		} else {
			p := placers[j]
			for i := range cfg.Batch {
				sum += len(p.LookupString(keys.At(k + i)).ID)
			}
		}
		runtime.KeepAlive(sum) // the timed work is not optimised away
		at[j] += cfg.Batch
		return float64(time.Since(start).Nanoseconds()) / float64(cfg.Batch)
	}
	for j := range m { // warm the caches and predictors
		run(j)
	}
	quot := make([][]float64, len(placers))
	for r := range cfg.Rounds {
		round := make([]float64, m)
		for o := range m {
			j := (o + r) % m
			round[j] = run(j)
		}
		for j := range m {
			times[j] = append(times[j], round[j])
		}
		for j := range placers {
			quot[j] = append(quot[j], round[j]/round[len(placers)])
		}
	}
	ns, ratio = make([]float64, len(placers)), make([]float64, len(placers))
	for j := range placers {
		ns[j], ratio[j] = median(times[j]), median(quot[j])
	}
	return ns, ratio
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

// middleLeaves removes the member in the middle of p's bucket order, as
// its fleet would (Derive for a stateful algorithm; a rebuild without it,
// in the same order, for a positional one, which cannot lose a member
// that is not last), and returns the fraction of keys that change member
// and the fraction that move between members that stay.
func middleLeaves(a chash.Algorithm, p chash.Placer, keys int) (moved, collateral float64, err error) {
	members := p.Nodes()
	gone := members[len(members)/2].ID
	rest := slices.DeleteFunc(slices.Clone(members), func(n chash.Node) bool { return n.ID == gone })
	var q chash.Placer
	if a.Stateful() {
		q, err = chash.Derive(p, rest)
	} else {
		q, err = chash.New(a, rest)
	}
	if err != nil {
		return 0, 0, err
	}
	var m, c int
	buf := make([]byte, 0, 32)
	for i := range keys {
		buf = strconv.AppendInt(append(buf[:0], "user:"...), int64(i), 10)
		x, y := p.Lookup(buf).ID, q.Lookup(buf).ID
		if x != y {
			m++
			if x != gone {
				c++
			}
		}
	}
	return float64(m) / float64(keys), float64(c) / float64(keys), nil
}

// familyBalance counts keys keys a member and returns the busiest
// member's load over the mean, and the coefficient of variation.
func familyBalance(p chash.Placer, keys int) (peakMean, cv float64) {
	index := map[string]int{}
	for i, n := range p.Nodes() {
		index[n.ID] = i
	}
	counts := make([]int, len(index))
	buf := make([]byte, 0, 32)
	for i := range keys {
		buf = strconv.AppendInt(append(buf[:0], "bal:"...), int64(i), 10)
		counts[index[p.Lookup(buf).ID]]++
	}
	mean := float64(keys) / float64(len(counts))
	var peak, ss float64
	for _, c := range counts {
		peak = max(peak, float64(c))
		ss += (float64(c) - mean) * (float64(c) - mean)
	}
	return peak / mean, math.Sqrt(ss/float64(len(counts))) / mean
}
