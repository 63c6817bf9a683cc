package chash

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAppendFewIsTheOrder checks appendFew, with its best3, and best
// against the order they must give: higher m first, then the lower index,
// node skip left out. Seeds repeat on purpose, so that equal scores meet
// in every slot, and node counts reach past movesFirst.
func TestAppendFewIsTheOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 2, 3, 4, 5, 8, 63, 64, 65, 66, 100, 1000} {
		nodes := make([]Node, n)
		for i := range nodes {
			nodes[i] = Node{ID: fmt.Sprint(i)}
		}
		for trial := 0; trial < 50; trial++ {
			s := straw2{seeds: make([]uint64, n)}
			distinct := 1 + rng.IntN(n) // few distinct seeds: many ties
			if trial%2 == 0 {
				distinct = n
			}
			for i := range s.seeds {
				s.seeds[i] = uint64(rng.IntN(distinct)) * 0x9e3779b97f4a7c15
			}
			s.collide = collide(s.seeds)
			h := rng.Uint64()
			for _, skip := range []int{-1, 0, n / 2, n - 1} {
				order := make([]int, 0, n)
				for i := range n {
					if i != skip {
						order = append(order, i)
					}
				}
				slices.SortStableFunc(order, func(a, b int) int {
					return cmp.Compare(mix64(h^s.seeds[b]), mix64(h^s.seeds[a]))
				})
				if skip < 0 {
					require.Equal(t, order[0], s.best(h), "best: n=%d trial=%d", n, trial)
				}
				for k := 1; k <= fewK; k++ {
					got := s.appendFew([]Node{}, nodes, h, k, skip)
					want := make([]Node, 0, k)
					for _, i := range order[:min(k, len(order))] {
						want = append(want, nodes[i])
					}
					require.Equal(t, want, got, "n=%d k=%d skip=%d trial=%d", n, k, skip, trial)
				}
			}
		}
	}
}
