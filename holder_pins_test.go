package chash_test

import (
	"sync"
	"testing"

	"github.com/keyplace/chash"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// token is a distinct Placer value, told apart by its address; its
// methods are never called.
type token struct {
	chash.Placer
	n int
}

// TestHolderSwapRace swaps from several goroutines at once: every value
// stored comes back exactly once, from a later Swap or as the final
// content, and nothing that was never stored comes back. Run it with
// -race.
func TestHolderSwapRace(t *testing.T) {
	const workers = 4
	per := 50_000
	if testing.Short() {
		per = 2_000
	}
	first := &token{n: -1}
	h := chash.NewHolder(first)
	stored := make([][]*token, workers)
	got := make([][]chash.Placer, workers)
	var start, wg sync.WaitGroup
	start.Add(1)
	for w := 0; w < workers; w++ {
		stored[w] = make([]*token, per)
		got[w] = make([]chash.Placer, 0, per)
		for i := range stored[w] {
			stored[w][i] = &token{n: w*per + i}
		}
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			start.Wait()
			for _, tk := range stored[w] {
				got[w] = append(got[w], h.Swap(tk))
			}
		}(w)
	}
	start.Done()
	wg.Wait()

	seen := make(map[*token]int, workers*per+1)
	for _, ps := range got {
		for _, p := range ps {
			tk, ok := p.(*token)
			require.True(t, ok, "Swap returned %T %v, not a stored token", p, p)
			seen[tk]++
		}
	}
	last, ok := h.Load().(*token)
	require.True(t, ok)
	seen[last]++
	require.Len(t, seen, workers*per+1, "values lost or invented")
	assert.Equal(t, 1, seen[first])
	for _, ts := range stored {
		for _, tk := range ts {
			require.Equal(t, 1, seen[tk], "token %d: times it came back", tk.n)
		}
	}
	// Each goroutine's own stores are ordered: a value it stored before
	// another cannot come back from the Holder after it in that
	// goroutine's results.
	for w, ps := range got {
		for i := 1; i < len(ps); i++ {
			tk := ps[i].(*token)
			require.False(t, tk.n/per == w && tk.n-w*per >= i, "goroutine %d's swap %d returned its own later store %d", w, i, tk.n)
		}
	}
}
