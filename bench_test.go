package chash_test

import (
	"errors"
	"fmt"
	"math/bits"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/keyplace/chash"
	"github.com/keyplace/chash/chashtest"
	"github.com/keyplace/chash/internal/conformance"
)

var (
	benchNodeCounts = []int{8, 64, 1000}
	benchKeySizes   = []int{13, 80}
	sink            uint64
	sinkNode        chash.Node
)

// BenchmarkHash is the floor every lookup is measured against: the default
// hash of the same keys.
func BenchmarkHash(b *testing.B) {
	for _, size := range benchKeySizes {
		bs, ss := conformance.BenchKeys(size)
		b.Run(fmt.Sprintf("key=%d/bytes", size), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				sink += xxhash.Sum64(bs[i&(len(bs)-1)])
			}
		})
		b.Run(fmt.Sprintf("key=%d/string", size), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				sink += xxhash.Sum64String(ss[i&(len(ss)-1)])
			}
		})
		// The floor of any table lookup behind the Placer interface: the
		// hash, one read of a table of Maglev's default size and the copy
		// of the Node it names, through an interface call. No placer that
		// reads a table can beat it, so a target below it is out of reach
		// on the machine that measured it.
		b.Run(fmt.Sprintf("key=%d/table", size), func(b *testing.B) {
			var p stringLookup = newFloorTable(64)
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				sinkNode = p.LookupString(ss[i&(len(ss)-1)])
			}
		})
	}
}

type stringLookup interface{ LookupString(string) chash.Node }

// floorTable is the least a table placer does: see BenchmarkHash.
type floorTable struct {
	nodes []chash.Node
	table []uint16
}

func newFloorTable(n int) *floorTable {
	t := &floorTable{nodes: chashtest.Nodes(n), table: make([]uint16, chash.DefaultTableSize)}
	for i := range t.table {
		t.table[i] = uint16(i % n)
	}
	return t
}

func (t *floorTable) LookupString(key string) chash.Node {
	hi, _ := bits.Mul64(xxhash.Sum64String(key), uint64(len(t.table)))
	return t.nodes[t.table[hi]]
}

// BenchmarkLookup measures every lookup path of every algorithm at 8, 64
// and 1,000 nodes with 13- and 80-byte keys.
func BenchmarkLookup(b *testing.B) {
	for _, a := range chash.Algorithms() {
		for _, n := range benchNodeCounts {
			p, err := chash.New(a, chashtest.Nodes(n))
			if errors.Is(err, chash.ErrUnknownAlgorithm) {
				continue
			}
			if err != nil {
				b.Fatal(err)
			}
			for _, size := range benchKeySizes {
				benchPaths(b, fmt.Sprintf("%v/nodes=%d/key=%d", a, n, size), p, size)
			}
		}
	}
}

func benchPaths(b *testing.B, name string, p chash.Placer, size int) {
	bs, ss := conformance.BenchKeys(size)
	mask := len(bs) - 1
	b.Run(name+"/Lookup", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			sinkNode = p.Lookup(bs[i&mask])
		}
	})
	b.Run(name+"/LookupString", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			sinkNode = p.LookupString(ss[i&mask])
		}
	})
	b.Run(name+"/AppendTopK3", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]chash.Node, 0, 3)
		for i := 0; i < b.N; i++ {
			buf = p.AppendTopK(buf[:0], bs[i&mask], 3)
		}
	})
	b.Run(name+"/AppendTopKString3", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]chash.Node, 0, 3)
		for i := 0; i < b.N; i++ {
			buf = p.AppendTopKString(buf[:0], ss[i&mask], 3)
		}
	})
}

// BenchmarkBuild measures constructing each placer, with bytes allocated.
func BenchmarkBuild(b *testing.B) {
	for _, a := range chash.Algorithms() {
		for _, n := range []int{64, 1000} {
			nodes := chashtest.Nodes(n)
			if _, err := chash.New(a, nodes); errors.Is(err, chash.ErrUnknownAlgorithm) {
				continue
			}
			b.Run(fmt.Sprintf("%v/nodes=%d", a, n), func(b *testing.B) {
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					if _, err := chash.New(a, nodes); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkParallelLookup reads through a Holder from every P at once,
// at 64 nodes with 13-byte keys, alone ("steady") and while another
// goroutine swaps the held placer between 64 and 65 nodes ("swapping").
// Reads take no lock, so the two should match; ns/op is wall time per
// lookup over all Ps. The swapper stores every 100µs, far more often than
// any membership changes, and its swaps/s is reported.
func BenchmarkParallelLookup(b *testing.B) {
	for _, a := range chash.Algorithms() {
		p64, err := chash.New(a, chashtest.Nodes(64))
		if errors.Is(err, chash.ErrUnknownAlgorithm) {
			continue
		}
		if err != nil {
			b.Fatal(err)
		}
		p65, err := chash.New(a, chashtest.Nodes(65))
		if err != nil {
			b.Fatal(err)
		}
		for _, swap := range []bool{false, true} {
			name := fmt.Sprintf("%v/nodes=64/key=13/steady", a)
			if swap {
				name = fmt.Sprintf("%v/nodes=64/key=13/swapping", a)
			}
			b.Run(name, func(b *testing.B) {
				benchParallel(b, chash.NewHolder(p64), p64, p65, swap)
			})
		}
	}
}

func benchParallel(b *testing.B, h *chash.Holder, p1, p2 chash.Placer, swap bool) {
	_, ss := conformance.BenchKeys(13)
	mask := len(ss) - 1
	var stop atomic.Bool
	var swaps int
	var wg sync.WaitGroup
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	if swap {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				if i%2 == 0 {
					h.Store(p2)
				} else {
					h.Store(p1)
				}
				swaps++
				time.Sleep(100 * time.Microsecond)
			}
		}()
	}
	var seed atomic.Uint32
	b.RunParallel(func(pb *testing.PB) {
		i := int(seed.Add(7919))
		var n chash.Node
		for pb.Next() {
			n = h.LookupString(ss[i&mask])
			i++
		}
		sinkMu.Lock()
		sinkNode = n
		sinkMu.Unlock()
	})
	stop.Store(true)
	wg.Wait()
	if swap {
		b.ReportMetric(float64(swaps)/time.Since(start).Seconds(), "swaps/s")
	}
}

var sinkMu sync.Mutex

// raceEnabled is set by race_test.go under the race detector.
var raceEnabled bool
