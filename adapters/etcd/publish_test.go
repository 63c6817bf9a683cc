package etcd

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/keyplace/chash"
	"github.com/stretchr/testify/require"
)

// thousand returns a watcher, not following etcd, holding 1,000 members.
func thousand(build Builder) *Watcher {
	w := &Watcher{prefix: "/p/", build: build, members: map[string]Member{}}
	for i := range 1000 {
		id := fmt.Sprintf("m%04d", i)
		w.members[id] = Member{ID: id, Weight: 1}
	}
	return w
}

// change makes the next publish build: it flips one member's weight and
// moves to the next revision.
func (w *Watcher) change() {
	m := w.members["m0500"]
	m.Weight = 3 - m.Weight
	w.members["m0500"] = m
	w.rev++
}

var algorithms = []struct {
	name  string
	build Builder
}{
	{"ring", func(n []chash.Node) (chash.Placer, error) { return chash.NewRing(n) }},
	{"maglev", func(n []chash.Node) (chash.Placer, error) { return chash.NewMaglev(n) }},
	{"rendezvous", func(n []chash.Node) (chash.Placer, error) { return chash.NewRendezvous(n) }},
}

// Figures: the time a watcher takes to rebuild and swap a 1,000-node view:
// sorting the members, the build, the fingerprint and the atomic store.
func TestFiguresRebuild(t *testing.T) {
	for _, a := range algorithms {
		w := thousand(a.build)
		var took []time.Duration
		for range 11 {
			w.change()
			start := time.Now()
			require.NoError(t, w.publish())
			took = append(took, time.Since(start))
		}
		slices.Sort(took)
		t.Logf("FIGURE rebuild and swap of a 1,000-node %s: median %v (of 11)", a.name, took[5].Round(time.Microsecond))
		require.Less(t, took[5], time.Second)
		require.Equal(t, 1000, w.Len())
		require.Equal(t, int64(11), w.Builds())
	}
}

func BenchmarkPublish(b *testing.B) {
	for _, a := range algorithms {
		b.Run(a.name+"/1000", func(b *testing.B) {
			w := thousand(a.build)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				w.change()
				if err := w.publish(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkLookup(b *testing.B) {
	w := thousand(algorithms[1].build)
	w.change()
	require.NoError(b, w.publish())
	key := []byte("user:42")
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		w.Lookup(key)
	}
}
