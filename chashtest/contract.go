package chashtest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/internal/measure"
)

// This file holds the cases of the interface's own rules.

// roster is a placer's members, as a list and as a set.
type roster struct {
	nodes []chash.Node
	set   map[chash.Node]bool
}

func newRoster(nodes []chash.Node) roster {
	r := roster{nodes: nodes, set: make(map[chash.Node]bool, len(nodes))}
	for _, n := range nodes {
		r.set[n] = true
	}
	return r
}

// checkTopK is CheckTopK, with p's members given.
func checkTopK(p chash.Placer, r roster, key string, k int) error {
	members := r.nodes
	first := p.LookupString(key)
	if b := p.Lookup([]byte(key)); b != first {
		return fmt.Errorf("Lookup(%q) = %+v, LookupString %+v", key, b, first)
	}
	if len(members) == 0 {
		if first != (chash.Node{}) {
			return fmt.Errorf("no members, but Lookup(%q) = %+v", key, first)
		}
	} else if !r.set[first] {
		return fmt.Errorf("Lookup(%q) = %+v, not a member", key, first)
	}
	top := p.AppendTopKString(nil, key, k)
	if want := clampK(k, len(members)); len(top) != want {
		return fmt.Errorf("AppendTopKString(%q, %d) gave %d nodes, want %d of %d", key, k, len(top), want, len(members))
	}
	seen := make(map[string]bool, len(top))
	for _, n := range top {
		if !r.set[n] || seen[n.ID] {
			return fmt.Errorf("AppendTopKString(%q, %d) = %v: not distinct members", key, k, measure.IDs(top))
		}
		seen[n.ID] = true
	}
	if len(top) > 0 && top[0] != first {
		return fmt.Errorf("AppendTopKString(%q, %d)[0] = %+v, Lookup %+v", key, k, top[0], first)
	}
	if b := p.AppendTopK(nil, []byte(key), k); !slices.Equal(b, top) {
		return fmt.Errorf("key %q, k %d: AppendTopK %v, AppendTopKString %v", key, k, measure.IDs(b), measure.IDs(top))
	}
	if len(top) > 1 {
		shorter := p.AppendTopKString(nil, key, len(top)-1)
		if !slices.Equal(shorter, top[:len(top)-1]) {
			return fmt.Errorf("AppendTopKString(%q, %d) = %v is not a prefix of AppendTopKString(%d) = %v", key, len(top)-1, measure.IDs(shorter), len(top), measure.IDs(top))
		}
	}
	return checkAppend(p, members, key, k, top)
}

// checkAppend checks that appending to a slice that already holds nodes
// (members, which an implementation that read dst as its own choices
// would skip) keeps them and appends top, the nodes appended to nil; and
// that nodes left in the spare capacity past dst's length are not read
// either.
func checkAppend(p chash.Placer, members []chash.Node, key string, k int, top []chash.Node) error {
	held := []chash.Node{{ID: "chashtest-sentinel"}}
	if len(members) > 0 {
		held = []chash.Node{members[len(members)-1], members[0]}
	}
	for _, bytes := range []bool{false, true} {
		buf := make([]chash.Node, len(held)+len(top)+len(members)+1)
		for i := range buf {
			if len(members) > 0 {
				buf[i] = members[i%len(members)]
			}
		}
		dst := append(buf[:0], held...)
		var got []chash.Node
		if bytes {
			got = p.AppendTopK(dst, []byte(key), k)
		} else {
			got = p.AppendTopKString(dst, key, k)
		}
		if !slices.Equal(got[:min(len(got), len(held))], held) || !slices.Equal(got[min(len(got), len(held)):], top) {
			return fmt.Errorf("key %q, k %d: appending to %v (bytes %v) gave %v, want %v after them",
				key, k, measure.IDs(held), bytes, measure.IDs(got), measure.IDs(top))
		}
	}
	return nil
}

// checkPlacer is CheckPlacer's check of the rules, over keys.
func checkPlacer(p chash.Placer, keys []string) error {
	members := p.Nodes()
	if len(members) != p.Len() {
		return fmt.Errorf("Len() = %d, but Nodes() has %d", p.Len(), len(members))
	}
	seen := make(map[string]bool, len(members))
	for _, n := range members {
		if n.ID == "" || seen[n.ID] || !(n.Weight > 0) || math.IsInf(n.Weight, 0) {
			return fmt.Errorf("Nodes() = %v: want distinct non-empty IDs of positive finite weight", members)
		}
		seen[n.ID] = true
	}
	if len(members) > 0 {
		got := p.Nodes()
		got[0].ID = "chashtest-mutated"
		if p.Nodes()[0].ID == got[0].ID {
			return errors.New("Nodes() returned the placer's own slice")
		}
	}
	n, r := len(members), newRoster(members)
	long := max(20, 2000/max(n, 1)) // keys for the lists of every member
	for i, key := range keys {
		for _, k := range []int{1, 2, n, n + 1} {
			if k > 2 && i >= long {
				break // a list of n costs O(n²) for some placers
			}
			if err := checkTopK(p, r, key, k); err != nil {
				return err
			}
		}
	}
	key := keys[0]
	for _, k := range []int{0, -1, math.MinInt} {
		if got := p.AppendTopKString(nil, key, k); len(got) != 0 {
			return fmt.Errorf("AppendTopKString(%q, %d) appended %v", key, k, measure.IDs(got))
		}
		if got := p.AppendTopK(nil, []byte(key), k); len(got) != 0 {
			return fmt.Errorf("AppendTopK(%q, %d) appended %v", key, k, measure.IDs(got))
		}
	}
	for _, k := range []int{n + 7, math.MaxInt} {
		if err := checkTopK(p, r, key, k); err != nil {
			return err
		}
	}
	return nil
}

// topK holds the suite's 10-node placer to the interface's rules on
// 10,000 keys (2,000 in a short run), and, when ZoneAware, checks that
// the first k nodes span min(k, z) domains.
func topK(t testing.TB, s *suite) {
	nodes := s.nodes(10)
	p := s.build(t, nodes)
	if err := checkPlacer(p, s.keys[:s.few(10_000, 2_000)]); err != nil {
		t.Fatal(err)
	}
	if !s.ZoneAware {
		return
	}
	domains := map[string]bool{}
	for _, n := range nodes {
		domains[measure.DomainOf(n)] = true
	}
	z := len(domains)
	buf := make([]chash.Node, 0, len(nodes))
	for _, key := range s.keys[:s.few(10_000, 2_000)] {
		buf = p.AppendTopKString(buf[:0], key, len(nodes))
		seen := map[string]bool{}
		for i, n := range buf[:z] {
			if seen[measure.DomainOf(n)] {
				t.Fatalf("key %q: node %d of %v repeats a domain while %d of %d are covered", key, i, buf, len(seen), z)
			}
			seen[measure.DomainOf(n)] = true
		}
	}
}

// appendToDst checks AppendTopK's dst handling at every k from -1 to
// Len+1, with dst holding members and spare capacity full of them: what
// dst holds is kept and never read as a choice.
func appendToDst(t testing.TB, s *suite) {
	p := s.build(t, s.nodes(10))
	members := p.Nodes()
	for _, key := range s.keys[:s.few(2_000, 500)] {
		for k := -1; k <= len(members)+1; k++ {
			top := p.AppendTopKString(nil, key, k)
			if err := checkAppend(p, members, key, k, top); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// empties returns the zero value of the placer's type (freshly made, for a
// pointer type) and its nil (for a type that has one). For a type that is
// not a pointer, Spec.Zero is the zero value checked, and the type's own
// zero value, if it differs, is checked as its nil: a struct wrapping a
// pointer has its nil there.
func (s *suite) empties(t testing.TB) (zero, typedNil chash.Placer) {
	t.Helper()
	typ := s.typ
	if typ == nil {
		typ = reflect.TypeOf(s.build(t, s.nodes(1)))
	}
	switch typ.Kind() {
	case reflect.Pointer:
		return reflect.New(typ.Elem()).Interface().(chash.Placer), reflect.Zero(typ).Interface().(chash.Placer)
	case reflect.Map, reflect.Slice, reflect.Func, reflect.Chan:
		typedNil = reflect.Zero(typ).Interface().(chash.Placer)
		if s.Zero != nil {
			return s.Zero, typedNil
		}
		return typedNil, typedNil
	}
	zero = reflect.Zero(typ).Interface().(chash.Placer)
	if s.Zero == nil || reflect.ValueOf(s.Zero).IsZero() {
		return zero, nil
	}
	return s.Zero, zero
}

// empty checks that the zero value and the nil pointer of the placer's
// type behave as an empty placer: lookups return the zero Node, AppendTopK
// appends nothing, Nodes is empty, Len is 0, Fingerprint is
// FingerprintNone, Diff and Shares fail with ErrNoNodes, and no exported
// method panics when called with zero arguments (except, on the nil
// pointer, those the Spec lists in NilPanics); a method's Node result must
// be the zero Node and a []Node result empty.
func empty(t testing.TB, s *suite) {
	zero, typedNil := s.empties(t)
	checkEmpty(t, "zero value", zero, nil)
	if typedNil != nil {
		checkEmpty(t, "nil pointer", typedNil, s.NilPanics)
	}
	if s.Derive {
		// A zero value derives with the constructor's defaults.
		nodes := s.nodes(3)
		noPanic(t, fmt.Sprintf("Derive(zero %T)", zero), func() {
			q, err := chash.Derive(zero, nodes)
			if err == nil && (isNil(q) || q.Len() != len(nodes)) {
				t.Errorf("Derive(zero %T, 3 nodes) = %v with no error", zero, q)
			}
		})
	}
}

// noPanic calls f, and reports a panic as an error of the test.
func noPanic(t testing.TB, what string, f func()) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%s panicked: %v", what, r)
		}
	}()
	f()
}

func checkEmpty(t testing.TB, name string, p chash.Placer, skip []string) {
	t.Helper()
	what := func(call string) string { return fmt.Sprintf("%s %T: %s", name, p, call) }
	sentinel := chash.Node{ID: "chashtest-sentinel"}
	noPanic(t, what("Lookup"), func() {
		for _, key := range [][]byte{nil, []byte("k")} {
			if got := p.Lookup(key); got != (chash.Node{}) {
				t.Errorf("%s = %+v, want the zero Node", what("Lookup"), got)
			}
		}
	})
	noPanic(t, what("LookupString"), func() {
		if got := p.LookupString("k"); got != (chash.Node{}) {
			t.Errorf("%s = %+v, want the zero Node", what("LookupString"), got)
		}
	})
	for _, k := range []int{1, 3, math.MaxInt, 0, -1} {
		noPanic(t, what(fmt.Sprintf("AppendTopK(k=%d)", k)), func() {
			if got := p.AppendTopK([]chash.Node{sentinel}, []byte("k"), k); len(got) != 1 || got[0] != sentinel {
				t.Errorf("%s = %v, want dst unchanged", what(fmt.Sprintf("AppendTopK(k=%d)", k)), got)
			}
		})
		noPanic(t, what(fmt.Sprintf("AppendTopKString(k=%d)", k)), func() {
			if got := p.AppendTopKString([]chash.Node{sentinel}, "k", k); len(got) != 1 || got[0] != sentinel {
				t.Errorf("%s = %v, want dst unchanged", what(fmt.Sprintf("AppendTopKString(k=%d)", k)), got)
			}
		})
	}
	noPanic(t, what("Nodes"), func() {
		if got := p.Nodes(); len(got) != 0 {
			t.Errorf("%s = %v, want none", what("Nodes"), got)
		}
	})
	noPanic(t, what("Len"), func() {
		if got := p.Len(); got != 0 {
			t.Errorf("%s = %d, want 0", what("Len"), got)
		}
	})
	noPanic(t, what("chash.Fingerprint"), func() {
		if got := chash.Fingerprint(p); got != chash.FingerprintNone {
			t.Errorf("%s = %q, want %q", what("chash.Fingerprint"), got, chash.FingerprintNone)
		}
	})
	noPanic(t, what("chash.Diff"), func() {
		if _, err := chash.Diff(p, p); !errors.Is(err, chash.ErrNoNodes) {
			t.Errorf("%s: error %v, want ErrNoNodes", what("chash.Diff"), err)
		}
	})
	noPanic(t, what("chash.Shares"), func() {
		if _, err := chash.Shares(p); !errors.Is(err, chash.ErrNoNodes) {
			t.Errorf("%s: error %v, want ErrNoNodes", what("chash.Shares"), err)
		}
	})
	noPanic(t, what("chash.NewHolder"), func() {
		if h := chash.NewHolder(p); h.Len() != 0 || h.LookupString("k") != (chash.Node{}) {
			t.Errorf("%s holds a non-empty placer", what("chash.NewHolder"))
		}
	})
	callMethods(t, name, p, skip)
}

var (
	nodeType    = reflect.TypeOf(chash.Node{})
	nodesType   = reflect.TypeOf([]chash.Node(nil))
	contextType = reflect.TypeOf((*context.Context)(nil)).Elem()
)

// canceled is the Context callMethods passes: one already canceled, so
// that a method waiting on it returns at once.
var canceled = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// callMethods calls every exported method of p with zero arguments (a
// canceled Context for a Context) but those named in skip, and reports
// panics and non-empty Node or []Node results.
func callMethods(t testing.TB, name string, p chash.Placer, skip []string) {
	t.Helper()
	v := reflect.ValueOf(p)
	for i := 0; i < v.NumMethod(); i++ {
		m := v.Type().Method(i)
		if slices.Contains(skip, m.Name) {
			continue
		}
		f := v.Method(i)
		in := make([]reflect.Value, f.Type().NumIn())
		if f.Type().IsVariadic() {
			in = in[:len(in)-1]
		}
		for j := range in {
			in[j] = reflect.Zero(f.Type().In(j))
			if f.Type().In(j) == contextType {
				in[j] = reflect.ValueOf(canceled) // a nil Context is invalid
			}
		}
		call := fmt.Sprintf("%s %T: %s", name, p, m.Name)
		noPanic(t, call, func() {
			for j, out := range f.Call(in) {
				switch {
				case out.Type() == nodeType && !out.IsZero():
					t.Errorf("%s result %d = %+v, want the zero Node", call, j, out.Interface())
				case out.Type() == nodesType && out.Len() != 0:
					t.Errorf("%s result %d = %v, want no nodes", call, j, out.Interface())
				}
			}
		})
	}
}

// nilPlacer checks that the functions that need a placer refuse the nil
// pointer of the placer's type, as they refuse a nil Placer, with an
// error wrapping ErrNilPlacer (NewZoned, NewMigration and Derive), and
// that they refuse the zero value, which has no members, without a panic.
func nilPlacer(t testing.TB, s *suite) {
	zero, typedNil := s.empties(t)
	if !isNil(typedNil) {
		typedNil = nil // a struct's zero value is not a nil placer
	}
	good := s.build(t, s.nodes(3))
	for _, c := range []struct {
		name string
		p    chash.Placer
	}{{"nil Placer", nil}, {fmt.Sprintf("(%T)(nil)", typedNil), typedNil}} {
		if c.name != "nil Placer" && typedNil == nil {
			continue // the type has no nil
		}
		noPanic(t, "NewZoned("+c.name+")", func() {
			if _, err := chash.NewZoned(c.p); !errors.Is(err, chash.ErrNilPlacer) {
				t.Errorf("NewZoned(%s): error %v, want ErrNilPlacer", c.name, err)
			}
		})
		noPanic(t, "NewMigration("+c.name+")", func() {
			if _, err := chash.NewMigration(c.p, good); !errors.Is(err, chash.ErrNilPlacer) {
				t.Errorf("NewMigration(%s, p): error %v, want ErrNilPlacer", c.name, err)
			}
			if _, err := chash.NewMigration(good, c.p); !errors.Is(err, chash.ErrNilPlacer) {
				t.Errorf("NewMigration(p, %s): error %v, want ErrNilPlacer", c.name, err)
			}
		})
		noPanic(t, "Derive("+c.name+")", func() {
			if _, err := chash.Derive(c.p, s.nodes(3)); !errors.Is(err, chash.ErrNilPlacer) {
				t.Errorf("Derive(%s): error %v, want ErrNilPlacer", c.name, err)
			}
		})
	}
	noPanic(t, fmt.Sprintf("NewZoned(zero %T)", zero), func() {
		if _, err := chash.NewZoned(zero); err == nil {
			t.Errorf("NewZoned(zero %T): no error for a placer with no members", zero)
		}
	})
}

// probeKeys is how many of the suite's keys the Fingerprint case compares
// placements on.
const probeKeys = 2_000

// fingerprint checks chash.Fingerprint over the suite's own builds (the
// same nodes twice, and reversed unless the order is kept, which must
// agree; a node more, a node less and a reweighted node, which must not)
// and the Spec's Variants: two placers have equal fingerprints exactly when
// they have the same members and the same top 4 for every probe key. A
// Holder has the fingerprint of the placer it holds.
func fingerprint(t testing.TB, s *suite) {
	type built struct {
		name string
		p    chash.Placer
	}
	nodes := s.nodes(10)
	list := []built{
		{"New(10 nodes)", s.build(t, nodes)},
		{"New(10 nodes) again", s.build(t, slices.Clone(nodes))},
		{"New(11 nodes)", s.build(t, s.nodes(11))},
		{"New(9 nodes)", s.build(t, slices.Delete(slices.Clone(nodes), s.removed(), s.removed()+1))},
	}
	if !s.KeepsOrder {
		rev := slices.Clone(nodes)
		slices.Reverse(rev)
		list = append(list, built{"New(10 nodes reversed)", s.build(t, rev)})
	}
	if s.Weighted {
		heavier := slices.Clone(nodes)
		heavier[3].Weight = 2
		list = append(list, built{"New(10 nodes, one of weight 2)", s.build(t, heavier)})
	}
	for i, v := range s.Variants {
		p, err := v()
		if err != nil {
			t.Fatalf("Variants[%d]: %v", i, err)
		}
		list = append(list, built{fmt.Sprintf("Variants[%d]", i), p})
	}
	fps := make([]string, len(list))
	sigs := make([]string, len(list))
	for i, b := range list {
		fps[i] = chash.Fingerprint(b.p)
		sigs[i] = signature(b.p, s.keys[:probeKeys])
		if fps[i] == "" || fps[i] == chash.FingerprintNone {
			t.Errorf("%s: Fingerprint %q for a placer of %d nodes", b.name, fps[i], b.p.Len())
		}
		if h := chash.Fingerprint(chash.NewHolder(b.p)); h != fps[i] {
			t.Errorf("%s: Fingerprint %q, of a Holder holding it %q", b.name, fps[i], h)
		}
	}
	for i := range list {
		for j := i + 1; j < len(list); j++ {
			sameFP, samePlace := fps[i] == fps[j], sigs[i] == sigs[j]
			switch {
			case sameFP && !samePlace:
				t.Errorf("%s and %s place keys differently but share the fingerprint %q", list[i].name, list[j].name, fps[i])
			case !sameFP && samePlace:
				t.Errorf("%s and %s place every probe key alike but have fingerprints %q and %q", list[i].name, list[j].name, fps[i], fps[j])
			}
		}
	}
}

// signature describes p's placement: its members by ID, and the top 4 of
// each key.
func signature(p chash.Placer, keys []string) string {
	var b strings.Builder
	members := p.Nodes()
	slices.SortFunc(members, func(x, y chash.Node) int { return cmpString(x.ID, y.ID) })
	fmt.Fprintf(&b, "%v\n", members)
	buf := make([]chash.Node, 0, 4)
	for _, k := range keys {
		buf = p.AppendTopKString(buf[:0], k, 4)
		for _, n := range buf {
			b.WriteString(n.ID)
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// checkAllocs reports allocations by lookups, and by AppendTopK into a
// slice with room, unless under the race detector (whose sync.Pool drops
// items at random) or coverage (whose instrumentation allocates).
func checkAllocs(p chash.Placer) error {
	if raceEnabled || testing.CoverMode() != "" {
		return nil
	}
	keys := Keys(16)
	bkeys := make([][]byte, len(keys))
	for i, k := range keys {
		bkeys[i] = []byte(k)
	}
	n := p.Len()
	buf := make([]chash.Node, 0, max(n, 3))
	i := 0
	paths := []struct {
		name string
		f    func()
	}{
		{"Lookup", func() { _ = p.Lookup(bkeys[i%16]) }},
		{"LookupString", func() { _ = p.LookupString(keys[i%16]) }},
		{"AppendTopK(k=3)", func() { buf = p.AppendTopK(buf[:0], bkeys[i%16], 3) }},
		{"AppendTopKString(k=3)", func() { buf = p.AppendTopKString(buf[:0], keys[i%16], 3) }},
		{"AppendTopK(k=Len)", func() { buf = p.AppendTopK(buf[:0], bkeys[i%16], n) }},
		{"AppendTopKString(k=Len)", func() { buf = p.AppendTopKString(buf[:0], keys[i%16], n) }},
	}
	var errs []error
	for _, path := range paths {
		f := path.f
		if a := testing.AllocsPerRun(200, func() { f(); i++ }); a != 0 {
			errs = append(errs, fmt.Errorf("%T %s: %v allocations per call, want 0", p, path.name, a))
		}
	}
	return errors.Join(errs...)
}

func allocs(t testing.TB, s *suite) {
	if raceEnabled || testing.CoverMode() != "" {
		t.Skip("the race detector and coverage instrumentation allocate")
	}
	if err := checkAllocs(s.build(t, s.nodes(64))); err != nil {
		t.Error(err)
	}
}

// concurrent reads one placer from several goroutines, which must see the
// answers a single goroutine saw (and, under -race, no race), then reads
// through a Holder while another goroutine swaps two placers in it.
func concurrent(t testing.TB, s *suite) {
	a := s.build(t, s.nodes(10))
	b := s.build(t, s.nodes(11))
	iters := 20_000
	if testing.Short() || raceEnabled {
		iters = 2_000
	}
	ks := s.keys[:iters]
	want := make([][]chash.Node, len(ks))
	for i, k := range ks {
		want[i] = a.AppendTopKString(nil, k, 3)
	}
	nodes, fp := a.Nodes(), chash.Fingerprint(a)
	errs := make(chan error, 8)
	var readers sync.WaitGroup
	for g := 0; g < 4; g++ {
		readers.Add(1)
		go func(g int) {
			defer readers.Done()
			buf := make([]chash.Node, 0, 3)
			for j := range ks {
				i := (j + g*len(ks)/4) % len(ks)
				buf = a.AppendTopKString(buf[:0], ks[i], 3)
				if !slices.Equal(buf, want[i]) || a.LookupString(ks[i]) != want[i][0] || a.Lookup([]byte(ks[i])) != want[i][0] {
					errs <- fmt.Errorf("key %q read concurrently: top 3 %v, alone %v", ks[i], measure.IDs(buf), measure.IDs(want[i]))
					return
				}
				if j%512 == 0 && (!slices.Equal(a.Nodes(), nodes) || a.Len() != len(nodes) || chash.Fingerprint(a) != fp) {
					errs <- errors.New("Nodes, Len or Fingerprint changed under concurrent reads")
					return
				}
			}
		}(g)
	}
	readers.Wait()

	h := chash.NewHolder(a)
	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			if i%2 == 0 {
				h.Store(b)
			} else {
				h.Store(a)
			}
		}
	}()
	for g := 0; g < 4; g++ {
		readers.Add(1)
		go func(g int) {
			defer readers.Done()
			buf := make([]chash.Node, 0, 3)
			for i := 0; i < iters; i++ {
				k := ks[(g*iters/4+i)%len(ks)]
				n := h.LookupString(k)
				buf = h.AppendTopKString(buf[:0], k, 3)
				if n.ID == "" || len(buf) != 3 {
					errs <- fmt.Errorf("key %q through a Holder being swapped: Lookup %+v, top 3 %v", k, n, buf)
					return
				}
			}
		}(g)
	}
	readers.Wait()
	close(done)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
