package chash_test

import (
	"errors"
	"math"
	"testing"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/chashtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseAlgorithm(t *testing.T) {
	for _, a := range chash.Algorithms() {
		got, err := chash.ParseAlgorithm(a.String())
		require.NoError(t, err)
		assert.Equal(t, a, got)
	}
	got, err := chash.ParseAlgorithm(" HRW ")
	require.NoError(t, err)
	assert.Equal(t, chash.AlgorithmRendezvous, got)
	got, err = chash.ParseAlgorithm("Maglev")
	require.NoError(t, err)
	assert.Equal(t, chash.AlgorithmMaglev, got)
	for _, s := range []string{"", "modulo", "ring2"} {
		_, err := chash.ParseAlgorithm(s)
		assert.ErrorIs(t, err, chash.ErrUnknownAlgorithm, s)
	}
	assert.Equal(t, "Algorithm(0)", chash.Algorithm(0).String())
	assert.Equal(t, "Algorithm(200)", chash.Algorithm(200).String())
}

func TestNew(t *testing.T) {
	nodes := []chash.Node{{ID: "a"}, {ID: "b"}}
	for _, a := range []chash.Algorithm{0, chash.Algorithm(len(chash.Algorithms()) + 1), 255} {
		p, err := chash.New(a, nodes)
		assert.ErrorIs(t, err, chash.ErrUnknownAlgorithm)
		assert.Nil(t, p)
	}
	p, err := chash.New(chash.AlgorithmRing, nodes)
	require.NoError(t, err)
	assert.IsType(t, &chash.Ring{}, p)
	// A failed build is a nil interface, not a typed nil.
	for _, a := range chash.Algorithms() {
		p, err := chash.New(a, nil)
		assert.Error(t, err)
		assert.True(t, p == nil, "%v: New returned a non-nil Placer with an error", a)
	}
}

func TestOptions(t *testing.T) {
	nodes := []chash.Node{{ID: "a"}}
	bad := map[string]chash.Option{
		"hasher nil":         chash.WithHasher(nil),
		"vnodes 0":           chash.WithVnodes(0),
		"vnodes negative":    chash.WithVnodes(-5),
		"vnodes huge":        chash.WithVnodes(1 << 20),
		"table not prime":    chash.WithTableSize(65536),
		"table 1":            chash.WithTableSize(1),
		"table 0":            chash.WithTableSize(0),
		"table huge":         chash.WithTableSize(1<<24 + 43),
		"partitions 0":       chash.WithPartitions(0),
		"partitions huge":    chash.WithPartitions(1<<24 + 1),
		"load factor 1":      chash.WithLoadFactor(1),
		"load factor 0.5":    chash.WithLoadFactor(0.5),
		"load factor NaN":    chash.WithLoadFactor(math.NaN()),
		"load factor +Inf":   chash.WithLoadFactor(math.Inf(1)),
		"load factor -Inf":   chash.WithLoadFactor(math.Inf(-1)),
		"load factor 1-1e-9": chash.WithLoadFactor(1 - 1e-9),
	}
	for name, o := range bad {
		for _, a := range chash.Algorithms() {
			_, err := chash.New(a, nodes, o)
			if errors.Is(err, chash.ErrUnknownAlgorithm) {
				continue
			}
			assert.ErrorIs(t, err, chash.ErrInvalidOption, "%s with %v", name, a)
		}
	}
	good := []chash.Option{
		nil, chash.WithVnodes(1), chash.WithTableSize(65537), chash.WithTableSize(2), chash.WithPartitions(1),
		chash.WithLoadFactor(1.0000001), chash.WithHasher(chash.XXHashSeed(3)),
	}
	_, err := chash.NewRing(nodes, good...)
	assert.NoError(t, err)
}

func TestNodeErrorsCarryDetail(t *testing.T) {
	_, err := chash.NewRing([]chash.Node{{ID: "a"}, {ID: "cache-7"}, {ID: "cache-7"}})
	assert.ErrorIs(t, err, chash.ErrDuplicateID)
	assert.Contains(t, err.Error(), `"cache-7"`)
	_, err = chash.NewRing([]chash.Node{{ID: "x", Weight: -2}})
	assert.ErrorIs(t, err, chash.ErrInvalidWeight)
	assert.Contains(t, err.Error(), `"x"`)
	assert.Contains(t, err.Error(), "-2")
}

// positionalPlacer is a foreign placer that declares itself positional.
type positionalPlacer struct{ chash.Placer }

func (positionalPlacer) Positional() bool { return true }

// TestPositional: the jump family (jump, jumpback, binomial, flip) is
// positional as an Algorithm and as a placer, however it is wrapped; every
// other algorithm is not. The stateful algorithms are those that number
// their members as jump does but can lose any of them.
func TestPositional(t *testing.T) {
	nodes := chashtest.Nodes(4)
	for _, a := range chash.Algorithms() {
		p, err := chash.New(a, nodes)
		require.NoError(t, err)
		want := a == chash.AlgorithmJump || a == chash.AlgorithmJumpBack || a == chash.AlgorithmBinomial || a == chash.AlgorithmFlip
		assert.Equal(t, want, a.Positional(), a)
		stateful := a == chash.AlgorithmMemento || a == chash.AlgorithmAnchor || a == chash.AlgorithmDx ||
			a == chash.AlgorithmJumpBackAnchor || a == chash.AlgorithmChooseK
		assert.Equal(t, stateful, a.Stateful(), a)
		history := a == chash.AlgorithmMemento || a == chash.AlgorithmAnchor || a == chash.AlgorithmJumpBackAnchor
		assert.Equal(t, history, a.HistoryDependent(), a)
		assert.Equal(t, want, chash.IsPositional(p), a)
		assert.Equal(t, want, chash.IsPositional(chash.NewHolder(p)), "%v in a Holder", a)
		assert.Equal(t, stateful, chash.IsStateful(p), a)
		assert.Equal(t, stateful, chash.IsStateful(chash.NewHolder(p)), "%v in a Holder", a)
		z, err := chash.NewZoned(p)
		require.NoError(t, err)
		assert.Equal(t, want, chash.IsPositional(z), "%v in a Zoned", a)
		assert.Equal(t, stateful, chash.IsStateful(z), "%v in a Zoned", a)
		r, err := chash.NewRing(nodes)
		require.NoError(t, err)
		m, err := chash.NewMigration(r, p)
		require.NoError(t, err)
		assert.Equal(t, want, chash.IsPositional(m), "a Migration to %v", a)
	}
	assert.False(t, chash.IsPositional(nil))
	assert.False(t, chash.IsPositional((*chash.Jump)(nil)))
	assert.True(t, chash.IsPositional(positionalPlacer{}))
	self := new(chash.Holder)
	self.Store(self)
	assert.False(t, chash.IsPositional(self), "a Holder that holds itself ends")
	assert.False(t, chash.IsStateful(self), "a Holder that holds itself ends")
	assert.False(t, chash.IsStateful(nil))
	assert.False(t, chash.IsStateful((*chash.Memento)(nil)))
}
