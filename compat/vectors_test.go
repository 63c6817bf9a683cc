package compat_test

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/keyplace/chash"
	"github.com/stretchr/testify/require"
)

// compatSet is one configuration of a vector file: its servers in the
// order the reference system was given them.
type compatSet struct {
	name  string
	nodes []chash.Node
}

// compatFile is a testdata/<system>/vectors.tsv written by its generator,
// testdata/gen/<system> (a module of its own that runs the real system): "#set" lines name each configuration's servers as id=weight,
// and each other line is a key followed by, per set, the index in the set
// of the server the reference chose (-1: not checked).
type compatFile struct {
	sets []compatSet
	keys []string
	want [][]int // want[key][set]
}

func readCompatVectors(t *testing.T, file string) compatFile {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "testdata", file))
	require.NoError(t, err)
	defer f.Close()
	var v compatFile
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		fields := strings.Split(line, "\t")
		switch {
		case strings.HasPrefix(line, "#set\t"):
			s := compatSet{name: fields[1]}
			for _, f := range fields[2:] {
				i := strings.LastIndexByte(f, '=')
				w, err := strconv.Atoi(f[i+1:])
				require.NoError(t, err, line)
				s.nodes = append(s.nodes, chash.Node{ID: f[:i], Weight: float64(w)})
			}
			v.sets = append(v.sets, s)
		case strings.HasPrefix(line, "#"):
		default:
			require.Len(t, fields, len(v.sets)+1, "line %q", line)
			row := make([]int, len(v.sets))
			for j, f := range fields[1:] {
				row[j], err = strconv.Atoi(f)
				require.NoError(t, err)
			}
			v.keys = append(v.keys, fields[0])
			v.want = append(v.want, row)
		}
	}
	require.NoError(t, sc.Err())
	require.NotEmpty(t, v.sets)
	require.Greater(t, len(v.keys), 1000)
	return v
}

// checkCompatVectors builds each set's placer with build and requires that it
// agrees with the reference on every key, through Lookup, LookupString and
// the first node of AppendTopK; a set for which build returns a nil placer
// is skipped. It returns the number of keys checked.
func checkCompatVectors(t *testing.T, file string, build func(s compatSet) (chash.Placer, error)) int {
	t.Helper()
	v := readCompatVectors(t, file)
	system := file
	checked := 0
	for j, s := range v.sets {
		p, err := build(s)
		require.NoError(t, err, "set %s", s.name)
		if p == nil {
			continue // the caller checks this set itself
		}
		mismatches := 0
		for i, key := range v.keys {
			if v.want[i][j] < 0 {
				continue
			}
			want := s.nodes[v.want[i][j]].ID
			got := p.LookupString(key).ID
			if got != want || p.Lookup([]byte(key)).ID != want || p.AppendTopKString(nil, key, 2)[0].ID != want {
				if mismatches++; mismatches <= 5 {
					t.Errorf("%s set %s key %q: got %s, want %s", system, s.name, key, got, want)
				}
			}
			checked++
		}
		require.Zero(t, mismatches, "%s set %s: %d mismatches", system, s.name, mismatches)
	}
	t.Logf("%s: %d sets, %d keys, %d placements checked, 0 mismatches", system, len(v.sets), len(v.keys), checked)
	return checked
}
