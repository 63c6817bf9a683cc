package dns

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/keyplace/chash/member"
	mdns "github.com/miekg/dns"
)

// The TXT records this package reads (see the package doc).
const (
	txtSpec   = "chash-spec"
	txtMember = "chash-member"
)

// applyTXT reads the chash TXT records in rrs: it returns the spec
// published, if any, and sets the zone and weight of the members of ms
// (ascending by ID) they name. It returns what it could not read.
func applyTXT(rrs []mdns.RR, ms []member.Member) (*member.Spec, []error) {
	var spec *member.Spec
	var problems []error
	for _, rr := range rrs {
		txt, ok := rr.(*mdns.TXT)
		if !ok {
			continue
		}
		line := strings.Join(txt.Txt, "")
		kind, rest, _ := strings.Cut(line, " ")
		switch kind {
		case txtSpec:
			s, err := member.ParseSpec(rest)
			if err != nil {
				problems = append(problems, fmt.Errorf("dns: TXT %q: %w", line, err))
				continue
			}
			spec = &s
		case txtMember:
			if err := applyMember(rest, ms); err != nil {
				problems = append(problems, fmt.Errorf("%w: dns: TXT %q: %v", member.ErrBadMember, line, err))
			}
		}
	}
	return spec, problems
}

// applyMember applies "ID zone=Z weight=W" to the member of ms with that
// ID; one that names no member is ignored (it may have left).
func applyMember(text string, ms []member.Member) error {
	fields := strings.Fields(text)
	if len(fields) == 0 {
		return fmt.Errorf("no ID")
	}
	i, found := slices.BinarySearchFunc(ms, fields[0], func(m member.Member, id string) int { return strings.Compare(m.ID, id) })
	m := member.Member{ID: fields[0]}
	if found {
		m = ms[i]
	}
	for _, f := range fields[1:] {
		name, value, _ := strings.Cut(f, "=")
		switch name {
		case "zone":
			m.Zone = value
		case "weight":
			w, err := strconv.ParseFloat(value, 64)
			if err != nil || w < 0 || math.IsNaN(w) || math.IsInf(w, 0) {
				return fmt.Errorf("weight %q: want a finite number >= 0", value)
			}
			m.Weight = w
		default:
			return fmt.Errorf("unknown field %q (want zone= and weight=)", name)
		}
	}
	if found {
		ms[i] = m
	}
	return nil
}
