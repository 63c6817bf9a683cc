package shardmap

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/cespare/xxhash/v2"
	"github.com/keyplace/chash"
)

// shardMapFormat names the serialised format and its version.
const shardMapFormat = "chash.shardmap/1"

// mapDoc is the JSON document of a shard map; see Parse.
type mapDoc struct {
	Format      string     `json:"format"`
	Version     uint64     `json:"version"`
	Hash        string     `json:"hash"`
	Seed        uint64     `json:"seed"`
	Partitions  int        `json:"partitions"`
	Replicas    int        `json:"replicas"`
	LoadFactor  float64    `json:"load_factor"`
	Nodes       []mapNode  `json:"nodes"`
	Pins        []mapPin   `json:"pins"`
	Assignment  [][]string `json:"assignment"`
	Fingerprint string     `json:"fingerprint"`
}

type mapNode struct {
	ID     string  `json:"id"`
	Weight float64 `json:"weight"`
	Zone   string  `json:"zone,omitempty"`
}

type mapPin struct {
	Partition int    `json:"partition"`
	Node      string `json:"node"`
}

// MarshalJSON encodes the map in the format Parse reads. The
// encoding of a map is always the same bytes; a nil map's is null, as
// encoding/json writes it.
func (m *Map) MarshalJSON() ([]byte, error) {
	if m == nil {
		return []byte("null"), nil
	}
	d := mapDoc{Format: shardMapFormat, Version: m.version, Hash: "xxhash64", Seed: m.spec.Seed,
		Partitions: m.spec.Partitions, Replicas: m.spec.Replicas, LoadFactor: m.spec.LoadFactor,
		Pins: []mapPin{}, Assignment: make([][]string, m.spec.Partitions),
		Fingerprint: fmt.Sprintf("%016x", m.fp)}
	for _, n := range m.nodes {
		d.Nodes = append(d.Nodes, mapNode(n))
	}
	for _, p := range m.spec.Pins {
		d.Pins = append(d.Pins, mapPin(p))
	}
	for p := range d.Assignment {
		for _, n := range m.AppendReplicas(nil, p) {
			d.Assignment[p] = append(d.Assignment[p], n.ID)
		}
	}
	return json.MarshalIndent(d, "", "  ")
}

// UnmarshalJSON decodes a map as Parse does.
func (m *Map) UnmarshalJSON(data []byte) error {
	got, err := Parse(data)
	if err != nil {
		return err
	}
	*m = *got
	return nil
}

// Parse decodes and checks a shard map. The format, version
// "chash.shardmap/1", is a JSON object with exactly these fields:
//
//	format       "chash.shardmap/1"
//	version      the map's version, an integer from 1
//	hash         "xxhash64": a key's partition is ⌊h·P/2^64⌋ for h the
//	             XXH64 of the key with the seed below
//	seed         the hash seed, an integer (0 to 2^64-1)
//	partitions   P, 1 to 1048576
//	replicas     R, 1 to 16
//	load_factor  c, at least 1: no node holds more than ceil(c·P·R·w/W)
//	nodes        [{"id", "weight", "zone"}], ascending by id; weight 0 is
//	             a draining node; zone may be omitted
//	pins         [{"partition", "node"}], ascending by partition
//	assignment   P arrays of R node ids, primary first
//	fingerprint  16 hex digits: the XXH64 of the map's canonical text
//	             (see below)
//
// The canonical text is one line per item, each ending in "\n": the
// format; "version=", "seed=", "partitions=", "replicas=" with the
// decimal integer; "load_factor=" with the shortest decimal that reads
// back as the same float64; then per node "node=" id, weight (the same
// shortest form) and zone separated by single spaces, each id and zone
// written as a Go-syntax quoted string (strconv.Quote); per pin "pin="
// partition and quoted node; per partition "part=" index and the quoted
// replica ids.
//
// Parse fails with an error wrapping ErrInvalid when the data is
// not such a document, names an unknown node, has a wrong count or a
// fingerprint that does not match, or breaks a constraint (then also
// wrapping ErrConstraint); it never panics.
func Parse(data []byte) (*Map, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var d mapDoc
	if err := dec.Decode(&d); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: data after the map", ErrInvalid)
	}
	switch {
	case d.Format != shardMapFormat:
		return nil, fmt.Errorf("%w: format %q, want %q", ErrInvalid, d.Format, shardMapFormat)
	case d.Hash != "xxhash64":
		return nil, fmt.Errorf("%w: hash %q, want \"xxhash64\"", ErrInvalid, d.Hash)
	case d.Version < 1:
		return nil, fmt.Errorf("%w: version %d, want 1 or more", ErrInvalid, d.Version)
	case d.LoadFactor == 0:
		return nil, fmt.Errorf("%w: load_factor missing", ErrInvalid)
	case len(d.Assignment) != d.Partitions:
		return nil, fmt.Errorf("%w: %d assignments for %d partitions", ErrInvalid, len(d.Assignment), d.Partitions)
	}
	return d.shardMap()
}

func (d *mapDoc) shardMap() (*Map, error) {
	spec := Spec{Partitions: d.Partitions, Replicas: d.Replicas, LoadFactor: d.LoadFactor, Seed: d.Seed}
	nodes := make([]chash.Node, len(d.Nodes))
	for i, n := range d.Nodes {
		nodes[i] = chash.Node(n)
		if i > 0 && n.ID <= d.Nodes[i-1].ID {
			return nil, fmt.Errorf("%w: nodes not in ascending id order at %q", ErrInvalid, n.ID)
		}
	}
	for _, p := range d.Pins {
		spec.Pins = append(spec.Pins, Pin(p))
	}
	ns, spec, err := checkMapInput(nodes, spec)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	assign := make([]int32, 0, len(d.Assignment)*spec.Replicas)
	for p, reps := range d.Assignment {
		if len(reps) != spec.Replicas {
			return nil, fmt.Errorf("%w: partition %d has %d replicas, want %d", ErrInvalid, p, len(reps), spec.Replicas)
		}
		for _, id := range reps {
			i := indexByID(ns, id)
			if i < 0 {
				return nil, fmt.Errorf("%w: partition %d names unknown node %q", ErrInvalid, p, id)
			}
			assign = append(assign, int32(i))
		}
	}
	if err := checkMap(spec, ns, assign); err != nil {
		if errors.Is(err, ErrInvalid) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	m := newMap(spec, d.Version, ns, assign)
	if want := fmt.Sprintf("%016x", m.fp); d.Fingerprint != want {
		return nil, fmt.Errorf("%w: fingerprint %q does not match the content's %q", ErrInvalid, d.Fingerprint, want)
	}
	return m, nil
}

// fingerprint returns the XXH64 of the map's canonical text.
func (m *Map) fingerprint() uint64 {
	var b strings.Builder
	f := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	fmt.Fprintf(&b, "%s\nversion=%d\nseed=%d\npartitions=%d\nreplicas=%d\nload_factor=%s\n",
		shardMapFormat, m.version, m.spec.Seed, m.spec.Partitions, m.spec.Replicas, f(m.spec.LoadFactor))
	for _, n := range m.nodes {
		fmt.Fprintf(&b, "node=%s %s %s\n", strconv.Quote(n.ID), f(n.Weight), strconv.Quote(n.Zone))
	}
	for _, p := range m.spec.Pins {
		fmt.Fprintf(&b, "pin=%d %s\n", p.Partition, strconv.Quote(p.Node))
	}
	r := m.spec.Replicas
	for p := 0; p < m.spec.Partitions; p++ {
		fmt.Fprintf(&b, "part=%d", p)
		for _, i := range m.assign[p*r : p*r+r] {
			b.WriteString(" " + strconv.Quote(m.nodes[i].ID))
		}
		b.WriteString("\n")
	}
	return xxhash.Sum64String(b.String())
}
