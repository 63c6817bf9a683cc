package chashgrpc

import (
	"errors"
	"fmt"
	"testing"

	"github.com/keyplace/chash"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every key's top-k lists distinct nodes, starts with Lookup's, and
// reaches every node, even one light enough to own no entry.
func TestGRPCRingTopK(t *testing.T) {
	r, err := (&Config{Algorithm: RingHash, MinRingSize: 1024, MaxRingSize: 4096}).placer([]chash.Node{{ID: "heavy", Weight: 1 << 20}, {ID: "a"}, {ID: "b", Weight: 2}})
	require.NoError(t, err)
	for i := range 2000 {
		k := fmt.Sprint(i)
		top := r.AppendTopKString(nil, k, 10)
		require.Len(t, top, 3)
		assert.Equal(t, r.LookupString(k), top[0])
		assert.Equal(t, top, r.AppendTopK(nil, []byte(k), 3))
		assert.ElementsMatch(t, []string{"a", "b", "heavy"}, ids(top))
	}
	assert.Zero(t, testing.AllocsPerRun(100, func() { r.LookupString("x") }))
}

func TestGRPCRingRejects(t *testing.T) {
	for _, tc := range []struct {
		nodes    []chash.Node
		min, max uint64
		want     error
	}{
		{nil, 10, 10, chash.ErrNoNodes},
		{[]chash.Node{{ID: "a"}, {ID: "a"}}, 10, 10, chash.ErrDuplicateID},
		{[]chash.Node{{ID: "a", Weight: 1.5}}, 10, 10, chash.ErrInvalidWeight},
		{[]chash.Node{{ID: "a"}}, 20, 10, chash.ErrInvalidOption},
	} {
		_, err := (&Config{Algorithm: RingHash, MinRingSize: tc.min, MaxRingSize: tc.max}).placer(tc.nodes)
		assert.True(t, errors.Is(err, tc.want), "%v: %v", tc.nodes, err)
	}
}

func TestParseConfigRejects(t *testing.T) {
	for _, js := range []string{
		`{"algorithm": "cuckoo"}`,
		`{"vnodes": -1, "algorithm": "ring"}`,
		`{"loadFactor": 0.5}`,
		`{"header": "x-key-bin"}`,
		`{"algorithm": "ring_hash", "minRingSize": 5000, "maxRingSize": 10}`,
		`[]`,
	} {
		_, err := ParseConfig([]byte(js))
		assert.ErrorIs(t, err, ErrConfig, js)
	}
}

// ParseConfig never panics, and what it accepts builds a placement.
func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{`{}`, `{"algorithm":"ring_hash","minRingSize":1}`, `{"algorithm":"maglev","tableSize":7}`, `{"loadFactor":2}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, js string) {
		c, err := ParseConfig([]byte(js))
		if err != nil {
			return
		}
		_, err = c.placer([]chash.Node{{ID: "a"}, {ID: "b"}})
		require.NoError(t, err)
	})
}
