//go:build race

package balance_test

// The race detector makes sync.Pool drop items at random, so pooled lease
// records are reallocated: allocation tests are skipped under it.
func init() { raceEnabled = true }
