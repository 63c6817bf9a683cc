package chash

import "github.com/keyplace/chash/internal/place"

// zoneRanker is implemented by placers that can choose a zone-aware list
// in one pass over their nodes, given each node's domain number (in the
// order of Nodes); like zoneLister, it must return exactly the greedy
// choice, or false to leave it to the general path.
type zoneRanker interface {
	appendZonedRanked(dst []Node, key zkey, k int, domain []uint32, domains int) ([]Node, bool)
}

// appendZonedRanked scores every node once, keeping the best of each
// domain, then appends the k best of those: the greedy choice when k does
// not exceed the domains, because each domain's first node in the
// preference order is its best. Only equal weights and at most 64 domains
// take this path.
func (r *Rendezvous) appendZonedRanked(dst []Node, key zkey, k int, domain []uint32, domains int) ([]Node, bool) {
	if r.invw != nil || k > domains || domains > 64 || len(domain) != len(r.seeds) {
		return dst, false
	}
	var h uint64
	if key.str {
		h = r.cfg.hasher.sumString(key.s)
	} else {
		h = r.cfg.hasher.sum(key.b)
	}
	var best [64]candidate
	var has uint64
	for i, s := range r.seeds {
		m, d := mix64(h^s), domain[i]
		// Nodes come in ID order, so on equal m the one kept ranks first.
		if has&(1<<d) == 0 || m > best[d].m {
			best[d] = candidate{m: m, i: i}
			has |= 1 << d
		}
	}
	for ; k > 0; k-- {
		bi := -1
		for d := 0; d < domains; d++ {
			if has&(1<<d) != 0 && (bi < 0 || best[d].beats(best[bi])) {
				bi = d
			}
		}
		dst = place.Append(dst, &r.nodes[best[bi].i])
		has &^= 1 << bi
	}
	return dst, true
}
