//go:build !race

package membertest

const raceEnabled = false
