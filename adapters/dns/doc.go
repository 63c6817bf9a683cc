// Package dns follows a fleet's members in DNS, as the OpenTelemetry
// load-balancing exporter, dskit and Thanos do: the targets of an SRV
// record (with their weights and priorities), or the addresses of an A and
// AAAA name, re-resolved on an interval and served as one view that every
// process resolving the same records shares.
//
//	w, err := dns.Watch(ctx, "dnssrv+_memcached._tcp.cache.example.com", nil) // nil: the published spec
//	owner := w.LookupString("user:42") // a chash.Node: ID "host:port", its weight and zone
//
// # What a name resolves to
//
// A query names its records as dskit does. "dnssrv+NAME" reads NAME's SRV
// records: each target of the lowest priority present is a member (the
// higher priorities are backups, left out), its ID and Addr "host:port"
// (the target without its final dot), its weight the SRV weight (0 means
// 1, as everywhere in chash). "dns+NAME:PORT" reads NAME's A and AAAA
// records: each address is a member, its ID and Addr "ip:port".
//
// TXT records at NAME carry what DNS has no field for, one a record:
//
//	chash-spec maglev table-size=65537 seed=cache-seed
//	chash-member cache-1.example.com:11211 zone=eu-1a weight=2.5
//
// "chash-spec" publishes the fleet's placement spec (member.Spec's text
// form); "chash-member ID" sets that member's zone and an exact weight (SRV
// weights are whole numbers up to 65535). Other TXT records are ignored;
// a chash TXT record that does not parse is reported and ignored.
//
// # Faults
//
// Every resolution is complete or not served: an answer truncated over
// UDP is asked again over TCP, and if TCP fails too the resolution fails;
// a SERVFAIL, a REFUSED or a server that does not answer fails it; each
// failure is reported, the next server (WithServers) tried, and the last
// view kept. A name that does not exist (NXDOMAIN) or has no such records
// resolves to no member: that is reported (member.ErrNoMembers) and the
// last view kept too, and a watcher started then waits for the first
// member. A resolution that finds what the last one found only confirms
// the view (member.Sink.Heard); one that finds anything else hands over a
// new snapshot with a higher version, a counter the source keeps.
package dns
