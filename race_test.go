//go:build race

package chash_test

// The race detector slows statistical tests and makes sync.Pool drop items
// at random: tests that measure either are shortened or skipped under it.
func init() { raceEnabled = true }
