//go:build race

package chashtest

// raceEnabled is set when the race detector is on: it slows statistical
// checks and makes sync.Pool drop items at random, so the suite places
// fewer keys and skips the allocation counts.
const raceEnabled = true
