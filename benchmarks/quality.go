package benchmarks

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// QualityNodes is the membership quality is measured at: 64 nodes, and
// 200,000 keys give about 3,000 keys a node, so sampling noise in a
// node's load is under 2%.
const QualityNodes = 64

// Quality is how well one subject spreads keys and how few it moves.
type Quality struct {
	Subject Subject
	Keys    int
	// PeakMean is the most loaded node's keys over the mean.
	PeakMean float64
	// AddMoved is the fraction of keys whose owner changes when node-64
	// joins (ideal 1/65); AddCollateral the fraction that move to a node
	// other than the new one (ideal 0).
	AddMoved, AddCollateral float64
	// RemoveMoved is the fraction of keys whose owner changes when the
	// last node leaves (ideal: that node's share); RemoveCollateral the
	// fraction moved that it did not own (ideal 0).
	RemoveMoved, RemoveCollateral float64
	// Err is set when the subject could not be measured.
	Err error
}

// MeasureQuality places keys with s over QualityNodes nodes, then with one
// node added, then with the last node removed (so that jump, which can
// only drop its last bucket without renumbering, is measured on the same
// change as everyone else). Each membership is built from scratch.
func MeasureQuality(s Subject, keys []string) Quality {
	q := Quality{Subject: s, Keys: len(keys)}
	ids := NodeIDs(QualityNodes + 1)
	base, err := owners(s, ids[:QualityNodes], keys)
	if err == nil {
		var added, removed []string
		if added, err = owners(s, ids, keys); err == nil {
			removed, err = owners(s, ids[:QualityNodes-1], keys)
			q.AddMoved, q.AddCollateral = moves(base, added, ids[QualityNodes])
			q.RemoveMoved, q.RemoveCollateral = moves(base, removed, ids[QualityNodes-1])
		}
	}
	q.Err = err
	q.PeakMean = peakMean(base, QualityNodes)
	return q
}

func owners(s Subject, ids, keys []string) ([]string, error) {
	return guard(time.Minute, func() ([]string, error) {
		im, err := s.Build(ids)
		if err != nil {
			return nil, err
		}
		out := make([]string, len(keys))
		for i, k := range keys {
			out[i] = im.Lookup(k)
			if !slices.Contains(ids, out[i]) {
				return nil, fmt.Errorf("key %q placed on %q, not a member", k, out[i])
			}
		}
		return out, nil
	})
}

// moves returns the fraction of keys whose owner differs, and the fraction
// that moved without the changed node being either end of the move.
func moves(before, after []string, changed string) (moved, collateral float64) {
	if len(before) == 0 || len(after) != len(before) {
		return 0, 0
	}
	var m, c int
	for i := range before {
		if before[i] != after[i] {
			m++
			if before[i] != changed && after[i] != changed {
				c++
			}
		}
	}
	n := float64(len(before))
	return float64(m) / n, float64(c) / n
}

func peakMean(owners []string, nodes int) float64 {
	if len(owners) == 0 {
		return 0
	}
	load := map[string]int{}
	peak := 0
	for _, o := range owners {
		load[o]++
		peak = max(peak, load[o])
	}
	return float64(peak) * float64(nodes) / float64(len(owners))
}

// QualityTable formats rows as a Markdown table.
func QualityTable(rows []Quality) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| family | library | peak/mean load | moved on add (ideal %.2f%%) | collateral on add | moved on remove (ideal ≈ %.2f%%) | collateral on remove |\n",
		100.0/float64(QualityNodes+1), 100.0/float64(QualityNodes))
	b.WriteString("|---|---|---:|---:|---:|---:|---:|\n")
	for _, q := range rows {
		name := q.Subject.Name
		if q.Subject.Ours {
			name = "**chash**"
		}
		if q.Err != nil {
			fmt.Fprintf(&b, "| %s | %s | %.3f | failed: %v | | | |\n", q.Subject.Family, name, q.PeakMean, q.Err)
			continue
		}
		fmt.Fprintf(&b, "| %s | %s | %.3f | %.2f%% | %.3f%% | %.2f%% | %.3f%% |\n", q.Subject.Family, name,
			q.PeakMean, 100*q.AddMoved, 100*q.AddCollateral, 100*q.RemoveMoved, 100*q.RemoveCollateral)
	}
	return b.String()
}
