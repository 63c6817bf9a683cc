package benchmarks

import (
	"fmt"
	"strings"
	"sync"
)

// NodeIDs returns n node names, node-0, node-1, ..., as the library's own
// tests and benchmarks use.
func NodeIDs(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("node-%d", i)
	}
	return out
}

// BenchKeyCount is how many distinct keys a lookup benchmark cycles
// through, in the same order on every pass: 1<<18. It must be far more
// than a branch predictor can learn. With the 1<<14 keys of earlier
// versions, the AMD EPYC (Zen 4) machine of issue 33 learnt the exit of
// go-jump's loop, whose step depends on the key: at 8 nodes go-jump took
// 13.2 ns a lookup over 16,384 keys and 29.9 ns over 262,144 (29.7 and
// 42.1 ns at 64 nodes), while chash's jump, whose branches do not depend
// on the key, took 18.7 and 19.1 ns, and the bare hash 6.9 ns over either
// (fastest 4,096-lookup interval of 1.5 s of each; benchmarks/notes.md).
// A service does not replay the same few thousand keys in the same order,
// so the longer cycle is the one that measures what it would see. The keys
// are stored back to back in one string (3.4 MB at 13 bytes, 21 MB at 80)
// and read in order, which the hardware prefetchers stream.
const BenchKeyCount = 1 << 18

// Keys is a cycle of distinct keys of one length, stored back to back.
type Keys struct {
	all  string
	size int
	mask int
}

var benchKeys sync.Map // "size/count" -> Keys

// BenchKeys returns count distinct keys of exactly size bytes (size >= 13,
// count a power of two), key:000…, as the library's BenchmarkLookup spells
// them (its keys are the first 1<<14). The keys of one size and count are
// built once.
func BenchKeys(size, count int) Keys {
	id := fmt.Sprintf("%d/%d", size, count)
	if k, ok := benchKeys.Load(id); ok {
		return k.(Keys)
	}
	var sb strings.Builder
	sb.Grow(size * count)
	for i := range count {
		fmt.Fprintf(&sb, "key:%0*d", size-4, i*7919)
	}
	k := Keys{all: sb.String(), size: size, mask: count - 1}
	benchKeys.Store(id, k)
	return k
}

// At returns key i mod Len.
func (k Keys) At(i int) string {
	j := (i & k.mask) * k.size
	return k.all[j : j+k.size]
}

// Len returns the number of keys.
func (k Keys) Len() int { return k.mask + 1 }

// QualityKeys returns n keys shaped like real ones ("user:42:profile").
func QualityKeys(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("user:%d:profile", i)
	}
	return out
}
