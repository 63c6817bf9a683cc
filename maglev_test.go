package chash_test

import (
	"testing"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/internal/conformance"
)

func TestMaglevConformance(t *testing.T) {
	conformance.Run(t, conformance.Spec{
		New:      conformance.Constructor(chash.NewMaglev),
		Weighted: true,
		MaxCV:    0.05, MaxPeak: 1.1, ShareTol: 0.05,
		Collateral: 0.01,
		Add: func(p chash.Placer, n chash.Node) (chash.Placer, error) {
			return p.(*chash.Maglev).Add(n)
		},
		Remove: func(p chash.Placer, id string) (chash.Placer, error) {
			return p.(*chash.Maglev).Remove(id)
		},
	})
}
