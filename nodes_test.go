package chash

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/keyplace/chash/internal/place"
	"github.com/stretchr/testify/require"
)

// TestSortByID checks sortByID against a plain sort by ID on lists made to
// defeat its integer keys: IDs that share long prefixes, are prefixes of
// each other, contain zero bytes (which pad short keys), differ only past
// the key's 8 bytes or only in the bits the index takes, repeat, or are
// already sorted.
func TestSortByID(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"\x00", "\x01", "a", "b", "\xff", "node-", "1", "10"}
	gen := map[string]func(n int) []string{
		"numbered": func(n int) []string {
			ids := make([]string, n)
			for i := range ids {
				ids[i] = fmt.Sprintf("node-%d", i)
			}
			return ids
		},
		"pieces": func(n int) []string {
			ids := make([]string, n)
			for i := range ids {
				var b strings.Builder
				for j := rng.IntN(6); j >= 0; j-- {
					b.WriteString(alphabet[rng.IntN(len(alphabet))])
				}
				ids[i] = b.String()
			}
			return ids
		},
		"long prefix": func(n int) []string {
			ids := make([]string, n)
			for i := range ids {
				ids[i] = strings.Repeat("x", 100) + fmt.Sprintf("%016x", rng.Uint64()>>uint(rng.IntN(64)))
			}
			return ids
		},
		"past 8 bytes": func(n int) []string {
			ids := make([]string, n)
			for i := range ids {
				ids[i] = fmt.Sprintf("%c1234567-%d", 'a'+rng.IntN(2), rng.IntN(n))
			}
			return ids
		},
		"low bits": func(n int) []string {
			ids := make([]string, n)
			for i := range ids {
				ids[i] = string([]byte{'a', 0, 0, 0, 0, 0, 0, byte(rng.IntN(4))}) + string(rune('a'+rng.IntN(3)))
			}
			return ids
		},
	}
	for name, g := range gen {
		for _, n := range []int{2, 3, 7, 64, 257, 1000} {
			for round := 0; round < 5; round++ {
				ids := g(n)
				if round == 4 {
					slices.Sort(ids)
				}
				nodes := make([]Node, n)
				for i, id := range ids {
					nodes[i] = Node{ID: id, Weight: float64(i)}
				}
				got := slices.Clone(nodes)
				sortByID(got)
				require.True(t, slices.IsSortedFunc(got, compareIDs), "%s, %d nodes", name, n)
				// The same nodes, each once: weights are the original indexes.
				seen := make([]bool, n)
				for _, nd := range got {
					i := int(nd.Weight)
					require.False(t, seen[i], "%s, %d nodes: node %d twice", name, n, i)
					seen[i] = true
					require.Equal(t, nodes[i].ID, nd.ID, "%s, %d nodes, round %d", name, n, round)
				}
			}
		}
	}
}

func BenchmarkCheckNodes(b *testing.B) {
	for _, n := range []int{64, 1000} {
		nodes := make([]Node, n)
		for i := range nodes {
			nodes[i] = Node{ID: fmt.Sprintf("node-%d", i)}
		}
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := checkNodes(nodes, true); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestAppendNode checks appendNode against append: the same contents,
// growth when dst is full, dst's array reused when it has room, and a node
// read from the array that growing replaces.
func TestAppendNode(t *testing.T) {
	nodes := []Node{{ID: "a", Weight: 1}, {ID: "b", Weight: 2, Zone: "z"}, {ID: "c", Weight: 3}}
	var got, want []Node
	for i := range 20 {
		n := &nodes[i%len(nodes)]
		got, want = place.Append(got, n), append(want, *n)
		require.Equal(t, want, got)
		require.Equal(t, cap(want), cap(got), "growth after %d nodes", i+1)
	}
	buf := make([]Node, 1, 4)
	out := place.Append(buf, &nodes[1])
	require.Same(t, &buf[:2][1], &out[1], "a dst with room keeps its array")
	require.Zero(t, testing.AllocsPerRun(100, func() { place.Append(buf[:1], &nodes[2]) }))
	full := []Node{nodes[0], nodes[1]} // len == cap: appending grows it
	out = place.Append(full, &full[1])
	require.Equal(t, []Node{nodes[0], nodes[1], nodes[1]}, out)
}
