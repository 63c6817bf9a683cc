package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/shardmap"
)

const shardMapUsage = `usage: chash shardmap build [flags] NODES              a new map of the fleet in NODES
       chash shardmap rebalance [flags] MAP NODES      the next map of MAP for the fleet in NODES
       chash shardmap plan [flags] OLD NEW             the replica moves from OLD to NEW, in batches
       chash shardmap show [flags] MAP                 each node's replicas and primaries against its fair share
       chash shardmap import [flags] ASSIGNMENT NODES  a Kafka topic's current assignment as a map

chash shardmap builds an explicit shard map, rebalances it after the fleet
or the spec changes (moving the least that leaves every node within
-tolerance of its fair share), and plans the moves between two maps in
batches that may run at once.

NODES has one node a line: ID [WEIGHT [ZONE]]. WEIGHT defaults to 1; 0 drains
the node (its replicas move off). Blank lines and # comments are ignored. An
ID given twice is refused with both lines.

build, rebalance and import write the map (JSON, a line per node and per
partition) to -o FILE, or else to stdout; and a table of each node's
replicas and primaries against its fair share, to stdout with -o (-json: as
JSON), or else to stderr. rebalance reads the spec from MAP; -load,
-replicas, -tolerance, -pin, -zone-replicas and -residency change it, and
-partitions and -seed, which would move every key, must match it. plan
prints the steps batch by batch (-steps of them), each node before and after
and the critical path; -json prints the plan as JSON; -kafka writes one
kafka-reassign-partitions file a batch into -kafka-dir.

Sizes (-size, -in-flight, -throttle) take bytes: 2G or 2GB is 2,000,000,000
(k, M, G, T are powers of 1,000, as the totals print: kB, MB, GB, TB), 2Gi or
2GiB is 2,147,483,648 (Ki, Mi, Gi, Ti).

Exit status: 0 success, 2 bad flags or input (a flag out of range, a file
that does not parse, a node file's bad line or repeated ID), 1 if the work
fails (constraints no map can meet, no safe order of moves, a file that
cannot be written).

examples:
  chash shardmap build -partitions 1024 -replicas 3 -o map.json nodes.txt
  chash shardmap rebalance -o map2.json map.json nodes-new.txt
  chash shardmap plan -size 2G -copies-in 4 -throttle 100M map.json map2.json
  chash shardmap plan -kafka orders -kafka-dir reassign map.json map2.json
  chash shardmap import -topic orders -o map.json current.json brokers.txt
  chash shardmap build -zone-replicas dc1=2,dc2=1 -o map.json nodes.txt

flags:
`

// mapFlags are the flags of chash shardmap; each subcommand takes those
// whose usage names it.
type mapFlags struct {
	fs                   *flag.FlagSet
	spec                 shardmap.Spec
	pins, zones, resid   string
	out, kafka, kafkaDir string
	topic                string
	asJSON               bool
	steps                int
	size, inFlight, rate byteSize
	lim                  shardmap.Limits
	set                  map[string]bool
}

// mapFlagUse lists the subcommands each flag applies to.
var mapFlagUse = map[string][]string{
	"partitions": {"build", "rebalance"}, "replicas": {"build", "rebalance"}, "load": {"build", "rebalance", "import"},
	"seed": {"build", "rebalance", "import"}, "tolerance": {"build", "rebalance", "import"}, "pin": {"build", "rebalance", "import"},
	"zone-replicas": {"build", "rebalance", "import"}, "residency": {"build", "rebalance", "import"},
	"o": {"build", "rebalance", "import"}, "json": {"build", "rebalance", "import", "plan", "show"},
	"size": {"plan", "show"}, "steps": {"plan"}, "copies-in": {"plan"}, "copies-out": {"plan"}, "in-flight": {"plan"},
	"throttle": {"plan"}, "kafka": {"plan"}, "kafka-dir": {"plan"}, "topic": {"import"},
}

func newMapFlags(name string, stderr io.Writer) *mapFlags {
	f := &mapFlags{fs: newFlags(name, stderr), set: map[string]bool{}}
	f.size, f.inFlight, f.rate = byteSize{max: maxPartitionBytes}, byteSize{max: 1 << 62}, byteSize{max: 1e15}
	fs := f.fs
	fs.IntVar(&f.spec.Partitions, "partitions", 256, "build: partitions P, 1 to 1048576; rebalance: must be the map's")
	fs.IntVar(&f.spec.Replicas, "replicas", 3, "build, rebalance: replicas per partition R, 1 to 16 (with -zone-replicas, their sum)")
	fs.Float64Var(&f.spec.LoadFactor, "load", shardmap.DefaultLoadFactor, "build, rebalance, import: load factor c >= 1: no node above ceil(c·P·R·w/W) (1e16: no bound)")
	fs.Uint64Var(&f.spec.Seed, "seed", 0, "build, import: xxhash seed of keys to partitions; rebalance: must be the map's")
	fs.IntVar(&f.spec.Tolerance, "tolerance", shardmap.DefaultTolerance, "build, rebalance, import: replicas and primaries a node may stay from its fair share after a rebalance, 1 or more")
	fs.StringVar(&f.pins, "pin", "", "build, rebalance, import: pins PARTITION=NODE,... (rebalance: replaces the map's)")
	fs.StringVar(&f.zones, "zone-replicas", "", "build, rebalance, import: replicas of every partition per zone, ZONE=N,... (Cassandra's NetworkTopologyStrategy); none: spread over min(R, zones) zones")
	fs.StringVar(&f.resid, "residency", "", "build, rebalance, import: partitions confined to zones, FIRST-LAST=ZONE+ZONE,... (FIRST to LAST inclusive)")
	fs.StringVar(&f.out, "o", "", "build, rebalance, import: write the map to this file (the node table then goes to stdout)")
	fs.BoolVar(&f.asJSON, "json", false, "plan: print the plan as JSON; build, rebalance, import (with -o), show: print the node table as JSON")
	fs.Var(&f.size, "size", "plan, show: bytes in each partition (such as 2G), 0 to 250G, for the bytes per node and moved")
	fs.IntVar(&f.steps, "steps", 1000, "plan: steps to list, 0 or more, -1 for all (-json lists all)")
	fs.IntVar(&f.lim.CopiesIn, "copies-in", 0, "plan: copies a node receives in one batch, 0 for no limit")
	fs.IntVar(&f.lim.CopiesOut, "copies-out", 0, "plan: copies a node sends (as the partition's primary) in one batch, 0 for no limit")
	fs.Var(&f.inFlight, "in-flight", "plan: bytes a node receives, or sends, in one batch (needs -size), 0 for no limit")
	fs.Var(&f.rate, "throttle", "plan: bytes a second a node receives and sends (Kafka's --throttle), for the plan's duration")
	fs.StringVar(&f.kafka, "kafka", "", "plan: write the batches as kafka-reassign-partitions files for this topic (node IDs are broker IDs)")
	fs.StringVar(&f.kafkaDir, "kafka-dir", "", "plan: the directory for the -kafka files, batch-0001.json and on")
	fs.StringVar(&f.topic, "topic", "", "import: the topic to read from ASSIGNMENT (default: its only one)")
	return f
}

// shardMapHelp is the help with every flag.
func shardMapHelp() string {
	var b strings.Builder
	b.WriteString(shardMapUsage)
	f := newMapFlags("shardmap", io.Discard)
	f.fs.SetOutput(&b)
	f.fs.PrintDefaults()
	return b.String()
}

func runShardMap(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || isHelp(args[0]) {
		fmt.Fprint(stdout, shardMapHelp())
		return exitOK
	}
	sub, args := args[0], args[1:]
	want := map[string]string{"build": "NODES", "rebalance": "MAP NODES", "plan": "OLD NEW", "show": "MAP", "import": "ASSIGNMENT NODES"}
	if _, ok := want[sub]; !ok {
		return usageError(stderr, "shardmap", "unknown subcommand %q: want build, rebalance, plan, show or import (chash shardmap -h for help)", sub)
	}
	f := newMapFlags("shardmap "+sub, stderr)
	var rest []string
	if code, stop := parse(f.fs, args, shardMapUsage, stdout, &rest); stop {
		return code
	}
	if len(rest) != len(strings.Fields(want[sub])) {
		return usageError(stderr, "shardmap "+sub, "want %s %s (chash shardmap -h for help)", sub, want[sub])
	}
	if err := f.check(sub); err != nil {
		return usageError(stderr, "shardmap "+sub, "%v", err)
	}
	var err error
	switch sub {
	case "build":
		err = mapBuild(f, rest[0], stdout, stderr)
	case "rebalance":
		err = mapRebalance(f, rest[0], rest[1], stdout, stderr)
	case "plan":
		err = mapPlan(f, rest[0], rest[1], stdout)
	case "show":
		err = mapShow(f, rest[0], stdout)
	case "import":
		err = mapImport(f, rest[0], rest[1], stdout, stderr)
	}
	if err != nil {
		fmt.Fprintf(stderr, "chash shardmap %s: %v\n", sub, err)
		return exitFor(err)
	}
	return exitOK
}

// check refuses flags the subcommand does not take and values out of
// range, and parses the lists into the spec.
func (f *mapFlags) check(sub string) error {
	var bad error
	f.fs.Visit(func(fl *flag.Flag) {
		f.set[fl.Name] = true
		if !slices.Contains(mapFlagUse[fl.Name], sub) && bad == nil {
			bad = fmt.Errorf("-%s applies to %s, not %s", fl.Name, strings.Join(mapFlagUse[fl.Name], " and "), sub)
		}
	})
	switch {
	case bad != nil:
		return bad
	case f.steps < -1:
		return fmt.Errorf("-steps %d: want 0 or more, or -1 for all", f.steps)
	case f.lim.CopiesIn < 0 || f.lim.CopiesOut < 0:
		return fmt.Errorf("-copies-in %d, -copies-out %d: want 0 (no limit) or more", f.lim.CopiesIn, f.lim.CopiesOut)
	case (f.kafka == "") != (f.kafkaDir == ""):
		return errors.New("-kafka TOPIC and -kafka-dir DIR go together")
	case f.set["in-flight"] && !f.set["size"]:
		return errors.New("-in-flight needs -size: it counts the bytes of the partitions copied")
	case f.asJSON && f.out == "" && (sub == "build" || sub == "rebalance" || sub == "import"):
		return errors.New("-json prints the node table on stdout: give the map a file with -o")
	}
	f.lim.BytesInFlight, f.lim.Throttle = f.inFlight.n, f.rate.n
	var err error
	if f.spec.Pins, err = parsePins(f.pins); err != nil {
		return fmt.Errorf("-pin: %v", err)
	}
	if f.spec.ZoneReplicas, err = parseZoneReplicas(f.zones); err != nil {
		return fmt.Errorf("-zone-replicas: %v", err)
	}
	if f.spec.Residency, err = parseResidency(f.resid); err != nil {
		return fmt.Errorf("-residency: %v", err)
	}
	if f.spec.ZoneReplicas != nil && !f.set["replicas"] {
		f.spec.Replicas = 0 // their sum
	}
	return nil
}

// inputError marks an error in what the user gave: exit status 2.
type inputError struct{ err error }

func (e inputError) Error() string { return e.err.Error() }
func (e inputError) Unwrap() error { return e.err }

// exitFor returns the exit status of an error: 2 for bad input (flags,
// files, specs the library refuses as such), 1 when the work fails.
func exitFor(err error) int {
	var in inputError
	if errors.As(err, &in) {
		return exitUsage
	}
	for _, bad := range []error{shardmap.ErrInvalid, chash.ErrInvalidOption, chash.ErrInvalidWeight, chash.ErrDuplicateID,
		chash.ErrEmptyID, chash.ErrNoNodes, chash.ErrUnknownNode} {
		if errors.Is(err, bad) {
			return exitUsage
		}
	}
	return exitFail
}

func mapBuild(f *mapFlags, nodesFile string, stdout, stderr io.Writer) error {
	nodes, err := readMapNodes(nodesFile)
	if err != nil {
		return err
	}
	m, err := shardmap.New(nodes, f.spec)
	if err != nil {
		return err
	}
	return f.emitMap(nil, m, fmt.Sprintf("built shard map version %d", m.Version()), stdout, stderr)
}

func mapRebalance(f *mapFlags, mapFile, nodesFile string, stdout, stderr io.Writer) error {
	old, err := readMap(mapFile)
	if err != nil {
		return err
	}
	nodes, err := readMapNodes(nodesFile)
	if err != nil {
		return err
	}
	spec, err := f.rebalanceSpec(old.Spec())
	if err != nil {
		return inputError{err}
	}
	m, err := old.Rebalance(nodes, spec)
	if err != nil {
		return err
	}
	return f.emitMap(old, m, fmt.Sprintf("rebalanced version %d -> %d", old.Version(), m.Version()), stdout, stderr)
}

// rebalanceSpec is the map's spec with the flags given applied.
func (f *mapFlags) rebalanceSpec(spec shardmap.Spec) (shardmap.Spec, error) {
	if f.set["partitions"] && f.spec.Partitions != spec.Partitions {
		return spec, fmt.Errorf("-partitions %d: the map has %d, and a new count would move every key to another partition (build a new map instead)", f.spec.Partitions, spec.Partitions)
	}
	if f.set["seed"] && f.spec.Seed != spec.Seed {
		return spec, fmt.Errorf("-seed %d: the map's is %d, and a new seed would move every key to another partition (build a new map instead)", f.spec.Seed, spec.Seed)
	}
	for name, apply := range map[string]func(){
		"load":          func() { spec.LoadFactor = f.spec.LoadFactor },
		"replicas":      func() { spec.Replicas = f.spec.Replicas },
		"tolerance":     func() { spec.Tolerance = f.spec.Tolerance },
		"pin":           func() { spec.Pins = f.spec.Pins },
		"zone-replicas": func() { spec.ZoneReplicas, spec.Replicas = f.spec.ZoneReplicas, f.spec.Replicas },
		"residency":     func() { spec.Residency = f.spec.Residency },
	} {
		if f.set[name] {
			apply()
		}
	}
	return spec, nil
}

func mapImport(f *mapFlags, assignFile, nodesFile string, stdout, stderr io.Writer) error {
	data, err := os.ReadFile(assignFile)
	if err != nil {
		return inputError{err}
	}
	assignment, topic, err := shardmap.ParseKafkaAssignment(data, f.topic)
	if err != nil {
		return fmt.Errorf("%s: %w", assignFile, err)
	}
	nodes, err := readMapNodes(nodesFile)
	if err != nil {
		return err
	}
	f.spec.Partitions, f.spec.Replicas = 0, 0
	m, err := shardmap.Import(nodes, f.spec, assignment)
	if err != nil {
		return fmt.Errorf("%s with %s: %w", assignFile, nodesFile, err)
	}
	what := fmt.Sprintf("imported topic %s as an observed map", topic)
	if err := m.Check(); err != nil {
		what += fmt.Sprintf(" (it breaks the constraints, which a rebalance will meet: %v)", err)
	}
	return f.emitMap(nil, m, what, stdout, stderr)
}

func mapShow(f *mapFlags, mapFile string, stdout io.Writer) error {
	m, err := readMap(mapFile)
	if err != nil {
		return err
	}
	s, err := summarize(nil, m, f.size.n)
	if err != nil {
		return err
	}
	if f.asJSON {
		return jsonOut(stdout, s)
	}
	s.write(stdout, fmt.Sprintf("shard map version %d", m.Version()))
	return nil
}

// emitMap writes map m (from prev, if not nil) to -o or stdout, and its
// summary to stdout or stderr.
func (f *mapFlags) emitMap(prev, m *shardmap.Map, what string, stdout, stderr io.Writer) error {
	s, err := summarize(prev, m, f.size.n)
	if err != nil {
		return err
	}
	data, err := m.MarshalJSON()
	if err != nil {
		return err
	}
	info := stderr
	if f.out == "" {
		if _, err := fmt.Fprintf(stdout, "%s\n", data); err != nil {
			return err
		}
	} else {
		if err := os.WriteFile(f.out, append(data, '\n'), 0o644); err != nil {
			return err
		}
		info = stdout
		s.File = f.out
	}
	if f.asJSON {
		return jsonOut(info, s)
	}
	s.write(info, what)
	return nil
}

func readMap(name string) (*shardmap.Map, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, inputError{err}
	}
	m, err := shardmap.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return m, nil
}

// parsePins reads PARTITION=NODE,...
func parsePins(s string) ([]shardmap.Pin, error) {
	if s == "" {
		return nil, nil
	}
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

// parseZoneReplicas reads ZONE=N,...
func parseZoneReplicas(s string) ([]shardmap.ZoneReplicas, error) {
	if s == "" {
		return nil, nil
	}
	var out []shardmap.ZoneReplicas
	for _, item := range strings.Split(s, ",") {
		z, n, ok := strings.Cut(strings.TrimSpace(item), "=")
		r, err := strconv.Atoi(n)
		if !ok || err != nil || z == "" || r < 1 {
			return nil, fmt.Errorf("%q: want ZONE=REPLICAS, at least 1", item)
		}
		out = append(out, shardmap.ZoneReplicas{Zone: z, Replicas: r})
	}
	return out, nil
}

// parseResidency reads FIRST-LAST=ZONE+ZONE,...
func parseResidency(s string) ([]shardmap.Residency, error) {
	if s == "" {
		return nil, nil
	}
	var out []shardmap.Residency
	for _, item := range strings.Split(s, ",") {
		span, zones, ok := strings.Cut(strings.TrimSpace(item), "=")
		a, b, dash := strings.Cut(span, "-")
		first, err1 := strconv.Atoi(a)
		last, err2 := strconv.Atoi(b)
		if !ok || !dash || err1 != nil || err2 != nil || zones == "" || last < first {
			return nil, fmt.Errorf("%q: want FIRST-LAST=ZONE+ZONE (partitions FIRST to LAST)", item)
		}
		out = append(out, shardmap.Residency{From: first, To: last + 1, Zones: strings.Split(zones, "+")})
	}
	return out, nil
}
