package chash

import (
	"fmt"
	"slices"
)

// Derive returns a placer of the same algorithm and options as p whose
// members are nodes: the one way for code that holds only a Placer to add,
// remove or reweight members. It places every key as the algorithm's
// constructor would for nodes with p's options, and builds it at the
// cheapest cost the algorithm allows: a ring hashes only the nodes that are
// new or reweighted and merges their points, a Maglev table reuses the
// members' permutations, rendezvous hashes only IDs, and bounded-load
// placement rebuilds.
//
// For Jump and JumpBack, whose node order is its bucket numbering, nodes is a set:
// members keep their buckets, new nodes fill the buckets of departed ones
// (as Jump.Replace does) in the order given, the rest are appended, and a
// departed node whose bucket is not refilled must be among the last
// (ErrNotLast otherwise), so no key moves between remaining nodes.
//
// A Holder derives from the placer it holds, and a Zoned from the placer it
// wraps, wrapping the result. A placer of another package derives through
// its Derive method ([Deriver]), as those of compat do. Derive fails with
// the constructor's errors, with ErrNilPlacer for a nil p or a typed nil,
// and with ErrUnknownAlgorithm for a Placer that is neither of this
// package nor a Deriver. A zero-value placer derives with its constructor's
// default options. p is unchanged.
func Derive(p Placer, nodes []Node) (Placer, error) {
	for depth := 0; depth < maxHolderDepth; depth++ {
		h, ok := p.(*Holder)
		if !ok {
			break
		}
		p = h.Load() // a Holder may hold a Holder, as Fingerprint allows
	}
	if isNil(p) {
		return nil, fmt.Errorf("%w: Derive from a nil placer", ErrNilPlacer)
	}
	var q Placer
	var err error
	switch d := p.(type) {
	case deriver:
		q, err = d.with(nodes)
	case Deriver:
		q, err = d.Derive(nodes)
	default:
		return nil, fmt.Errorf("%w: Derive of a %T", ErrUnknownAlgorithm, p)
	}
	if err != nil || isNil(q) {
		return nil, err
	}
	return q, nil
}

// Deriver is a Placer of another package that [Derive] can rebuild for a
// new membership: Derive(nodes) returns a placer of the same algorithm and
// settings whose members are nodes, placing keys as the placer's
// constructor would, and leaves the receiver unchanged. The placers of the
// compat package implement it.
type Deriver interface {
	Placer
	Derive(nodes []Node) (Placer, error)
}

// deriver is implemented by every placer of this package for Derive.
type deriver interface {
	with(nodes []Node) (Placer, error)
}

func (r *Ring) with(nodes []Node) (Placer, error) {
	if r.empty() {
		return NewRing(nodes)
	}
	ns, err := checkNodes(nodes, true)
	if err != nil {
		return nil, err
	}
	return r.derive(ns)
}

func (r *Rendezvous) with(nodes []Node) (Placer, error) {
	if r.empty() {
		return NewRendezvous(nodes)
	}
	ns, err := checkNodes(nodes, true)
	if err != nil {
		return nil, err
	}
	return newRendezvous(r.cfg, ns)
}

func (g *Maglev) with(nodes []Node) (Placer, error) {
	if g.empty() {
		return NewMaglev(nodes)
	}
	ns, err := checkNodes(nodes, true)
	if err != nil {
		return nil, err
	}
	return g.derive(ns)
}

func (b *Bounded) with(nodes []Node) (Placer, error) {
	if b.empty() {
		return NewBounded(nodes)
	}
	ns, err := checkNodes(nodes, true)
	if err != nil {
		return nil, err
	}
	return newBounded(b.cfg, ns)
}

func (p *JumpBack) with(nodes []Node) (Placer, error) {
	if p.empty() {
		return NewJumpBack(nodes)
	}
	return wrapJumpBack(p.jump().derived(nodes))
}

func (p *Jump) with(nodes []Node) (Placer, error) {
	if p.empty() {
		return NewJump(nodes)
	}
	return p.derived(nodes)
}

// derived is Jump's Derive: nodes is a set, and members keep their buckets.
func (p *Jump) derived(nodes []Node) (*Jump, error) {
	if _, err := checkNodes(nodes, false); err != nil {
		return nil, err
	}
	order, err := p.renumber(nodes)
	if err != nil {
		return nil, err
	}
	return p.derive(order)
}

// renumber returns the bucket order that keeps p's members of the set nodes
// in their buckets: see Derive.
func (p *Jump) renumber(nodes []Node) ([]Node, error) {
	in := make(map[string]Node, len(nodes))
	for _, n := range nodes {
		in[n.ID] = n
	}
	order := slices.Clone(p.nodes)
	var vacant []int
	for i, n := range order {
		if m, ok := in[n.ID]; ok {
			order[i] = m // a changed weight is caught by derive
			delete(in, n.ID)
		} else {
			vacant = append(vacant, i)
		}
	}
	for _, n := range nodes {
		if _, ok := in[n.ID]; !ok {
			continue // a member, already placed
		}
		if len(vacant) > 0 {
			order[vacant[0]], vacant = n, vacant[1:]
		} else {
			order = append(order, n)
		}
	}
	keep := len(order) - len(vacant)
	for _, i := range vacant {
		if i < keep {
			return nil, fmt.Errorf("%w: %q is bucket %d of %d and no new node takes its place; removing it would renumber the buckets after it",
				ErrNotLast, p.nodes[i].ID, i, len(p.nodes))
		}
	}
	return order[:keep], nil
}

// with derives the wrapped placer and wraps the result again.
func (z *Zoned) with(nodes []Node) (Placer, error) {
	if z == nil || z.p == nil {
		return nil, fmt.Errorf("%w: Derive from an empty Zoned", ErrNoNodes)
	}
	p, err := Derive(z.p, nodes)
	if err != nil {
		return nil, err
	}
	return placer(NewZoned(p))
}
