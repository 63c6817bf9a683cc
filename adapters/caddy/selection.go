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
//
// Provision validates the configuration for what it is, at a bounded cost
// (the algorithm and each option's range, without building a placement of
// the configured size), and refuses the positional algorithms (jump,
// jumpback, binomial, flip: chash.Algorithm.Positional): they number
// upstreams by their position in the pool, so a new order of the
// upstreams, or removing one but the last, moves most keys. It refuses the
// stateful ones as well (memento, anchor, dx, jumpbackanchor, choosek:
// chash.Algorithm.Stateful): they can lose any upstream only when each
// placement is derived from the last, and every configuration load builds
// the placement afresh from the pool, so removing an upstream from the
// middle of the list would move most keys there too (66-75% for the
// second of four).
//
// Whether a pool can be placed depends on it (a Maglev table_size smaller
// than the upstreams, a ring past its point limit). A pool the configured
// placement refuses never turns healthy upstreams into failed requests:
// the policy keeps the last good placement while it names any upstream of
// the pool (its upstreams that are gone are skipped; new ones take no key
// until a pool can be placed), and without one places the pool by
// rendezvous with the same seed. Each refusal is logged (a warning in
// the module's log) and counted ([ReadCounters]); Select returns nil only
// when no upstream of the pool is available.
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
	"go.uber.org/zap"
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
	// Algorithm is a name chash.ParseAlgorithm accepts for an algorithm
	// that is neither positional nor stateful: ring, rendezvous (the
	// default), maglev or bounded. The others are refused.
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

	alg    chash.Algorithm
	opts   []chash.Option
	logger *zap.Logger
	cache  atomic.Pointer[placement]
	mu     sync.Mutex // serialises rebuilds
}

// placement is the placer over one pool of upstreams.
type placement struct {
	dials  []string       // the pool's dial addresses, in pool order
	placer chash.Placer   // over the distinct dial addresses, or the last good one
	good   bool           // placer is a configured placement (of this pool or kept)
	index  map[string]int // dial address -> position in the pool
	err    error          // why the configured placement refused the pool
}

// Counters are the policy's process-wide counts of pools it could not
// place as configured, for export.
type Counters struct {
	// Refused counts the pools the configured placement refused; each
	// was logged, and served by the last good placement or the fallback.
	Refused uint64
	// Fallbacks counts the refused pools placed by rendezvous because
	// there was no last good placement naming any of their upstreams.
	Fallbacks uint64
}

var counters struct{ refused, fallbacks atomic.Uint64 }

// ReadCounters returns the current Counters.
func ReadCounters() Counters {
	return Counters{Refused: counters.refused.Load(), Fallbacks: counters.fallbacks.Load()}
}

// CaddyModule returns the Caddy module information.
func (*Selection) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.reverse_proxy.selection_policies.chash",
		New: func() caddy.Module { return new(Selection) },
	}
}

// Provision checks the configuration, at a cost that does not depend on
// the sizes it configures.
func (s *Selection) Provision(ctx caddy.Context) error {
	s.logger = ctx.Logger()
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
	switch {
	case a.Positional():
		return fmt.Errorf("chashcaddy: %w: algorithm %q numbers upstreams by their position in the pool: a new order, or removing one but the last, moves most keys; "+
			"use rendezvous, maglev, ring or bounded, which lose any upstream moving only its keys", chash.ErrInvalidOption, name)
	case a.Stateful():
		return fmt.Errorf("chashcaddy: %w: algorithm %q keeps upstreams in slots numbered by the pool, which each configuration load builds afresh: removing one from the middle of the list moves most keys; "+
			"use rendezvous, maglev, ring or bounded, which lose any upstream moving only its keys", chash.ErrInvalidOption, name)
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
	// A one-upstream rendezvous placer applies every option, so checks
	// its range, and ignores the sizes they configure.
	if _, err := chash.NewRendezvous([]chash.Node{{ID: "probe"}}, s.opts...); err != nil {
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
	if p.placer == nil { // no upstream has a dial address
		for _, up := range pool {
			if up.Available() && s.room(pool, up) {
				return up
			}
		}
		return nil
	}
	key := s.key(r)
	if i, ok := p.index[p.placer.LookupString(key).ID]; ok {
		if up := pool[i]; up.Available() && s.room(pool, up) {
			return up
		}
	}
	for _, n := range p.placer.AppendTopKString(nil, key, p.placer.Len()) {
		if i, ok := p.index[n.ID]; ok {
			if up := pool[i]; up.Available() && s.room(pool, up) {
				return up
			}
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
		if _, dup := p.index[up.Dial]; !dup && up.Dial != "" {
			p.index[up.Dial] = i
			nodes = append(nodes, chash.Node{ID: up.Dial})
		}
	}
	if len(nodes) > 0 {
		s.place(p, nodes, s.cache.Load())
	}
	s.cache.Store(p)
	return p
}

// place builds p's placer over nodes (distinct and not empty). If the
// configured placement refuses them, it keeps last's placer if that is a
// configured one naming any of them, else places them by rendezvous.
func (s *Selection) place(p *placement, nodes []chash.Node, last *placement) {
	placer, err := chash.New(s.alg, nodes, s.opts...)
	if err == nil {
		p.placer, p.good = placer, true
		return
	}
	p.err = err
	counters.refused.Add(1)
	if last != nil && last.good {
		if kept := named(last.placer, p.index); kept > 0 {
			p.placer, p.good = last.placer, true
			s.warn("cannot place the pool; keeping the last good placement", len(nodes), err, zap.Int("kept_upstreams", kept))
			return
		}
	}
	var opts []chash.Option
	if s.Seed != 0 {
		opts = append(opts, chash.WithHasher(chash.XXHashSeed(s.Seed)))
	}
	// Rendezvous places any non-empty set of distinct, named upstreams
	// of equal weight.
	p.placer, _ = chash.NewRendezvous(nodes, opts...)
	counters.fallbacks.Add(1)
	s.warn("cannot place the pool; placing it by rendezvous until a pool can be placed as configured", len(nodes), err)
}

func (s *Selection) warn(msg string, upstreams int, err error, fields ...zap.Field) {
	if s.logger != nil {
		s.logger.Warn(msg, append(fields, zap.String("algorithm", s.alg.String()), zap.Int("upstreams", upstreams), zap.Error(err))...)
	}
}

// named returns how many of p's nodes are in index.
func named(p chash.Placer, index map[string]int) int {
	n := 0
	for _, node := range p.Nodes() {
		if _, ok := index[node.ID]; ok {
			n++
		}
	}
	return n
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
//		algorithm   ring|rendezvous|maglev|bounded
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
