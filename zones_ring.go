package chash

import "github.com/keyplace/chash/internal/place"

// zoneLister is implemented by placers that can choose a zone-aware list
// in one walk of their own preference order instead of through
// AppendTopK; the result must be exactly the greedy choice [Zoned]
// documents (TestZonedGreedy holds them to it).
type zoneLister interface {
	appendZoned(dst []Node, key zkey, k int, domain []uint32, domains int) ([]Node, bool)
}

// appendZoned walks the ring once from key's point, taking each node whose
// domain is new, until k nodes or every domain; it then fills from the
// start of the walk. It reports false, leaving dst as it was, when the
// walk meets every point without deciding (only a ketama node of tiny
// weight owns no point, and it comes after the walk in the preference
// order). domain holds the nodes' domain numbers in r.nodes order. Each
// phase meets every point at most once and decides each in O(1) for long
// lists (see taken), so a list of every node costs O(points), not O(n·k).
func (r *Ring) appendZoned(dst []Node, key zkey, k int, domain []uint32, domains int) ([]Node, bool) {
	if len(domain) != len(r.nodes) {
		return dst, false
	}
	var h uint64
	if key.str {
		h = r.cfg.hasher.sumString(key.s)
	} else {
		h = r.cfg.hasher.sum(key.b)
	}
	start, first := len(dst), r.locate(h)
	t := newTaken(len(r.nodes), domains, k, true)
	defer t.release()
	i, covered := first, 0
	for walked := 0; len(dst)-start < k && covered < domains; walked++ {
		if walked == len(r.points) {
			return dst[:start], false
		}
		j := r.points[i].node
		if n := &r.nodes[j]; t.zone(dst[start:], n, int(j), domain[j]) {
			dst = place.Append(dst, n)
			covered++
		}
		if i++; i == len(r.points) {
			i = 0
		}
	}
	for walked, i := 0, first; len(dst)-start < k; walked++ {
		if walked == len(r.points) {
			return dst[:start], false
		}
		j := r.points[i].node
		if n := &r.nodes[j]; t.node(dst[start:], n, int(j)) {
			dst = place.Append(dst, n)
		}
		if i++; i == len(r.points) {
			i = 0
		}
	}
	return dst, true
}
