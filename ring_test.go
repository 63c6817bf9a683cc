package chash_test

import (
	"testing"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/internal/conformance"
)

func TestRingConformance(t *testing.T) {
	conformance.Run(t, conformance.Spec{
		New:      conformance.Constructor(chash.NewRing),
		Weighted: true,
		MaxCV:    0.12, MaxPeak: 1.25, ShareTol: 0.3,
		Add: func(p chash.Placer, n chash.Node) (chash.Placer, error) {
			return p.(*chash.Ring).Add(n)
		},
		Remove: func(p chash.Placer, id string) (chash.Placer, error) {
			return p.(*chash.Ring).Remove(id)
		},
	})
}
