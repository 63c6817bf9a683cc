// Package chashcaddy is a Caddy reverse_proxy selection policy,
// http.reverse_proxy.selection_policies.chash, that places request keys on
// upstreams with a chash placement: every request for one key goes to the
// upstream that owns it, and while that upstream is unavailable (unhealthy
// by Caddy's active or passive health checks, or full) to the key's next
// choice, in the key's preference order, so only its own keys move.
//
// Caddyfile:
//
//	reverse_proxy 10.0.0.1:8080 10.0.0.2:8080 10.0.0.3:8080 {
//		lb_policy chash {
//			key {http.request.header.X-Tenant}
//			algorithm maglev
//			load_factor 1.25
//		}
//	}
//
// A request whose key template expands to the empty string is keyed by
// its client's address ({http.request.remote.host}).
package chashcaddy

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp/reverseproxy"
	"github.com/keyplace/chash"
)

func init() { caddy.RegisterModule(new(Selection)) }

// Selection is the chash selection policy. Upstreams are identified by
// their dial address and weighted equally.
type Selection struct {
	// Key is a placeholder template whose expansion is the request's key,
	// such as "{http.request.header.X-Tenant}",
	// "{http.request.cookie.session}", "{http.request.uri.query.user}" or
	// "{http.request.uri.path.1}". Default: the client's address.
	Key string `json:"key,omitempty"`
	// Algorithm is a name chash.ParseAlgorithm accepts: ring, rendezvous
	// (the default), jump, maglev or bounded.
	Algorithm string `json:"algorithm,omitempty"`
	// Vnodes, TableSize and Partitions are the algorithm's options; Seed,
	// if set, is chash.XXHashSeed. Zero means the default.
	Vnodes     int    `json:"vnodes,omitempty"`
	TableSize  int    `json:"table_size,omitempty"`
	Partitions int    `json:"partitions,omitempty"`
	Seed       uint64 `json:"seed,omitempty"`
	// LoadFactor, if set (> 1), skips an upstream whose in-flight requests
	// (as Caddy counts them) would exceed LoadFactor times the pool's mean,
	// rounded up, taking the key's next choice instead.
	LoadFactor float64 `json:"load_factor,omitempty"`

	alg   chash.Algorithm
	opts  []chash.Option
	cache atomic.Pointer[placement]
	mu    sync.Mutex // serialises rebuilds
}

// placement is the placer over one pool of upstreams.
type placement struct {
	dials  []string       // the pool's dial addresses, in pool order
	placer chash.Placer   // over the distinct dial addresses
	index  map[string]int // dial address -> position in the pool
	err    error
}

// CaddyModule returns the Caddy module information.
func (*Selection) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.reverse_proxy.selection_policies.chash",
		New: func() caddy.Module { return new(Selection) },
	}
}

// Provision checks the configuration.
func (s *Selection) Provision(caddy.Context) error {
	if s.Key == "" {
		s.Key = "{http.request.remote.host}"
	}
	name := s.Algorithm
	if name == "" {
		name = "rendezvous"
	}
	a, err := chash.ParseAlgorithm(name)
	if err != nil {
		return fmt.Errorf("chashcaddy: %w", err)
	}
	s.alg = a
	s.opts = nil
	for _, o := range []struct {
		set bool
		opt chash.Option
	}{
		{s.Vnodes != 0, chash.WithVnodes(s.Vnodes)},
		{s.TableSize != 0, chash.WithTableSize(s.TableSize)},
		{s.Partitions != 0, chash.WithPartitions(s.Partitions)},
		{s.Seed != 0, chash.WithHasher(chash.XXHashSeed(s.Seed))},
	} {
		if o.set {
			s.opts = append(s.opts, o.opt)
		}
	}
	if s.LoadFactor != 0 && (!(s.LoadFactor > 1) || math.IsInf(s.LoadFactor, 0)) {
		return fmt.Errorf("chashcaddy: %w: load_factor %v: want a finite value > 1", chash.ErrInvalidOption, s.LoadFactor)
	}
	// A one-upstream placement checks the options' ranges.
	if _, err := chash.New(s.alg, []chash.Node{{ID: "probe"}}, s.opts...); err != nil {
		return fmt.Errorf("chashcaddy: %w", err)
	}
	return nil
}

// Select returns the first available upstream in the request key's
// preference order, or nil if none is available.
func (s *Selection) Select(pool reverseproxy.UpstreamPool, r *http.Request, _ http.ResponseWriter) *reverseproxy.Upstream {
	if len(pool) == 0 {
		return nil
	}
	p := s.placementFor(pool)
	if p.err != nil {
		return nil
	}
	key := s.key(r)
	if up := pool[p.index[p.placer.LookupString(key).ID]]; up.Available() && s.room(pool, up) {
		return up
	}
	for _, n := range p.placer.AppendTopKString(nil, key, p.placer.Len()) {
		if up := pool[p.index[n.ID]]; up.Available() && s.room(pool, up) {
			return up
		}
	}
	return nil
}

func (s *Selection) key(r *http.Request) string {
	repl, ok := r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer)
	if !ok {
		return r.RemoteAddr
	}
	if k := repl.ReplaceKnown(s.Key, ""); k != "" {
		return k
	}
	return repl.ReplaceKnown("{http.request.remote.host}", "")
}

// room reports whether up is within the load bound: taking one more
// request keeps it at most ceil(c × (total+1) / n).
func (s *Selection) room(pool reverseproxy.UpstreamPool, up *reverseproxy.Upstream) bool {
	if s.LoadFactor == 0 {
		return true
	}
	total := 0
	for _, u := range pool {
		total += u.NumRequests()
	}
	return float64(up.NumRequests()) < s.LoadFactor*float64(total+1)/float64(len(pool))
}

// placementFor returns the placement over pool, rebuilding it when the
// pool's dial addresses change (dynamic upstreams).
func (s *Selection) placementFor(pool reverseproxy.UpstreamPool) *placement {
	if p := s.cache.Load(); p != nil && p.matches(pool) {
		return p
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.cache.Load(); p != nil && p.matches(pool) {
		return p
	}
	p := &placement{index: make(map[string]int, len(pool))}
	var nodes []chash.Node
	for i, up := range pool {
		p.dials = append(p.dials, up.Dial)
		if _, dup := p.index[up.Dial]; !dup {
			p.index[up.Dial] = i
			nodes = append(nodes, chash.Node{ID: up.Dial})
		}
	}
	p.placer, p.err = chash.New(s.alg, nodes, s.opts...)
	s.cache.Store(p)
	return p
}

func (p *placement) matches(pool reverseproxy.UpstreamPool) bool {
	if len(p.dials) != len(pool) {
		return false
	}
	for i, up := range pool {
		if p.dials[i] != up.Dial {
			return false
		}
	}
	return true
}

// UnmarshalCaddyfile sets up the policy from Caddyfile tokens:
//
//	lb_policy chash [<key>] {
//		key         <placeholder template>
//		algorithm   ring|rendezvous|jump|maglev|bounded
//		vnodes      <n>
//		table_size  <prime>
//		partitions  <n>
//		seed        <n>
//		load_factor <c>
//	}
func (s *Selection) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // the policy name
	if d.NextArg() {
		s.Key = d.Val()
	}
	if d.NextArg() {
		return d.ArgErr()
	}
	for d.NextBlock(0) {
		name := d.Val()
		if !d.NextArg() {
			return d.ArgErr()
		}
		val := d.Val()
		if d.NextArg() {
			return d.ArgErr()
		}
		if err := s.set(name, val); err != nil {
			return d.Errf("%v", err)
		}
	}
	return nil
}

func (s *Selection) set(name, val string) error {
	var err error
	switch name {
	case "key":
		s.Key = val
	case "algorithm":
		s.Algorithm = strings.ToLower(val)
	case "vnodes":
		s.Vnodes, err = strconv.Atoi(val)
	case "table_size":
		s.TableSize, err = strconv.Atoi(val)
	case "partitions":
		s.Partitions, err = strconv.Atoi(val)
	case "seed":
		s.Seed, err = strconv.ParseUint(val, 10, 64)
	case "load_factor":
		s.LoadFactor, err = strconv.ParseFloat(val, 64)
	default:
		return fmt.Errorf("chashcaddy: unknown option %q", name)
	}
	if err != nil {
		return fmt.Errorf("chashcaddy: %s %q: %v", name, val, err)
	}
	return nil
}

// Interface guards.
var (
	_ reverseproxy.Selector = (*Selection)(nil)
	_ caddy.Provisioner     = (*Selection)(nil)
	_ caddyfile.Unmarshaler = (*Selection)(nil)
)
