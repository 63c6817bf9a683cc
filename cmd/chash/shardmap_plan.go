package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/keyplace/chash/shardmap"
)

func mapPlan(f *mapFlags, oldFile, newFile string, stdout io.Writer) error {
	old, err := readMap(oldFile)
	if err != nil {
		return err
	}
	m, err := readMap(newFile)
	if err != nil {
		return err
	}
	if old.Partitions() != m.Partitions() {
		return inputError{fmt.Errorf("%s has %d partitions, %s %d: a plan moves replicas between maps of one partition count", oldFile, old.Partitions(), newFile, m.Partitions())}
	}
	pl, err := shardmap.PlanBatches(old, m, uniformSizes(old.Partitions(), f.size.n), f.lim)
	if err != nil {
		return err
	}
	if f.kafka != "" {
		if err := writeKafka(f, old, pl, stdout); err != nil {
			return err
		}
		if !f.asJSON {
			return nil
		}
	}
	if f.asJSON {
		return jsonOut(stdout, pl)
	}
	writePlan(stdout, pl, f.steps, f.size.n)
	return nil
}

// writePlan prints a plan for a person: its steps (at most limit, all for
// -1), each node before and after, and the critical path.
func writePlan(w io.Writer, pl shardmap.Plan, limit int, size int64) {
	if limit < 0 || limit > len(pl.Steps) {
		limit = len(pl.Steps)
	}
	if limit > 0 {
		t := newTable(">step", ">batch", "action", ">partition", "node", "from")
		for i, st := range pl.Steps[:limit] {
			from := st.From
			if st.Kind == shardmap.StepOrder {
				from = fmt.Sprint(st.Replicas)
			}
			t.add(strconv.Itoa(i+1), strconv.Itoa(st.Batch+1), st.Kind.String(), strconv.Itoa(st.Partition), st.Node, from)
		}
		t.write(w)
		if limit < len(pl.Steps) {
			fmt.Fprintf(w, "... and %s more steps (-steps -1 lists them all)\n", commas(int64(len(pl.Steps)-limit)))
		}
		fmt.Fprintln(w)
	}
	head := []string{"node", "zone", ">replicas", ">primaries", ">copies in", ">copies out", ">removes", ">promotions"}
	if size > 0 {
		head = append(head, ">bytes")
	}
	t := newTable(head...)
	nodes := slices.Clone(pl.Nodes)
	slices.SortFunc(nodes, func(a, b shardmap.NodeChange) int { return naturalCompare(a.ID, b.ID) })
	for _, n := range nodes {
		zone := n.After.Zone
		if n.After.ID == "" {
			zone = n.Before.Zone
		}
		row := []string{n.ID, zone, change(n.Before.Replicas, n.After.Replicas), change(n.Before.Primaries, n.After.Primaries),
			strconv.Itoa(n.CopiesIn), strconv.Itoa(n.CopiesOut), strconv.Itoa(n.Removes), strconv.Itoa(n.Promotions)}
		if size > 0 {
			row = append(row, siBytes(n.Before.Bytes)+" -> "+siBytes(n.After.Bytes))
		}
		t.add(row...)
	}
	t.write(w)
	fmt.Fprintf(w, "\n%s steps in %d batches (the critical path), %s replicas copied", commas(int64(len(pl.Steps))), len(pl.Batches), commas(int64(pl.Moves)))
	if size > 0 {
		fmt.Fprintf(w, ", %s", siBytes(pl.Bytes))
	}
	fmt.Fprintln(w)
	if len(pl.Batches) > 0 {
		most, peak := 0, int64(0)
		for _, b := range pl.Batches {
			most, peak = max(most, b.Copies), max(peak, b.PeakNodeBytes)
		}
		fmt.Fprintf(w, "the largest batch copies %s replicas", commas(int64(most)))
		if size > 0 {
			fmt.Fprintf(w, "; the busiest node of a batch moves %s", siBytes(peak))
		}
		fmt.Fprintln(w)
	}
	if pl.Limits.Throttle > 0 {
		fmt.Fprintf(w, "at %s/s a node: about %v\n", siBytes(pl.Limits.Throttle), time.Duration(pl.Seconds*float64(time.Second)).Round(time.Second))
	}
}

// change prints a count before and after: "5" or "5 -> 7".
func change(a, b int) string {
	if a == b {
		return strconv.Itoa(a)
	}
	return fmt.Sprintf("%d -> %d", a, b)
}

// writeKafka writes the plan's batches as kafka-reassign-partitions files
// and says how to run them.
func writeKafka(f *mapFlags, old *shardmap.Map, pl shardmap.Plan, stdout io.Writer) error {
	docs, err := pl.Kafka(old, f.kafka)
	if err != nil {
		return inputError{err}
	}
	if err := os.MkdirAll(f.kafkaDir, 0o755); err != nil {
		return err
	}
	var files []string
	for i, d := range docs {
		data, err := json.Marshal(d)
		if err != nil {
			return err
		}
		name := filepath.Join(f.kafkaDir, fmt.Sprintf("batch-%04d.json", i+1))
		if err := os.WriteFile(name, append(data, '\n'), 0o644); err != nil {
			return err
		}
		files = append(files, name)
	}
	if f.asJSON {
		return nil
	}
	if len(files) == 0 {
		fmt.Fprintln(stdout, "nothing to move: no reassignment written")
		return nil
	}
	throttle := ""
	if f.lim.Throttle > 0 {
		throttle = " --throttle " + strconv.FormatInt(f.lim.Throttle, 10)
	}
	fmt.Fprintf(stdout, "wrote %d reassignments of topic %s (%s replicas copied) to %s; run them in order, each once the one before has completed:\n",
		len(files), f.kafka, commas(int64(pl.Moves)), f.kafkaDir)
	fmt.Fprintf(stdout, "  kafka-reassign-partitions.sh --bootstrap-server BROKER --reassignment-json-file %s --execute%s\n", files[0], throttle)
	fmt.Fprintf(stdout, "  kafka-reassign-partitions.sh --bootstrap-server BROKER --reassignment-json-file %s --verify\n", files[0])
	if len(files) > 1 {
		fmt.Fprintf(stdout, "  ... and so on to %s\n", files[len(files)-1])
	}
	fmt.Fprintln(stdout, "and after each, move leadership to each partition's first replica (the plan's promotions):")
	fmt.Fprintf(stdout, "  kafka-leader-election.sh --bootstrap-server BROKER --election-type PREFERRED --all-topic-partitions\n")
	return nil
}
