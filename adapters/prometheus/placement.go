package prometheus

import (
	"cmp"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/member"
	prom "github.com/prometheus/client_golang/prometheus"
)

// PlacementCollector exports a placement: a placer, or a view that
// changes (a chash.Holder, a status.Tracker, an etcd Watcher). Its series,
// at most 25 by default (8, plus one a zone for up to WithMaxZones zones
// and one for the rest):
//
//	chash_placement_members                          gauge   members (Len)
//	chash_placement_zone_members{zone}               gauge   members per zone ("" for none; "_other" past WithMaxZones)
//	chash_placement_info{algorithm,fingerprint}      gauge   1, labelled with the placement's identity
//	chash_placement_load_peak_ratio                  gauge   the largest share of keys over fair share (1 is perfect)
//	chash_placement_load_cv_ratio                    gauge   coefficient of variation of share over fair share
//	chash_placement_revision                         gauge   the view's Revision(), or its View().Version
//	chash_placement_builds_total                     counter the view's Builds()    (a Tracker, a member or etcd Watcher)
//	chash_placement_build_seconds_total              counter the view's BuildTime() (a Tracker, a member or etcd Watcher)
//	chash_placement_last_change_timestamp_seconds    gauge   the view's LastChange() (a Tracker), or its
//	                                                         View().Built (a member or etcd Watcher); otherwise
//	                                                         when this collector first saw the fingerprint
//
// and, with WithPerNode, for each member:
//
//	chash_placement_node_share_ratio{node}           gauge   its share of the key space
//	chash_placement_node_fair_share_ratio{node}      gauge   its weight over the total weight
//
// A view's methods are found by their signatures, so a view of any
// package takes part: Load() chash.Placer, Revision() int64, View()
// *member.View, Builds() int64, BuildTime() time.Duration and LastChange()
// time.Time; series whose method the view lacks are not exported.
//
// Collecting costs a lookup nothing: the collector reads the view only
// when scraped, through its ordinary methods, and holds no lock a lookup
// takes. A scrape costs O(1) while the placer stays the same (its zones
// and shares are cached per fingerprint); the first scrape after a change
// costs one chash.Fingerprint (O(n)), Nodes and chash.Shares (O(points)
// for a ring, closed forms for rendezvous and jump, 2^20 sampled keys for
// placers of other packages). Safe for concurrent use.
type PlacementCollector struct {
	p   chash.Placer
	cfg config

	members, zones, info, peak, cv     *prom.Desc
	revision, builds, buildSecs, since *prom.Desc
	share, fair                        *prom.Desc

	mu    sync.Mutex // guards cache
	cache *placementState
}

// placementState is what a scrape reports of one placer, computed once
// per fingerprint.
type placementState struct {
	placer      chash.Placer // if its type is comparable
	fingerprint string
	algorithm   string
	seen        time.Time
	members     int
	zones       []zoneCount
	peak, cv    float64
	ids         []string
	share, fair []float64
}

type zoneCount struct {
	zone string
	n    int
}

var _ prom.Collector = (*PlacementCollector)(nil)

// NewPlacementCollector returns the collector of p (see
// PlacementCollector). It uses WithPerNode, WithConstLabels and
// WithMaxZones. It fails with chash.ErrNilPlacer for a nil p, typed or
// not, and with chash.ErrInvalidOption for a bad option.
func NewPlacementCollector(p chash.Placer, opts ...Option) (*PlacementCollector, error) {
	if isNil(p) {
		return nil, fmt.Errorf("%w: prometheus.NewPlacementCollector", chash.ErrNilPlacer)
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	return &PlacementCollector{p: p, cfg: cfg,
		members:   cfg.desc("placement_members", "Members of the placement."),
		zones:     cfg.desc("placement_zone_members", "Members of the placement per zone (\"\" for members without one, \"_other\" for zones past the collector's limit).", "zone"),
		info:      cfg.desc("placement_info", "The placement's algorithm and fingerprint; processes with equal fingerprints place every key alike. Always 1.", "algorithm", "fingerprint"),
		peak:      cfg.desc("placement_load_peak_ratio", "The largest share of the key space owned by a member over its fair share (weight over total weight); 1 is a perfect balance."),
		cv:        cfg.desc("placement_load_cv_ratio", "Coefficient of variation of the members' shares of the key space over their fair shares."),
		revision:  cfg.desc("placement_revision", "Revision of the placement's view (a status.Tracker's changes, an etcd watcher's etcd revision)."),
		builds:    cfg.desc("placement_builds_total", "Placers built for the placement's view."),
		buildSecs: cfg.desc("placement_build_seconds_total", "Time spent building placers for the placement's view."),
		since:     cfg.desc("placement_last_change_timestamp_seconds", "When the placement last changed, as a Unix time (without a LastChange method: when this collector first saw its fingerprint)."),
		share:     cfg.desc("placement_node_share_ratio", "A member's share of the key space.", "node"),
		fair:      cfg.desc("placement_node_fair_share_ratio", "A member's fair share of the key space: its weight over the total weight.", "node"),
	}, nil
}

// Describe sends the descriptions of every series the collector can
// export.
func (c *PlacementCollector) Describe(ch chan<- *prom.Desc) {
	for _, d := range []*prom.Desc{c.members, c.zones, c.info, c.peak, c.cv, c.revision, c.builds, c.buildSecs, c.since} {
		ch <- d
	}
	if c.cfg.perNode {
		ch <- c.share
		ch <- c.fair
	}
}

// Collect reads the placement and sends its series.
func (c *PlacementCollector) Collect(ch chan<- prom.Metric) {
	st := c.state(current(c.p))
	gauge := func(d *prom.Desc, v float64, labels ...string) { send(ch, d, prom.GaugeValue, v, labels...) }
	gauge(c.members, float64(st.members))
	for _, z := range st.zones {
		gauge(c.zones, float64(z.n), z.zone)
	}
	gauge(c.info, 1, st.algorithm, st.fingerprint)
	if st.members > 0 {
		gauge(c.peak, st.peak)
		gauge(c.cv, st.cv)
	}
	var view *member.View
	if v, ok := c.p.(interface{ View() *member.View }); ok {
		view = v.View()
	}
	if v, ok := c.p.(interface{ Revision() int64 }); ok {
		gauge(c.revision, float64(v.Revision()))
	} else if view != nil {
		gauge(c.revision, float64(view.Version))
	}
	if v, ok := c.p.(interface{ Builds() int64 }); ok {
		send(ch, c.builds, prom.CounterValue, float64(v.Builds()))
	}
	if v, ok := c.p.(interface{ BuildTime() time.Duration }); ok {
		send(ch, c.buildSecs, prom.CounterValue, v.BuildTime().Seconds())
	}
	changed := st.seen
	if view != nil && !view.Built.IsZero() {
		changed = view.Built
	}
	if v, ok := c.p.(interface{ LastChange() time.Time }); ok {
		if t := v.LastChange(); !t.IsZero() {
			changed = t
		}
	}
	gauge(c.since, float64(changed.UnixNano())/1e9)
	if c.cfg.perNode {
		for i, id := range st.ids {
			gauge(c.share, st.share[i], id)
			gauge(c.fair, st.fair[i], id)
		}
	}
}

// state returns what to report of q, from the cache when q, or its
// fingerprint, is the placer measured last.
func (c *PlacementCollector) state(q chash.Placer) *placementState {
	c.mu.Lock()
	defer c.mu.Unlock()
	comparable := q != nil && reflect.TypeOf(q).Comparable()
	if s := c.cache; s != nil && comparable && s.placer == q {
		return s
	}
	fp := chash.Fingerprint(q)
	if s := c.cache; s != nil && s.fingerprint == fp {
		if comparable {
			s.placer = q
		}
		return s
	}
	s := measurePlacement(q, fp, c.cfg)
	if comparable {
		s.placer = q
	}
	c.cache = s
	return s
}

// measurePlacement computes the zones and shares of q.
func measurePlacement(q chash.Placer, fp string, cfg config) *placementState {
	s := &placementState{fingerprint: fp, seen: time.Now()}
	if fp != chash.FingerprintNone {
		s.algorithm = fp
		if i := strings.LastIndexByte(fp, '-'); i > 0 {
			s.algorithm = fp[:i]
		}
	}
	if q == nil || q.Len() == 0 {
		return s
	}
	nodes := q.Nodes()
	s.members = len(nodes)
	s.zones = zoneCounts(nodes, cfg.maxZones)
	own, err := chash.Shares(q)
	if err != nil {
		return s
	}
	s.peak, s.cv = own.Peak(), own.CV()
	if cfg.perNode {
		loads := own.Loads()
		ids := make([]string, len(own.Shares))
		for i, sh := range own.Shares {
			ids[i] = sh.Node.ID
		}
		s.ids = labelValues(ids)
		for i, sh := range own.Shares {
			s.share = append(s.share, sh.Fraction)
			fair := 0.0
			if loads[i] > 0 && !math.IsInf(loads[i], 0) {
				fair = sh.Fraction / loads[i]
			}
			s.fair = append(s.fair, fair)
		}
	}
	return s
}

// zoneCounts counts nodes per zone, keeping the max zones with the most
// members and counting the rest under otherZone.
func zoneCounts(nodes []chash.Node, maxZones int) []zoneCount {
	by := map[string]int{}
	for _, n := range nodes {
		by[strings.ToValidUTF8(n.Zone, "\uFFFD")]++
	}
	out := make([]zoneCount, 0, len(by))
	for z, n := range by {
		out = append(out, zoneCount{z, n})
	}
	slices.SortFunc(out, func(a, b zoneCount) int { return cmp.Or(cmp.Compare(b.n, a.n), cmp.Compare(a.zone, b.zone)) })
	if len(out) <= maxZones {
		return out
	}
	rest := 0
	for _, z := range out[maxZones:] {
		rest += z.n
	}
	out = out[:maxZones]
	// A zone named "_other" among those kept takes the rest.
	if i := slices.IndexFunc(out, func(z zoneCount) bool { return z.zone == otherZone }); i >= 0 {
		out[i].n += rest
		return out
	}
	return append(out, zoneCount{otherZone, rest})
}
