package shardmap

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/cespare/xxhash/v2"
	"github.com/keyplace/chash"
)

// The serialised formats: MarshalJSON writes the second; Parse reads both.
const (
	shardMapFormat   = "chash.shardmap/2"
	shardMapFormatV1 = "chash.shardmap/1"
)

// The fields of each format, in the order MarshalJSON writes them.
var (
	docFields   = []string{"format", "version", "hash", "seed", "partitions", "replicas", "load_factor", "tolerance", "observed", "nodes", "pins", "zone_replicas", "residency", "assignment", "fingerprint"}
	docFieldsV1 = []string{"format", "version", "hash", "seed", "partitions", "replicas", "load_factor", "nodes", "pins", "assignment", "fingerprint"}
)

// MarshalJSON encodes the map in the format Parse reads, laid out for a
// person: one line per field, node, pin and partition. The encoding of a
// map is always the same bytes; a nil map's is null, as encoding/json
// writes it.
func (m *Map) MarshalJSON() ([]byte, error) {
	if m == nil {
		return []byte("null"), nil
	}
	var b bytes.Buffer
	q := func(s string) string { out, _ := json.Marshal(s); return string(out) }
	num := func(x float64) string { out, _ := json.Marshal(x); return string(out) }
	list := func(name string, n int, item func(i int) string) {
		fmt.Fprintf(&b, "  %q: [", name)
		for i := range n {
			sep := ","
			if i == n-1 {
				sep = ""
			}
			fmt.Fprintf(&b, "\n    %s%s", item(i), sep)
		}
		if n > 0 {
			b.WriteString("\n  ")
		}
		b.WriteString("],\n")
	}
	s := m.spec
	fmt.Fprintf(&b, "{\n  \"format\": %q,\n  \"version\": %d,\n  \"hash\": \"xxhash64\",\n  \"seed\": %d,\n", shardMapFormat, m.version, s.Seed)
	fmt.Fprintf(&b, "  \"partitions\": %d,\n  \"replicas\": %d,\n  \"load_factor\": %s,\n  \"tolerance\": %d,\n  \"observed\": %t,\n",
		s.Partitions, s.Replicas, num(s.LoadFactor), s.Tolerance, m.observed)
	list("nodes", len(m.nodes), func(i int) string {
		n := m.nodes[i]
		zone := ""
		if n.Zone != "" {
			zone = `, "zone": ` + q(n.Zone)
		}
		return fmt.Sprintf(`{"id": %s, "weight": %s%s}`, q(n.ID), num(n.Weight), zone)
	})
	list("pins", len(s.Pins), func(i int) string {
		return fmt.Sprintf(`{"partition": %d, "node": %s}`, s.Pins[i].Partition, q(s.Pins[i].Node))
	})
	list("zone_replicas", len(s.ZoneReplicas), func(i int) string {
		return fmt.Sprintf(`{"zone": %s, "replicas": %d}`, q(s.ZoneReplicas[i].Zone), s.ZoneReplicas[i].Replicas)
	})
	list("residency", len(s.Residency), func(i int) string {
		r := s.Residency[i]
		zones := make([]string, len(r.Zones))
		for j, z := range r.Zones {
			zones[j] = q(z)
		}
		return fmt.Sprintf(`{"from": %d, "to": %d, "zones": [%s]}`, r.From, r.To, strings.Join(zones, ", "))
	})
	r := s.Replicas
	list("assignment", s.Partitions, func(p int) string {
		ids := make([]string, r)
		for j, i := range m.assign[p*r : p*r+r] {
			ids[j] = q(m.nodes[i].ID)
		}
		return "[" + strings.Join(ids, ", ") + "]"
	})
	fmt.Fprintf(&b, "  \"fingerprint\": \"%016x\"\n}", m.fp)
	return b.Bytes(), nil
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
// "chash.shardmap/2", is a JSON object with exactly these fields, each
// once and spelled exactly so (JSON decoders that match names without
// regard to case must not accept "FORMAT"):
//
//	format         "chash.shardmap/2"
//	version        the map's version, an integer from 1
//	hash           "xxhash64": a key's partition is ⌊h·P/2^64⌋ for h the
//	               XXH64 of the key with the seed below
//	seed           the hash seed, an integer (0 to 2^64-1)
//	partitions     P, 1 to 1048576
//	replicas       R, 1 to 16
//	load_factor    c, at least 1 (see Map for the bounds it sets)
//	tolerance      how far rebalancing may leave a node from a fresh
//	               build's counts, from 1
//	observed       true for a map Import recorded, whose constraints
//	               beyond its structure are not checked
//	nodes          [{"id", "weight", "zone"}], ascending by id; weight 0 is
//	               a draining node; zone may be omitted
//	pins           [{"partition", "node"}], ascending by partition
//	zone_replicas  [{"zone", "replicas"}], ascending by zone
//	residency      [{"from", "to", "zones"}]: partitions [from, to) on the
//	               zones listed, ascending; ranges ascending by from
//	assignment     P arrays of R node ids, primary first
//	fingerprint    16 hex digits: the XXH64 of the map's canonical text
//
// The canonical text is one line per item, each ending in "\n": the
// format; "version=", "seed=", "partitions=", "replicas=" with the
// decimal integer; "load_factor=" with the number; "tolerance=" with the
// integer; "observed=" and 1 or 0; then per node "node=" id, weight and
// zone separated by single spaces, each id and zone written as a
// Go-syntax quoted string (strconv.Quote: printable ASCII as is, '"' and
// '\' escaped, other bytes as \x, \u or \U escapes); per pin "pin="
// partition and quoted node; per zone replica "zone_replicas=" quoted
// zone and count; per residency range "residency=" from, to and the
// quoted zones; per partition "part=" index and the quoted replica ids.
// A number is written as the shortest decimal that reads back as the same
// float64, in plain notation: digits, and a point and more digits only
// for a fraction, never an exponent (1000000, 0.00001, 1.25; Go's
// strconv.FormatFloat(x, 'f', -1, 64)).
//
// Version 2 changed the canonical text's numbers (version 1 wrote them
// as Go's strconv.FormatFloat(x, 'g', -1, 64) does: 1e+06 for a million,
// which another language's shortest decimal would not match), so every
// fingerprint changed with it. Parse still reads "chash.shardmap/1"
// documents, which have no tolerance, observed, zone_replicas or
// residency, and whose canonical text starts with "chash.shardmap/1",
// has no lines for those fields and writes numbers as version 1 did: such
// a document loads if its fingerprint matches under those rules, and the
// map it gives is written back as version 2, with a version-2
// fingerprint.
//
// Parse fails with an error wrapping ErrInvalid when the data is
// not such a document, names an unknown node, has a wrong count or a
// fingerprint that does not match, or breaks a constraint (then also
// wrapping ErrConstraint); it never panics. O(size of the data).
func Parse(data []byte) (*Map, error) {
	fields, err := strictObject(data, docFields)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	var format string
	if err := decodeField(fields, "format", &format); err != nil {
		return nil, err
	}
	switch format {
	case shardMapFormat:
		for _, f := range docFields {
			if _, ok := fields[f]; !ok {
				return nil, fmt.Errorf("%w: field %q missing", ErrInvalid, f)
			}
		}
	case shardMapFormatV1:
		for f := range fields {
			if !slices.Contains(docFieldsV1, f) {
				return nil, fmt.Errorf("%w: field %q is not in format %q", ErrInvalid, f, format)
			}
		}
	default:
		return nil, fmt.Errorf("%w: format %q, want %q (or %q)", ErrInvalid, format, shardMapFormat, shardMapFormatV1)
	}
	d, err := decodeDoc(fields)
	if err != nil {
		return nil, err
	}
	d.format = format
	return d.shardMap()
}

// mapDoc is a decoded document.
type mapDoc struct {
	format      string
	version     uint64
	spec        Spec
	observed    bool
	nodes       []chash.Node
	assignment  [][]string
	fingerprint string
}

func decodeDoc(fields map[string]json.RawMessage) (*mapDoc, error) {
	d := &mapDoc{}
	var hash string
	for _, f := range []struct {
		name string
		v    any
	}{{"version", &d.version}, {"hash", &hash}, {"seed", &d.spec.Seed}, {"partitions", &d.spec.Partitions},
		{"replicas", &d.spec.Replicas}, {"load_factor", &d.spec.LoadFactor}, {"tolerance", &d.spec.Tolerance},
		{"observed", &d.observed}, {"assignment", &d.assignment}, {"fingerprint", &d.fingerprint}} {
		if err := decodeField(fields, f.name, f.v); err != nil {
			return nil, err
		}
	}
	err := errors.Join(
		decodeObjects(fields, "nodes", []string{"id", "weight", "zone"}, func(o map[string]json.RawMessage) error {
			var n chash.Node
			err := errors.Join(decodeField(o, "id", &n.ID), decodeField(o, "weight", &n.Weight), decodeField(o, "zone", &n.Zone))
			d.nodes = append(d.nodes, n)
			return err
		}),
		decodeObjects(fields, "pins", []string{"partition", "node"}, func(o map[string]json.RawMessage) error {
			var p Pin
			d.spec.Pins = append(d.spec.Pins, p)
			at := &d.spec.Pins[len(d.spec.Pins)-1]
			return errors.Join(decodeField(o, "partition", &at.Partition), decodeField(o, "node", &at.Node))
		}),
		decodeObjects(fields, "zone_replicas", []string{"zone", "replicas"}, func(o map[string]json.RawMessage) error {
			var z ZoneReplicas
			err := errors.Join(decodeField(o, "zone", &z.Zone), decodeField(o, "replicas", &z.Replicas))
			d.spec.ZoneReplicas = append(d.spec.ZoneReplicas, z)
			return err
		}),
		decodeObjects(fields, "residency", []string{"from", "to", "zones"}, func(o map[string]json.RawMessage) error {
			var r Residency
			err := errors.Join(decodeField(o, "from", &r.From), decodeField(o, "to", &r.To), decodeField(o, "zones", &r.Zones))
			d.spec.Residency = append(d.spec.Residency, r)
			return err
		}),
	)
	if err != nil {
		return nil, err
	}
	switch {
	case hash != "xxhash64":
		return nil, fmt.Errorf("%w: hash %q, want \"xxhash64\"", ErrInvalid, hash)
	case d.version < 1:
		return nil, fmt.Errorf("%w: version %d, want 1 or more", ErrInvalid, d.version)
	case d.spec.LoadFactor == 0:
		return nil, fmt.Errorf("%w: load_factor missing", ErrInvalid)
	case len(d.assignment) != d.spec.Partitions:
		return nil, fmt.Errorf("%w: %d assignments for %d partitions", ErrInvalid, len(d.assignment), d.spec.Partitions)
	}
	return d, nil
}

func (d *mapDoc) shardMap() (*Map, error) {
	if d.format == shardMapFormat && d.spec.Tolerance < 1 {
		return nil, fmt.Errorf("%w: tolerance %d, want 1 or more", ErrInvalid, d.spec.Tolerance)
	}
	for i, n := range d.nodes {
		if i > 0 && n.ID <= d.nodes[i-1].ID {
			return nil, fmt.Errorf("%w: nodes not in ascending id order at %q", ErrInvalid, n.ID)
		}
	}
	ns, spec, err := checkMapInput(d.nodes, d.spec)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if !slices.EqualFunc(spec.Pins, d.spec.Pins, func(a, b Pin) bool { return a == b }) {
		return nil, fmt.Errorf("%w: pins not in ascending partition order", ErrInvalid)
	}
	l, err := newLayout(ns, spec)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	assign := make([]int32, 0, len(d.assignment)*spec.Replicas)
	for p, reps := range d.assignment {
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
	check := l.checkMap
	if d.observed {
		check = l.checkStructure
	}
	if err := check(assign); err != nil {
		if errors.Is(err, ErrInvalid) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	m := newMap(l, d.version, assign, d.observed)
	want := m.fp
	if d.format == shardMapFormatV1 {
		want = m.fingerprintV1()
	}
	if got := fmt.Sprintf("%016x", want); d.fingerprint != got {
		return nil, fmt.Errorf("%w: fingerprint %q does not match the content's %q", ErrInvalid, d.fingerprint, got)
	}
	return m, nil
}

// strictObject decodes data as one JSON object whose keys are among
// allowed, each once and spelled exactly, and returns its values by key.
func strictObject(data []byte, allowed []string) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if tok != json.Delim('{') {
		return nil, fmt.Errorf("want a JSON object, got %v", tok)
	}
	out := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		if !slices.Contains(allowed, key) {
			return nil, fmt.Errorf("unknown field %q", key)
		}
		if _, dup := out[key]; dup {
			return nil, fmt.Errorf("field %q given twice", key)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		out[key] = v
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err == nil {
		return nil, errors.New("data after the object")
	}
	return out, nil
}

// decodeField decodes fields[name], if present, into v.
func decodeField(fields map[string]json.RawMessage, name string, v any) error {
	raw, ok := fields[name]
	if !ok {
		return nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("%w: field %q: %v", ErrInvalid, name, err)
	}
	return nil
}

// decodeObjects decodes fields[name], an array of objects with keys among
// allowed, calling each for every object.
func decodeObjects(fields map[string]json.RawMessage, name string, allowed []string, each func(map[string]json.RawMessage) error) error {
	var items []json.RawMessage
	if err := decodeField(fields, name, &items); err != nil {
		return err
	}
	for i, raw := range items {
		o, err := strictObject(raw, allowed)
		if err != nil {
			return fmt.Errorf("%w: %s[%d]: %v", ErrInvalid, name, i, err)
		}
		if err := each(o); err != nil {
			return err
		}
	}
	return nil
}

// canonicalNumber writes x as the format's canonical text does: the
// shortest decimal that reads back as x, without an exponent.
func canonicalNumber(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

// fingerprint returns the XXH64 of the map's canonical text, written
// straight into the hash.
func (m *Map) fingerprint() uint64 {
	d := xxhash.New()
	b := bufio.NewWriterSize(d, 64<<10)
	s := m.spec
	observed := 0
	if m.observed {
		observed = 1
	}
	fmt.Fprintf(b, "%s\nversion=%d\nseed=%d\npartitions=%d\nreplicas=%d\nload_factor=%s\ntolerance=%d\nobserved=%d\n",
		shardMapFormat, m.version, s.Seed, s.Partitions, s.Replicas, canonicalNumber(s.LoadFactor), s.Tolerance, observed)
	m.canonicalBody(b, canonicalNumber, true)
	b.Flush()
	return d.Sum64()
}

// fingerprintV1 returns the fingerprint of format 1.
func (m *Map) fingerprintV1() uint64 {
	d := xxhash.New()
	b := bufio.NewWriterSize(d, 64<<10)
	g := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	fmt.Fprintf(b, "%s\nversion=%d\nseed=%d\npartitions=%d\nreplicas=%d\nload_factor=%s\n",
		shardMapFormatV1, m.version, m.spec.Seed, m.spec.Partitions, m.spec.Replicas, g(m.spec.LoadFactor))
	m.canonicalBody(b, g, false)
	b.Flush()
	return d.Sum64()
}

// canonicalBody writes the nodes, pins, zone replicas and residency (v2)
// and the assignment.
func (m *Map) canonicalBody(b *bufio.Writer, num func(float64) string, v2 bool) {
	quoted := make([]string, len(m.nodes))
	for i, n := range m.nodes {
		quoted[i] = strconv.Quote(n.ID)
		fmt.Fprintf(b, "node=%s %s %s\n", quoted[i], num(n.Weight), strconv.Quote(n.Zone))
	}
	for _, p := range m.spec.Pins {
		fmt.Fprintf(b, "pin=%d %s\n", p.Partition, strconv.Quote(p.Node))
	}
	if v2 {
		for _, z := range m.spec.ZoneReplicas {
			fmt.Fprintf(b, "zone_replicas=%s %d\n", strconv.Quote(z.Zone), z.Replicas)
		}
		for _, r := range m.spec.Residency {
			fmt.Fprintf(b, "residency=%d %d", r.From, r.To)
			for _, z := range r.Zones {
				b.WriteString(" " + strconv.Quote(z))
			}
			b.WriteString("\n")
		}
	}
	r := m.spec.Replicas
	var num10 [20]byte
	for p := 0; p < m.spec.Partitions; p++ {
		b.WriteString("part=")
		b.Write(strconv.AppendInt(num10[:0], int64(p), 10))
		for _, i := range m.assign[p*r : p*r+r] {
			b.WriteByte(' ')
			b.WriteString(quoted[i])
		}
		b.WriteByte('\n')
	}
}
