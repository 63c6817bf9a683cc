package conformance

import (
	"slices"
	"testing"

	"github.com/keyplace/chash"
)

// derive checks chash.Derive: adding, removing and (where weights are
// supported) reweighting a member gives a placer that places every key as
// New does for the new member set.
func derive(t *testing.T, s Spec) {
	nodes := Nodes(10)
	p := build(t, s, nodes)
	gone := 4
	if s.RemoveLast {
		gone = len(nodes) - 1
	}
	changes := map[string][]chash.Node{
		"add":    append(slices.Clone(nodes), chash.Node{ID: "node-10"}),
		"remove": slices.Delete(slices.Clone(nodes), gone, gone+1),
	}
	if s.Weighted {
		heavier := slices.Clone(nodes)
		heavier[3].Weight = 3
		changes["reweight"] = heavier
	}
	for name, next := range changes {
		want := Owners(build(t, s, next))
		q, err := chash.Derive(p, next)
		if err != nil {
			t.Fatalf("%s: Derive: %v", name, err)
		}
		if !slices.Equal(Owners(q), want) {
			t.Errorf("%s: Derive places keys differently from New with the same nodes", name)
		}
		{
			h := chash.NewHolder(p)
			q, err := chash.Derive(h, next)
			if err != nil || !slices.Equal(Owners(q), want) {
				t.Errorf("%s: Derive through a Holder: %v", name, err)
			}
		}
	}
	if _, err := chash.Derive(p, nil); err == nil {
		t.Error("Derive to no nodes: no error")
	}
	if got := Owners(p); !slices.Equal(got, Owners(build(t, s, nodes))) {
		t.Error("Derive changed the placer it derived from")
	}
}
