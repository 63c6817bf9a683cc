package prometheus_test

import (
	"bufio"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/keyplace/chash"
	chashprom "github.com/keyplace/chash/adapters/prometheus"
	"github.com/keyplace/chash/balance"
	"github.com/keyplace/chash/status"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// A service exports its placement and its balancer: a registry, the
// collectors, promhttp. The service stores each new placer in the
// tracker, which counts revisions and build time for the collectors.
func Example() {
	tracker := status.NewTracker(nil)
	err := tracker.Build(func() (chash.Placer, error) {
		return chash.NewRing([]chash.Node{{ID: "cache-a", Zone: "eu-1"}, {ID: "cache-b", Zone: "eu-2"}, {ID: "cache-c", Zone: "eu-2"}})
	})
	if err != nil {
		log.Fatal(err)
	}
	lb, err := balance.New(tracker.Load())
	if err != nil {
		log.Fatal(err)
	}

	reg := prometheus.NewRegistry()
	placement, err := chashprom.NewPlacementCollector(tracker)
	if err != nil {
		log.Fatal(err)
	}
	balancer, err := chashprom.NewBalancerCollector(lb)
	if err != nil {
		log.Fatal(err)
	}
	reg.MustRegister(placement, balancer)
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))

	lease, err := lb.AcquireString("user:42")
	if err != nil {
		log.Fatal(err)
	}
	defer lease.Release()

	// What Prometheus reads (a few of the lines).
	srv := httptest.NewServer(mux)
	defer srv.Close()
	res, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		log.Fatal(err)
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		line := sc.Text()
		for _, name := range []string{"chash_placement_members ", "chash_placement_zone_members{", "chash_placement_revision ", "chash_placement_builds_total ", "chash_balancer_in_flight_requests "} {
			if strings.HasPrefix(line, name) {
				fmt.Println(line)
			}
		}
	}
	// Output:
	// chash_balancer_in_flight_requests 1
	// chash_placement_builds_total 1
	// chash_placement_members 3
	// chash_placement_revision 2
	// chash_placement_zone_members{zone="eu-1"} 1
	// chash_placement_zone_members{zone="eu-2"} 2
}
