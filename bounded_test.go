package chash_test

import (
	"testing"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/internal/conformance"
)

func TestBoundedConformance(t *testing.T) {
	conformance.Run(t, conformance.Spec{
		New:      conformance.Constructor(chash.NewBounded),
		Weighted: true,
		MaxCV:    0.12, MaxPeak: 1.25, ShareTol: 0.3, Collateral: 0.01,
		Add: func(p chash.Placer, n chash.Node) (chash.Placer, error) {
			return p.(*chash.Bounded).Add(n)
		},
		Remove: func(p chash.Placer, id string) (chash.Placer, error) {
			return p.(*chash.Bounded).Remove(id)
		},
	})
}
