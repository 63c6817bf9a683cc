package chash

import (
	"bufio"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestFlipHashVectors checks FlipHash against Datadog's Rust crate
// fliphash: testdata/fliphash/vectors.tsv, printed by the crate's
// fliphash_64_with_seed (testdata/fliphash/gen), over every range width
// from 1 to 64 bits, with seeds 0, 123456789 and 2^64-1, and
// testdata/fliphash/shared_sample.txt, a copy of the project's shared
// sample of the crate's outputs (shared/vectors/algorithms/
// fliphash_rs.sample.txt). The crate's seed s is the key key^s, and its
// range ..=end is end+1 buckets: every vector must agree.
func TestFlipHashVectors(t *testing.T) {
	n := 0
	for _, path := range []string{"testdata/fliphash/vectors.tsv", "testdata/fliphash/shared_sample.txt"} {
		rows := readFlipVectors(t, path)
		if len(rows) < 900 {
			t.Fatalf("%s: %d vectors, want at least 900", path, len(rows))
		}
		for _, v := range rows {
			key, seed, end, want := v[0], v[1], v[2], v[3]
			if got := flipHash(key^seed, end); got != want {
				t.Errorf("%s: fliphash_64_with_seed(%#x, %#x, ..=%d) = %d, FlipHash gives %d", path, key, seed, end, want, got)
			}
			if end < 1<<62 && end < math.MaxInt { // int(end+1) fits: 32 bits on 386
				if got := FlipHash(key^seed, int(end+1)); uint64(got) != want {
					t.Errorf("%s: FlipHash(%#x, %d) = %d, want %d", path, key^seed, end+1, got, want)
				}
			}
			n++
		}
	}
	t.Logf("%d vectors agree", n)
}

// readFlipVectors reads key_hex, seed_hex, range_end and result columns,
// separated by tabs or spaces, skipping headers and a leading "flip" tag.
func readFlipVectors(t *testing.T, path string) [][4]uint64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out [][4]uint64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 0 && fields[0] == "flip" {
			fields = fields[1:]
		}
		if len(fields) != 4 || strings.HasPrefix(fields[0], "#") || fields[0] == "key_hex" {
			continue
		}
		var v [4]uint64
		for i, s := range fields {
			base := 16
			if i >= 2 {
				base = 10
			}
			if v[i], err = strconv.ParseUint(s, base, 64); err != nil {
				t.Fatalf("%s: %q: %v", path, sc.Text(), err)
			}
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
