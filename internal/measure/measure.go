// Package measure holds the measurements of placement that chashtest's
// contract and the module's own tests share: loads, their spread, the
// keys a change moves and the distance of shares from weights.
package measure

import (
	"math"

	"github.com/keyplace/chash"
)

// IDs returns the IDs of nodes, in order.
func IDs(nodes []chash.Node) []string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = n.ID
	}
	return out
}

// Owners returns the owner's ID of each key.
func Owners(p chash.Placer, keys []string) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = p.LookupString(k).ID
	}
	return out
}

// Load returns the count of keys each node owns, in the order of ids;
// owners not among ids are not counted.
func Load(owners []string, ids []string) []float64 {
	idx := make(map[string]int, len(ids))
	for i, id := range ids {
		idx[id] = i
	}
	out := make([]float64, len(ids))
	for _, o := range owners {
		if i, ok := idx[o]; ok {
			out[i]++
		}
	}
	return out
}

// Stats returns the coefficient of variation and the peak/mean of loads.
func Stats(loads []float64) (cv, peak float64) {
	var sum, sq, hi float64
	for _, l := range loads {
		sum += l
		hi = max(hi, l)
	}
	mean := sum / float64(len(loads))
	for _, l := range loads {
		sq += (l - mean) * (l - mean)
	}
	return math.Sqrt(sq/float64(len(loads))) / mean, hi / mean
}

// Moves compares owners before and after a change touching the node named
// changed: it returns the fraction of keys that moved, and the fraction
// that moved between two other nodes.
func Moves(before, after []string, changed string) (moved, collateral float64) {
	var m, c int
	for i := range before {
		if before[i] != after[i] {
			m++
			if before[i] != changed && after[i] != changed {
				c++
			}
		}
	}
	return float64(m) / float64(len(before)), float64(c) / float64(len(before))
}

// ShareDistance returns the total variation distance between the nodes'
// shares of keys under p and their weights' shares: half the L1 distance.
func ShareDistance(p chash.Placer, nodes []chash.Node, keys []string) float64 {
	count := make(map[string]float64, len(nodes))
	for _, k := range keys {
		count[p.LookupString(k).ID]++
	}
	var total, d float64
	for _, n := range nodes {
		total += n.Weight
	}
	for _, n := range nodes {
		d += math.Abs(count[n.ID]/float64(len(keys)) - n.Weight/total)
	}
	return d / 2
}

// DomainOf returns n's failure domain: its zone, or itself if it has none.
func DomainOf(n chash.Node) string {
	if n.Zone == "" {
		return "\x00" + n.ID
	}
	return n.Zone
}
