package status_test

import (
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/status"
)

// A service mounts the status page of the placement it serves. Browsers
// get HTML; a request that accepts JSON gets the same numbers.
func ExampleNewHandler() {
	ring, err := chash.NewRing([]chash.Node{{ID: "cache-a"}, {ID: "cache-b", Weight: 2}, {ID: "cache-c"}})
	if err != nil {
		log.Fatal(err)
	}
	tracker := status.NewTracker(ring) // revision 1
	page, err := status.NewHandler(tracker, status.WithTitle("sessions"))
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/debug/placement", page)

	grown, err := ring.Add(chash.Node{ID: "cache-d"})
	if err != nil {
		log.Fatal(err)
	}
	tracker.Store(grown) // revision 2

	req := httptest.NewRequest(http.MethodGet, "/debug/placement", nil)
	req.Header.Set("Accept", "application/json")
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, req)
	var s status.Snapshot
	if err := json.Unmarshal(rec.Body.Bytes(), &s); err != nil {
		log.Fatal(err)
	}
	fmt.Println(s.Title, s.Algorithm, "revision", s.Revision, "members", s.Members)
	for _, n := range s.Nodes {
		fmt.Printf("%s weight %g: %.1f%% of keys, fair %.1f%%\n", n.ID, n.Weight, 100*n.Share, 100*n.Fair)
	}
	// Output:
	// sessions ring revision 2 members 4
	// cache-a weight 1: 18.4% of keys, fair 20.0%
	// cache-b weight 2: 41.5% of keys, fair 40.0%
	// cache-c weight 1: 22.7% of keys, fair 20.0%
	// cache-d weight 1: 17.5% of keys, fair 20.0%
}
