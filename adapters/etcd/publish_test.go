package etcd_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/adapters/etcd"
	"github.com/keyplace/chash/member"
	"github.com/keyplace/chash/member/membertest"
	"github.com/stretchr/testify/require"
)

// thousand returns the members m0000 to m0999 of weight w.
func thousand(w float64) []member.Member {
	out := make([]member.Member, 1000)
	for i := range out {
		out[i] = member.Member{ID: fmt.Sprintf("m%04d", i), Weight: w}
	}
	return out
}

var algorithms = []struct {
	name  string
	build etcd.Builder
}{
	{"ring", func(n []chash.Node) (chash.Placer, error) { return chash.NewRing(n) }},
	{"maglev", func(n []chash.Node) (chash.Placer, error) { return chash.NewMaglev(n) }},
	{"rendezvous", func(n []chash.Node) (chash.Placer, error) { return chash.NewRendezvous(n) }},
}

// Figures: the time a watcher takes to rebuild and swap a 1,000-node view
// (sorting the members, the build, the fingerprint and the atomic store),
// from an in-memory source, so that the figure is the watcher's alone.
func TestFiguresRebuild(t *testing.T) {
	for _, a := range algorithms {
		var fleet membertest.Memory
		ms := thousand(1)
		require.NoError(t, fleet.Set(ms))
		built := make(chan time.Time, 16)
		w, err := member.Follow(context.Background(), fleet.Source(), a.build, member.WithCoalesce(0),
			member.WithViewHook(func(*member.View) { built <- time.Now() }))
		require.NoError(t, err)
		<-built
		var took []time.Duration
		for i := range 11 {
			ms[500].Weight = float64(2 + i%2)
			start := time.Now()
			require.NoError(t, fleet.Set(ms))
			took = append(took, (<-built).Sub(start))
		}
		w.Close()
		slices.Sort(took)
		t.Logf("FIGURE rebuild and swap of a 1,000-node %s: median %v (of 11)", a.name, took[5].Round(time.Microsecond))
		require.Less(t, took[5], time.Second)
		require.Equal(t, 1000, w.Len())
		require.Equal(t, int64(12), w.Builds())
	}
}

func BenchmarkLookup(b *testing.B) {
	var fleet membertest.Memory
	require.NoError(b, fleet.Set(thousand(1)))
	w, err := member.Follow(context.Background(), fleet.Source(), algorithms[1].build)
	require.NoError(b, err)
	defer w.Close()
	key := []byte("user:42")
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		w.Lookup(key)
	}
}
