package prometheus

import (
	"fmt"
	"sync"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/balance"
	prom "github.com/prometheus/client_golang/prometheus"
)

// BalancerCollector exports a balance.Balancer's Stats. Its series, 8 by
// default:
//
//	chash_balancer_in_flight_requests           gauge   leases acquired and not yet released
//	chash_balancer_load_factor_ratio            gauge   the load factor c (+Inf without a bound)
//	chash_balancer_spills_total                 counter acquires served past the load bound
//	chash_balancer_served_away_total            counter acquires served away from the key's first choice
//	chash_balancer_spread_reads_total           counter acquires of hot keys, spread over their replicas
//	chash_balancer_overloads_total              counter acquires refused with ErrOverloaded
//	chash_balancer_hot_keys                     gauge   keys the hot-key detector reports hot now
//	chash_balancer_hottest_key_share_ratio      gauge   the hottest key's share of recent requests (0: none)
//
// and, with WithPerNode, for each member:
//
//	chash_balancer_node_in_flight_requests{node}  gauge
//	chash_balancer_node_spills_total{node}        counter
//	chash_balancer_node_served_away_total{node}   counter
//	chash_balancer_node_spread_reads_total{node}  counter
//
// The balancer counts spills, away and spread per node, from when the node
// joined; the totals here add each node's increase between scrapes, so
// they never go down when a node leaves. Hot keys are exported as counts,
// never as labels: keys are unbounded.
//
// A scrape calls Stats once: O(members) atomic loads and the detector's
// report (which holds the detector's lock while it reads its 32 slots; an
// Observe takes that lock only to record a key newly hot), plus
// O(members) map updates in the collector. Acquire and Release are
// otherwise untouched. Safe for concurrent use.
type BalancerCollector struct {
	b   *balance.Balancer
	cfg config

	inFlight, factor, spills, away, spread, overloads, hot, hottest *prom.Desc
	nodeInFlight, nodeSpills, nodeAway, nodeSpread                  *prom.Desc

	mu     sync.Mutex // guards totals and last
	totals [3]uint64  // spills, away, spread
	last   map[string][3]uint64
}

var _ prom.Collector = (*BalancerCollector)(nil)

// NewBalancerCollector returns the collector of b (see
// BalancerCollector). It uses WithPerNode and WithConstLabels. It fails
// with chash.ErrNilPlacer for a nil b (a balancer with no placer) and
// with chash.ErrInvalidOption for a bad option.
func NewBalancerCollector(b *balance.Balancer, opts ...Option) (*BalancerCollector, error) {
	if b == nil {
		return nil, fmt.Errorf("%w: prometheus.NewBalancerCollector(nil)", chash.ErrNilPlacer)
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	return &BalancerCollector{b: b, cfg: cfg, last: map[string][3]uint64{},
		inFlight:     cfg.desc("balancer_in_flight_requests", "Requests the balancer has leased a node to and that have not been released."),
		factor:       cfg.desc("balancer_load_factor_ratio", "The balancer's load factor c: no node takes more than about c times its fair share of the requests in flight (+Inf: unbounded)."),
		spills:       cfg.desc("balancer_spills_total", "Acquires served by another node because the load bound refused the key's candidates."),
		away:         cfg.desc("balancer_served_away_total", "Acquires served by a node other than the key's first choice (choices, spreading and spills)."),
		spread:       cfg.desc("balancer_spread_reads_total", "Acquires of hot keys, spread over their replicas."),
		overloads:    cfg.desc("balancer_overloads_total", "Acquires refused because every node was at its load bound."),
		hot:          cfg.desc("balancer_hot_keys", "Keys the hot-key detector reports hot now."),
		hottest:      cfg.desc("balancer_hottest_key_share_ratio", "The hottest key's estimated share of recent requests; 0 when no key is hot."),
		nodeInFlight: cfg.desc("balancer_node_in_flight_requests", "Requests in flight on a node.", "node"),
		nodeSpills:   cfg.desc("balancer_node_spills_total", "Acquires a node served because the load bound refused the key's candidates, since it joined.", "node"),
		nodeAway:     cfg.desc("balancer_node_served_away_total", "Acquires a node served for keys whose first choice is another node, since it joined.", "node"),
		nodeSpread:   cfg.desc("balancer_node_spread_reads_total", "Acquires of hot keys a node served, since it joined.", "node"),
	}, nil
}

// Describe sends the descriptions of every series the collector can
// export.
func (c *BalancerCollector) Describe(ch chan<- *prom.Desc) {
	for _, d := range []*prom.Desc{c.inFlight, c.factor, c.spills, c.away, c.spread, c.overloads, c.hot, c.hottest} {
		ch <- d
	}
	if c.cfg.perNode {
		for _, d := range []*prom.Desc{c.nodeInFlight, c.nodeSpills, c.nodeAway, c.nodeSpread} {
			ch <- d
		}
	}
}

// Collect reads the balancer's Stats and sends its series.
func (c *BalancerCollector) Collect(ch chan<- prom.Metric) {
	st := c.b.Stats()
	totals := c.accumulate(st.Nodes)
	send(ch, c.inFlight, prom.GaugeValue, float64(st.InFlight))
	send(ch, c.factor, prom.GaugeValue, c.b.LoadFactor())
	send(ch, c.spills, prom.CounterValue, float64(totals[0]))
	send(ch, c.away, prom.CounterValue, float64(totals[1]))
	send(ch, c.spread, prom.CounterValue, float64(totals[2]))
	send(ch, c.overloads, prom.CounterValue, float64(st.Overloads))
	send(ch, c.hot, prom.GaugeValue, float64(len(st.HotKeys)))
	hottest := 0.0
	if len(st.HotKeys) > 0 {
		hottest = st.HotKeys[0].Share
	}
	send(ch, c.hottest, prom.GaugeValue, hottest)
	if !c.cfg.perNode {
		return
	}
	ids := make([]string, len(st.Nodes))
	for i, n := range st.Nodes {
		ids[i] = n.ID
	}
	for i, id := range labelValues(ids) {
		n := st.Nodes[i]
		send(ch, c.nodeInFlight, prom.GaugeValue, float64(n.InFlight), id)
		send(ch, c.nodeSpills, prom.CounterValue, float64(n.Spilled), id)
		send(ch, c.nodeAway, prom.CounterValue, float64(n.Away), id)
		send(ch, c.nodeSpread, prom.CounterValue, float64(n.Spread), id)
	}
}

// accumulate adds each node's increase since the last scrape to the
// totals, forgets the nodes that left, and returns the totals.
func (c *BalancerCollector) accumulate(nodes []balance.NodeStats) [3]uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	next := make(map[string][3]uint64, len(nodes))
	for _, n := range nodes {
		now := [3]uint64{n.Spilled, n.Away, n.Spread}
		prev := c.last[n.ID]
		for i := range now {
			if now[i] >= prev[i] {
				c.totals[i] += now[i] - prev[i]
			} else { // the node left and joined again between scrapes
				c.totals[i] += now[i]
			}
		}
		next[n.ID] = now
	}
	c.last = next
	return c.totals
}
