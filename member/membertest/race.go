//go:build race

package membertest

const raceEnabled = true
