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

func TestRingGolden(t *testing.T) {
	for _, tc := range []struct {
		name  string
		nodes []chash.Node
		opts  []chash.Option
	}{
		{"ring-10", conformance.Nodes(10), nil},
		{"ring-weighted", []chash.Node{{ID: "a", Weight: 1}, {ID: "b", Weight: 2}, {ID: "c", Weight: 0.5}, {ID: "d", Weight: 4}}, nil},
		{"ring-10-vnodes-40-seed-7", conformance.Nodes(10), []chash.Option{chash.WithVnodes(40), chash.WithHasher(chash.XXHashSeed(7))}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := chash.NewRing(tc.nodes, tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			conformance.Golden(t, tc.name, r)
		})
	}
}
