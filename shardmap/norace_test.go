//go:build !race

package shardmap_test

// raceEnabled is set under the race detector, which makes the statistical
// tests take fewer samples, as -short does.
const raceEnabled = false
