package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/keyplace/chash"
)

// algo is one row of a comparison: a library algorithm or mod-N.
type algo struct {
	name  string
	build func(nodes []chash.Node) (chash.Placer, error)
	// stateful is set for the algorithms that keep their members in
	// numbered slots through membership changes (chash.Algorithm.Stateful):
	// a fleet derives each placer from the last, so the commands do too.
	stateful bool
	// room, when set, builds with room for up to n members: AnchorHash's
	// capacity, fixed when it is built (chash.WithCapacity).
	room func(nodes []chash.Node, n int) (chash.Placer, error)
}

// buildFor builds the placement of nodes with room for up to n members,
// the largest membership the command will derive it to.
func (a algo) buildFor(nodes []chash.Node, n int) (chash.Placer, error) {
	if a.room != nil {
		return a.room(nodes, max(n, len(nodes)))
	}
	return a.build(nodes)
}

// next returns the placement of nodes after p, a placement of a: derived
// from p if a is stateful, as its fleet would derive it (built afresh,
// its slots would be renumbered), else built afresh.
func (a algo) next(p chash.Placer, nodes []chash.Node) (chash.Placer, error) {
	if a.stateful {
		return chash.Derive(p, nodes)
	}
	return a.build(nodes)
}

const modNName = "mod-N"

// algorithms returns mod-N and every algorithm of the library, in the
// library's order.
func algorithms(opts []chash.Option) []algo {
	out := []algo{{name: modNName, build: newModN}}
	for _, a := range chash.Algorithms() {
		x := algo{name: a.String(), stateful: a.Stateful(), build: func(nodes []chash.Node) (chash.Placer, error) {
			return chash.New(a, nodes, opts...)
		}}
		if a == chash.AlgorithmAnchor {
			// By default an anchor holds only the nodes it is built with.
			x.room = func(nodes []chash.Node, n int) (chash.Placer, error) {
				return chash.New(a, nodes, append(slices.Clip(opts), chash.WithCapacity(n))...)
			}
		}
		out = append(out, x)
	}
	return out
}

// findAlgo returns the algorithm named name ("mod-N" or "modn" for mod-N),
// or a compatibility placement (compatAlgos).
func findAlgo(name string, opts []chash.Option) (algo, error) {
	all := append(algorithms(opts), compatAlgos()...)
	var names []string
	for _, a := range all {
		if strings.EqualFold(a.name, name) || a.name == modNName && strings.EqualFold(name, "modn") {
			return a, nil
		}
		names = append(names, a.name)
	}
	return algo{}, fmt.Errorf("unknown algorithm %q (want %s)", name, strings.Join(names, ", "))
}

// libFlags are the library options every command accepts.
type libFlags struct {
	vnodes     int
	seed       uint64
	tableSize  int
	partitions int
}

func (l *libFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&l.vnodes, "vnodes", 0, "ring points per node, 1 to 65536 (0: the library's default, 160)")
	fs.Uint64Var(&l.seed, "seed", 0, "xxhash seed for keys and node IDs, 0 to 2^64-1 (0: the library's default hasher)")
	fs.IntVar(&l.tableSize, "table-size", 0, "Maglev's table size, a prime from 2 to 16777216 at least the nodes\n"+
		"(0: the library's default, 65537)")
	fs.IntVar(&l.partitions, "partitions", 0, "bounded-load partitions, 1 to 16777216 (0: the library's default,\n"+
		"16 a node and at least 16384)")
}

func (l *libFlags) options() ([]chash.Option, error) {
	if l.vnodes < 0 || l.vnodes > maxPointsFlag {
		return nil, fmt.Errorf("-vnodes %d: want 0 (the default) or 1 to %d", l.vnodes, maxPointsFlag)
	}
	var opts []chash.Option
	if l.vnodes != 0 {
		opts = append(opts, chash.WithVnodes(l.vnodes))
	}
	if l.tableSize != 0 {
		opts = append(opts, chash.WithTableSize(l.tableSize))
	}
	if l.partitions != 0 {
		opts = append(opts, chash.WithPartitions(l.partitions))
	}
	if l.seed != 0 {
		opts = append(opts, chash.WithHasher(chash.XXHashSeed(l.seed)))
	}
	// Apply them once, so a bad value is reported as bad input.
	if _, err := chash.NewRing(synthNodes(1), opts...); err != nil {
		return nil, err
	}
	return opts, nil
}

// synthNodes returns node-0 ... node-(n-1).
func synthNodes(n int) []chash.Node {
	out := make([]chash.Node, n)
	for i := range out {
		out[i] = chash.Node{ID: "node-" + strconv.Itoa(i)}
	}
	return out
}

// modN is hash(key) % n: the reference that shows why consistent placement
// exists. It places well and moves almost every key on any change.
type modN struct {
	nodes []chash.Node
	n     uint64
}

func newModN(nodes []chash.Node) (chash.Placer, error) {
	if len(nodes) == 0 {
		return nil, chash.ErrNoNodes
	}
	out := make([]chash.Node, len(nodes))
	for i, n := range nodes {
		if n.Weight != 0 && n.Weight != 1 {
			return nil, fmt.Errorf("%w: mod-N takes no weights (node %q has %v)", chash.ErrInvalidWeight, n.ID, n.Weight)
		}
		out[i] = chash.Node{ID: n.ID, Weight: 1}
	}
	return &modN{nodes: out, n: uint64(len(out))}, nil
}

func (m *modN) Lookup(k []byte) chash.Node { return m.nodes[chash.XXHash.Sum64(k)%m.n] }

func (m *modN) LookupString(k string) chash.Node { return m.nodes[chash.XXHash.Sum64String(k)%m.n] }

// AppendTopK appends the following nodes in order: mod-N has no better
// notion of a second choice.
func (m *modN) AppendTopK(dst []chash.Node, k []byte, n int) []chash.Node {
	return m.appendTopK(dst, chash.XXHash.Sum64(k), n)
}

func (m *modN) AppendTopKString(dst []chash.Node, k string, n int) []chash.Node {
	return m.appendTopK(dst, chash.XXHash.Sum64String(k), n)
}

func (m *modN) appendTopK(dst []chash.Node, h uint64, n int) []chash.Node {
	for i := 0; i < min(n, len(m.nodes)); i++ {
		dst = append(dst, m.nodes[(h%m.n+uint64(i))%m.n])
	}
	return dst
}

func (m *modN) Nodes() []chash.Node { return append([]chash.Node(nil), m.nodes...) }

func (m *modN) Len() int { return len(m.nodes) }

// maxLine bounds a membership file's line.
const maxLine = 1 << 20

// readMembers reads a membership file: one node ID a line, optionally
// followed by whitespace, a weight and a zone; blank lines and lines or
// line ends starting with # are ignored, and so is a UTF-8 byte order mark
// at the start. Every error names the file and line. A node without a
// weight has weight 0, which the placers read as 1.
func readMembers(name string) ([]chash.Node, error) { return readNodes(name, 0) }

// readNodes is readMembers with the weight of a node that gives none.
func readNodes(name string, weight float64) ([]chash.Node, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var nodes []chash.Node
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, maxLine)
	line := 1
	for ; sc.Scan(); line++ {
		text := sc.Text()
		if line == 1 {
			text = strings.TrimPrefix(text, "\uFEFF") // editors on Windows write one
		}
		n, ok, err := parseNode(text, weight)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %v", name, line, err)
		}
		if ok {
			nodes = append(nodes, n)
		}
	}
	if err := sc.Err(); errors.Is(err, bufio.ErrTooLong) {
		return nil, fmt.Errorf("%s:%d: line longer than %d bytes", name, line, maxLine)
	} else if err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	if len(nodes) == 0 {
		return nil, fmt.Errorf("%s: no nodes", name)
	}
	return nodes, nil
}

// parseMember parses one line of a membership file; ok is false for a
// line that holds no node.
func parseMember(line string) (chash.Node, bool, error) { return parseNode(line, 0) }

// parseNode parses "ID [WEIGHT [ZONE]]", giving weight to a node without
// one.
func parseNode(line string, weight float64) (n chash.Node, ok bool, err error) {
	fields := strings.Fields(line)
	for i, f := range fields {
		if strings.HasPrefix(f, "#") {
			fields = fields[:i]
			break
		}
	}
	switch len(fields) {
	case 0:
		return chash.Node{}, false, nil
	case 1, 2, 3:
	default:
		return chash.Node{}, false, fmt.Errorf("want an ID, an optional weight and an optional zone, got %d fields", len(fields))
	}
	if err := checkID(fields[0]); err != nil {
		return chash.Node{}, false, err
	}
	n.ID, n.Weight = fields[0], weight
	if len(fields) == 3 {
		if err := printable("zone", fields[2]); err != nil {
			return chash.Node{}, false, err
		}
		n.Zone = fields[2]
	}
	if len(fields) >= 2 {
		w, err := strconv.ParseFloat(fields[1], 64)
		if err != nil || w < 0 || math.IsNaN(w) || math.IsInf(w, 0) {
			return chash.Node{}, false, fmt.Errorf("weight %q of %q: want a number >= 0", fields[1], fields[0])
		}
		n.Weight = w
	}
	return n, true, nil
}

// checkID rejects an ID that is more likely a mistake than a name: one
// holding "=" (a weight written as in a list), "," (a list in a file), or
// a character that does not print.
func checkID(id string) error {
	if i := strings.IndexByte(id, '='); i >= 0 {
		return fmt.Errorf("ID %q holds \"=\": write the weight after a space (%s %s)", id, id[:i], id[i+1:])
	}
	if strings.Contains(id, ",") {
		return fmt.Errorf("ID %q holds \",\": write one node a line", id)
	}
	return printable("ID", id)
}

// printable rejects a name (an ID or a zone) that is not valid UTF-8 or
// holds a character that does not print, which would garble the tables
// the command writes.
func printable(what, s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("%s %q is not valid UTF-8", what, s)
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return fmt.Errorf("%s %q holds the non-printing character %U", what, s, r)
		}
	}
	return nil
}

// parseList reads a membership given on the command line: IDs separated
// by commas, each optionally followed by =weight.
func parseList(s string) ([]chash.Node, error) {
	var nodes []chash.Node
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		n, ok, err := parseMember(strings.Replace(item, "=", " ", 1))
		if err != nil {
			return nil, fmt.Errorf("%q: %v", item, err)
		}
		if ok {
			nodes = append(nodes, n)
		}
	}
	if len(nodes) == 0 {
		return nil, errors.New("no nodes")
	}
	return nodes, nil
}
