package balance

import (
	"math"
	"math/rand/v2"

	"github.com/cespare/xxhash/v2"
	"github.com/keyplace/chash"
)

// reqKey is an acquire's key, as given: bytes or a string, never copied.
type reqKey struct {
	b   []byte
	s   string
	str bool
}

func bkey(b []byte) reqKey { return reqKey{b: b} }
func skey(s string) reqKey { return reqKey{s: s, str: true} }

// hash is the key's hash for the hot-key detector (xxhash64, seed 0,
// whatever the placer's Hasher).
func (k reqKey) hash() uint64 {
	if k.str {
		return xxhash.Sum64String(k.s)
	}
	return xxhash.Sum64(k.b)
}

func (k reqKey) topK(p chash.Placer, dst []chash.Node, n int) []chash.Node {
	if k.str {
		return p.AppendTopKString(dst, k.s, n)
	}
	return p.AppendTopK(dst, k.b, n)
}

// lighter reports whether node i carries strictly less in-flight load for
// its weight than node j.
func (m *membership) lighter(i, j int) bool {
	return float64(m.loads[i].n.Load())*m.weight[j] < float64(m.loads[j].n.Load())*m.weight[i]
}

// indexOrNeg returns n's position, or -1 if it is not a member.
func (m *membership) indexOrNeg(n chash.Node) int {
	if i, ok := m.index[n.ID]; ok {
		return i
	}
	return -1
}

// acquireChoices takes the lightest of key's first d choices, the first
// kept unless another is strictly lighter; if the bound refuses it, the
// other candidates in preference order; then the spill.
func (b *Balancer) acquireChoices(m *membership, t int64, k reqKey) (Lease, error) {
	bp := nodeBufs.Get().(*[]chash.Node)
	defer nodeBufs.Put(bp)
	*bp = k.topK(m.p, (*bp)[:0], m.choices)
	first, best := -1, -1
	for j, n := range *bp {
		i := m.indexOrNeg(n)
		if j == 0 {
			first = i
		}
		if i >= 0 && (best < 0 || m.lighter(i, best)) {
			best = i
		}
	}
	if best >= 0 && m.take(best, t) {
		if best != first {
			m.loads[best].away.Add(1)
		}
		return b.lease(m, best), nil
	}
	for _, n := range *bp {
		if i := m.indexOrNeg(n); i >= 0 && i != best && m.take(i, t) {
			return b.spilled(m, i, first), nil
		}
	}
	return b.spill(m, t, k, first)
}

// replicas returns how many of its first choices the reads of the key
// with hash h spread over: 1 for a cold key.
func (m *membership) replicas(h uint64) int {
	s := m.hot.shareHash(h)
	if s == 0 {
		return 1
	}
	n := len(m.nodes)
	r := int(min(math.Ceil(s*float64(n)), float64(n)))
	return max(min(r, m.spread, n), min(2, n))
}

// acquireHot takes the lighter of two random replicas among key's first
// r; if the bound refuses it, the other replicas in preference order;
// then the spill.
func (b *Balancer) acquireHot(m *membership, t int64, k reqKey, r int) (Lease, error) {
	bp := nodeBufs.Get().(*[]chash.Node)
	defer nodeBufs.Put(bp)
	*bp = k.topK(m.p, (*bp)[:0], r)
	cand := *bp
	first := -1
	if len(cand) > 0 {
		first = m.indexOrNeg(cand[0])
	}
	pick := -1
	if len(cand) >= 2 {
		x, y := rand.IntN(len(cand)), rand.IntN(len(cand)-1)
		if y >= x {
			y++
		}
		pick = m.indexOrNeg(cand[x])
		if j := m.indexOrNeg(cand[y]); j >= 0 && (pick < 0 || m.lighter(j, pick)) {
			pick = j
		}
	}
	if pick >= 0 && m.take(pick, t) {
		return b.hotLease(m, pick, first, false), nil
	}
	for _, n := range cand {
		if i := m.indexOrNeg(n); i >= 0 && i != pick && m.take(i, t) {
			return b.hotLease(m, i, first, true), nil
		}
	}
	return b.spill(m, t, k, first)
}

func (b *Balancer) hotLease(m *membership, i, first int, spilled bool) Lease {
	c := m.loads[i]
	c.spread.Add(1)
	if i != first {
		c.away.Add(1)
	}
	if spilled {
		c.spilled.Add(1)
	}
	return b.lease(m, i)
}

// AppendReplicas appends to dst the nodes that reads of key may currently
// be spread over: under WithHotKeys, a hot key's first R choices (R as
// WithHotKeys describes), else its first choice alone. It does not feed
// the detector and does not allocate when dst has room. The zero Balancer
// appends nothing.
//
// Spreading is correct only if every replica a read may reach holds the
// current value. A store must replicate each write of a hot key to all R
// (and, since R grows with the key's heat, to the first maxR choices,
// AppendTopK(dst, key, maxR), to be safe whatever the heat). A cache that
// fills on a miss needs no write to fill replicas, but an update or
// invalidation must reach the first maxR choices, not just the current
// R: a key that cools and heats up again would otherwise read a copy
// left on a replica before the update. Alternatively, give copies on
// replicas other than the first a TTL shorter than the staleness the
// service accepts. Loads that spill past the replicas (the load bound
// refused them all) land on nodes that do not hold the key, as any spill
// does.
func (b *Balancer) AppendReplicas(dst []chash.Node, key []byte) []chash.Node {
	return b.appendReplicas(dst, bkey(key))
}

// AppendReplicasString is AppendReplicas for a string key.
func (b *Balancer) AppendReplicasString(dst []chash.Node, key string) []chash.Node {
	return b.appendReplicas(dst, skey(key))
}

func (b *Balancer) appendReplicas(dst []chash.Node, k reqKey) []chash.Node {
	m := b.cur.Load()
	if m == nil {
		return dst
	}
	r := 1
	if m.hot != nil && m.spread > 1 {
		r = m.replicas(k.hash())
	}
	return k.topK(m.p, dst, r)
}
