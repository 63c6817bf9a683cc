package chash

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// checkNodes validates nodes and returns a copy with every zero weight
// replaced by 1. If sorted is set the copy is in ascending ID order, which
// makes every structure built from it independent of the caller's order.
func checkNodes(nodes []Node, sorted bool) ([]Node, error) {
	if len(nodes) == 0 {
		return nil, ErrNoNodes
	}
	out := make([]Node, len(nodes))
	for i, n := range nodes {
		switch {
		case n.ID == "":
			return nil, fmt.Errorf("%w: node %d", ErrEmptyID, i)
		case n.Weight < 0 || math.IsNaN(n.Weight) || math.IsInf(n.Weight, 0):
			return nil, fmt.Errorf("%w: node %q has weight %v", ErrInvalidWeight, n.ID, n.Weight)
		case n.Weight == 0:
			n.Weight = 1
		}
		out[i] = n
	}
	byID := out
	if !sorted {
		byID = slices.Clone(out)
	}
	slices.SortFunc(byID, compareIDs)
	for i := 1; i < len(byID); i++ {
		if byID[i].ID == byID[i-1].ID {
			return nil, fmt.Errorf("%w: %q", ErrDuplicateID, byID[i].ID)
		}
	}
	return out, nil
}

// weightSummary is what constructors need to know of a node list's
// weights, computed in one place.
type weightSummary struct {
	total float64 // the sum, in list order
	max   float64 // the largest
	equal bool    // every weight is the first's
}

func summarize(nodes []Node) weightSummary {
	s := weightSummary{equal: true}
	for _, n := range nodes {
		s.total += n.Weight
		s.max = max(s.max, n.Weight)
		s.equal = s.equal && n.Weight == nodes[0].Weight
	}
	return s
}

// compareIDs orders nodes by ID, the order of every placer's Nodes but
// the jump family's.
func compareIDs(a, b Node) int { return cmp.Compare(a.ID, b.ID) }

// indexOf returns the position of the node with the given ID in nodes,
// which are sorted by ID, or -1.
func indexOf(nodes []Node, id string) int {
	i, ok := slices.BinarySearchFunc(nodes, id, func(n Node, id string) int { return cmp.Compare(n.ID, id) })
	if !ok {
		return -1
	}
	return i
}

// without returns nodes (sorted by ID) less the nodes with the given
// IDs, for the Remove methods. It fails with ErrUnknownNode if an ID is not
// a member, and with ErrNoNodes if no node would remain.
func without(nodes []Node, ids []string) ([]Node, error) {
	gone := make(map[string]bool, len(ids))
	for _, id := range ids {
		if indexOf(nodes, id) < 0 {
			return nil, fmt.Errorf("%w: %q", ErrUnknownNode, id)
		}
		gone[id] = true
	}
	rest := make([]Node, 0, len(nodes))
	for _, n := range nodes {
		if !gone[n.ID] {
			rest = append(rest, n)
		}
	}
	if len(rest) == 0 {
		return nil, fmt.Errorf("%w: removing %d of %d nodes", ErrNoNodes, len(gone), len(nodes))
	}
	return rest, nil
}

// removeFromEmpty is the error of removing ids from a placer with no
// members.
func removeFromEmpty(ids []string) error {
	_, err := without(nil, ids)
	return err
}

// absent reports whether no node in chosen has the given ID; AppendTopK
// implementations use it to keep their k nodes distinct.
func absent(chosen []Node, id string) bool {
	for i := range chosen {
		if chosen[i].ID == id {
			return false
		}
	}
	return true
}

// clampK returns how many nodes AppendTopK should append for k and n members.
func clampK(k, n int) int {
	if k <= 0 {
		return 0
	}
	return min(k, n)
}
