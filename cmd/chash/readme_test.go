package main

import (
	"flag"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var updateReadme = flag.Bool("update", false, "rewrite the sample output in ../../README.md")

// readmePath is the README whose sample TestReadmeSample checks.
const readmePath = "../../README.md"

// readmeSample returns the README, and the start and end offsets of the
// first fenced block after the line that introduces `go run ./cmd/chash`.
func readmeSample(t *testing.T) (doc string, start, end int) {
	b, err := os.ReadFile(readmePath)
	require.NoError(t, err)
	doc = string(b)
	intro := strings.Index(doc, "`go run ./cmd/chash` compares every algorithm")
	require.GreaterOrEqual(t, intro, 0, "the README no longer introduces the sample")
	open := strings.Index(doc[intro:], "```\n")
	require.GreaterOrEqual(t, open, 0)
	start = intro + open + len("```\n")
	close := strings.Index(doc[start:], "```")
	require.GreaterOrEqual(t, close, 0)
	return doc, start, start + close
}

// TestReadmeSample runs the command as the README's first set-up command
// does and checks the README shows its output: every figure but the lookup
// times, which are measured anew, and the retained memory, which the
// runtime's accounting moves by a few bytes from run to run (within 10%).
// -update rewrites the sample from this run.
func TestReadmeSample(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the full comparison (1,000,000 keys)")
	}
	if strconv.IntSize == 32 {
		t.Skip("the README's memory figures are a 64-bit platform's")
	}
	out, _ := runCode(t, 0)
	doc, start, end := readmeSample(t)
	if *updateReadme {
		require.NoError(t, os.WriteFile(readmePath, []byte(doc[:start]+out+doc[end:]), 0o644))
		return
	}
	want, got := strings.Split(doc[start:end], "\n"), strings.Split(out, "\n")
	require.Equal(t, len(got), len(want), "the README's sample has another shape: run with -update\n%s", out)
	for i := range want {
		w, g := maskSample(want[i]), maskSample(got[i])
		assert.Equal(t, w.text, g.text, "line %d differs: run with -update", i+1)
		if w.mem > 0 && g.mem > 0 {
			assert.InEpsilon(t, w.mem, g.mem, 0.1, "line %d: memory %v in the README, %v now", i+1, w.mem, g.mem)
		}
	}
}

// sampleRow matches a row of the comparison table: its lookup time and
// retained memory at the end.
var sampleRow = regexp.MustCompile(`^(.*?)\s+(\d+) ns\s+([\d.]+) (B|KiB|MiB)$`)

type maskedLine struct {
	text string
	mem  float64 // bytes, for a table row
}

// maskSample blanks a table row's lookup time and memory, and folds runs
// of spaces, since a column as wide as its widest time moves the others.
func maskSample(line string) maskedLine {
	m := sampleRow.FindStringSubmatch(line)
	if m == nil {
		return maskedLine{text: strings.Join(strings.Fields(line), " ")}
	}
	v, _ := strconv.ParseFloat(m[3], 64)
	unit := map[string]float64{"B": 1, "KiB": 1 << 10, "MiB": 1 << 20}[m[4]]
	return maskedLine{text: strings.Join(strings.Fields(m[1]), " ") + " <lookup> <memory>", mem: math.Max(v*unit, 1)}
}
