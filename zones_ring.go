package chash

import "github.com/keyplace/chash/internal/place"

// zoneLister is implemented by placers that can choose a zone-aware list
// in one walk of their own preference order instead of through
// AppendTopK; the result must be exactly the greedy choice [Zoned]
// documents (TestZonedGreedy holds them to it).
type zoneLister interface {
	appendZoned(dst []Node, key zkey, k int, domain []uint8, domains int) ([]Node, bool)
}

// appendZoned walks the ring once from key's point, taking each node whose
// zone is new, until k nodes or every zone; it then fills from the start of
// the walk. It reports false, leaving dst as it was, when the walk meets
// every point without deciding (only a ketama node of tiny weight owns no
// point, and it comes after the walk in the preference order). With the
// nodes' domain numbers (at most 64 domains), zones are told apart by a
// bit mask instead of comparing names.
func (r *Ring) appendZoned(dst []Node, key zkey, k int, domain []uint8, domains int) ([]Node, bool) {
	var h uint64
	if key.str {
		h = r.cfg.hasher.sumString(key.s)
	} else {
		h = r.cfg.hasher.sum(key.b)
	}
	start, first := len(dst), r.locate(h)
	i, covered := first, 0
	var seen uint64 // domains taken, when domain is given
	if len(domain) != len(r.nodes) {
		domain = nil
	}
	for walked := 0; len(dst)-start < k && covered < domains; walked++ {
		if walked == len(r.points) {
			return dst[:start], false
		}
		if j := r.points[i].node; domain != nil {
			if bit := uint64(1) << domain[j]; seen&bit == 0 {
				seen |= bit
				dst = place.Append(dst, &r.nodes[j])
				covered++
			}
		} else if n := &r.nodes[j]; zoneNew(dst[start:], n.Zone) && (n.Zone != "" || absent(dst[start:], n.ID)) {
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
		if n := &r.nodes[r.points[i].node]; absent(dst[start:], n.ID) {
			dst = place.Append(dst, n)
		}
		if i++; i == len(r.points) {
			i = 0
		}
	}
	return dst, true
}
