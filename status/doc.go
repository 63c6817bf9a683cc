// Package status shows a service's placement to the people who run it: a
// live status page, an [http.Handler] built on the standard library alone,
// that a service mounts to show the placement it serves now, and
// [Tracker], a [chash.Holder] that remembers its revision, last change and
// builds for the page and for metrics to show.
//
// The page ([NewHandler]) shows the algorithm, fingerprint, revision and
// age of the placement; every member with its zone and weight, and its
// share of the keys against its fair share as an inline SVG bar chart; a
// balancer's requests in flight per node against their load bounds, its
// spills and spread reads; and the hot keys. It is one self-contained
// HTML document, with no script and nothing fetched from elsewhere, and
// escapes every member ID and key. A request that asks for JSON
// (Accept: application/json) gets the same numbers as a [Snapshot].
//
// Shares are computed once per fingerprint (chash.Shares) and cached, so a
// page view costs O(members) however often it is loaded; see
// BenchmarkPage for the cost at 1,000 members.
//
//	tracker := status.NewTracker(ring)
//	page, err := status.NewHandler(tracker, status.WithBalancer(lb))
//	if err != nil { ... }
//	http.Handle("/debug/placement", page)
//	...
//	tracker.Store(grown) // revision 2; the page shows it on the next view
package status
