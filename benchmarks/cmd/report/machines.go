package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"time"
	"unicode"
)

// BENCHMARKS.md holds one section per machine the run has been made on,
// each between a begin marker that records the machine, and an end marker:
// a run rewrites the section of its own machine and keeps the others, so
// that figures from one CPU are never shown as another's. Every table of
// a section is stamped with the machine, the Go version and the commit.
const (
	machineBegin = "<!-- machine: "
	machineEnd   = "<!-- machine:end -->"
)

// machine is where and from what a section's figures come.
type machine struct {
	CPU    string // the CPU model and the number of logical CPUs
	Date   string
	Go     string
	Commit string
}

// thisMachine describes the machine and the tree of the current run.
func thisMachine() machine {
	return machine{
		CPU:    fmt.Sprintf("%s, %d logical CPUs", cpuModel(), runtime.NumCPU()),
		Date:   time.Now().UTC().Format("2006-01-02 15:04 MST"),
		Go:     fmt.Sprintf("%s %s/%s", runtime.Version(), runtime.GOOS, runtime.GOARCH),
		Commit: gitRev(),
	}
}

func cpuModel() string {
	data, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	for _, line := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}

// gitRev returns the commit of the tree, with "+changes" if files the
// run builds differ from it.
func gitRev() string {
	out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	rev := strings.TrimSpace(string(out))
	if err := exec.Command("git", "diff", "--quiet", "HEAD", "--", "*.go", "*.s", "go.mod", "go.sum").Run(); err != nil {
		rev += "+changes"
	}
	return rev
}

func (m machine) marker() string {
	return fmt.Sprintf("%s%s | date: %s | go: %s | commit: %s -->", machineBegin, m.CPU, m.Date, m.Go, m.Commit)
}

// parseMarker reads a begin marker line.
func parseMarker(line string) (machine, bool) {
	rest, ok := strings.CutPrefix(line, machineBegin)
	if !ok {
		return machine{}, false
	}
	rest = strings.TrimSuffix(strings.TrimSpace(rest), "-->")
	fields := strings.Split(rest, " | ")
	m := machine{CPU: strings.TrimSpace(fields[0])}
	for _, f := range fields[1:] {
		k, v, _ := strings.Cut(f, ": ")
		v = strings.TrimSpace(v)
		switch k {
		case "date":
			m.Date = v
		case "go":
			m.Go = v
		case "commit":
			m.Commit = v
		}
	}
	return m, m.CPU != ""
}

// stamp is the line under every heading of a machine's section.
func (m machine) stamp() string {
	return fmt.Sprintf("<sub>%s · %s · commit %s · %s</sub>", m.CPU, m.Go, m.Commit, m.Date)
}

// anchor is the GitHub anchor of the section's heading, the CPU.
func (m machine) anchor() string {
	var b strings.Builder
	for _, r := range strings.ToLower(m.CPU) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}

// slug names the machine's plot files.
func (m machine) slug() string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(strings.Split(m.CPU, ",")[0]) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteRune('-')
			dash = true
		}
	}
	return strings.Trim(strings.NewReplacer("-r-", "-").Replace(b.String()), "-")
}

// section is one machine's part of the document, without its markers.
type section struct {
	m    machine
	body string
}

// parseSections returns the machine sections of a document. A document
// from before machine sections (one run, its CPU in the table at its top)
// becomes the section of that run's machine.
func parseSections(doc string) []section {
	var secs []section
	lines := strings.SplitAfter(doc, "\n")
	for i := 0; i < len(lines); i++ {
		m, ok := parseMarker(strings.TrimSpace(lines[i]))
		if !ok {
			continue
		}
		var body strings.Builder
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != machineEnd; i++ {
			body.WriteString(lines[i])
		}
		secs = append(secs, section{m: m, body: body.String()})
	}
	if len(secs) == 0 {
		if s, ok := legacySection(doc); ok {
			secs = append(secs, s)
		}
	}
	return secs
}

// legacySection turns a whole document of one run, as the report wrote
// them before machine sections, into that machine's section: from its
// table of the run's date, Go, CPU and commit to its end, headings one
// level down and stamped.
func legacySection(doc string) (section, bool) {
	start := strings.Index(doc, "| | |\n|---|---|\n")
	if start < 0 {
		return section{}, false
	}
	var m machine
	for _, line := range strings.Split(doc[start:], "\n")[2:] {
		if !strings.HasPrefix(line, "| ") {
			break
		}
		cells := strings.Split(line, " | ")
		if len(cells) < 2 {
			continue
		}
		k, v := strings.TrimPrefix(cells[0], "| "), strings.TrimSuffix(cells[1], " |")
		switch k {
		case "date":
			m.Date = v
		case "Go":
			m.Go = v
		case "CPU":
			m.CPU = v
		case "commit":
			m.Commit = v
		}
	}
	if m.CPU == "" {
		return section{}, false
	}
	return section{m: m, body: "## " + m.CPU + "\n\n" + stampHeadings(demote(doc[start:]), m)}, true
}

// demote moves every heading one level down.
func demote(text string) string {
	lines := strings.SplitAfter(text, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "#") {
			lines[i] = "#" + l
		}
	}
	return strings.Join(lines, "")
}

// stampHeadings puts the machine's stamp under every heading below the
// section's own, once.
func stampHeadings(text string, m machine) string {
	lines := strings.SplitAfter(text, "\n")
	var b strings.Builder
	for i, l := range lines {
		b.WriteString(l)
		if !strings.HasPrefix(l, "###") {
			continue
		}
		next := ""
		for _, n := range lines[i+1:] {
			if strings.TrimSpace(n) != "" {
				next = n
				break
			}
		}
		if !strings.HasPrefix(next, "<sub>") {
			b.WriteString("\n" + m.stamp() + "\n")
		}
	}
	return b.String()
}

// merge returns the document with sec as its machine's section, replacing
// the section of the same CPU if there is one and keeping every other,
// newest first, after intro and a list of the machines.
func merge(old, intro string, sec section) string {
	secs := []section{sec}
	for _, s := range parseSections(old) {
		if s.m.CPU != sec.m.CPU {
			secs = append(secs, s)
		}
	}
	slices.SortStableFunc(secs, func(a, b section) int { return strings.Compare(b.m.Date, a.m.Date) })
	var b strings.Builder
	b.WriteString("# Benchmarks\n\n")
	b.WriteString(intro)
	b.WriteString("Machines, newest run first (each section's tables are from that machine only):\n\n")
	for _, s := range secs {
		fmt.Fprintf(&b, "- [%s](#%s): %s, %s, commit %s\n", s.m.CPU, s.m.anchor(), s.m.Date, s.m.Go, s.m.Commit)
	}
	b.WriteString("\n")
	for _, s := range secs {
		b.WriteString(s.m.marker() + "\n")
		b.WriteString(strings.TrimRight(s.body, "\n") + "\n\n")
		b.WriteString(machineEnd + "\n\n")
	}
	return strings.TrimRight(b.String(), "\n") + "\n"
}

// introText opens the document: what the figures are, for every machine.
func introText() string {
	var b strings.Builder
	b.WriteString("chash against the Go placement libraries people use today, one algorithm family at a time: the same node names\n")
	b.WriteString("(`node-0` …), the same keys and the same harness for every library (each lookup is one call through a Go func\n")
	b.WriteString("value, so every library pays the same overhead). **Ratios are chash / peer: below 1 means chash is faster.**\n")
	if useMin {
		b.WriteString("Each time is the fastest of the passes (each pass runs the library's suite, then the comparison suite):\n")
		b.WriteString("on a shared machine noise only adds time. Each ratio is the median over the passes of the ratio within one\n")
		b.WriteString("pass, where the two ran minutes apart at most, so it need not equal the quotient of the two fastest times\n")
		b.WriteString("shown beside it. benchstat's medians are at the end of each machine's section. Absolute times depend on the\n")
		b.WriteString("machine, and so, less, do ratios: `benchmarks/run.sh` rewrites the section of the machine it runs on and keeps\n")
		b.WriteString("the others.\n\n")
	} else {
		b.WriteString("Each figure is the median of the passes; absolute times depend on the machine, ratios less.\n\n")
	}
	return b.String()
}

// machineTable is the top of a machine's section.
func machineTable(m machine, command, settings string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## %s\n\n| | |\n|---|---|\n", m.CPU)
	fmt.Fprintf(&b, "| date | %s |\n| Go | %s |\n| CPU | %s |\n", m.Date, m.Go, m.CPU)
	if settings != "" {
		fmt.Fprintf(&b, "| settings | `%s` |\n", settings)
	}
	fmt.Fprintf(&b, "| reproduce | `%s` (from the repository root) |\n", command)
	fmt.Fprintf(&b, "| commit | %s |\n\n", m.Commit)
	return b.String()
}

// spliceScale replaces the scaling part of this machine's section of the
// document at path with scale (written at the report's heading levels),
// creating the section if the machine has none.
func spliceScale(path string, m machine, command, scale string) error {
	old, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	part := stampHeadings(demote(scale), m)
	sec := section{m: m, body: machineTable(m, command, "") + part}
	for _, s := range parseSections(string(old)) {
		if s.m.CPU != m.CPU {
			continue
		}
		i, j := strings.Index(s.body, scaleBegin), strings.Index(s.body, scaleEnd)
		if i >= 0 && j > i {
			s.body = s.body[:i] + part + strings.TrimPrefix(s.body[j+len(scaleEnd):], "\n")
		} else {
			s.body = strings.TrimRight(s.body, "\n") + "\n\n" + part
		}
		// The section keeps the run it came from; its scaling part says
		// when it was rewritten.
		sec = s
	}
	return os.WriteFile(path, []byte(merge(string(old), introText(), sec)), 0o644)
}
