package conformance

// Mix64 restates the package's documented mixer (the SplitMix64 finalizer)
// so that tests can compute placements from their definitions rather than
// by calling the code under test.
func Mix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
