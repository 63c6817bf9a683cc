package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/shardmap"
)

// mapSummary is what build, rebalance, import and show report of a map:
// each node against its fair share, and, for a rebalance, before it.
type mapSummary struct {
	Version         uint64        `json:"version"`
	PreviousVersion uint64        `json:"previous_version,omitempty"`
	Fingerprint     string        `json:"fingerprint"`
	File            string        `json:"file,omitempty"`
	Partitions      int           `json:"partitions"`
	Replicas        int           `json:"replicas"`
	LoadFactor      float64       `json:"load_factor"`
	Tolerance       int           `json:"tolerance"`
	Observed        bool          `json:"observed"`
	Zones           int           `json:"zones"`
	PartitionBytes  int64         `json:"partition_bytes"`
	Moved           int           `json:"moved"`
	Minimum         int           `json:"minimum"`
	Distance        mapDistance   `json:"distance"`
	Balanced        bool          `json:"balanced"`
	Nodes           []nodeSummary `json:"nodes"`
}

// mapDistance is how far a map is from a fresh build: the largest
// difference of a node's replicas, and of its primaries, from its target.
type mapDistance struct {
	Replicas  int `json:"replicas"`
	Primaries int `json:"primaries"`
}

// nodeSummary is a node's load, and before a rebalance, what it held.
type nodeSummary struct {
	shardmap.NodeLoad
	Before *nodeBefore `json:"before,omitempty"`
}

type nodeBefore struct {
	Replicas  int   `json:"replicas"`
	Primaries int   `json:"primaries"`
	Bytes     int64 `json:"bytes"`
}

// summarize reports m, rebalanced from prev if not nil, with partitions of
// size bytes.
func summarize(prev, m *shardmap.Map, size int64) (*mapSummary, error) {
	spec := m.Spec()
	s := &mapSummary{Version: m.Version(), Fingerprint: chash.Fingerprint(m), Partitions: spec.Partitions, Replicas: spec.Replicas,
		LoadFactor: spec.LoadFactor, Tolerance: spec.Tolerance, Observed: m.Observed(), PartitionBytes: size}
	loads, err := m.Loads(uniformSizes(m.Partitions(), size))
	if err != nil {
		return nil, err
	}
	zones := map[string]bool{}
	for _, n := range loads {
		switch {
		case n.Weight > 0 && n.Zone == "":
			zones["node "+n.ID] = true // a node without a zone is its own domain
		case n.Weight > 0:
			zones["zone "+n.Zone] = true
		}
		s.Nodes = append(s.Nodes, nodeSummary{NodeLoad: n})
		s.Distance.Replicas = max(s.Distance.Replicas, abs(n.Replicas-n.Target))
		s.Distance.Primaries = max(s.Distance.Primaries, abs(n.Primaries-n.TargetPrimaries))
	}
	s.Zones = len(zones)
	s.Balanced = max(s.Distance.Replicas, s.Distance.Primaries) <= spec.Tolerance
	if prev != nil {
		s.PreviousVersion = prev.Version()
		if s.Moved, s.Minimum, err = shardmap.Moved(prev, m); err != nil {
			return nil, err
		}
		before, err := prev.Loads(uniformSizes(prev.Partitions(), size))
		if err != nil && before == nil {
			return nil, err
		}
		was := map[string]shardmap.NodeLoad{}
		for _, n := range before {
			was[n.ID] = n
		}
		for i := range s.Nodes {
			b := was[s.Nodes[i].ID]
			s.Nodes[i].Before = &nodeBefore{Replicas: b.Replicas, Primaries: b.Primaries, Bytes: b.Bytes}
		}
	}
	slices.SortFunc(s.Nodes, func(a, b nodeSummary) int { return naturalCompare(a.ID, b.ID) })
	return s, nil
}

// uniformSizes returns p sizes of the given bytes, or nil for 0.
func uniformSizes(p int, size int64) []shardmap.PartitionSize {
	if size <= 0 {
		return nil
	}
	out := make([]shardmap.PartitionSize, p)
	for i := range out {
		out[i].Bytes = size
	}
	return out
}

// write prints the summary for a person.
func (s *mapSummary) write(w io.Writer, what string) {
	kind := ""
	if s.Observed {
		kind = ", observed"
	}
	fmt.Fprintf(w, "%s (%s%s): %s partitions × %d replicas over %d nodes in %d zones, load factor %v\n",
		what, s.Fingerprint, kind, commas(int64(s.Partitions)), s.Replicas, liveNodes(s.Nodes), s.Zones, s.LoadFactor)
	if s.PreviousVersion > 0 {
		ratio := ""
		if s.Minimum > 0 {
			ratio = fmt.Sprintf(", %.3f×", float64(s.Moved)/float64(s.Minimum))
		}
		fmt.Fprintf(w, "%s of %s replicas move; the least any map within the tolerance moves is %s%s\n",
			commas(int64(s.Moved)), commas(int64(s.Partitions*s.Replicas)), commas(int64(s.Minimum)), ratio)
	}
	head := []string{"node", "zone", ">weight", ">replicas", ">fair", ">primaries", ">fair"}
	if s.PartitionBytes > 0 {
		head = append(head, ">bytes")
	}
	t := newTable(append(head, ">bound")...)
	for _, n := range s.Nodes {
		reps, prims, bytes := strconv.Itoa(n.Replicas), strconv.Itoa(n.Primaries), siBytes(n.Bytes)
		if b := n.Before; b != nil && (b.Replicas != n.Replicas || b.Primaries != n.Primaries) {
			reps = fmt.Sprintf("%d -> %d", b.Replicas, n.Replicas)
			prims = fmt.Sprintf("%d -> %d", b.Primaries, n.Primaries)
			bytes = siBytes(b.Bytes) + " -> " + bytes
		}
		row := []string{n.ID, n.Zone, strconv.FormatFloat(n.Weight, 'f', -1, 64), reps, fmt.Sprintf("%.1f", n.Fair), prims, fmt.Sprintf("%.1f", n.FairPrimaries)}
		if s.PartitionBytes > 0 {
			row = append(row, bytes)
		}
		t.add(append(row, strconv.Itoa(n.Bound))...)
	}
	t.write(w)
	fmt.Fprintln(w, s.verdict())
	if s.File != "" {
		fmt.Fprintf(w, "map written to %s\n", s.File)
	}
}

func liveNodes(nodes []nodeSummary) int {
	n := 0
	for _, x := range nodes {
		if x.Weight > 0 {
			n++
		}
	}
	return n
}

// verdict says how far from fair the map is.
func (s *mapSummary) verdict() string {
	d := s.Distance
	if s.Balanced {
		return fmt.Sprintf("balanced: every node within %s and %s of its fair share (tolerance %d)", plural(d.Replicas, "replica"), plural(d.Primaries, "primary"), s.Tolerance)
	}
	worst := s.Nodes[0]
	for _, n := range s.Nodes {
		if abs(n.Replicas-n.Target)+abs(n.Primaries-n.TargetPrimaries) > abs(worst.Replicas-worst.Target)+abs(worst.Primaries-worst.TargetPrimaries) {
			worst = n
		}
	}
	why := "the constraints (zones, bounds, pins) allow no closer map"
	if s.Observed {
		why = "an observed map: rebalance it"
	}
	return fmt.Sprintf("not balanced: up to %d replicas and %d primaries from a fresh build's counts, beyond the tolerance of %d; %s holds %d replicas and %d primaries where a fresh build gives %d and %d (%s)",
		d.Replicas, d.Primaries, s.Tolerance, worst.ID, worst.Replicas, worst.Primaries, worst.Target, worst.TargetPrimaries, why)
}

// plural writes n and the noun, in the plural unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if stem, ok := strings.CutSuffix(noun, "y"); ok {
		return fmt.Sprintf("%d %sies", n, stem)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func jsonOut(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// readMapNodes reads a shard map's fleet, ID [WEIGHT [ZONE]] a line, as
// membership files are read; a node without a weight has weight 1, since
// in a shard map 0 drains a node. A bad line, or an ID given twice, is
// reported with its file and line.
func readMapNodes(name string) ([]chash.Node, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, inputError{err}
	}
	defer f.Close()
	var nodes []chash.Node
	first := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, maxLine)
	line := 1
	for ; sc.Scan(); line++ {
		text := sc.Text()
		if line == 1 {
			text = strings.TrimPrefix(text, "\uFEFF")
		}
		n, ok, err := parseNode(text, 1)
		if err != nil {
			return nil, inputError{fmt.Errorf("%s:%d: %v", name, line, err)}
		}
		if !ok {
			continue
		}
		if at, dup := first[n.ID]; dup {
			return nil, inputError{fmt.Errorf("%s:%d: node %q again (first on line %d): %w", name, line, n.ID, at, chash.ErrDuplicateID)}
		}
		first[n.ID] = line
		nodes = append(nodes, n)
	}
	if err := sc.Err(); errors.Is(err, bufio.ErrTooLong) {
		return nil, inputError{fmt.Errorf("%s:%d: line longer than %d bytes", name, line, maxLine)}
	} else if err != nil {
		return nil, inputError{fmt.Errorf("%s: %v", name, err)}
	}
	if len(nodes) == 0 {
		return nil, inputError{fmt.Errorf("%s: no nodes", name)}
	}
	return nodes, nil
}

// byteSize is a flag of bytes: 2000000000, 2G or 2GB (powers of 1,000, as
// siBytes prints), 2Gi or 2GiB (powers of 1,024); k, M, G, T and Ki, Mi,
// Gi, Ti; a whole number from 0 to max.
type byteSize struct {
	n, max int64
}

func (b *byteSize) String() string { return strconv.FormatInt(b.n, 10) }

func (b *byteSize) Set(s string) error {
	t := strings.TrimSuffix(strings.NewReplacer(",", "", "_", "").Replace(strings.TrimSpace(s)), "B")
	mult := 1.0
	for _, u := range []struct {
		suffix string
		mult   float64
	}{{"Ki", 1 << 10}, {"Mi", 1 << 20}, {"Gi", 1 << 30}, {"Ti", 1 << 40}, {"k", 1e3}, {"K", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12}} {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSuffix(t, u.suffix), u.mult
			break
		}
	}
	f, err := strconv.ParseFloat(t, 64)
	v := f * mult
	switch {
	case err != nil || math.IsNaN(v) || v < 0:
		return fmt.Errorf("want bytes such as 2000000000, 2G or 2GiB")
	case v > float64(b.max):
		return fmt.Errorf("%s is more than %s", s, siBytes(b.max))
	case v != math.Trunc(v):
		return fmt.Errorf("%s is not a whole number of bytes", s)
	}
	b.n = int64(v)
	return nil
}

// siBytes prints bytes in powers of 1,000, three digits: 812 B, 2.00 GB,
// 24.0 GB, 3.07 TB.
func siBytes(n int64) string {
	units := []string{"B", "kB", "MB", "GB", "TB", "PB", "EB"}
	if n < 1000 {
		return fmt.Sprintf("%d B", n)
	}
	f, u := float64(n), 0
	for f >= 999.5 && u < len(units)-1 {
		f /= 1000
		u++
	}
	switch {
	case f < 9.995:
		return fmt.Sprintf("%.2f %s", f, units[u])
	case f < 99.95:
		return fmt.Sprintf("%.1f %s", f, units[u])
	}
	return fmt.Sprintf("%.0f %s", f, units[u])
}
