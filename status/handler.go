package status

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/balance"
)

// Handler serves the status page of a placement: an http.Handler that a
// service mounts (say at /debug/placement) to show the placement it serves
// now. A GET or HEAD answers HTML, or the same numbers as JSON (a
// [Snapshot]) when the request's Accept header prefers application/json
// or its query has format=json. Other methods are refused with 405.
//
// The page is one self-contained document: its styles inline, its charts
// inline SVG, no script and nothing fetched from elsewhere (its
// Content-Security-Policy forbids both), so it reads the same in an
// air-gapped cluster and with JavaScript off. Every member ID, zone and
// hot key is escaped by html/template, in text and attributes alike: IDs
// from service discovery may be hostile.
//
// A Handler is safe for concurrent use. It never blocks lookups: it reads
// the placer through its ordinary methods, and the balancer through
// Stats. The zero Handler is not usable: build one with [NewHandler].
type Handler struct {
	p   chash.Placer
	cfg config

	mu    sync.Mutex // guards cache
	cache *placement
}

// config is what the options set.
type config struct {
	title    string
	balancer *balance.Balancer
	hot      *balance.HotKeys
}

// Option configures NewHandler. A nil Option is ignored.
type Option func(*config)

// WithTitle sets the page's title; the default is "placement".
func WithTitle(title string) Option { return func(c *config) { c.title = title } }

// WithBalancer adds a balancer's figures to the page: its totals, each
// member's requests in flight against its load bound, the requests served
// away from their first choice, spilled and spread, and the balancer's
// hot keys. The balancer's members are matched to the placer's by ID; a
// nil balancer is ignored.
func WithBalancer(b *balance.Balancer) Option { return func(c *config) { c.balancer = b } }

// WithHotKeys shows the hot keys of a detector that no balancer reports
// (it takes the place of the balancer's); nil is ignored.
func WithHotKeys(h *balance.HotKeys) Option { return func(c *config) { c.hot = h } }

// NewHandler returns the status page of p: a chash.Holder, a [Tracker],
// a member.Watcher, an etcd watcher or any other placer. A placer with a
// Load() chash.Placer method is read through it once per request, and its
// Revision() int64, LastChange() time.Time, View() *member.View (its
// Version and Built time), Builds() int64 and BuildTime() time.Duration
// methods, where it has them, are shown. It fails with chash.ErrNilPlacer
// for a nil p, typed or not (an empty Holder is fine).
func NewHandler(p chash.Placer, opts ...Option) (*Handler, error) {
	if isNil(p) {
		return nil, fmt.Errorf("%w: status.NewHandler", chash.ErrNilPlacer)
	}
	h := &Handler{p: p, cfg: config{title: "placement"}}
	for _, o := range opts {
		if o != nil {
			o(&h.cfg)
		}
	}
	return h, nil
}

// securityPolicy allows the page nothing but its own inline styles and
// inline SVG: no script, no fetch, no frame, no form.
const securityPolicy = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// ServeHTTP answers the page or its JSON.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "status: method not allowed", http.StatusMethodNotAllowed)
		return
	}
	s, pl := h.snapshot()
	var body bytes.Buffer
	hdr := w.Header()
	hdr.Set("Cache-Control", "no-store")
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Add("Vary", "Accept")
	if wantsJSON(r) {
		if err := json.NewEncoder(&body).Encode(s); err != nil {
			http.Error(w, "status: "+err.Error(), http.StatusInternalServerError)
			return
		}
		hdr.Set("Content-Type", "application/json")
	} else {
		if err := renderPage(&body, &s, pl); err != nil {
			http.Error(w, "status: "+err.Error(), http.StatusInternalServerError)
			return
		}
		hdr.Set("Content-Type", "text/html; charset=utf-8")
		hdr.Set("Content-Security-Policy", securityPolicy)
	}
	hdr.Set("Content-Length", strconv.Itoa(body.Len()))
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(body.Bytes())
}

// wantsJSON reports whether r asks for JSON: format=json in the query, or
// an Accept header whose most preferred of application/json and text/html
// (by q, then by order) is JSON.
func wantsJSON(r *http.Request) bool {
	if f := r.URL.Query().Get("format"); f != "" {
		return strings.EqualFold(f, "json")
	}
	jsonQ, htmlQ := -1.0, -1.0
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		q := 1.0
		if v, ok := params["q"]; ok {
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				q = f
			}
		}
		switch mt {
		case "application/json":
			if q > jsonQ {
				jsonQ = q
			}
		case "text/html":
			if q > htmlQ {
				htmlQ = q
			}
		}
	}
	return jsonQ > 0 && jsonQ > htmlQ
}
