package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strings"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/benchmarks"
)

// The scaling section sits between these markers, so that
// benchmarks/run.sh -scale can rewrite it alone.
const (
	scaleBegin = "<!-- scale:begin (benchmarks/run.sh -scale rewrites this section) -->"
	scaleEnd   = "<!-- scale:end -->"
)

// Plot files, written next to BENCHMARKS.md: one pair per machine (see
// plotFiles).
var (
	lookupPlot = "benchmarks-scale-lookup.png"
	memoryPlot = "benchmarks-scale-memory.png"
)

// plotFiles names the plots of machine m.
func plotFiles(m machine) (lookup, memory string) {
	return "benchmarks-scale-lookup-" + m.slug() + ".png", "benchmarks-scale-memory-" + m.slug() + ".png"
}

// scale holds BenchmarkScale's results and the memberships an algorithm
// could not be built at, with the constructor's error.
type scale struct {
	res   results
	stops map[string]string // "algorithm/n" -> reason
}

// readScale parses BenchmarkScale output: the benchmark lines and the
// "scale-stop" lines it prints for memberships it cannot build.
func readScale(path string) (*scale, error) {
	s := &scale{res: results{}, stops: map[string]string{}}
	if err := parseFile(path, s.res); err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fs := strings.SplitN(sc.Text(), "\t", 4); len(fs) == 4 && fs[0] == "scale-stop" {
			s.stops[fs[1]+"/"+fs[2]] = fs[3]
		}
	}
	return s, sc.Err()
}

func scaleName(a chash.Algorithm, n int, what string) string {
	return fmt.Sprintf("Scale/%v/nodes=%d/%s", a, n, what)
}

// get returns a figure of algorithm a at n nodes.
func (s *scale) get(a chash.Algorithm, n int, what, unit string) (float64, bool) {
	return s.res.get(scaleName(a, n, what), unit)
}

// hash returns the bare hash of keys of the given size, measured beside
// the membership of n nodes.
func (s *scale) hash(n, size int) (float64, bool) {
	return s.res.ns(fmt.Sprintf("Scale/hash/nodes=%d/key=%d", n, size))
}

// section writes the scaling report: tables, plots and notes.
func (s *scale) section(b *bytes.Buffer, command, settings, notes string) error {
	b.WriteString(scaleBegin + "\n")
	b.WriteString("## Scaling: every algorithm from 8 to 100,000 nodes\n\n")
	fmt.Fprintf(b, "Regenerate this section alone with `%s` (from the repository root; settings: %s; load average\n", command, settings)
	fmt.Fprintf(b, "when the report was written: %s on %d logical CPUs, so the machine was shared). Every figure goes\n", loadAvg(), runtime.NumCPU())
	fmt.Fprintf(b, "through the `Placer` interface (`LookupString`, `AppendTopKString` into a reused buffer) with %s distinct keys,\n", thousands(benchmarks.BenchKeyCount))
	b.WriteString("default options except Maglev, whose table grows with the membership (the smallest prime ≥ max(65,537, 100·n), at\n")
	b.WriteString("most 16,777,213). \"× hash\" is the lookup over the bare xxhash of the same keys, measured beside it. Build memory\n")
	b.WriteString("is the bytes allocated while building; retained memory is what the built placer keeps alive after a GC (node IDs\n")
	b.WriteString("are shared with the caller's list and not counted).\n\n")
	fmt.Fprintf(b, "![lookup cost against node count](%s)\n![retained memory against node count](%s)\n\n", lookupPlot, memoryPlot)
	for _, size := range benchmarks.ScaleKeySizes {
		s.table(b, fmt.Sprintf("Lookup, %d-byte keys: ns (× hash)", size), func(a chash.Algorithm, n int) string {
			return s.timeCell(a, n, fmt.Sprintf("Lookup/key=%d", size), size)
		})
	}
	s.table(b, "Top-3 list, 13-byte keys: ns (× hash)", func(a chash.Algorithm, n int) string {
		return s.timeCell(a, n, "TopK3/key=13", 13)
	})
	s.table(b, "Build time", func(a chash.Algorithm, n int) string {
		v, ok := s.get(a, n, "Build", "ns/op")
		return cellOr(ok, dur(v))
	})
	s.table(b, "Build memory (allocated while building)", func(a chash.Algorithm, n int) string {
		v, ok := s.get(a, n, "Build", "B/op")
		return cellOr(ok, size(v))
	})
	s.table(b, "Retained memory (kept by the placer)", func(a chash.Algorithm, n int) string {
		v, ok := s.get(a, n, "Build", "retained-B")
		return cellOr(ok, size(max(v, 0)))
	})
	s.stopList(b)
	if notes != "" {
		text, err := os.ReadFile(notes)
		if err != nil {
			return err
		}
		b.Write(text)
		b.WriteString("\n")
	}
	b.WriteString(scaleEnd + "\n")
	return nil
}

// loadAvg returns the 1, 5 and 15-minute load averages, or "unknown".
func loadAvg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(data)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], ", ")
	}
	return "unknown"
}

func cellOr(ok bool, s string) string {
	if !ok {
		return "–"
	}
	return s
}

func (s *scale) timeCell(a chash.Algorithm, n int, what string, keySize int) string {
	v, ok := s.get(a, n, what, "ns/op")
	if !ok {
		if _, stopped := s.stops[fmt.Sprintf("%v/%d", a, n)]; stopped {
			return "stops¹"
		}
		return "–"
	}
	if h, ok := s.hash(n, keySize); ok && h > 0 {
		return fmt.Sprintf("%s (%s)", dur(v), ratio(v/h))
	}
	return dur(v)
}

// table writes one row per algorithm and one column per node count.
func (s *scale) table(b *bytes.Buffer, title string, cell func(chash.Algorithm, int) string) {
	fmt.Fprintf(b, "**%s**\n\n| algorithm |", title)
	for _, n := range benchmarks.ScaleNodeCounts {
		fmt.Fprintf(b, " %s |", thousands(n))
	}
	b.WriteString("\n|---|" + rep("---|", len(benchmarks.ScaleNodeCounts)) + "\n")
	for _, a := range benchmarks.ScaleAlgorithms() {
		fmt.Fprintf(b, "| %v |", a)
		for _, n := range benchmarks.ScaleNodeCounts {
			fmt.Fprintf(b, " %s |", cell(a, n))
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
}

func (s *scale) stopList(b *bytes.Buffer) {
	if len(s.stops) == 0 {
		return
	}
	b.WriteString("¹ Where an algorithm stops (its constructor's error at that membership):\n\n")
	for _, a := range benchmarks.ScaleAlgorithms() {
		for _, n := range benchmarks.ScaleNodeCounts {
			if why, ok := s.stops[fmt.Sprintf("%v/%d", a, n)]; ok {
				fmt.Fprintf(b, "- %v at %s nodes: `%s`\n", a, thousands(n), why)
			}
		}
	}
	b.WriteString("\n")
}
