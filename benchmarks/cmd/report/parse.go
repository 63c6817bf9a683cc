package main

import (
	"bufio"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// results maps a benchmark name, without its GOMAXPROCS suffix and without
// the "Benchmark" prefix, to its samples per unit ("ns/op", "allocs/op").
type results map[string]map[string][]float64

var procSuffix = regexp.MustCompile(`-\d+$`)

// parseFile reads the output of go test -bench; a missing file reads as
// no results.
func parseFile(path string, into results) error {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 4 || !strings.HasPrefix(fields[0], "Benchmark") {
			continue
		}
		name := procSuffix.ReplaceAllString(strings.TrimPrefix(fields[0], "Benchmark"), "")
		if into[name] == nil {
			into[name] = map[string][]float64{}
		}
		for i := 2; i+1 < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				break
			}
			into[name][fields[i+1]] = append(into[name][fields[i+1]], v)
		}
	}
	return sc.Err()
}

// useMin makes get return the fastest sample instead of the median: on a
// shared machine, noise only ever adds time.
var useMin = true

// get returns the minimum or median of name's samples in unit, and whether
// there are any.
func (r results) get(name, unit string) (float64, bool) {
	s := r[name][unit]
	if len(s) == 0 {
		return 0, false
	}
	s = slices.Clone(s)
	slices.Sort(s)
	if useMin {
		return s[0], true
	}
	if len(s)%2 == 1 {
		return s[len(s)/2], true
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2, true
}

func (r results) ns(name string) (float64, bool) { return r.get(name, "ns/op") }

// rel returns a's ns/op relative to b's: the median over passes of the
// ratio within each pass, the i-th sample of a over the i-th of b. On a
// machine whose speed drifts, two benchmarks of one pass ran close together
// in time, so their ratio is steadier than the ratio of two fastest
// samples, which may come from different passes.
func (r results) rel(a, b string) (float64, bool) {
	sa, sb := r[a]["ns/op"], r[b]["ns/op"]
	n := min(len(sa), len(sb))
	if n == 0 {
		return 0, false
	}
	rs := make([]float64, n)
	for i := range rs {
		rs[i] = sa[i] / sb[i]
	}
	slices.Sort(rs)
	if n%2 == 1 {
		return rs[n/2], true
	}
	return (rs[n/2-1] + rs[n/2]) / 2, true
}

// maxOver returns the largest median of unit over names with the prefix,
// and how many there were.
func (r results) maxOver(prefix, unit string) (float64, int) {
	worst, n := 0.0, 0
	for name := range r {
		if strings.HasPrefix(name, prefix) {
			if v, ok := r.get(name, unit); ok {
				worst, n = max(worst, v), n+1
			}
		}
	}
	return worst, n
}
