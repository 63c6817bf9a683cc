package chash_test

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/internal/conformance"
)

// bounds computes the balancer's bound ceil(c × t × w / W) for the nodes
// of a placer, exactly where float rounding could matter.
type bounds struct {
	c, total float64
	exactW   *big.Rat
}

func newBounds(p chash.Placer, c float64) *bounds {
	b := &bounds{c: c, exactW: new(big.Rat)}
	for _, m := range p.Nodes() {
		b.total += m.Weight
		b.exactW.Add(b.exactW, new(big.Rat).SetFloat64(m.Weight))
	}
	return b
}

// of returns node n's bound for total t, and the count at which the
// balancer may refuse n one early (c × t × w / W lies just above an
// integer, and the balancer's float shares are shaded down), or -1.
func (b *bounds) of(t int64, n chash.Node) (lim, edge int64) {
	f := b.c * float64(t) * n.Weight / b.total
	if math.Abs(f-math.Round(f)) > 1e-9*max(f, 1) {
		return int64(math.Ceil(f)), -1
	}
	x := new(big.Rat).SetFloat64(b.c)
	x.Mul(x, new(big.Rat).SetInt64(t))
	x.Mul(x, new(big.Rat).SetFloat64(n.Weight))
	x.Quo(x, b.exactW)
	num := new(big.Int).Add(x.Num(), new(big.Int).Sub(x.Denom(), big.NewInt(1)))
	lim = new(big.Int).Quo(num, x.Denom()).Int64()
	if !x.IsInt() && float64(lim-1) == math.Round(f) {
		return lim, lim - 1
	}
	return lim, -1
}

func lim(l, _ int64) int64 { return l }

func newBalancer(t testing.TB, p chash.Placer, opts ...chash.Option) *chash.Balancer {
	t.Helper()
	b, err := chash.NewBalancer(p, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestBalancerErrors(t *testing.T) {
	if _, err := chash.NewBalancer(nil); !errors.Is(err, chash.ErrNoNodes) {
		t.Errorf("nil placer: %v", err)
	}
	if _, err := chash.NewBalancer(new(chash.Holder)); !errors.Is(err, chash.ErrNoNodes) {
		t.Errorf("empty holder: %v", err)
	}
	r, _ := chash.NewRing(conformance.Nodes(3))
	if _, err := chash.NewBalancer(r, chash.WithLoadFactor(1)); !errors.Is(err, chash.ErrInvalidOption) {
		t.Errorf("load factor 1: %v", err)
	}
	b := newBalancer(t, r)
	if err := b.SetPlacer(nil); !errors.Is(err, chash.ErrNoNodes) || b.Placer() != chash.Placer(r) {
		t.Errorf("SetPlacer(nil): %v, placer %v", err, b.Placer())
	}
	if b.LoadFactor() != 1.25 {
		t.Errorf("default load factor %v", b.LoadFactor())
	}
	var zero chash.Lease
	if zero.Release() || zero.Node() != (chash.Node{}) {
		t.Error("zero Lease released or has a node")
	}
}

func TestBalancerDoubleRelease(t *testing.T) {
	r, _ := chash.NewRing(conformance.Nodes(4))
	b := newBalancer(t, r)
	l, err := b.AcquireString("k")
	if err != nil {
		t.Fatal(err)
	}
	cp := l
	if b.InFlight() != 1 || b.Load(l.Node().ID) != 1 {
		t.Fatalf("after acquire: total %d, node %d", b.InFlight(), b.Load(l.Node().ID))
	}
	if !l.Release() || l.Release() || cp.Release() {
		t.Fatal("a lease released more than once")
	}
	// The slot is reused by the next lease; the stale copy must not end it.
	l2, _ := b.AcquireString("k")
	if cp.Release() || b.InFlight() != 1 {
		t.Fatalf("stale copy ended a newer lease: total %d", b.InFlight())
	}
	l2.Release()
	if b.InFlight() != 0 || b.Load(l.Node().ID) != 0 {
		t.Fatalf("after release: total %d, node %d", b.InFlight(), b.Load(l.Node().ID))
	}
}

// TestBalancerSequential checks every acquire of a random workload against
// a model: the lease is on the first node of AppendTopK(Len) with room for
// the new total, and within the bound.
func TestBalancerSequential(t *testing.T) {
	for _, c := range []float64{math.Nextafter(1, 2), 1.0000001, 1.1, 1.25, 2, 1e9} {
		t.Run(fmt.Sprint(c), func(t *testing.T) { balancerSequential(t, c) })
	}
}

func balancerSequential(t *testing.T, c float64) {
	weighted := []chash.Node{{ID: "a", Weight: 1}, {ID: "b", Weight: 5}, {ID: "c", Weight: 2}, {ID: "d", Weight: 0.5}, {ID: "e", Weight: 1}}
	{
		for _, nodes := range [][]chash.Node{conformance.Nodes(10), weighted, conformance.Nodes(1)} {
			p, _ := chash.NewBounded(nodes, chash.WithPartitions(1024))
			b := newBalancer(t, p, chash.WithLoadFactor(c))
			bd := newBounds(p, c)
			rng := rand.New(rand.NewPCG(1, uint64(len(nodes))))
			var held []chash.Lease
			edges, steps := 0, 20_000
			if testing.Short() || raceEnabled {
				steps = 4000
			}
			order := make([]chash.Node, 0, len(nodes))
			for step := 0; step < steps; step++ {
				if len(held) > 0 && rng.IntN(2) == 0 {
					i := rng.IntN(len(held))
					if !held[i].Release() {
						t.Fatal("release failed")
					}
					held[i] = held[len(held)-1]
					held = held[:len(held)-1]
					continue
				}
				key := fmt.Sprintf("k%d", rng.IntN(50)) // few keys: heavy spill
				tt := b.InFlight() + 1
				order = p.AppendTopKString(order[:0], key, len(nodes))
				want, edge := "", false
				for _, n := range order {
					lim, e := bd.of(tt, n)
					if b.Load(n.ID) == e {
						edge = true // the balancer may refuse this node
						break
					}
					if b.Load(n.ID) < lim {
						want = n.ID
						break
					}
				}
				l, err := b.AcquireString(key)
				if err != nil {
					t.Fatalf("c=%v: lone acquire failed: %v", c, err)
				}
				if edge {
					edges++
				} else if l.Node().ID != want {
					t.Fatalf("c=%v: key %s went to %s, want %s", c, key, l.Node().ID, want)
				}
				if got, lim := b.Load(l.Node().ID), lim(bd.of(tt, l.Node())); got > lim {
					t.Fatalf("c=%v: node %s has %d in flight, bound %d", c, l.Node().ID, got, lim)
				}
				held = append(held, l)
			}
			for _, l := range held {
				l.Release()
			}
			t.Logf("%d nodes: %d of %d steps at a rounding edge", len(nodes), edges, steps)
			if edges > steps/10 {
				t.Errorf("c=%v: %d of %d steps were at a rounding edge, unchecked", c, edges, steps)
			}
			if b.InFlight() != 0 {
				t.Fatalf("c=%v: %d in flight after releasing all", c, b.InFlight())
			}
		}
	}
}

// TestBalancerConcurrent acquires under a read lock and releases under the
// write lock, so that no release completes while an acquire runs: then the
// node's count right after an acquire, read independently, must be within
// the bound for the total read then.
func TestBalancerConcurrent(t *testing.T) {
	p, _ := chash.NewBounded(conformance.Nodes(8), chash.WithPartitions(512))
	const c = 1.1
	b := newBalancer(t, p, chash.WithLoadFactor(c))
	bd := newBounds(p, c)
	iters := 3000
	if testing.Short() {
		iters = 500
	}
	var mu sync.RWMutex
	var overloaded, acquired atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			var held []chash.Lease
			for i := 0; i < iters; i++ {
				if len(held) > 4 || len(held) > 0 && rng.IntN(3) == 0 {
					mu.Lock()
					ok := held[0].Release()
					mu.Unlock()
					if !ok {
						errs <- errors.New("release failed")
						return
					}
					held = held[1:]
					continue
				}
				key := fmt.Sprintf("k%d", rng.IntN(20))
				mu.RLock()
				l, err := b.AcquireString(key)
				if err == nil {
					n, tt := b.Load(l.Node().ID), b.InFlight()
					if lim := lim(bd.of(tt, l.Node())); n > lim {
						errs <- fmt.Errorf("node %s: %d in flight, bound %d for total %d", l.Node().ID, n, lim, tt)
					}
				}
				mu.RUnlock()
				if errors.Is(err, chash.ErrOverloaded) {
					overloaded.Add(1)
					continue
				}
				acquired.Add(1)
				held = append(held, l)
			}
			for _, l := range held {
				l.Release()
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("%d acquired, %d overloaded", acquired.Load(), overloaded.Load())
	checkZero(t, b)
}

func checkZero(t *testing.T, b *chash.Balancer) {
	t.Helper()
	if b.InFlight() != 0 {
		t.Errorf("%d in flight at the end", b.InFlight())
	}
	for _, n := range b.Placer().Nodes() {
		if l := b.Load(n.ID); l != 0 {
			t.Errorf("node %s: %d in flight at the end", n.ID, l)
		}
	}
}

// TestBalancerSwap swaps the membership while goroutines acquire, release
// twice, and release leases taken before the swap.
func TestBalancerSwap(t *testing.T) {
	var ps []chash.Placer
	for _, n := range []int{10, 11, 9} {
		p, _ := chash.NewBounded(conformance.Nodes(n), chash.WithPartitions(256))
		ps = append(ps, p)
	}
	b := newBalancer(t, ps[0])
	done := make(chan struct{})
	var swapper sync.WaitGroup
	swapper.Add(1)
	go func() {
		defer swapper.Done()
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			if err := b.SetPlacer(ps[i%len(ps)]); err != nil {
				t.Error(err)
			}
		}
	}()
	iters := 5000
	if testing.Short() {
		iters = 1000
	}
	var wg sync.WaitGroup
	var negative atomic.Bool
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			var held []chash.Lease
			for i := 0; i < iters; i++ {
				if l, err := b.AcquireString(fmt.Sprint(g, i)); err == nil {
					held = append(held, l)
				}
				if len(held) > 20 {
					l := held[0]
					held = held[1:]
					l.Release()
					l.Release()
				}
				if b.Load(fmt.Sprintf("node-%d", i%11)) < 0 || b.InFlight() < 0 {
					negative.Store(true)
				}
			}
			for _, l := range held {
				l.Release()
			}
		}(g)
	}
	wg.Wait()
	close(done)
	swapper.Wait()
	if negative.Load() {
		t.Error("a count went negative")
	}
	checkZero(t, b)
}

// TestBalancerHotKey sends 30% of requests to one key, with holds
// overlapping, and checks every acquire: within the bound, and on the first
// choice whenever the first choice had room.
func TestBalancerHotKey(t *testing.T) {
	for _, hot := range []float64{0, 0.3} {
		kept, other, peak, meanPeak := hotKeyRun(t, 1.25, hot)
		t.Logf("hot share %.0f%%: %.4f of other keys kept their first choice; max load/mean %.3f (peak over time), %.3f (average)",
			100*hot, kept/other, peak, meanPeak)
		// With a hot key, the hot node's other keys (about a tenth) must spill.
		if min := map[float64]float64{0: 0.95, 0.3: 0.85}[hot]; kept/other < min {
			t.Errorf("hot share %v: only %.4f of other keys kept their first choice (want >= %v)", hot, kept/other, min)
		}
	}
}

func hotKeyRun(t *testing.T, c, hot float64) (kept, other, peak, meanPeak float64) {
	const nodes, hold = 10, 100
	steps := 200_000
	if testing.Short() || raceEnabled {
		steps = 40_000
	}
	p, _ := chash.NewBounded(conformance.Nodes(nodes))
	b := newBalancer(t, p, chash.WithLoadFactor(c))
	bd := newBounds(p, c)
	keys := conformance.Keys(100_000)
	rng := rand.New(rand.NewPCG(3, 4))
	wheel := make([][]chash.Lease, 2*hold+1)
	ids := make([]string, nodes)
	for i, n := range p.Nodes() {
		ids[i] = n.ID
	}
	var samples float64
	for step := 0; step < steps; step++ {
		slot := step % len(wheel)
		for _, l := range wheel[slot] {
			l.Release()
		}
		wheel[slot] = wheel[slot][:0]
		key, isHot := keys[rng.IntN(len(keys))], rng.Float64() < hot
		if isHot {
			key = "hot"
		}
		first := p.LookupString(key)
		tt := b.InFlight() + 1
		flim, edge := bd.of(tt, first)
		room := b.Load(first.ID) < flim && b.Load(first.ID) != edge
		l, err := b.AcquireString(key)
		if err != nil {
			t.Fatal(err)
		}
		got := l.Node()
		if n, lim := b.Load(got.ID), lim(bd.of(tt, got)); n > lim {
			t.Fatalf("step %d: node %s has %d in flight, bound %d", step, got.ID, n, lim)
		}
		if room && got != first {
			t.Fatalf("step %d: key %s spilled to %s though %s had room", step, key, got.ID, first.ID)
		}
		if !isHot {
			other++
			if got == first {
				kept++
			}
		}
		wheel[(step+1+rng.IntN(2*hold))%len(wheel)] = append(wheel[(step+1+rng.IntN(2*hold))%len(wheel)], l)
		if step > 4*hold {
			hi := int64(0)
			for _, id := range ids {
				hi = max(hi, b.Load(id))
			}
			r := float64(hi) / (float64(b.InFlight()) / nodes)
			peak, meanPeak, samples = max(peak, r), meanPeak+r, samples+1
		}
	}
	return kept, other, peak, meanPeak / samples
}

// raceEnabled is set by balancer_race_test.go under the race detector.
var raceEnabled bool

func TestBalancerAllocs(t *testing.T) {
	if testing.CoverMode() != "" || raceEnabled {
		t.Skip("coverage instrumentation and the race detector allocate")
	}
	p, _ := chash.NewBounded(conformance.Nodes(64))
	b := newBalancer(t, p)
	key := []byte("user:1:profile")
	// Hold leases on the key so that the next acquires spill.
	var held []chash.Lease
	for i := 0; i < 40; i++ {
		l, _ := b.Acquire(key)
		held = append(held, l)
	}
	for name, f := range map[string]func(){
		"Acquire":       func() { l, _ := b.Acquire(key); l.Release() },
		"AcquireString": func() { l, _ := b.AcquireString("user:2:profile"); l.Release() },
	} {
		if n := testing.AllocsPerRun(1000, f); n != 0 {
			t.Errorf("%s+Release: %v allocations, want 0", name, n)
		}
	}
	for _, l := range held {
		l.Release()
	}
}

func BenchmarkBalancer(b *testing.B) {
	p, _ := chash.NewBounded(conformance.Nodes(64))
	bal := newBalancer(b, p)
	_, ss := benchKeys(13)
	mask := len(ss) - 1
	b.Run("AcquireRelease", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			l, _ := bal.AcquireString(ss[i&mask])
			l.Release()
		}
	})
	b.Run("AcquireReleaseParallel", func(b *testing.B) {
		b.ReportAllocs()
		var seed atomic.Int64
		b.RunParallel(func(pb *testing.PB) {
			i := int(seed.Add(1) * 7919)
			for pb.Next() {
				l, _ := bal.AcquireString(ss[i&mask])
				l.Release()
				i++
			}
		})
	})
}

// A request acquires a node, does its work and releases it. A key that
// gets too hot spills to its next choices instead of overloading one node.
func ExampleBalancer() {
	p, err := chash.NewBounded([]chash.Node{{ID: "a"}, {ID: "b"}, {ID: "c"}})
	if err != nil {
		panic(err)
	}
	b, err := chash.NewBalancer(p, chash.WithLoadFactor(1.25))
	if err != nil {
		panic(err)
	}
	var held []chash.Lease
	for i := 0; i < 6; i++ {
		l, err := b.AcquireString("hot-key")
		if err != nil {
			panic(err)
		}
		fmt.Print(l.Node().ID, " ")
		held = append(held, l)
	}
	for _, l := range held {
		l.Release()
	}
	fmt.Println(b.InFlight())
	// Output: c a c a c a 0
}
