package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/shardmap"
)

const shardMapHelp = `usage: chash shardmap build [flags] NODES          a new map, as JSON on stdout
       chash shardmap rebalance [flags] MAP NODES  the next map for the fleet in NODES
       chash shardmap plan [flags] OLD NEW         the ordered replica moves from OLD to NEW

chash shardmap builds an explicit shard map, rebalances it after the fleet
changes, and prints the move plan between two maps.

NODES has one node a line: ID [WEIGHT [ZONE]]. WEIGHT defaults to 1; 0 drains
the node (its replicas move off). Blank lines and # comments are ignored.

examples:
  chash shardmap build -partitions 1024 -replicas 3 nodes.txt > map.json
  chash shardmap rebalance map.json nodes-new.txt > map2.json
  chash shardmap plan -size 2G map.json map2.json

flags:
`

func runShardMap(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || isHelp(args[0]) {
		fmt.Fprint(stdout, shardMapHelp)
		return exitOK
	}
	sub, args := args[0], args[1:]
	fs := newFlags("shardmap "+sub, stderr)
	var spec shardmap.Spec
	var pins string
	var size quantity
	asJSON := fs.Bool("json", false, "plan: print the plan as JSON")
	fs.IntVar(&spec.Partitions, "partitions", 256, "build: partitions P")
	fs.IntVar(&spec.Replicas, "replicas", 3, "build: replicas per partition R")
	fs.Float64Var(&spec.LoadFactor, "load", shardmap.DefaultLoadFactor, "build: load factor c (no node above ceil(c·P·R·w/W))")
	fs.Uint64Var(&spec.Seed, "seed", 0, "build: xxhash seed of keys to partitions")
	fs.StringVar(&pins, "pin", "", "build, rebalance: pins PARTITION=NODE,... (rebalance: replaces the map's pins)")
	fs.Var(&size, "size", "plan: bytes in each partition (such as 2G), for the total moved")
	var rest []string
	if code, stop := parse(fs, args, shardMapHelp, stdout, &rest); stop {
		return code
	}
	if pins != "" {
		p, err := parsePins(pins)
		if err != nil {
			return usageError(stderr, "shardmap", "-pin: %v", err)
		}
		spec.Pins = p
	}
	var err error
	switch {
	case sub == "build" && len(rest) == 1:
		err = mapBuild(stdout, rest[0], spec)
	case sub == "rebalance" && len(rest) == 2:
		err = mapRebalance(stdout, stderr, rest[0], rest[1], spec.Pins, pins != "")
	case sub == "plan" && len(rest) == 2:
		err = mapPlan(stdout, rest[0], rest[1], int64(size), *asJSON)
	default:
		return usageError(stderr, "shardmap", "want build NODES, rebalance MAP NODES or plan OLD NEW (chash shardmap -h for help)")
	}
	if err != nil {
		fmt.Fprintf(stderr, "chash shardmap %s: %v\n", sub, err)
		return exitFail
	}
	return exitOK
}

func mapBuild(w io.Writer, nodesFile string, spec shardmap.Spec) error {
	nodes, err := readMapNodes(nodesFile)
	if err != nil {
		return err
	}
	m, err := shardmap.New(nodes, spec)
	if err != nil {
		return err
	}
	return writeMap(w, m)
}

func mapRebalance(w, info io.Writer, mapFile, nodesFile string, pins []shardmap.Pin, setPins bool) error {
	old, err := readMap(mapFile)
	if err != nil {
		return err
	}
	nodes, err := readMapNodes(nodesFile)
	if err != nil {
		return err
	}
	spec := old.Spec()
	if setPins {
		spec.Pins = pins
	}
	m, err := old.Rebalance(nodes, spec)
	if err != nil {
		return err
	}
	pl, err := shardmap.PlanMoves(old, m, nil)
	if err != nil {
		return err
	}
	fmt.Fprintf(info, "version %d -> %d: %d of %d replicas move\n", old.Version(), m.Version(), pl.Moves, m.Partitions()*m.Replicas())
	return writeMap(w, m)
}

func mapPlan(w io.Writer, oldFile, newFile string, size int64, asJSON bool) error {
	old, err := readMap(oldFile)
	if err != nil {
		return err
	}
	m, err := readMap(newFile)
	if err != nil {
		return err
	}
	var sizes []shardmap.PartitionSize
	if size > 0 {
		sizes = make([]shardmap.PartitionSize, old.Partitions())
		for i := range sizes {
			sizes[i].Bytes = size
		}
	}
	pl, err := shardmap.PlanMoves(old, m, sizes)
	if err != nil {
		return err
	}
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(pl)
	}
	t := newTable("step", "action", "partition", "node", "from")
	for i, st := range pl.Steps {
		t.add(strconv.Itoa(i+1), st.Kind.String(), strconv.Itoa(st.Partition), st.Node, st.From)
	}
	t.write(w)
	fmt.Fprintf(w, "\n%d steps, %d replicas copied", len(pl.Steps), pl.Moves)
	if size > 0 {
		fmt.Fprintf(w, ", %s", bytesize(pl.Bytes))
	}
	fmt.Fprintln(w)
	return nil
}

func writeMap(w io.Writer, m *shardmap.Map) error {
	data, err := m.MarshalJSON()
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", data)
	return err
}

func readMap(name string) (*shardmap.Map, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	m, err := shardmap.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return m, nil
}

// readMapNodes reads a shard map's fleet, ID [WEIGHT [ZONE]] a line, as
// membership files are read; a node without a weight has weight 1, since
// in a shard map 0 drains a node.
func readMapNodes(name string) ([]chash.Node, error) { return readNodes(name, 1) }

// parsePins reads PARTITION=NODE,...
func parsePins(s string) ([]shardmap.Pin, error) {
	var pins []shardmap.Pin
	for _, item := range strings.Split(s, ",") {
		p, node, ok := strings.Cut(strings.TrimSpace(item), "=")
		n, err := strconv.Atoi(p)
		if !ok || err != nil || node == "" {
			return nil, fmt.Errorf("%q: want PARTITION=NODE", item)
		}
		pins = append(pins, shardmap.Pin{Partition: n, Node: node})
	}
	return pins, nil
}
