package chashtest

import (
	"math"
	"reflect"
	"slices"
	"testing"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/internal/measure"
)

// Key counts of a run: fullKeys normally, shortKeys in -short mode and
// under the race detector.
const (
	fullKeys  = 100_000
	shortKeys = 20_000
)

// suite is one run of the contract: the Spec with its defaults filled in
// and its bounds widened for the key count, and the keys.
type suite struct {
	Spec
	keys []string
	typ  reflect.Type // the placer's type, for its zero value and nil
}

// cases are the contract's cases, in the order TestPlacer runs them. Each
// takes a testing.TB so that the package's own tests can run it with a
// recorder and see it fail.
var cases = []struct {
	name string
	run  func(t testing.TB, s *suite)
}{
	{"BadInput", badInput},
	{"Nodes", nodesOrder},
	{"Determinism", determinism},
	{"Order", orderIndependence},
	{"Balance", balance},
	{"Add", add},
	{"Remove", remove},
	{"Weights", weights},
	{"TopK", topK},
	{"AppendToDst", appendToDst},
	{"TopKSpread", topKSpread},
	{"TopKPrefix", topKPrefix},
	{"WeightVectors", weightVectors},
	{"Derive", derive},
	{"Empty", empty},
	{"NilPlacer", nilPlacer},
	{"Fingerprint", fingerprint},
	{"Allocs", allocs},
	{"Concurrent", concurrent},
	{"Positional", positional},
	{"Views", views},
	{"HugeWeights", hugeWeights},
}

func newSuite(s Spec) *suite {
	if s.Nodes == nil {
		s.Nodes = Nodes
		if s.ZoneAware {
			s.Nodes = zonedNodes
		}
	}
	if s.Keys == nil {
		s.Keys = Keys
	}
	s.KeepsOrder = s.KeepsOrder || s.Ordered
	s.MaxCV = or(s.MaxCV, 0.12)
	s.MaxPeak = or(s.MaxPeak, 1.25)
	s.ShareTol = or(s.ShareTol, 0.3)
	s.Spread = or(s.Spread, 2.5)
	s.WeightTVD = or(s.WeightTVD, 0.03)
	n := fullKeys
	if testing.Short() || raceEnabled {
		n = shortKeys
		widen(&s, n)
	}
	su := &suite{Spec: s, keys: s.Keys(n)}
	if s.Zero != nil {
		su.typ = reflect.TypeOf(s.Zero)
	}
	return su
}

func or(v, def float64) float64 {
	if v == 0 {
		return def
	}
	return v
}

// widen loosens the bounds, calibrated on fullKeys keys, for a run of n:
// each bound b becomes √(b² + (zσ)²), σ the standard deviation of what it
// bounds at n keys, and z enough that a placer meeting b fails about once
// in 10⁴ runs on sampling noise alone.
func widen(s *Spec, n int) {
	keys := float64(n)
	node := math.Sqrt(9 / keys) // relative sd of one of 10 equal nodes' loads
	s.MaxCV = math.Hypot(s.MaxCV, 2*node)
	s.MaxPeak = 1 + math.Hypot(s.MaxPeak-1, 4.5*node)
	s.ShareTol = math.Hypot(s.ShareTol, 4.5*math.Sqrt(10/keys))
	if s.Collateral > 0 && s.Collateral < 1 {
		s.Collateral = math.Hypot(s.Collateral, 4.5*math.Sqrt(s.Collateral/keys))
	}
	s.Spread = 1 + math.Hypot(s.Spread-1, 4.5*math.Sqrt(90/keys))
	s.WeightTVD = math.Hypot(s.WeightTVD, math.Sqrt(12/keys))
}

// few returns full in the full run and short in a short one: how many
// keys (or rounds) a case that checks each key, rather than measures
// them all, takes.
func (s *suite) few(full, short int) int {
	if len(s.keys) == fullKeys {
		return full
	}
	return short
}

// build calls New and fails the test on an error or a nil placer.
func (s *suite) build(t testing.TB, nodes []chash.Node) chash.Placer {
	t.Helper()
	p, err := s.New(nodes)
	if err != nil {
		t.Fatalf("New(%d nodes): %v", len(nodes), err)
	}
	if isNil(p) {
		t.Fatalf("New(%d nodes) returned a nil Placer and no error", len(nodes))
	}
	return p
}

// next is the placement after a membership change from p to nodes: Next's
// if the Spec has it, else New's.
func (s *suite) next(t testing.TB, p chash.Placer, nodes []chash.Node) chash.Placer {
	t.Helper()
	if s.Next == nil {
		return s.build(t, nodes)
	}
	q, err := s.Next(p, nodes)
	if err != nil {
		t.Fatalf("Next(%d nodes): %v", len(nodes), err)
	}
	if isNil(q) {
		t.Fatalf("Next(%d nodes) returned a nil Placer and no error", len(nodes))
	}
	return q
}

// nodes returns the Spec's n nodes.
func (s *suite) nodes(n int) []chash.Node { return slices.Clone(s.Nodes(n)) }

// owners returns the owner's ID of each of the suite's keys.
func (s *suite) owners(p chash.Placer) []string { return measure.Owners(p, s.keys) }

// effective returns nodes with each zero weight replaced by 1, as a placer
// reports them.
func effective(nodes []chash.Node) []chash.Node {
	out := slices.Clone(nodes)
	for i := range out {
		if out[i].Weight == 0 {
			out[i].Weight = 1
		}
	}
	return out
}

// clampK is how many nodes AppendTopK appends for k and n members.
func clampK(k, n int) int {
	if k <= 0 {
		return 0
	}
	return min(k, n)
}

// isNil reports whether p is nil or holds a nil pointer (or other nil
// value).
func isNil(p chash.Placer) bool {
	if p == nil {
		return true
	}
	switch v := reflect.ValueOf(p); v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan, reflect.Interface:
		return v.IsNil()
	}
	return false
}
