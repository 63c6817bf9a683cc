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
// through, in the same order on every pass: 1<<16. It must be more than a
// branch predictor can learn. With the 1<<14 keys of earlier versions, the
// AMD EPYC (Zen 4) machine of issue 33 learnt the exits of go-jump's loop,
// whose step count depends on the key: at 8 nodes go-jump took 13.1 ns a
// lookup over 16,384 keys, 25.6 ns over 32,768, and 29.4 and 29.8 ns over
// 65,536 and 262,144 (17.9, 39.9, 42.6 and 42.3 ns at 64 nodes), while
// chash's jump, whose branches do not depend on the key, took the same
// time over 16,384 as over 262,144 keys (18.7 and 19.1 ns), as did the bare
// hash (6.9 ns); fastest 4,096-lookup interval of 1.5 to 2 s of each
// (benchmarks/notes.md). A service does not replay a few thousand keys in
// one order, so the longer cycle is the one that measures what it would
// see. The keys are stored back to back and read in order, which the
// hardware prefetchers stream: 852 KiB of 13-byte keys and 5.2 MiB of
// 80-byte keys, which stay in the L3. 262,144 keys (21 MB at 80 bytes)
// made the 80-byte lookups of every library wait on memory whenever other
// work on the machine used its bandwidth (some 10 ns a lookup in a third
// of the runs); shuffling 16,384 keys instead made them miss the L2 (the
// bare hash of 80-byte keys went from 17.9 to 27.5 ns).
const BenchKeyCount = 1 << 16

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
