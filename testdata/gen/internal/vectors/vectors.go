// Package vectors holds what the generators of the compatibility vectors
// share: the keys, the standard server sets and the TSV writer. The format
// is read by compat_vectors_test.go in the chash package.
package vectors

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Keys returns the keys every vector file checks: key-0 .. key-(n-1), then
// edge cases (empty, braces as go-redis parses hash tags, and keys of 250
// to 1000 bytes, around gomemcache's 256-byte hashing limit).
func Keys(n int, empty bool) []string {
	var out []string
	for i := 0; i < n; i++ {
		out = append(out, fmt.Sprintf("key-%d", i))
	}
	if empty {
		out = append(out, "")
	}
	out = append(out, "{", "}", "{}", "}{", "{a}", "a{b}c", "{a}{b}", "x{}{y}", "{{a}}", "}{a}", "a{b", "{}{a}", "{user1000}.following", "{user1000}.followers", "foo{}bar")
	for _, n := range []int{250, 255, 256, 257, 300, 1000} {
		out = append(out, strings.Repeat("k", n-4)+fmt.Sprintf("%04d", n))
	}
	return out
}

// Set is one configuration: IDs and weights in the order given to the system.
type Set struct {
	Name    string
	IDs     []string
	Weights []int
}

func (s Set) header() string {
	var b strings.Builder
	b.WriteString("#set\t" + s.Name)
	for i, id := range s.IDs {
		fmt.Fprintf(&b, "\t%s=%d", id, s.Weights[i])
	}
	return b.String()
}

// StandardSets returns U3, U5, U10 (equal), A6 (U5 with a sixth server
// added), R4 (U5 without its middle server) and, if weighted, W5 (weights
// 1, 1, 2, 3, 5), naming server i by id(i).
func StandardSets(id func(i int) string, weighted bool) []Set {
	mk := func(name string, idx []int, w []int) Set {
		s := Set{Name: name}
		for j, i := range idx {
			s.IDs = append(s.IDs, id(i))
			if w == nil {
				s.Weights = append(s.Weights, 1)
			} else {
				s.Weights = append(s.Weights, w[j])
			}
		}
		return s
	}
	out := []Set{
		mk("U3", []int{1, 2, 3}, nil),
		mk("U5", []int{1, 2, 3, 4, 5}, nil),
		mk("U10", []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, nil),
		mk("A6", []int{1, 2, 3, 4, 5, 6}, nil),
		mk("R4", []int{1, 2, 4, 5}, nil),
	}
	if weighted {
		out = append(out, mk("W5", []int{1, 2, 3, 4, 5}, []int{1, 1, 2, 3, 5}))
	}
	return out
}

// Write prints the sets' headers and, for each key, the index in each set's
// list of the server pick returns (-1 where the system gives none).
func Write(w io.Writer, comment string, sets []Set, ks []string, pick func(s Set, key string) (string, error)) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, "# "+strings.ReplaceAll(comment, "\n", "\n# "))
	for _, s := range sets {
		fmt.Fprintln(bw, s.header())
	}
	for _, k := range ks {
		bw.WriteString(k)
		for _, s := range sets {
			got, err := pick(s, k)
			if err != nil {
				return fmt.Errorf("set %s key %q: %v", s.Name, k, err)
			}
			idx := slices.Index(s.IDs, got)
			if idx < 0 {
				return fmt.Errorf("set %s key %q: picked %q, not in the set", s.Name, k, got)
			}
			fmt.Fprintf(bw, "\t%d", idx)
		}
		bw.WriteString("\n")
	}
	return bw.Flush()
}
