package member

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/keyplace/chash"
)

// Member is what a node announces through a source: its placement identity
// (every field of a chash.Node) and whatever a client needs to reach it. Its
// JSON form, which the sources that store JSON use, is
//
//	{"id":"cache-1","weight":2,"zone":"eu-1a","addr":"10.0.0.1:11211","meta":{"rack":"r7"}}
//
// with every field but id optional. The zero Member, with no ID, is not
// valid.
type Member struct {
	// ID is the node's placement identity (chash.Node.ID). It must not be
	// empty, nor longer than MaxIDLength bytes.
	ID string `json:"id"`
	// Weight is the node's relative capacity (chash.Node.Weight); 0 means
	// 1. It must be finite and not negative.
	Weight float64 `json:"weight,omitempty"`
	// Zone is the node's failure domain (chash.Node.Zone), read by
	// chash.Zoned and the shard maps; empty means a domain of its own.
	Zone string `json:"zone,omitempty"`
	// Addr is where clients reach the node, such as "10.0.0.7:11211".
	Addr string `json:"addr,omitempty"`
	// Meta holds anything else a client needs.
	Meta map[string]string `json:"meta,omitempty"`
}

// MaxIDLength is the longest member ID accepted, in bytes.
const MaxIDLength = 1024

// Node returns the member's placement identity: every field of chash.Node.
func (m Member) Node() chash.Node { return chash.Node{ID: m.ID, Weight: m.Weight, Zone: m.Zone} }

// Check reports whether m is a valid member, with an error wrapping
// ErrBadMember if not: an empty or overlong ID, or a negative, NaN or
// infinite weight. It says nothing about whether a placer accepts the
// weight; see Place.
func (m Member) Check() error {
	switch {
	case m.ID == "":
		return fmt.Errorf("%w: empty ID", ErrBadMember)
	case len(m.ID) > MaxIDLength:
		return fmt.Errorf("%w: ID of %d bytes (limit %d)", ErrBadMember, len(m.ID), MaxIDLength)
	case m.Weight < 0 || math.IsNaN(m.Weight) || math.IsInf(m.Weight, 0):
		return fmt.Errorf("%w: %q has weight %v", ErrBadMember, m.ID, m.Weight)
	}
	return nil
}

// FromNode returns the member with n's placement identity and nothing
// else.
func FromNode(n chash.Node) Member { return Member{ID: n.ID, Weight: n.Weight, Zone: n.Zone} }

// Equal reports whether m and o are the same in every field.
func (m Member) Equal(o Member) bool {
	if m.Node() != o.Node() || m.Addr != o.Addr || len(m.Meta) != len(o.Meta) {
		return false
	}
	for k, v := range m.Meta {
		if w, ok := o.Meta[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// DecodeJSON decodes a member from its JSON form, refusing a value longer
// than maxSize bytes (0 means DefaultMaxValueSize), and checks it (see
// Check). Unknown fields are ignored, so that a newer writer's members
// stay readable. Every error wraps ErrBadMember.
func DecodeJSON(value []byte, maxSize int) (Member, error) {
	if maxSize <= 0 {
		maxSize = DefaultMaxValueSize
	}
	if len(value) > maxSize {
		return Member{}, fmt.Errorf("%w: value of %d bytes (limit %d)", ErrBadMember, len(value), maxSize)
	}
	var m Member
	d := json.NewDecoder(bytes.NewReader(value))
	if err := d.Decode(&m); err != nil {
		return Member{}, fmt.Errorf("%w: not a JSON member: %v", ErrBadMember, err)
	}
	if d.More() {
		return Member{}, fmt.Errorf("%w: data after the member", ErrBadMember)
	}
	if err := m.Check(); err != nil {
		return Member{}, err
	}
	return m, nil
}

// EncodeJSON checks m and returns its JSON form.
func EncodeJSON(m Member) ([]byte, error) {
	if err := m.Check(); err != nil {
		return nil, err
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadMember, err)
	}
	return b, nil
}

// DefaultMaxValueSize is the largest JSON member DecodeJSON accepts unless
// told otherwise: 16 KiB.
const DefaultMaxValueSize = 16 << 10

// printable reports whether s is non-empty, at most max bytes and free of
// spaces and control characters.
func printable(s string, max int) bool {
	return s != "" && len(s) <= max && !strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f })
}
