// Package conformance is the chash module's internal test support: golden
// placement files, benchmark keys, node lists of given shapes, fuzz input
// decoding, a reference mixer and the owners of the suite's keys. The
// contract every Placer runs is the public package chashtest; the
// measurements both use are in internal/measure.
package conformance

import (
	"sync"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/chashtest"
	"github.com/keyplace/chash/internal/measure"
)

// NumKeys is how many keys Owners places: chashtest's full run.
const NumKeys = 100_000

var keys = sync.OnceValue(func() []string { return chashtest.Keys(NumKeys) })

// Owners returns the owner's ID of each of chashtest.Keys(NumKeys).
func Owners(p chash.Placer) []string { return measure.Owners(p, keys()) }

// Constructor adapts an algorithm's constructor, with options bound, to
// chashtest.Spec.New; on error it returns a nil Placer rather than a typed
// nil.
func Constructor[P chash.Placer](f func([]chash.Node, ...chash.Option) (P, error), opts ...chash.Option) func([]chash.Node) (chash.Placer, error) {
	return func(nodes []chash.Node) (chash.Placer, error) {
		return AsPlacer(f(nodes, opts...))
	}
}

// AsPlacer returns a constructor's result as a Placer: a nil Placer, not a
// typed nil, with an error.
func AsPlacer[P chash.Placer](p P, err error) (chash.Placer, error) {
	if err != nil {
		return nil, err
	}
	return p, nil
}
