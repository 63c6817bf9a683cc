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
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

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
		if err := splice(*out, sc.Bytes()); err != nil {
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
	r.header(&b, *command, *settings)
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
	r.lookupTable(&b)
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
	if err := os.WriteFile(*out, b.Bytes(), 0o644); err != nil {
		log.Fatal(err)
	}
}

type report struct {
	root, cmp results
	subjects  []benchmarks.Subject
}

func (r *report) header(b *bytes.Buffer, command, settings string) {
	fmt.Fprintf(b, "# Benchmarks\n\n")
	fmt.Fprintf(b, "chash against the Go placement libraries people use today, one algorithm family at a time: the same node names\n")
	fmt.Fprintf(b, "(`node-0` …), the same keys and the same harness for every library (each lookup is one call through a Go func\n")
	fmt.Fprintf(b, "value, so every library pays the same overhead). **Ratios are chash / peer: below 1 means chash is faster.**\n")
	if useMin {
		fmt.Fprintf(b, "Each time is the fastest of the passes (each pass runs the library's suite, then the comparison suite):\n")
		fmt.Fprintf(b, "on a shared machine noise only adds time. Each ratio is the median over the passes of the ratio within one\n")
		fmt.Fprintf(b, "pass, where the two ran minutes apart at most, so it need not equal the quotient of the two fastest times\n")
		fmt.Fprintf(b, "shown beside it. benchstat's medians are at the end. Absolute times depend on the machine, ratios much less.\n\n")
	} else {
		fmt.Fprintf(b, "Each figure is the median of the passes; absolute times depend on the machine, ratios much less.\n\n")
	}
	fmt.Fprintf(b, "| | |\n|---|---|\n")
	fmt.Fprintf(b, "| date | %s |\n", time.Now().UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(b, "| Go | %s %s/%s |\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(b, "| CPU | %s, %d logical CPUs |\n", cpuModel(), runtime.NumCPU())
	if settings != "" {
		fmt.Fprintf(b, "| settings | `%s` |\n", settings)
	}
	fmt.Fprintf(b, "| reproduce | `%s` (from the repository root) |\n", command)
	if rev := gitRev(); rev != "" {
		fmt.Fprintf(b, "| commit | %s |\n", rev)
	}
	b.WriteString("\n")
}

func cpuModel() string {
	data, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	for _, line := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

func gitRev() string {
	out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}
