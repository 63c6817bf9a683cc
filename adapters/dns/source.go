package dns

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/member"
	mdns "github.com/miekg/dns"
)

// Errors of the source, wrapped with detail.
var (
	// ErrQuery reports a query this package cannot read: neither
	// "dnssrv+NAME" nor "dns+NAME:PORT".
	ErrQuery = errors.New("dns: bad query")
	// ErrResolve reports a resolution that failed: no server answered
	// with a complete answer (SERVFAIL, REFUSED, a timeout, a truncated
	// answer that TCP could not complete). The last view keeps serving.
	ErrResolve = errors.New("dns: resolution failed")
)

// DefaultInterval is how often a source resolves its name again unless
// WithInterval says otherwise.
const DefaultInterval = 15 * time.Second

// DefaultTimeout bounds each query to one server unless WithTimeout says
// otherwise.
const DefaultTimeout = 2 * time.Second

// Option configures a Source, or a watcher through Watch.
type Option func(*config)

type config struct {
	servers  []string
	interval time.Duration
	timeout  time.Duration
	udpSize  uint16
	watch    []member.Option
}

// WithServers sets the DNS servers to ask, "host:port", in order: each
// resolution asks the next when one fails. The default is the nameservers
// of /etc/resolv.conf.
func WithServers(addrs ...string) Option {
	return func(c *config) { c.servers = slices.Clone(addrs) }
}

// WithInterval sets how often the name is resolved again (at least
// 10 ms; default DefaultInterval). Watch sets the silence bound to three
// intervals: a source with no complete answer for that long is reported
// (member.ErrSilent) and started again.
func WithInterval(d time.Duration) Option {
	return func(c *config) { c.interval = max(d, 10*time.Millisecond) }
}

// WithTimeout bounds each query to one server (at least 1 ms; default
// DefaultTimeout).
func WithTimeout(d time.Duration) Option {
	return func(c *config) { c.timeout = max(d, time.Millisecond) }
}

// WithUDPSize sets the EDNS0 UDP payload size the queries advertise
// (512 to 65535; default 1232, the DNS flag day's). Answers larger than it
// come back truncated and are asked again over TCP.
func WithUDPSize(n int) Option {
	return func(c *config) { c.udpSize = uint16(min(max(n, 512), 65535)) }
}

// WithErrorHook adds a function that receives what the source and its
// watcher report (see member.WithErrorHook). Only Watch uses it.
func WithErrorHook(f func(error)) Option {
	return func(c *config) { c.watch = append(c.watch, member.WithErrorHook(f)) }
}

// WithViewHook adds a function called with each view served (see
// member.WithViewHook). Only Watch uses it.
func WithViewHook(f func(*member.View)) Option {
	return func(c *config) { c.watch = append(c.watch, member.WithViewHook(f)) }
}

// WithMemberOptions passes options of package member to the watcher
// (member.WithCoalesce, WithSpec, WithSeeds, WithSilence). Only Watch uses
// them.
func WithMemberOptions(opts ...member.Option) Option {
	return func(c *config) { c.watch = append(c.watch, opts...) }
}

// Source resolves a name into members: a member.Source. Watch runs one for
// you. Its Run is not safe to call concurrently with itself (a Watcher
// never does).
type Source struct {
	srv     bool   // SRV records, else A and AAAA
	name    string // fully qualified
	port    string // for A and AAAA
	cfg     config
	version int64
	last    string // the content of the last snapshot handed over
}

// NewSource returns the source of query: "dnssrv+NAME" for NAME's SRV
// records, "dns+NAME:PORT" for its A and AAAA records (see the package
// doc). It fails with ErrQuery for another form, and if no server is
// given and /etc/resolv.conf names none.
func NewSource(query string, opts ...Option) (*Source, error) {
	c := config{interval: DefaultInterval, timeout: DefaultTimeout, udpSize: 1232}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	s := &Source{cfg: c}
	switch {
	case strings.HasPrefix(query, "dnssrv+"):
		s.srv, s.name = true, strings.TrimPrefix(query, "dnssrv+")
	case strings.HasPrefix(query, "dns+"):
		host, port, err := net.SplitHostPort(strings.TrimPrefix(query, "dns+"))
		if p, perr := strconv.Atoi(port); err != nil || perr != nil || p < 1 || p > 65535 {
			return nil, fmt.Errorf("%w: %q: want dns+NAME:PORT", ErrQuery, query)
		}
		s.name, s.port = host, port
	default:
		return nil, fmt.Errorf("%w: %q: want dnssrv+NAME or dns+NAME:PORT", ErrQuery, query)
	}
	if _, ok := mdns.IsDomainName(s.name); !ok || strings.Trim(s.name, ".") == "" {
		return nil, fmt.Errorf("%w: %q is not a domain name", ErrQuery, s.name)
	}
	s.name = mdns.Fqdn(s.name)
	if len(s.cfg.servers) == 0 {
		rc, err := mdns.ClientConfigFromFile("/etc/resolv.conf")
		if err != nil || len(rc.Servers) == 0 {
			return nil, fmt.Errorf("%w: no server given and none in /etc/resolv.conf (%v)", chash.ErrInvalidOption, err)
		}
		for _, h := range rc.Servers {
			s.cfg.servers = append(s.cfg.servers, net.JoinHostPort(h, rc.Port))
		}
	}
	return s, nil
}

// Watch follows query (see NewSource) and returns once it serves the first
// view: it waits until the name resolves to a placeable member or ctx
// ends, then fails with member.ErrNoMembers wrapping ctx's error and the
// last fault. build makes the placers; nil builds with the spec published
// in the name's TXT records. The silence bound is three intervals.
func Watch(ctx context.Context, query string, build member.Builder, opts ...Option) (*member.Watcher, error) {
	src, err := NewSource(query, opts...)
	if err != nil {
		return nil, err
	}
	all := append([]member.Option{member.WithSilence(3 * src.cfg.interval)}, src.cfg.watch...)
	w, err := member.Follow(ctx, src, build, all...)
	if err != nil {
		return nil, fmt.Errorf("dns: watch %s: %w", query, err)
	}
	return w, nil
}

// Run resolves the name at once and then every interval until ctx ends,
// handing over each member set that differs from the last and confirming
// the others. A failed resolution is reported and tried again at the next
// interval.
func (s *Source) Run(ctx context.Context, sink member.Sink) error {
	tick := time.NewTicker(s.cfg.interval)
	defer tick.Stop()
	for {
		snap, problems, err := s.resolve(ctx)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			sink.Report(err)
		default:
			for _, p := range problems {
				sink.Report(p)
			}
			s.hand(snap, sink)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// hand hands snap over if it differs from the last, else confirms.
func (s *Source) hand(snap member.Snapshot, sink member.Sink) {
	key := content(snap)
	if s.version > 0 && key == s.last {
		sink.Heard()
		return
	}
	s.version++
	s.last = key
	snap.Version = s.version
	sink.Snapshot(snap)
}

// content is a text of snap's members and spec, equal for equal content.
func content(snap member.Snapshot) string {
	var b strings.Builder
	if snap.Spec != nil {
		b.WriteString(snap.Spec.String())
	}
	for _, m := range snap.Members {
		fmt.Fprintf(&b, "\x00%s\x01%v\x01%s\x01%s", m.ID, m.Weight, m.Zone, m.Addr)
	}
	return b.String()
}

// resolve reads the name's records and TXT records into a snapshot,
// members ascending by ID, with the chash TXT records it could not read.
func (s *Source) resolve(ctx context.Context) (member.Snapshot, []error, error) {
	var ms []member.Member
	if s.srv {
		rrs, err := s.query(ctx, mdns.TypeSRV)
		if err != nil {
			return member.Snapshot{}, nil, err
		}
		ms = srvMembers(rrs)
	} else {
		for _, t := range []uint16{mdns.TypeA, mdns.TypeAAAA} {
			rrs, err := s.query(ctx, t)
			if err != nil {
				return member.Snapshot{}, nil, err
			}
			ms = append(ms, s.addrMembers(rrs)...)
		}
	}
	txt, err := s.query(ctx, mdns.TypeTXT)
	if err != nil {
		return member.Snapshot{}, nil, err
	}
	slices.SortFunc(ms, func(a, b member.Member) int { return cmp.Compare(a.ID, b.ID) })
	ms = slices.CompactFunc(ms, func(a, b member.Member) bool { return a.ID == b.ID })
	spec, problems := applyTXT(txt, ms)
	return member.Snapshot{Members: ms, Spec: spec}, problems, nil
}

// srvMembers returns the targets of the lowest priority in rrs.
func srvMembers(rrs []mdns.RR) []member.Member {
	lowest := -1
	for _, rr := range rrs {
		if srv, ok := rr.(*mdns.SRV); ok && (lowest < 0 || int(srv.Priority) < lowest) {
			lowest = int(srv.Priority)
		}
	}
	var ms []member.Member
	for _, rr := range rrs {
		srv, ok := rr.(*mdns.SRV)
		if !ok || int(srv.Priority) != lowest || srv.Target == "." {
			continue
		}
		id := net.JoinHostPort(strings.TrimSuffix(srv.Target, "."), strconv.Itoa(int(srv.Port)))
		ms = append(ms, member.Member{ID: id, Addr: id, Weight: float64(srv.Weight)})
	}
	return ms
}

// addrMembers returns the addresses in rrs, with the source's port.
func (s *Source) addrMembers(rrs []mdns.RR) []member.Member {
	var ms []member.Member
	for _, rr := range rrs {
		var ip net.IP
		switch a := rr.(type) {
		case *mdns.A:
			ip = a.A
		case *mdns.AAAA:
			ip = a.AAAA
		default:
			continue
		}
		id := net.JoinHostPort(ip.String(), s.port)
		ms = append(ms, member.Member{ID: id, Addr: id})
	}
	return ms
}
