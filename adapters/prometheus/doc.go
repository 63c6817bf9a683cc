// Package prometheus exports chash placements as Prometheus metrics:
// collectors for a placement (a placer, a chash.Holder, a status.Tracker
// or an etcd Watcher), a balance.Balancer, a membership watcher's errors
// and staleness, and a shard map.
//
// The collectors read what they export when they are scraped, through the
// ordinary methods of what they watch: they wrap nothing, so a lookup,
// an acquire or a release costs exactly what it did without them (no
// allocation, no lock; BenchmarkLookupWhileScraped). By default each
// collector exports a fixed number of series, about 30 in all for a
// placement, whatever the size of the fleet; the series of each member are
// opt-in ([WithPerNode]), since their number grows with it. Names follow
// the Prometheus conventions (counters end in _total, times are seconds,
// fractions are _ratio), and no label takes unbounded values: hot keys
// are counted, never named; zones are capped ([WithMaxZones]).
//
// A service registers the collectors and serves them:
//
//	reg := prometheus.NewRegistry()
//	placement, _ := chashprom.NewPlacementCollector(tracker)
//	balancer, _ := chashprom.NewBalancerCollector(lb)
//	reg.MustRegister(placement, balancer)
//	http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
//
// Each collector's doc lists its series; the package's README lists them
// all. Collectors are safe for concurrent use.
package prometheus
