package chashtest

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/internal/measure"
)

// toy is a placer for the suite's own tests: highest random weight over
// nodes sorted by ID, scores mixed from a seed. Its modes break it in one
// way each, for the suite to catch.
type toy struct {
	nodes []chash.Node
	ids   []uint64
	mode  mode
}

type mode int

const (
	good      mode = iota
	overwrite      // AppendTopK appends to dst[:0]
	readsDst       // AppendTopK skips nodes anywhere in dst, not only its own
	allocates      // Lookup allocates
	ignores        // New ignores the last node given (a stuck placer)
)

func newToy(nodes []chash.Node, seed uint64, m mode) (*toy, error) {
	ns, err := chash.CheckNodes(nodes)
	if err != nil {
		return nil, err
	}
	for _, n := range ns {
		if n.Weight != 1 {
			return nil, fmt.Errorf("%w: toy has no weights", chash.ErrInvalidWeight)
		}
	}
	if m == ignores && len(ns) > 1 {
		ns = ns[:len(ns)-1]
	}
	slices.SortFunc(ns, func(a, b chash.Node) int { return strings.Compare(a.ID, b.ID) })
	p := &toy{nodes: ns, mode: m}
	for _, n := range ns {
		p.ids = append(p.ids, mix(hash(n.ID)+seed))
	}
	return p, nil
}

func hash[K string | []byte](key K) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(key); i++ {
		h = (h ^ uint64(key[i])) * 1099511628211
	}
	return mix(h)
}

func mix(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

var sink []byte

func (p *toy) Lookup(key []byte) chash.Node {
	if p != nil && p.mode == allocates {
		sink = append([]byte(nil), key...)
	}
	return p.lookup(hash(key))
}

func (p *toy) LookupString(key string) chash.Node { return p.lookup(hash(key)) }

func (p *toy) lookup(h uint64) chash.Node {
	if p.Len() == 0 {
		return chash.Node{}
	}
	best := 0
	for i := range p.ids {
		if mix(h^p.ids[i]) > mix(h^p.ids[best]) {
			best = i
		}
	}
	return p.nodes[best]
}

func (p *toy) AppendTopK(dst []chash.Node, key []byte, k int) []chash.Node {
	return p.appendTopK(dst, hash(key), k)
}

func (p *toy) AppendTopKString(dst []chash.Node, key string, k int) []chash.Node {
	return p.appendTopK(dst, hash(key), k)
}

func (p *toy) appendTopK(dst []chash.Node, h uint64, k int) []chash.Node {
	k = clampK(k, p.Len())
	if k > 0 && p.mode == overwrite {
		dst = dst[:0]
	}
	start := len(dst)
	if p.Len() > 0 && p.mode == readsDst {
		start = 0
	}
	for n := 0; n < k; n++ {
		best := -1
		for i := range p.ids {
			if slices.ContainsFunc(dst[start:], func(m chash.Node) bool { return m.ID == p.nodes[i].ID }) {
				continue
			}
			if best < 0 || mix(h^p.ids[i]) > mix(h^p.ids[best]) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		dst = append(dst, p.nodes[best])
	}
	return dst
}

func (p *toy) Nodes() []chash.Node {
	if p == nil {
		return nil
	}
	return slices.Clone(p.nodes)
}

func (p *toy) Len() int {
	if p == nil {
		return 0
	}
	return len(p.nodes)
}

// toySpec is the contract of a toy in mode m.
func toySpec(m mode) Spec {
	return Spec{
		New: func(nodes []chash.Node) (chash.Placer, error) {
			p, err := newToy(nodes, 0, m)
			if err != nil {
				return nil, err
			}
			return p, nil
		},
		Zero:  &toy{},
		MaxCV: 0.02, MaxPeak: 1.05, ShareTol: 0.05,
		Variants: []func() (chash.Placer, error){
			func() (chash.Placer, error) { return newToy(Nodes(10), 7, m) },
		},
	}
}

// The toy keeps the whole contract.
func TestContractToy(t *testing.T) { TestPlacer(t, toySpec(good)) }

// recorder is a testing.TB that records failures instead of failing the
// test, so that a case can be run on a broken placer and seen to fail.
type recorder struct {
	testing.TB
	failed bool
	log    []string
}

// stop ends a case at its Fatal or Skip.
type stop struct{}

func (r *recorder) Helper()             {}
func (r *recorder) Log(...any)          {}
func (r *recorder) Logf(string, ...any) {}
func (r *recorder) Fail()               { r.failed = true }
func (r *recorder) Failed() bool        { return r.failed }
func (r *recorder) FailNow()            { r.failed = true; panic(stop{}) }
func (r *recorder) Error(a ...any)      { r.failed = true; r.log = append(r.log, fmt.Sprint(a...)) }
func (r *recorder) Errorf(f string, a ...any) {
	r.failed = true
	r.log = append(r.log, fmt.Sprintf(f, a...))
}
func (r *recorder) Fatal(a ...any)            { r.Error(a...); panic(stop{}) }
func (r *recorder) Fatalf(f string, a ...any) { r.Errorf(f, a...); panic(stop{}) }
func (r *recorder) Skip(...any)               { panic(stop{}) }
func (r *recorder) Skipf(string, ...any)      { panic(stop{}) }
func (r *recorder) SkipNow()                  { panic(stop{}) }

// runCase runs the named case of the contract on s with a recorder.
func runCase(t *testing.T, name string, s Spec) *recorder {
	t.Helper()
	r := &recorder{TB: t}
	i := slices.IndexFunc(cases, func(c struct {
		name string
		run  func(testing.TB, *suite)
	}) bool {
		return c.name == name
	})
	if i < 0 {
		t.Fatalf("no case %q", name)
	}
	func() {
		defer func() {
			if v := recover(); v != nil {
				if _, ok := v.(stop); !ok {
					panic(v)
				}
			}
		}()
		cases[i].run(r, newSuite(s))
	}()
	return r
}

// mustFail runs a case on a broken placer and fails unless the case
// failed, and unless one of its messages contains want.
func mustFail(t *testing.T, name string, s Spec, want string) {
	t.Helper()
	failedWith(t, name, runCase(t, name, s), want)
}

// failedWith fails unless the case run with r failed with a message that
// contains want.
func failedWith(t *testing.T, name string, r *recorder, want string) {
	t.Helper()
	if !r.failed {
		t.Fatalf("case %s passed what it should have failed", name)
	}
	for _, m := range r.log {
		if strings.Contains(m, want) {
			t.Logf("%s failed as it should: %s", name, m)
			return
		}
	}
	t.Errorf("case %s failed, but no message contains %q: %q", name, want, r.log)
}

func TestCatchesOverwrittenDst(t *testing.T) {
	mustFail(t, "AppendToDst", toySpec(overwrite), "appending to")
	mustFail(t, "TopK", toySpec(overwrite), "appending to")
}

func TestCatchesReadDst(t *testing.T) {
	mustFail(t, "AppendToDst", toySpec(readsDst), "appending to")
}

func TestCatchesAllocations(t *testing.T) {
	if raceEnabled || testing.CoverMode() != "" {
		t.Skip("allocations are not counted under the race detector or coverage")
	}
	mustFail(t, "Allocs", toySpec(allocates), "Lookup: 1 allocations per call")
}

func TestCatchesStuckPlacer(t *testing.T) {
	mustFail(t, "Add", toySpec(ignores), "moved to or from the node")
}

// unguarded is a placer whose nil pointer panics: it reads its fields
// without checking the receiver.
type unguarded struct{ toy }

func (u *unguarded) Len() int            { return len(u.nodes) }
func (u *unguarded) Nodes() []chash.Node { return slices.Clone(u.nodes) }

func TestCatchesNilPanic(t *testing.T) {
	s := toySpec(good)
	s.Zero = &unguarded{}
	mustFail(t, "Empty", s, "nil pointer *chashtest.unguarded: Len panicked")
	// The zero value alone is fine.
	r := runCase(t, "Empty", Spec{New: s.New, Zero: &unguarded{}, NilPanics: []string{"Len", "Nodes", "Lookup", "LookupString", "AppendTopK", "AppendTopKString"}})
	for _, m := range r.log {
		if strings.Contains(m, "zero value") {
			t.Errorf("zero value: %s", m)
		}
	}
}

// liar is a toy whose own Fingerprint leaves out its seed.
type liar struct{ *toy }

func (l liar) Fingerprint() string {
	if l.toy == nil || l.Len() == 0 {
		return chash.FingerprintNone
	}
	return "liar-" + strings.Join(measure.IDs(l.nodes), ",")
}

func TestCatchesFingerprintLie(t *testing.T) {
	s := toySpec(good)
	s.New = func(nodes []chash.Node) (chash.Placer, error) {
		p, err := newToy(nodes, 0, good)
		return liar{p}, err
	}
	s.Zero = liar{}
	s.Variants = []func() (chash.Placer, error){
		func() (chash.Placer, error) { p, err := newToy(Nodes(10), 7, good); return liar{p}, err },
	}
	mustFail(t, "Fingerprint", s, "share the fingerprint")
}

// A placer whose constructor accepts bad input fails BadInput.
func TestCatchesBadInput(t *testing.T) {
	s := toySpec(good)
	s.New = func(nodes []chash.Node) (chash.Placer, error) {
		return &toy{nodes: nodes, ids: make([]uint64, len(nodes))}, nil
	}
	mustFail(t, "BadInput", s, "want chash: no nodes")
}

// checkShare fails when the node added or removed takes or gives up far
// from its share, and passes at its share; 2·MaxCV widens ShareTol.
func TestCheckShare(t *testing.T) {
	ketama := &suite{Spec: Spec{MaxCV: 0.12, ShareTol: 0.3, Collateral: 0.08}}
	for _, c := range []struct {
		s       *suite
		changed float64
		ok      bool
	}{
		{ketama, 0.1, true},
		{ketama, 0.125, true},
		{ketama, 0.2, false},
		{ketama, 0.05, false},
		{ketama, 0, false},
		{&suite{Spec: Spec{ShareTol: 0.05, MaxCV: 0.02}}, 0.108, false},
		{&suite{Spec: Spec{ShareTol: 0.05, MaxCV: 0.05}}, 0.108, true},
	} {
		if err := checkShare(c.s, "remove", c.changed, 10); (err == nil) != c.ok {
			t.Errorf("ShareTol %v, MaxCV %v, moved %v: error %v", c.s.ShareTol, c.s.MaxCV, c.changed, err)
		}
	}
}

// In -short mode the bounds widen, and never narrow.
func TestWiden(t *testing.T) {
	s := Spec{MaxCV: 0.02, MaxPeak: 1.05, ShareTol: 0.05, Collateral: 0.008, Spread: 1.5, WeightTVD: 0.03}
	w := s
	widen(&w, shortKeys)
	for _, b := range [][2]float64{{s.MaxCV, w.MaxCV}, {s.MaxPeak, w.MaxPeak}, {s.ShareTol, w.ShareTol}, {s.Collateral, w.Collateral}, {s.Spread, w.Spread}, {s.WeightTVD, w.WeightTVD}} {
		if b[1] < b[0] {
			t.Errorf("bound %v widened to %v", b[0], b[1])
		}
	}
	t.Logf("at %d keys: MaxCV %.4f, MaxPeak %.4f, ShareTol %.4f, Collateral %.5f, Spread %.3f, WeightTVD %.4f",
		shortKeys, w.MaxCV, w.MaxPeak, w.ShareTol, w.Collateral, w.Spread, w.WeightTVD)
	z := Spec{Collateral: 0}
	widen(&z, shortKeys)
	if z.Collateral != 0 {
		t.Errorf("a Collateral of 0 widened to %v", z.Collateral)
	}
}
