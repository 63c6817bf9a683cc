//go:build !race

package chashtest

// raceEnabled is set when the race detector is on: see race.go.
const raceEnabled = false
