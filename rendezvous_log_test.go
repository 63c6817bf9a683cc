package chash

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// logGridPoints returns indexes k of the grid u = (k + 0.5)/2^40 that
// unit produces: the smallest and largest, both sides of every power of
// two and of every √2·2^j (where logUnit's reduction switches), and n
// pseudo-random ones.
func logGridPoints(n int) []uint64 {
	const top = 1 << 40
	var ks []uint64
	for k := uint64(0); k < 4096; k++ {
		ks = append(ks, k, top-1-k)
	}
	for j := 0; j < 40; j++ {
		for _, c := range []uint64{1 << j, uint64(math.Sqrt2 * float64(uint64(1)<<j))} {
			for d := uint64(0); d < 64; d++ {
				ks = append(ks, (c+d)%top, (c-d)%top)
			}
		}
	}
	for i := 0; i < n; i++ {
		ks = append(ks, mix64(uint64(i))%top)
	}
	return ks
}

// TestLogUnitAccuracy checks logUnit against math.Log, whose error is
// below one ulp (2^-52 relative), on the grid unit maps to: relative
// error below 2^-49, as logUnit documents, and strictly increasing from
// each grid point to the next.
func TestLogUnitAccuracy(t *testing.T) {
	n := 2_000_000
	if testing.Short() {
		n = 200_000
	}
	worst, worstU := 0.0, 0.0
	for _, k := range logGridPoints(n) {
		u := unit(k << 24)
		got, want := logUnit(u), math.Log(u)
		rel := math.Abs(got-want) / math.Abs(want)
		if rel > worst {
			worst, worstU = rel, u
		}
		if rel >= 0x1p-49 { // a check per point, kept off testify's reflection
			require.Failf(t, "logUnit inaccurate", "logUnit(%v) = %v, math.Log %v: relative error 2^%.2f", u, got, want, math.Log2(rel))
		}
		if k+1 < 1<<40 {
			if next := logUnit(unit((k + 1) << 24)); !(next > got) {
				require.Failf(t, "logUnit not increasing", "grid %d gives %v, grid %d gives %v", k, got, k+1, next)
			}
		}
	}
	t.Logf("worst relative error 2^%.2f at u = %v", math.Log2(worst), worstU)
	// The documented worst seen is 2^-50.6; dropping the series' last
	// term would give 2^-49.5, inside the bound but not this.
	assert.Less(t, worst, 0x1p-50, "worst relative error 2^%.2f", math.Log2(worst))
	assert.Positive(t, worst, "logUnit is not math.Log bit for bit on every point")
}

// TestUnitGrid pins unit's mapping of m to (⌊m/2^24⌋ + 0.5)/2^40.
func TestUnitGrid(t *testing.T) {
	assert.Equal(t, 0x1p-41, unit(0))
	assert.Equal(t, 0x1p-41, unit(1<<24-1))
	assert.Equal(t, 1.5*0x1p-40, unit(1<<24))
	assert.Equal(t, 1-0x1p-41, unit(math.MaxUint64))
	assert.Equal(t, 0.5+0x1p-41, unit(1<<63))
}
