package prometheus_test

import (
	"context"
	"testing"

	chashprom "github.com/keyplace/chash/adapters/prometheus"
	"github.com/keyplace/chash/chashtest"
	"github.com/prometheus/client_golang/prometheus"
)

// BenchmarkScrape gathers all four collectors over 1,000 nodes, as a
// Prometheus scrape does (the registry's Gather, without the HTTP
// encoding), after the first scrape has cached the shares.
func BenchmarkScrape(b *testing.B) {
	for _, c := range []struct {
		name string
		opts []chashprom.Option
	}{{"default-1000", nil}, {"per-node-1000", []chashprom.Option{chashprom.WithPerNode()}}} {
		b.Run(c.name, func(b *testing.B) {
			_, cs := newFleet(b, 1000, c.opts...)
			reg := prometheus.NewRegistry()
			reg.MustRegister(cs...)
			if _, err := reg.Gather(); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			series := 0
			for b.Loop() {
				mfs, err := reg.Gather()
				if err != nil {
					b.Fatal(err)
				}
				series = 0
				for _, mf := range mfs {
					series += len(mf.GetMetric())
				}
			}
			b.ReportMetric(float64(series), "series")
		})
	}
}

// BenchmarkLookupWhileScraped compares a lookup through the tracker the
// collectors watch, with nothing else running and while a goroutine
// scrapes them without pause: the collectors add nothing to the lookup
// path: compare ns/op (on 2 cores the scraping goroutine competes for the
// CPU). B/op and allocs/op while scraped count the scraper's allocations
// too, since the runtime's counters are the process's: the lookups' own
// count is bare's, 0, which TestLookupsWhileScraped asserts.
func BenchmarkLookupWhileScraped(b *testing.B) {
	f, cs := newFleet(b, 1000, chashprom.WithPerNode())
	keys := chashtest.Keys(1024)
	lookups := func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			f.tracker.LookupString(keys[i&1023])
			i++
		}
	}
	b.Run("bare", lookups)
	b.Run("scraped", func(b *testing.B) {
		reg := prometheus.NewRegistry()
		reg.MustRegister(cs...)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			for ctx.Err() == nil {
				_, _ = reg.Gather()
			}
		}()
		lookups(b)
		cancel()
		<-done
	})
}
