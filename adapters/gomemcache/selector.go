// Package gomemcache places the keys of a github.com/bradfitz/gomemcache
// client with chash: [Selector] is a memcache.ServerSelector backed by any
// chash placer, so adding or removing a server moves only about 1/N of the
// keys instead of the N/(N+1) that the client's default ServerList (CRC32
// modulo the server count) moves.
//
//	sel, err := gomemcache.New([]string{"10.0.0.1:11211", "10.0.0.2:11211"})
//	if err != nil { ... }
//	mc := memcache.NewFromSelector(sel)
//
// A server's node ID is its address exactly as given ("host:port" or a
// Unix socket path), so every client configured with the same addresses,
// algorithm and options places every key on the same server.
package gomemcache

import (
	"errors"
	"fmt"
	"net"
	"reflect"
	"strings"

	"github.com/bradfitz/gomemcache/memcache"
	"github.com/keyplace/chash"
)

// Selector is a memcache.ServerSelector that places keys with a chash
// placer. Membership changes (SetServers) resolve the new addresses, build
// a new placer and swap it in atomically: requests running meanwhile see
// either the old servers or the new ones, never a mix, and take no lock.
//
// The zero Selector has no servers (PickServer returns
// memcache.ErrNoServers) and places keys with a ring of default options
// once SetServers is called. A Selector must not be copied after first use.
type Selector struct {
	h   chash.Holder // holds a *membership
	set settings
}

var _ memcache.ServerSelector = (*Selector)(nil)

// membership is one immutable server set: the placer and, in the same
// snapshot, each node ID's resolved address, so that PickServer reads both
// from one atomic load.
type membership struct {
	chash.Placer
	addrs map[string]net.Addr // node ID (address as given) -> address
	order []net.Addr          // as given, for Each
	ids   []string            // as given, for checkOrder
}

// Errors returned by New and SetServers, wrapped with detail. Test for them
// with errors.Is.
var (
	// ErrNoServers reports an empty server list. It wraps
	// memcache.ErrNoServers, so errors.Is matches either.
	ErrNoServers = fmt.Errorf("gomemcache: empty server list: %w", memcache.ErrNoServers)
	// ErrBadAddress reports a server address that does not resolve: a
	// missing or invalid port, an unknown host, an empty string.
	ErrBadAddress = errors.New("gomemcache: bad server address")
)

// New returns a Selector for servers, placed with the ring unless
// WithAlgorithm says otherwise. It fails, wrapping ErrNoServers,
// ErrBadAddress or a chash error, if servers is empty, an address does not
// resolve, an address is repeated, or an option is invalid. Like
// memcache.ServerList it resolves names now and does not connect.
func New(servers []string, opts ...Option) (*Selector, error) {
	s := new(Selector)
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(&s.set); err != nil {
			return nil, err
		}
	}
	if err := s.set.check(); err != nil {
		return nil, err
	}
	if err := s.SetServers(servers...); err != nil {
		return nil, err
	}
	return s, nil
}

// SetServers replaces the servers. Addresses containing a "/" are Unix
// socket paths; others are resolved as TCP "host:port". It is safe to call
// while requests run; they switch to the new servers atomically. If it
// returns an error, nothing changes. Unlike memcache.ServerList, a repeated
// address is an error (wrapping chash.ErrDuplicateID): give weights with
// WithWeights instead, or place as ServerList does with WithServerList.
// With a positional algorithm (jump, jumpback, binomial, flip) it
// refuses, wrapping ErrReorder, a list that reorders the servers or drops
// one other than from the end, unless WithReshuffle was given; a stateful
// one (memento, anchor, dx, jumpbackanchor, choosek) derives the new
// placer from the current one (see WithAlgorithm). See DryRun for what a
// change would move. It costs the resolution of every address plus the
// placer's construction (for the ring, O(P log P) for P points).
func (s *Selector) SetServers(servers ...string) error {
	if err := s.checkOrder(servers); err != nil {
		return err
	}
	m, err := s.build(servers)
	if err != nil {
		return err
	}
	s.h.Store(m)
	return nil
}

func (s *Selector) build(servers []string) (*membership, error) {
	m, nodes, err := resolveAll(servers)
	if err != nil {
		return nil, err
	}
	for i := range nodes {
		nodes[i].Weight = s.set.weights[nodes[i].ID]
	}
	p, err := s.newPlacer(servers, nodes)
	if err != nil {
		return nil, fmt.Errorf("gomemcache: %w", err)
	}
	m.Placer = p
	return m, nil
}

// resolveAll resolves servers into a membership without its placer, and
// returns their nodes, of weight 0.
func resolveAll(servers []string) (*membership, []chash.Node, error) {
	if len(servers) == 0 {
		return nil, nil, ErrNoServers
	}
	m := &membership{
		addrs: make(map[string]net.Addr, len(servers)),
		order: make([]net.Addr, len(servers)),
	}
	nodes := make([]chash.Node, len(servers))
	for i, srv := range servers {
		a, err := resolve(srv)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: server %d %q: %w", ErrBadAddress, i, srv, err)
		}
		m.order[i] = a
		m.addrs[srv] = a
		m.ids = append(m.ids, srv)
		nodes[i] = chash.Node{ID: srv}
	}
	return m, nodes, nil
}

// SetPlacer makes p the placement, as it is: its node IDs are the server
// addresses, resolved as SetServers resolves them, in the order of
// p.Nodes(). It is how a client joins a fleet whose placement has a state
// (a stateful algorithm: see WithAlgorithm) and so cannot be rebuilt from
// the server list: p is the fleet's placer, for example
// chash.NewMementoFrom(state, members) from what the fleet keeps beside
// its member list, and SetServers derives from it afterwards. p should be
// of the Selector's algorithm and options; weights are p's. It fails,
// changing nothing, wrapping ErrNoServers for a nil or empty placer,
// ErrBadAddress as SetServers does, and chash.ErrInvalidOption for a
// Selector made WithServerList. Requests switch to p atomically.
func (s *Selector) SetPlacer(p chash.Placer) error {
	if s.set.serverList {
		return fmt.Errorf("gomemcache: %w: SetPlacer on a Selector made WithServerList, which places as memcache.ServerList does", chash.ErrInvalidOption)
	}
	if p == nil || reflect.ValueOf(p).Kind() == reflect.Pointer && reflect.ValueOf(p).IsNil() || p.Len() == 0 {
		return ErrNoServers
	}
	var servers []string
	for _, n := range p.Nodes() {
		servers = append(servers, n.ID)
	}
	m, _, err := resolveAll(servers)
	if err != nil {
		return err
	}
	m.Placer = p
	s.h.Store(m)
	return nil
}

// resolve returns server's address with its network and string form
// computed once: the client calls both on every request.
func resolve(server string) (net.Addr, error) {
	if server == "" {
		return nil, errors.New("empty address")
	}
	if strings.Contains(server, "/") {
		a, err := net.ResolveUnixAddr("unix", server)
		if err != nil {
			return nil, err
		}
		return &addr{network: a.Network(), str: a.String()}, nil
	}
	a, err := net.ResolveTCPAddr("tcp", server)
	if err != nil {
		return nil, err
	}
	if a.Port == 0 {
		return nil, errors.New("missing or zero port")
	}
	return &addr{network: a.Network(), str: a.String()}, nil
}

// addr is a resolved server address whose methods do not allocate.
type addr struct{ network, str string }

func (a *addr) Network() string { return a.network }
func (a *addr) String() string  { return a.str }

// PickServer returns the address of the server that owns key, or
// memcache.ErrNoServers if no servers were set. It takes no lock and does
// not allocate: one hash of the key, the placer's lookup and one map read.
func (s *Selector) PickServer(key string) (net.Addr, error) {
	m := s.current()
	if m == nil {
		return nil, memcache.ErrNoServers
	}
	return m.addrs[m.LookupString(key).ID], nil
}

// Each calls f with each server's address, in the order given to
// SetServers, and stops at the first error, which it returns. It iterates
// over one membership even if SetServers runs meanwhile.
func (s *Selector) Each(f func(net.Addr) error) error {
	m := s.current()
	if m == nil {
		return nil
	}
	for _, a := range m.order {
		if err := f(a); err != nil {
			return err
		}
	}
	return nil
}

// Placer returns the current placer, whose node IDs are the server
// addresses as given, or nil if no servers were set. Use it to see where
// keys go (for example to count how many keys a change would move) without
// contacting a server.
func (s *Selector) Placer() chash.Placer {
	if m := s.current(); m != nil {
		return m.Placer
	}
	return nil
}

func (s *Selector) current() *membership {
	m, _ := s.h.Load().(*membership)
	return m
}
