package chash_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/chashtest"
	"github.com/keyplace/chash/internal/measure"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// weighted returns n nodes with weights 1 to 4 (equal where a needs equal weights).
func weighted(a chash.Algorithm, n int) []chash.Node {
	nodes := chashtest.Nodes(n)
	if a.Weighted() {
		for i := range nodes {
			nodes[i].Weight = float64(1 + i%4)
		}
	}
	return nodes
}

// Long lists switch from scans to a bitmap or a sort past 32 nodes: the
// preference order must not change at the switch, and the whole list must
// be every member once.
func TestLongTopKIsOnePreferenceOrder(t *testing.T) {
	keys := chashtest.Keys(200)
	if testing.Short() {
		keys = keys[:50] // thirteen algorithms, ChooseK's full lists O(k²)
	}
	for _, a := range chash.Algorithms() {
		p, err := chash.New(a, weighted(a, 150))
		require.NoError(t, err)
		for _, key := range keys {
			all := p.AppendTopKString(nil, key, p.Len())
			ids := measure.IDs(all)
			slices.Sort(ids)
			require.Len(t, slices.Compact(ids), p.Len(), "%v: not every member once", a)
			for _, k := range []int{1, 3, 16, 17, 32, 33, 64, 149} {
				require.Equal(t, all[:k], p.AppendTopKString(nil, key, k), "%v key %q k=%d", a, key, k)
			}
		}
	}
}

// Every node in every list, at any length, without allocating once the
// buffer has room.
func TestLongTopKDoesNotAllocate(t *testing.T) {
	if testing.CoverMode() != "" || raceEnabled {
		t.Skip("coverage and the race detector allocate")
	}
	for _, a := range chash.Algorithms() {
		p, err := chash.New(a, weighted(a, 1000))
		require.NoError(t, err)
		buf := make([]chash.Node, 0, 1000)
		n := testing.AllocsPerRun(20, func() { buf = p.AppendTopKString(buf[:0], "user:1", 1000) })
		assert.Zero(t, n, "%v: allocations for k = 1000", a)
	}
}

func BenchmarkTopKAll(b *testing.B) {
	for _, n := range []int{100, 1000} {
		for _, a := range chash.Algorithms() {
			p, err := chash.New(a, weighted(a, n))
			require.NoError(b, err)
			b.Run(fmt.Sprintf("%v/nodes=%d", a, n), func(b *testing.B) {
				buf := make([]chash.Node, 0, n)
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					buf = p.AppendTopKString(buf[:0], "user:42:profile", n)
				}
			})
		}
	}
}
