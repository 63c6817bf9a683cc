package chash

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"
)

// sameHash gives every ID that starts with "same-" one hash, and IDs that
// start with "offset-" hashes M apart (one offset, different skips).
type sameHash struct{ m uint64 }

func (h sameHash) Sum64(b []byte) uint64 { return h.Sum64String(string(b)) }

func (h sameHash) Sum64String(s string) uint64 {
	switch {
	case strings.HasPrefix(s, "same-"):
		return 12345
	case strings.HasPrefix(s, "offset-"):
		return 777 + h.m*xxhash.Sum64String(s)%1000
	}
	return xxhash.Sum64String(s)
}

// walkTable fills g's table as the paper does, every claim a walk of the
// node's own preference list, with no shared positions and no ranked
// tail: the table fill must build.
func walkTable(g *Maglev) []int {
	size := g.size
	j := make([]uint64, len(g.perms))
	taken := make([]bool, size)
	out := make([]int, size)
	t := newTurns(g.nodes)
	for range size {
		i := t.next()
		p := g.perms[i]
		for {
			e := (uint64(p.offset) + j[i]*uint64(p.skip)) % size
			j[i]++
			if !taken[e] {
				taken[e], out[e] = true, i
				break
			}
		}
	}
	return out
}

// TestMaglevFillIsTheWalk checks fill, whose last √M claims are ranked and
// whose nodes with equal permutations share a walk, against walkTable:
// equal and unequal weights, IDs whose hashes are equal or share an
// offset, and tables of 2 to 65,537 entries.
func TestMaglevFillIsTheWalk(t *testing.T) {
	ids := func(prefix string, n int) []Node {
		out := make([]Node, n)
		for i := range out {
			out[i] = Node{ID: fmt.Sprintf("%s%d", prefix, i)}
		}
		return out
	}
	weighted := ids("w-", 7)
	for i := range weighted {
		weighted[i].Weight = float64(i + 1)
	}
	cases := []struct {
		name  string
		nodes []Node
	}{
		{"one", ids("n-", 1)},
		{"equal", ids("n-", 40)},
		{"weighted", weighted},
		{"equal-hashes", append(ids("n-", 20), ids("same-", 12)...)},
		{"equal-offsets", append(ids("n-", 20), ids("offset-", 12)...)},
	}
	for _, m := range []int{2, 3, 5, 1009, 65537} {
		for _, c := range cases {
			if len(c.nodes) > m {
				continue
			}
			t.Run(fmt.Sprintf("%s/M=%d", c.name, m), func(t *testing.T) {
				g, err := NewMaglev(c.nodes, WithTableSize(m), WithHasher(sameHash{uint64(m)}))
				if err != nil {
					t.Fatal(err)
				}
				want := walkTable(g)
				for e, i := range want {
					if got := g.at(uint64(e)); got != i {
						t.Fatalf("entry %d: node %d, the walk gives %d", e, got, i)
					}
				}
			})
		}
	}
}
