package balance_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/balance"
	"github.com/keyplace/chash/chashtest"
	"github.com/keyplace/chash/internal/conformance"
)

func TestHotKeysConfig(t *testing.T) {
	for _, cfg := range []balance.HotKeysConfig{
		{Threshold: -1}, {Threshold: 1.0 / 5000}, {Threshold: 1.5}, {Sample: 3}, {Sample: 1 << 17}, {Sample: -8},
		{Window: 63}, {Window: 1<<30 + 1},
	} {
		_, err := balance.NewHotKeys(cfg)
		assert.ErrorIs(t, err, chash.ErrInvalidOption, "%+v", cfg)
	}
	h, err := balance.NewHotKeys(balance.HotKeysConfig{})
	require.NoError(t, err)
	assert.Equal(t, 0.01, h.Threshold())
}

// TestHotKeysZero: the zero and nil detectors are empty.
func TestHotKeysZero(t *testing.T) {
	for _, h := range []*balance.HotKeys{nil, new(balance.HotKeys)} {
		h.ObserveString("k")
		h.Observe([]byte("k"))
		assert.Zero(t, h.ShareString("k"))
		assert.Zero(t, h.Share([]byte("k")))
		assert.Empty(t, h.AppendHot(nil))
		assert.Zero(t, h.Threshold())
	}
}

// hotStream observes n requests: key "hot-i" takes shares[i] of them, the
// rest go to distinct cold keys.
func hotStream(h *balance.HotKeys, rng *rand.Rand, n int, shares ...float64) {
	var buf []byte
	for i := 0; i < n; i++ {
		u, key := rng.Float64(), ""
		for j, s := range shares {
			if u < s {
				key = fmt.Sprint("hot-", j)
				break
			}
			u -= s
		}
		if key == "" {
			buf = fmt.Appendf(buf[:0], "cold-%d", rng.Uint64())
			h.Observe(buf)
			continue
		}
		h.ObserveString(key)
	}
}

// TestHotKeysDetect: keys above the threshold are reported, with their
// shares to within a third of the threshold, and no key below half of it.
func TestHotKeysDetect(t *testing.T) {
	h, err := balance.NewHotKeys(balance.HotKeysConfig{Threshold: 0.02, Window: 4096})
	require.NoError(t, err)
	shares := []float64{0.3, 0.1, 0.05, 0.025, 0.01, 0.005}
	hotStream(h, rand.New(rand.NewPCG(1, 2)), 400_000, shares...)
	hot := h.AppendHot(nil)
	var got []string
	for _, k := range hot {
		got = append(got, k.Key)
	}
	require.Equal(t, []string{"hot-0", "hot-1", "hot-2", "hot-3"}, got, "%+v", hot)
	for i, k := range hot {
		assert.InDelta(t, shares[i], k.Share, 0.02/3+0.01*shares[i]*10, k.Key)
		assert.Equal(t, k.Share, h.ShareString(k.Key))
	}
	assert.Zero(t, h.ShareString("hot-5"), "a key at a quarter of the threshold")
	assert.Zero(t, h.ShareString("never seen"))
}

// TestHotKeysDecay: a key that cools leaves the report within a few
// windows, and one that heats up enters it.
func TestHotKeysDecay(t *testing.T) {
	h, err := balance.NewHotKeys(balance.HotKeysConfig{Threshold: 0.05, Sample: 1, Window: 1024})
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(3, 4))
	hotStream(h, rng, 10_000, 0.5)
	require.Greater(t, h.ShareString("hot-0"), 0.4)
	hotStream(h, rng, 10_000, 0, 0.5) // hot-0 stops, hot-1 starts
	assert.Zero(t, h.ShareString("hot-0"))
	assert.Greater(t, h.ShareString("hot-1"), 0.4)
	hot := h.AppendHot(nil)
	require.Len(t, hot, 1)
	assert.Equal(t, "hot-1", hot[0].Key)
}

func TestHotKeysLongKey(t *testing.T) {
	h, err := balance.NewHotKeys(balance.HotKeysConfig{Threshold: 0.5, Sample: 1, Window: 64})
	require.NoError(t, err)
	long := strings.Repeat("x", 200)
	for i := 0; i < 200; i++ {
		h.ObserveString(long)
	}
	hot := h.AppendHot(nil)
	require.Len(t, hot, 1)
	assert.True(t, hot[0].Truncated)
	assert.Equal(t, long[:96], hot[0].Key)
}

// TestHotKeysConcurrent feeds the detector from several goroutines while
// others read it; the shares it reports are those of one stream.
func TestHotKeysConcurrent(t *testing.T) {
	h, err := balance.NewHotKeys(balance.HotKeysConfig{Threshold: 0.02, Window: 2048})
	require.NoError(t, err)
	n := 100_000
	if testing.Short() || raceEnabled {
		n = 20_000
	}
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(2)
		go func(g int) {
			defer wg.Done()
			hotStream(h, rand.New(rand.NewPCG(uint64(g), 9)), n, 0.2, 0.1)
		}(g)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				_ = h.AppendHot(nil)
				_ = h.ShareString("hot-0")
			}
		}()
	}
	wg.Wait()
	hot := h.AppendHot(nil)
	require.Len(t, hot, 2, "%+v", hot)
	assert.InDelta(t, 0.2, hot[0].Share, 0.03)
	assert.InDelta(t, 0.1, hot[1].Share, 0.03)
}

func TestHotKeysAllocs(t *testing.T) {
	if testing.CoverMode() != "" || raceEnabled {
		t.Skip("coverage instrumentation and the race detector allocate")
	}
	h, err := balance.NewHotKeys(balance.HotKeysConfig{Threshold: 0.1, Sample: 1, Window: 64})
	require.NoError(t, err)
	key := []byte("user:1:profile")
	// Hot and cold keys, across halvings.
	assert.Zero(t, testing.AllocsPerRun(1000, func() { h.Observe(key); h.ObserveString("cold"); h.Share(key) }))
	assert.Positive(t, h.Share(key))
}

// BenchmarkHotKeys compares the cost of feeding the detector with that of
// the lookup it sits beside (a ring of 64 nodes, keys of 15 bytes).
func BenchmarkHotKeys(b *testing.B) {
	_, ss := conformance.BenchKeys(13)
	mask := len(ss) - 1
	h, _ := balance.NewHotKeys(balance.HotKeysConfig{})
	r, _ := chash.NewRing(chashtest.Nodes(64))
	b.Run("ObserveString", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			h.ObserveString(ss[i&mask])
		}
	})
	b.Run("ObserveAndShare", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			h.ObserveString(ss[i&mask])
			_ = h.ShareString(ss[i&mask])
		}
	})
	b.Run("ObserveStringParallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for i := 0; pb.Next(); i++ {
				h.ObserveString(ss[i&mask])
			}
		})
	})
	b.Run("RingLookupString", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			_ = r.LookupString(ss[i&mask])
		}
	})
}

// FuzzHotKeys: any configuration is accepted or rejected with
// ErrInvalidOption, and an accepted detector takes any key without
// panicking and reports shares in [0, 1].
func FuzzHotKeys(f *testing.F) {
	f.Add(0.01, 8, 8192, []byte("user:1"))
	f.Add(1.0/4096, 1, 64, []byte{})
	f.Fuzz(func(t *testing.T, threshold float64, sample, window int, key []byte) {
		h, err := balance.NewHotKeys(balance.HotKeysConfig{Threshold: threshold, Sample: sample, Window: window})
		if err != nil {
			require.ErrorIs(t, err, chash.ErrInvalidOption)
			return
		}
		for i := 0; i < 300; i++ {
			h.Observe(key)
			h.ObserveString(fmt.Sprint(i))
		}
		s := h.Share(key)
		require.True(t, s >= 0 && s <= 1, "share %v", s)
		for _, k := range h.AppendHot(nil) {
			require.True(t, k.Share > 0 && k.Share <= 1, "%+v", k)
		}
	})
}
