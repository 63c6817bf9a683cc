// Command report turns the benchmark output of the library and of the
// comparison module into BENCHMARKS.md: ratios of chash to each peer of the
// same algorithm, the targets and where each stands, quality and
// findings measured in the same run.
//
//	go run ./cmd/report -root root.txt -cmp cmp.txt -out BENCHMARKS.md
package main

import (
	"bytes"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/keyplace/chash/benchmarks"
)

func main() {
	rootFile := flag.String("root", "root.txt", "go test -bench output of the library")
	cmpFile := flag.String("cmp", "cmp.txt", "go test -bench output of the comparison module")
	statFile := flag.String("benchstat", "", "benchstat output to attach, if any")
	out := flag.String("out", "BENCHMARKS.md", "file to write")
	command := flag.String("command", "benchmarks/run.sh", "command that reproduces the run")
	settings := flag.String("settings", "", "benchmark settings, such as -count 5")
	keys := flag.Int("keys", 200_000, "keys for the quality table")
	notes := flag.String("notes", "", "Markdown file of analysis to include after the targets")
	stat := flag.String("stat", "min", "statistic of the samples: min (fastest pass) or median")
	scaleFile := flag.String("scale", "", "BenchmarkScale output for the scaling section and its plots, if any")
	scaleNotes := flag.String("scale-notes", "", "Markdown file of analysis to include in the scaling section")
	scaleCommand := flag.String("scale-command", "benchmarks/run.sh -scale", "command that regenerates the scaling section")
	scaleSettings := flag.String("scale-settings", "", "settings of the scaling run")
	scaleOnly := flag.Bool("scale-only", false, "rewrite only the scaling section of -out (and its plots)")
	flag.Parse()
	useMin = *stat != "median"

	m := thisMachine()
	lookupPlot, memoryPlot = plotFiles(m)
	var sc bytes.Buffer
	if *scaleFile != "" {
		s, err := readScale(*scaleFile)
		if err != nil {
			log.Fatal(err)
		}
		if err := s.section(&sc, *scaleCommand, *scaleSettings, *scaleNotes); err != nil {
			log.Fatal(err)
		}
		if err := s.plots(filepath.Dir(*out)); err != nil {
			log.Fatal(err)
		}
	}
	if *scaleOnly {
		if err := spliceScale(*out, m, *scaleCommand, sc.String()); err != nil {
			log.Fatal(err)
		}
		return
	}

	root, cmp := results{}, results{}
	if err := parseFile(*rootFile, root); err != nil {
		log.Fatal(err)
	}
	if err := parseFile(*cmpFile, cmp); err != nil {
		log.Fatal(err)
	}
	r := &report{root: root, cmp: cmp, subjects: benchmarks.Subjects()}
	var b bytes.Buffer
	r.headline(&b)
	r.targets(&b)
	if *notes != "" {
		text, err := os.ReadFile(*notes)
		if err != nil {
			log.Fatal(err)
		}
		b.Write(text)
		b.WriteString("\n")
	}
	r.interleavedTable(&b)
	r.lookupTable(&b)
	r.formTable(&b)
	r.rootTable(&b)
	r.topKTable(&b)
	r.buildTable(&b)
	r.parallelTable(&b)
	r.quality(&b, *keys)
	r.findings(&b)
	r.setup(&b)
	if sc.Len() > 0 {
		b.WriteString("\n")
		b.Write(sc.Bytes())
	}
	if *statFile != "" {
		if stat, err := os.ReadFile(*statFile); err == nil && len(stat) > 0 {
			fmt.Fprintf(&b, "\n<details><summary>benchstat of every benchmark (median ± 95%% interval)</summary>\n\n```\n%s```\n</details>\n", stat)
		}
	}
	old, err := os.ReadFile(*out)
	if err != nil && !os.IsNotExist(err) {
		log.Fatal(err)
	}
	sec := section{m: m, body: machineTable(m, *command, *settings) + stampHeadings(demote(b.String()), m)}
	if err := os.WriteFile(*out, []byte(merge(string(old), introText(), sec)), 0o644); err != nil {
		log.Fatal(err)
	}
}

type report struct {
	root, cmp results
	subjects  []benchmarks.Subject
}
