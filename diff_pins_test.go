package chash_test

import (
	"math/bits"
	"slices"
	"testing"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/chashtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// flowKey names one (From, To) pair of a Movement.
type flowKey struct{ from, to string }

// slotFlows counts, slot by slot, the owners of two tables of size slots:
// owner(i, s) is table i's owner of slot s. Each slot weighs 1/size.
func slotFlows(size int, owner func(i, s int) string) map[flowKey]float64 {
	out := map[flowKey]float64{}
	for s := 0; s < size; s++ {
		out[flowKey{owner(0, s), owner(1, s)}] += 1 / float64(size)
	}
	return out
}

// checkExactDiff requires Diff(old, new) to be exact and to report the
// flows want, pair for pair. A slot's share of the hash space differs
// from 1/size by less than 2^-64, so the fractions agree to rounding.
func checkExactDiff(t *testing.T, old, new chash.Placer, want map[flowKey]float64) {
	t.Helper()
	m, err := chash.Diff(old, new)
	require.NoError(t, err)
	require.True(t, m.Exact, "Diff of two tables with one hasher is exact")
	got := map[flowKey]float64{}
	moved := 0.0
	for _, f := range m.Flows {
		got[flowKey{f.From, f.To}] += f.Fraction
	}
	for k, w := range want {
		assert.InDelta(t, w, got[k], 1e-12, "flow %s -> %s", k.from, k.to)
		if k.from != k.to {
			moved += w
		}
	}
	for k := range got {
		_, ok := want[k]
		assert.True(t, ok, "Diff reports a flow %s -> %s that no slot has", k.from, k.to)
	}
	assert.InDelta(t, moved, m.Moved, 1e-12)
	assert.Positive(t, moved)
}

// maglevSlotOwner returns the owner of table entry s, looked up through a
// key aimed at the first hash of the entry: ⌈s·2^64/M⌉.
func maglevSlotOwner(t *testing.T, g *chash.Maglev, s int) string {
	m := uint64(g.TableSize())
	h, rem := bits.Div64(uint64(s), 0, m)
	if rem != 0 {
		h++
	}
	hi, _ := bits.Mul64(h, m)
	require.Equal(t, uint64(s), hi, "hash %#x is not in entry %d of %d", h, s, m)
	return g.LookupString(aimAt(h)).ID
}

// TestDiffMaglevToTheSlot compares Diff of two Maglev tables with the
// flows counted entry by entry, for an addition and a removal.
func TestDiffMaglevToTheSlot(t *testing.T) {
	opts := []chash.Option{chash.WithHasher(aimHasher{}), chash.WithTableSize(1009)}
	old, err := chash.NewMaglev(chashtest.Nodes(10), opts...)
	require.NoError(t, err)
	grown, err := chash.NewMaglev(chashtest.Nodes(11), opts...)
	require.NoError(t, err)
	shrunk, err := old.Remove("node-3")
	require.NoError(t, err)
	weighted, err := chash.NewMaglev(weightedNodes(10), opts...)
	require.NoError(t, err)
	// The slot owners add up to Entries: the aimed lookups read the table.
	for _, g := range []*chash.Maglev{old, grown, shrunk, weighted} {
		counts := map[string]int{}
		for s := 0; s < g.TableSize(); s++ {
			counts[maglevSlotOwner(t, g, s)]++
		}
		for i, n := range g.Nodes() {
			require.Equal(t, g.Entries()[i], counts[n.ID], "entries of %s", n.ID)
		}
	}
	for _, pair := range [][2]*chash.Maglev{{old, grown}, {old, shrunk}, {grown, shrunk}, {old, weighted}} {
		want := slotFlows(1009, func(i, s int) string { return maglevSlotOwner(t, pair[i], s) })
		checkExactDiff(t, pair[0], pair[1], want)
	}
}

// TestDiffBoundedToTheSlot compares Diff of two bounded placers with the
// flows counted partition by partition through Owner.
func TestDiffBoundedToTheSlot(t *testing.T) {
	opts := []chash.Option{chash.WithPartitions(1024), chash.WithLoadFactor(1.1)}
	old, err := chash.NewBounded(chashtest.Nodes(10), opts...)
	require.NoError(t, err)
	grown, err := old.Add(chash.Node{ID: "node-10"})
	require.NoError(t, err)
	shrunk, err := old.Remove("node-3")
	require.NoError(t, err)
	weighted, err := chash.NewBounded(weightedNodes(10), opts...)
	require.NoError(t, err)
	for _, pair := range [][2]*chash.Bounded{{old, grown}, {old, shrunk}, {grown, shrunk}, {old, weighted}} {
		want := slotFlows(1024, func(i, p int) string { return pair[i].Owner(p).ID })
		checkExactDiff(t, pair[0], pair[1], want)
	}
}

// tableCuts returns where the entries of a table of size slots begin:
// entry s holds the hashes from ⌈s·2^64/size⌉.
func tableCuts(size int) []uint64 {
	out := make([]uint64, size)
	for s := range out {
		h, rem := bits.Div64(uint64(s), 0, uint64(size))
		if rem != 0 {
			h++
		}
		out[s] = h
	}
	return out
}

// ringCuts returns where a ring's arcs begin: just after each point.
func ringCuts(r *chash.Ring, vnodes int, h chash.Hasher) []uint64 {
	out := []uint64{0}
	for _, p := range refRingPoints(r.Nodes(), vnodes, h) {
		out = append(out, p.pos+1)
	}
	return out
}

// pieceFlows splits the hash space at every cut of both placers, where
// neither changes owner within a piece, and adds up each piece's length
// under its pair of owners, found by aimed lookups.
func pieceFlows(a, b chash.Placer, cuts ...[]uint64) map[flowKey]float64 {
	all := slices.Concat(cuts...)
	all = append(all, 0)
	slices.Sort(all)
	all = slices.Compact(all)
	out := map[flowKey]float64{}
	for i, c := range all {
		length := -c // the last piece runs to 2^64
		if i+1 < len(all) {
			length = all[i+1] - c
		}
		k := flowKey{a.LookupString(aimAt(c)).ID, b.LookupString(aimAt(c)).ID}
		out[k] += float64(length) * 0x1p-64
	}
	return out
}

// TestDiffAcrossTablesToTheHash compares Diff between tables of different
// sizes, and between a table and a ring, with the flows summed piece by
// piece of the hash space.
func TestDiffAcrossTablesToTheHash(t *testing.T) {
	aim := chash.WithHasher(aimHasher{})
	g1009, err := chash.NewMaglev(chashtest.Nodes(10), aim, chash.WithTableSize(1009))
	require.NoError(t, err)
	g1013, err := chash.NewMaglev(chashtest.Nodes(11), aim, chash.WithTableSize(1013))
	require.NoError(t, err)
	b, err := chash.NewBounded(chashtest.Nodes(10), aim, chash.WithPartitions(1024))
	require.NoError(t, err)
	r, err := chash.NewRing(chashtest.Nodes(10), aim, chash.WithVnodes(40))
	require.NoError(t, err)
	rcuts := ringCuts(r, 40, aimHasher{})
	checkExactDiff(t, g1009, g1013, pieceFlows(g1009, g1013, tableCuts(1009), tableCuts(1013)))
	checkExactDiff(t, g1013, b, pieceFlows(g1013, b, tableCuts(1013), tableCuts(1024)))
	checkExactDiff(t, b, r, pieceFlows(b, r, tableCuts(1024), rcuts))
	checkExactDiff(t, r, g1009, pieceFlows(r, g1009, rcuts, tableCuts(1009)))
	// The pieces of one table alone give its entry counts.
	o, err := chash.Shares(g1013)
	require.NoError(t, err)
	require.True(t, o.Exact)
	for i, s := range o.Shares {
		assert.InDelta(t, float64(g1013.Entries()[i])/1013, s.Fraction, 1e-12, "%s", s.Node.ID)
	}
	assert.InDelta(t, 1, sumFlows(pieceFlows(r, r, rcuts)), 1e-12)
}

func sumFlows(m map[flowKey]float64) float64 {
	t := 0.0
	for _, f := range m {
		t += f
	}
	return t
}
