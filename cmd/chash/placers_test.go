package main

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseMember(t *testing.T) {
	for line, want := range map[string]struct {
		id string
		w  float64
		ok bool
	}{
		"":                   {},
		"   # comment":       {},
		"a":                  {"a", 0, true},
		"  cache-b 2  # big": {"cache-b", 2, true},
		"a#b 0.5":            {"a#b", 0.5, true},
		"10.0.0.1:11211\t3":  {"10.0.0.1:11211", 3, true},
		"a 1 2":              {"a", 1, true}, // zone "2"
	} {
		n, ok, err := parseMember(line)
		require.NoError(t, err, "%q", line)
		assert.Equal(t, want.ok, ok, "%q", line)
		assert.Equal(t, want.id, n.ID, "%q", line)
		assert.Equal(t, want.w, n.Weight, "%q", line)
	}
	for _, line := range []string{"a=2", "a,b", "a 1 z1 extra", "a -1", "a NaN", "a Inf", "a 1e400", "a\u200b", "\ufeffa", "a\x7f", "a 1 z\u200b", "a 1 z\xff"} {
		_, _, err := parseMember(line)
		assert.Error(t, err, "%q accepted", line)
	}
}

// FuzzParseMember: parsing a file line or a list never panics nor accepts
// a bad ID or zone, and every accepted line gives a node whose ID, weight
// and zone written back parse to the same node.
func FuzzParseMember(f *testing.F) {
	for _, s := range []string{"a", "a 2", "a=2", "a,b", "\ufeffa", "a # b", "a\t1e-300", "é 0x1p3", "a\xff", "  ", "0\t00 0000000", "a 1 z\x7f"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		if nodes, err := parseList(line); err == nil {
			for _, m := range nodes {
				require.NoError(t, checkID(m.ID))
			}
		}
		n, ok, err := parseMember(line)
		if err != nil || !ok {
			return
		}
		require.NotEmpty(t, n.ID)
		require.NoError(t, checkID(n.ID))
		require.False(t, strings.ContainsFunc(n.ID, unicode.IsSpace), "ID %q holds a space", n.ID)
		require.True(t, n.Weight >= 0 && !math.IsInf(n.Weight, 0), "weight %v", n.Weight)
		require.NoError(t, printable("zone", n.Zone))
		written := n.ID + " " + strconv.FormatFloat(n.Weight, 'g', -1, 64)
		if n.Zone != "" {
			written += " " + n.Zone
		}
		back, ok, err := parseMember(written)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, n, back)
	})
}
