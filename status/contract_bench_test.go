package status_test

import (
	"testing"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/chashtest"
)

// BenchmarkContract runs chashtest.BenchmarkPlacer on a Tracker over a
// rendezvous placer of 4,000 nodes: counting adds to each lookup, and a
// list of every node stays within the contract's bound of a plain ring's.
func BenchmarkContract(b *testing.B) {
	chashtest.BenchmarkPlacer(b, chashtest.Spec{New: tracking(chash.NewRendezvous)})
}
