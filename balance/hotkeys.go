package balance

import (
	"cmp"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/cespare/xxhash/v2"
	"github.com/keyplace/chash"
	"github.com/keyplace/chash/internal/hashing"
)

// HotKeys finds the keys that take at least a given share of recent
// traffic: a heavy-hitter detector for a request path to feed on every
// request. It samples one request in Sample and counts the samples in a
// count-min sketch (Cormode and Muthukrishnan, "An Improved Data Stream
// Summary: The Count-Min Sketch and its Applications", 2005) of 4 rows of
// atomic counters, about 8/Threshold counters wide, so that a key's
// estimate exceeds its true count by less than a third of the threshold
// with probability above 98%; estimates never fall short of the sampled
// count. The keys themselves are kept in a table of at most 32 entries,
// the hottest, for reporting.
//
// Decay: whenever Window samples have been counted since the last halving,
// every counter and the total are halved, so a key's share is a moving
// average with a half-life of about Window samples (Window × Sample
// requests), and a key that cools drops out of the report within a few
// windows. Until Window samples have been seen, shares are computed
// against Window and read low.
//
// Cost: Observe is a hash, a random number and, for one request in Sample,
// four atomic adds and one to the shared total; every Window samples one
// caller does the halving, four atomic operations per counter. Share reads
// one counter for a cold key, four for a hot one. Neither allocates; memory
// is fixed at construction. All methods are safe for concurrent use; the
// halving races benignly with concurrent adds (an add lands before or
// after it).
//
// The zero HotKeys, and a nil *HotKeys, is an empty detector: Observe does
// nothing and nothing is ever hot.
type HotKeys struct {
	threshold float64
	sample    uint32 // Sample - 1, a mask
	window    uint64
	gate      uint32 // threshold × window: below it in row 0, a key is cold
	mask      uint64 // row width - 1
	cells     []atomic.Uint32
	total     atomic.Uint64
	halving   atomic.Bool
	hashes    [hotSlots]atomic.Uint64 // the table's key hashes, 0 when empty
	mu        sync.Mutex              // guards keys and lens
	keys      [hotSlots][hotKeyBytes]byte
	lens      [hotSlots]int
}

const (
	hotRows     = 4
	hotSlots    = 32
	hotKeyBytes = 96 // longer keys are reported truncated
)

// HotKeysConfig configures NewHotKeys. Zero fields take the defaults.
type HotKeysConfig struct {
	// Threshold is the share of recent traffic from which a key is hot,
	// from 1/4096 to 1; default 0.01. To spread hot keys over n nodes, a
	// value near 1/n marks every key worth a node's fair share.
	Threshold float64
	// Sample is how many requests there are per sampled one, a power of two
	// from 1 to 65536; default 8.
	Sample int
	// Window is how many samples there are between halvings, from 64 to
	// 1<<30; default 8192 (65,536 requests at Sample 8).
	Window int
}

// HotKey is a key the detector reports hot.
type HotKey struct {
	Key       string  // the key, or its first 96 bytes if Truncated
	Truncated bool    // Key is a prefix of the key
	Share     float64 // estimated share of recent traffic, an upper estimate
}

// NewHotKeys returns a detector configured by cfg, or an error wrapping
// ErrInvalidOption for a value out of its range. It allocates about
// 128/Threshold bytes of counters.
func NewHotKeys(cfg HotKeysConfig) (*HotKeys, error) {
	if cfg.Threshold == 0 {
		cfg.Threshold = 0.01
	}
	if cfg.Sample == 0 {
		cfg.Sample = 8
	}
	if cfg.Window == 0 {
		cfg.Window = 8192
	}
	switch {
	case !(cfg.Threshold >= 1.0/4096 && cfg.Threshold <= 1):
		return nil, fmt.Errorf("%w: HotKeys threshold %v: want 1/4096 to 1", chash.ErrInvalidOption, cfg.Threshold)
	case cfg.Sample < 1 || cfg.Sample > 1<<16 || cfg.Sample&(cfg.Sample-1) != 0:
		return nil, fmt.Errorf("%w: HotKeys sample %d: want a power of two from 1 to 65536", chash.ErrInvalidOption, cfg.Sample)
	case cfg.Window < 64 || cfg.Window > 1<<30:
		return nil, fmt.Errorf("%w: HotKeys window %d: want 64 to 1<<30", chash.ErrInvalidOption, cfg.Window)
	}
	width := uint64(1) << bits.Len64(uint64(math.Ceil(8/cfg.Threshold))-1)
	return &HotKeys{
		threshold: cfg.Threshold,
		sample:    uint32(cfg.Sample - 1),
		window:    uint64(cfg.Window),
		gate:      uint32(cfg.Threshold * float64(cfg.Window)),
		mask:      width - 1,
		cells:     make([]atomic.Uint32, hotRows*width),
	}, nil
}

// Threshold returns the share from which a key is hot (0 for the zero
// HotKeys).
func (h *HotKeys) Threshold() float64 {
	if h == nil {
		return 0
	}
	return h.threshold
}

// Observe counts one request for key. It does not allocate.
func (h *HotKeys) Observe(key []byte) { h.observeHash(xxhash.Sum64(key), bkey(key)) }

// ObserveString is Observe for a string key, without copying it.
func (h *HotKeys) ObserveString(key string) { h.observeHash(xxhash.Sum64String(key), skey(key)) }

// Share returns key's estimated share of recent traffic if that is at
// least the threshold, else 0. It does not allocate.
func (h *HotKeys) Share(key []byte) float64 { return h.shareHash(xxhash.Sum64(key)) }

// ShareString is Share for a string key.
func (h *HotKeys) ShareString(key string) float64 { return h.shareHash(xxhash.Sum64String(key)) }

// index returns the positions of hash x's counters, one a row. The rows
// index with disjoint 32-bit parts of x and of hashing.Mix64(x), so that two keys
// share a counter in every row only by chance in each (double hashing,
// (x + j·y) mod width, would make them share all four whenever they share
// two).
func (h *HotKeys) index(x uint64) [hotRows]uint64 {
	y, w := hashing.Mix64(x), h.mask+1
	return [hotRows]uint64{x & h.mask, w + (x>>32)&h.mask, 2*w + y&h.mask, 3*w + (y>>32)&h.mask}
}

func (h *HotKeys) observeHash(x uint64, k reqKey) {
	if h == nil || h.cells == nil || rand.Uint32()&h.sample != 0 {
		return
	}
	est := uint32(math.MaxUint32)
	for _, i := range h.index(x) {
		est = min(est, h.cells[i].Add(1))
	}
	tot := h.total.Add(1)
	if float64(est) >= h.threshold*float64(max(tot, h.window)) {
		h.remember(x, k, est)
	}
	if tot >= 2*h.window && h.halving.CompareAndSwap(false, true) {
		h.halve()
		h.halving.Store(false)
	}
}

func (h *HotKeys) estimate(x uint64) uint32 {
	est := uint32(math.MaxUint32)
	for _, i := range h.index(x) {
		est = min(est, h.cells[i].Load())
	}
	return est
}

func (h *HotKeys) shareHash(x uint64) float64 {
	if h == nil || h.cells == nil || h.cells[x&h.mask].Load() < h.gate {
		return 0
	}
	s := float64(h.estimate(x)) / float64(max(h.total.Load(), h.window))
	if s < h.threshold {
		return 0
	}
	return min(s, 1)
}

// remember puts a hot key in the table, in place of the entry with the
// lowest estimate if the table is full and that is lower than est.
func (h *HotKeys) remember(x uint64, k reqKey, est uint32) {
	x = max(x, 1) // 0 marks an empty entry
	for i := range h.hashes {
		if h.hashes[i].Load() == x {
			return
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	low, lowEst := -1, est
	for i := range h.hashes {
		switch y := h.hashes[i].Load(); {
		case y == x:
			return
		case y == 0:
			low, lowEst = i, 0
		case lowEst > 0:
			if e := h.estimate(y); e < lowEst {
				low, lowEst = i, e
			}
		}
	}
	if low < 0 {
		return
	}
	if k.str {
		h.lens[low] = len(k.s)
		copy(h.keys[low][:], k.s)
	} else {
		h.lens[low] = len(k.b)
		copy(h.keys[low][:], k.b)
	}
	h.hashes[low].Store(x)
}

// halve halves every counter and the total, and drops from the table the
// keys that are no longer hot. It costs four atomic operations a counter.
func (h *HotKeys) halve() {
	for i := range h.cells {
		if v := h.cells[i].Load(); v > 1 {
			h.cells[i].Add(^(v/2 - 1))
		}
	}
	h.total.Add(^(h.total.Load()/2 - 1))
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := range h.hashes {
		if y := h.hashes[i].Load(); y != 0 && h.shareHash(y) == 0 {
			h.hashes[i].Store(0)
		}
	}
}

// AppendHot appends the keys now at or above the threshold to dst, the
// hottest first, and returns the extended slice. It allocates the keys'
// strings; it is meant for reporting, not for the request path.
func (h *HotKeys) AppendHot(dst []HotKey) []HotKey {
	if h == nil || h.cells == nil {
		return dst
	}
	h.mu.Lock()
	start := len(dst)
	for i := range h.hashes {
		y := h.hashes[i].Load()
		if y == 0 {
			continue
		}
		if s := h.shareHash(y); s > 0 {
			n := min(h.lens[i], hotKeyBytes)
			dst = append(dst, HotKey{Key: string(h.keys[i][:n]), Truncated: h.lens[i] > n, Share: s})
		}
	}
	h.mu.Unlock()
	slices.SortFunc(dst[start:], func(a, b HotKey) int {
		return cmp.Or(cmp.Compare(b.Share, a.Share), cmp.Compare(a.Key, b.Key))
	})
	return dst
}
