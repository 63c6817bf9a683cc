//go:build race

package compat_test

// raceEnabled is set under the race detector, which empties sync.Pools at
// random: allocation checks of pooled paths are skipped then.
const raceEnabled = true
