package benchmarks

import "fmt"

// NodeIDs returns n node names, node-0, node-1, ..., as the library's own
// tests and benchmarks use.
func NodeIDs(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("node-%d", i)
	}
	return out
}

// BenchKeys returns 1<<14 distinct keys of exactly size bytes (size >= 13),
// the same keys as the library's BenchmarkLookup: enough that a lookup
// cannot be served by a cache holding one key's path.
func BenchKeys(size int) []string {
	out := make([]string, 1<<14)
	for i := range out {
		out[i] = fmt.Sprintf("key:%0*d", size-4, i*7919)
	}
	return out
}

// QualityKeys returns n keys shaped like real ones ("user:42:profile").
func QualityKeys(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("user:%d:profile", i)
	}
	return out
}
