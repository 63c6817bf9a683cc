package status

import (
	"cmp"
	"html/template"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/balance"
	"github.com/keyplace/chash/member"
)

// Snapshot is what the status page shows, and its JSON form: the same
// numbers. Fractions are numbers from 0 to 1; a value that would be
// infinite (the load of a node whose weight is too small to be
// represented beside the largest, see chash.Ownership.Loads) is reported as
// the largest float64, since JSON has no infinity.
type Snapshot struct {
	// Title is the page's title (WithTitle).
	Title string `json:"title"`
	// Algorithm is the placement's name, the part of its fingerprint
	// before the digest ("ring", "maglev", "goredis", "shardmap", ...);
	// empty when nothing is placed.
	Algorithm string `json:"algorithm"`
	// Fingerprint is chash.Fingerprint of the placer shown.
	Fingerprint string `json:"fingerprint"`
	// Revision is the placer's own revision: its Revision method (a
	// Tracker's, an etcd watcher's), else the Version of its View (a
	// member.Watcher's); 0 when it has neither.
	Revision int64 `json:"revision"`
	// Changed is when the placement last changed: the placer's LastChange
	// method (a Tracker's), else the Built time of its View (a
	// member.Watcher's, an etcd watcher's) or, without either, when this
	// handler first saw its fingerprint, and then ChangedObserved is set.
	Changed         time.Time `json:"changed"`
	ChangedObserved bool      `json:"changed_observed"`
	// AgeSeconds is Generated - Changed, in seconds.
	AgeSeconds float64 `json:"age_seconds"`
	// Builds and BuildSeconds are the placer's builds and the time they
	// took (a Tracker's Builds and BuildTime); 0 when it does not say.
	Builds       int64   `json:"builds"`
	BuildSeconds float64 `json:"build_seconds"`
	// Generated is when the snapshot was taken.
	Generated time.Time `json:"generated"`

	// Members is the number of members; TotalWeight the sum of their
	// effective weights.
	Members     int     `json:"members"`
	TotalWeight float64 `json:"total_weight"`
	// Exact, Samples, Peak and CV describe the shares as
	// chash.Ownership does: exact or estimated from Samples keys, the
	// largest share over fair share, and the coefficient of variation of
	// share over fair share.
	Exact   bool    `json:"exact"`
	Samples int     `json:"samples"`
	Peak    float64 `json:"peak"`
	CV      float64 `json:"cv"`
	// Zones counts the members of each zone, by name; a member without a
	// zone counts under "".
	Zones []ZoneStatus `json:"zones"`
	// Nodes has one entry per member, in the placer's Nodes order.
	Nodes []NodeStatus `json:"nodes"`
	// Balancer is the balancer's totals (WithBalancer), or nil.
	Balancer *BalancerStatus `json:"balancer,omitempty"`
	// HotKeys are the keys reported hot now, the hottest first: from the
	// detector of WithHotKeys, else the balancer's.
	HotKeys []HotKey `json:"hot_keys"`
	// Error says why there are no shares (an empty placer), if so.
	Error string `json:"error,omitempty"`
}

// NodeStatus is one member's line of a Snapshot.
type NodeStatus struct {
	ID     string  `json:"id"`
	Zone   string  `json:"zone"`
	Weight float64 `json:"weight"`
	// Share is the fraction of the key space the member owns; Fair its
	// weight over the total weight; Load is Share/Fair.
	Share float64 `json:"share"`
	Fair  float64 `json:"fair"`
	Load  float64 `json:"load"`
	// The balancer's figures for the member (balance.NodeStats), zero
	// without WithBalancer. Bound is its load bound at the current total,
	// ceil(c × in flight × Fair), 0 when the balancer has none.
	InFlight int64   `json:"in_flight"`
	Bound    float64 `json:"bound"`
	Away     uint64  `json:"away"`
	Spilled  uint64  `json:"spilled"`
	Spread   uint64  `json:"spread"`
}

// ZoneStatus is the members of one zone and their share of the keys.
type ZoneStatus struct {
	Zone    string  `json:"zone"`
	Members int     `json:"members"`
	Share   float64 `json:"share"`
}

// BalancerStatus is a balancer's totals (balance.Stats).
type BalancerStatus struct {
	LoadFactor float64 `json:"load_factor"` // 0 when unbounded
	InFlight   int64   `json:"in_flight"`
	Spills     uint64  `json:"spills"`
	Overloads  uint64  `json:"overloads"`
	Away       uint64  `json:"away"`
	Spread     uint64  `json:"spread"`
}

// HotKey is a key reported hot (balance.HotKey).
type HotKey struct {
	Key       string  `json:"key"`
	Truncated bool    `json:"truncated"`
	Share     float64 `json:"share"`
}

// placement is what the handler computes once per fingerprint: the
// shares, and the rows and zones derived from them.
type placement struct {
	placer      chash.Placer // the placer it was computed for, if comparable
	fingerprint string
	seen        time.Time // when the handler first saw the fingerprint
	nodes       []NodeStatus
	zones       []ZoneStatus
	total       float64
	exact       bool
	samples     int
	peak, cv    float64
	err         string

	rowsOnce sync.Once
	rows     []template.HTML // the page's rows, up to the balancer's cells
}

// maxLoadDepth bounds the Load methods followed to the placer served, as
// chash.Fingerprint bounds the Holders it follows.
const maxLoadDepth = 16

// current returns the placer p serves now: p itself, or what its Load
// method returns, followed to a placer without one.
func current(p chash.Placer) chash.Placer {
	for range maxLoadDepth {
		l, ok := p.(interface{ Load() chash.Placer })
		if !ok || isNil(p) {
			break
		}
		p = l.Load()
	}
	if isNil(p) {
		return nil
	}
	return p
}

// Snapshot returns the numbers the page shows now. It reads the placer
// once (through Load, if it has one); its shares are computed on the
// first call after the fingerprint changes (chash.Shares: O(points) for a
// ring, exact closed forms for rendezvous and jump, 2^20 sampled keys for
// other placers) and reused until it changes again, so a call costs the
// balancer's Stats and O(members) copying. Safe for concurrent use.
func (h *Handler) Snapshot() Snapshot {
	s, _ := h.snapshot()
	return s
}

// snapshot is Snapshot, and the placement it shows.
func (h *Handler) snapshot() (Snapshot, *placement) {
	now := time.Now()
	s := Snapshot{Title: h.cfg.title, Generated: now, Zones: []ZoneStatus{}, Nodes: []NodeStatus{}, HotKeys: []HotKey{}}
	var built time.Time
	if v, ok := h.p.(interface{ View() *member.View }); ok {
		if view := v.View(); view != nil {
			s.Revision, built = view.Version, view.Built
		}
	}
	if r, ok := h.p.(interface{ Revision() int64 }); ok {
		s.Revision = r.Revision()
	}
	if b, ok := h.p.(interface{ Builds() int64 }); ok {
		s.Builds = b.Builds()
	}
	if b, ok := h.p.(interface{ BuildTime() time.Duration }); ok {
		s.BuildSeconds = b.BuildTime().Seconds()
	}
	pl := h.placement(current(h.p), now)
	s.Fingerprint = pl.fingerprint
	if pl.fingerprint != chash.FingerprintNone {
		s.Algorithm = algorithmOf(pl.fingerprint)
	}
	s.Changed, s.ChangedObserved = pl.seen, true
	if !built.IsZero() {
		s.Changed, s.ChangedObserved = built, false
	}
	if c, ok := h.p.(interface{ LastChange() time.Time }); ok {
		if t := c.LastChange(); !t.IsZero() {
			s.Changed, s.ChangedObserved = t, false
		}
	}
	s.AgeSeconds = max(now.Sub(s.Changed).Seconds(), 0)
	s.Members, s.TotalWeight = len(pl.nodes), pl.total
	s.Exact, s.Samples, s.Peak, s.CV, s.Error = pl.exact, pl.samples, pl.peak, pl.cv, pl.err
	s.Nodes = append(s.Nodes, pl.nodes...)
	s.Zones = append(s.Zones, pl.zones...)
	h.addBalancer(&s)
	return s, pl
}

// algorithmOf returns the name a fingerprint starts with: the part before
// its last dash.
func algorithmOf(fp string) string {
	if i := strings.LastIndexByte(fp, '-'); i > 0 {
		return fp[:i]
	}
	return fp
}

// placement returns the shares of q, from the cache when q, or its
// fingerprint, is the one computed last.
func (h *Handler) placement(q chash.Placer, now time.Time) *placement {
	h.mu.Lock()
	defer h.mu.Unlock()
	comparable := q != nil && reflect.TypeOf(q).Comparable()
	if c := h.cache; c != nil && comparable && c.placer == q {
		return c
	}
	fp := chash.Fingerprint(q)
	if c := h.cache; c != nil && c.fingerprint == fp {
		if comparable {
			c.placer = q
		}
		return c
	}
	pl := computePlacement(q, fp)
	pl.seen = now
	if comparable {
		pl.placer = q
	}
	h.cache = pl
	return pl
}

// computePlacement measures q's shares.
func computePlacement(q chash.Placer, fp string) *placement {
	pl := &placement{fingerprint: fp}
	if q == nil || q.Len() == 0 {
		pl.err = "no members"
		return pl
	}
	own, err := chash.Shares(q)
	if err != nil {
		pl.err = err.Error()
		return pl
	}
	loads := own.Loads()
	pl.exact, pl.samples = own.Exact, own.Samples
	pl.peak, pl.cv = finite(own.Peak()), finite(own.CV())
	var top, norm float64
	for _, sh := range own.Shares {
		top = max(top, sh.Node.Weight)
		pl.total += sh.Node.Weight
	}
	pl.total = finite(pl.total)
	usable := top > 0 && !math.IsInf(top, 0)
	if usable {
		for _, sh := range own.Shares {
			norm += sh.Node.Weight / top
		}
	}
	zones := map[string]*ZoneStatus{}
	pl.nodes = make([]NodeStatus, len(own.Shares))
	for i, sh := range own.Shares {
		n := NodeStatus{ID: sh.Node.ID, Zone: sh.Node.Zone, Weight: sh.Node.Weight, Share: sh.Fraction, Load: finite(loads[i])}
		if usable && norm > 0 {
			n.Fair = sh.Node.Weight / top / norm
		}
		pl.nodes[i] = n
		z := zones[n.Zone]
		if z == nil {
			z = &ZoneStatus{Zone: n.Zone}
			zones[n.Zone] = z
		}
		z.Members++
		z.Share += n.Share
	}
	for _, z := range zones {
		pl.zones = append(pl.zones, *z)
	}
	slices.SortFunc(pl.zones, func(a, b ZoneStatus) int { return cmp.Compare(a.Zone, b.Zone) })
	return pl
}

// finite maps ±Inf to ±MaxFloat64 and NaN to 0, for JSON.
func finite(x float64) float64 {
	switch {
	case math.IsNaN(x):
		return 0
	case math.IsInf(x, 1):
		return math.MaxFloat64
	case math.IsInf(x, -1):
		return -math.MaxFloat64
	}
	return x
}

// addBalancer adds the balancer's figures and the hot keys to s.
func (h *Handler) addBalancer(s *Snapshot) {
	var hot []balance.HotKey
	if b := h.cfg.balancer; b != nil {
		st := b.Stats()
		c := b.LoadFactor()
		bs := &BalancerStatus{LoadFactor: c, InFlight: st.InFlight, Spills: st.Spills, Overloads: st.Overloads}
		if math.IsInf(c, 0) {
			bs.LoadFactor = 0
		}
		byID := make(map[string]int, len(s.Nodes))
		for i, n := range s.Nodes {
			byID[n.ID] = i
		}
		for _, ns := range st.Nodes {
			bs.Away += ns.Away
			bs.Spread += ns.Spread
			i, ok := byID[ns.ID]
			if !ok {
				continue
			}
			n := &s.Nodes[i]
			n.InFlight, n.Away, n.Spilled, n.Spread = ns.InFlight, ns.Away, ns.Spilled, ns.Spread
			if bs.LoadFactor > 0 {
				n.Bound = finite(math.Ceil(bs.LoadFactor * float64(st.InFlight) * n.Fair))
			}
		}
		s.Balancer = bs
		hot = st.HotKeys
	}
	if h.cfg.hot != nil {
		hot = h.cfg.hot.AppendHot(nil)
	}
	for _, k := range hot {
		s.HotKeys = append(s.HotKeys, HotKey{Key: k.Key, Truncated: k.Truncated, Share: finite(k.Share)})
	}
}
