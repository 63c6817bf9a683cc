package status_test

import (
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/balance"
	"github.com/keyplace/chash/chashtest"
	"github.com/keyplace/chash/member"
	"github.com/keyplace/chash/status"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hostileIDs are member IDs and keys that break out of every HTML context
// a naive page would put them in.
var hostileIDs = []string{
	`<script>alert(1)</script>`,
	`"><script>alert(2)</script>`,
	`'onmouseover='alert(3)`,
	`</svg><script>alert(4)</script>`,
	`</title><script>alert(5)</script>`,
	`</td></tr></table><img src=x onerror=alert(6)>`,
	`<!--`,
	`]]><![CDATA[`,
	`&amp;&lt;`,
	`javascript:alert(7)`,
	`{{.Title}}`,
	"line\u2028break",
	`<style>body{display:none}</style>`,
	`<link rel=stylesheet href=http://example.com/x.css>`,
}

// service is a running service's placement: a tracker over a ring, a
// balancer with a hot-key detector, leases held and a hot key.
type service struct {
	tracker *status.Tracker
	lb      *balance.Balancer
	hot     *balance.HotKeys
	leases  []balance.Lease
}

func newService(t testing.TB, nodes []chash.Node, hotKeys ...string) *service {
	t.Helper()
	ring, err := chash.NewRing(nodes)
	require.NoError(t, err)
	hot, err := balance.NewHotKeys(balance.HotKeysConfig{Threshold: 1.0 / 64, Sample: 1, Window: 1 << 12})
	require.NoError(t, err)
	lb, err := balance.New(ring, balance.WithHotKeys(hot, 3))
	require.NoError(t, err)
	s := &service{tracker: status.NewTracker(ring), lb: lb, hot: hot}
	for i := range 2000 * max(len(hotKeys), 1) {
		if len(hotKeys) > 0 {
			hot.ObserveString(hotKeys[i%len(hotKeys)])
		}
		hot.ObserveString(fmt.Sprintf("user:%d", i))
	}
	for i := range 200 {
		key := fmt.Sprintf("user:%d", i)
		if i%2 == 0 && len(hotKeys) > 0 {
			key = hotKeys[i/2%len(hotKeys)]
		}
		l, err := lb.AcquireString(key)
		require.NoError(t, err)
		s.leases = append(s.leases, l)
	}
	return s
}

func (s *service) handler(t testing.TB) *status.Handler {
	t.Helper()
	h, err := status.NewHandler(s.tracker, status.WithBalancer(s.lb), status.WithTitle("cache <fleet>"))
	require.NoError(t, err)
	return h
}

func get(t testing.TB, h http.Handler, accept string) (*http.Response, string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "/status", nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	res := rec.Result()
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res, string(body)
}

func getJSON(t testing.TB, h http.Handler) status.Snapshot {
	t.Helper()
	res, body := get(t, h, "application/json")
	require.Equal(t, "application/json", res.Header.Get("Content-Type"))
	var s status.Snapshot
	require.NoError(t, json.Unmarshal([]byte(body), &s), body)
	return s
}

var (
	rowRE  = regexp.MustCompile(`(?s)<tr class="member" data-id="([^"]*)">(.*?)</tr>`)
	cellRE = regexp.MustCompile(`data-k="([a-z_]+)" data-v="([^"]*)"`)
	hotRE  = regexp.MustCompile(`(?s)<tr class="hot" data-key="([^"]*)">(.*?)</tr>`)
	idRE   = regexp.MustCompile(`id="([a-z-]+)" data-v="([^"]*)"`)
)

// pageNumbers parses the member rows of a page: ID -> field -> value.
func pageNumbers(t testing.TB, page string) (ids []string, rows map[string]map[string]float64) {
	t.Helper()
	rows = map[string]map[string]float64{}
	for _, m := range rowRE.FindAllStringSubmatch(page, -1) {
		id := html.UnescapeString(m[1])
		ids = append(ids, id)
		rows[id] = map[string]float64{}
		for _, c := range cellRE.FindAllStringSubmatch(m[2], -1) {
			v, err := strconv.ParseFloat(html.UnescapeString(c[2]), 64)
			require.NoError(t, err, "%s %s", id, c[1])
			rows[id][c[1]] = v
		}
	}
	return ids, rows
}

// The page's numbers are the JSON's, member by member, exactly.
func TestPageNumbersEqualJSON(t *testing.T) {
	nodes := chashtest.Nodes(12)
	for i := range nodes {
		nodes[i].Zone = fmt.Sprintf("zone-%d", i%3)
		nodes[i].Weight = float64(1 + i%4)
	}
	s := newService(t, nodes, "hot:1", "hot:2")
	h := s.handler(t)
	res, page := get(t, h, "")
	require.Equal(t, http.StatusOK, res.StatusCode)
	assert.Equal(t, "text/html; charset=utf-8", res.Header.Get("Content-Type"))
	assert.Contains(t, res.Header.Get("Content-Security-Policy"), "default-src 'none'")
	js := getJSON(t, h)

	assert.Equal(t, "ring", js.Algorithm)
	assert.Equal(t, chash.Fingerprint(s.tracker), js.Fingerprint)
	assert.EqualValues(t, 1, js.Revision)
	assert.False(t, js.ChangedObserved)
	assert.Equal(t, 12, js.Members)
	assert.Len(t, js.Zones, 3)
	require.NotNil(t, js.Balancer)
	assert.EqualValues(t, 200, js.Balancer.InFlight)
	assert.NotEmpty(t, js.HotKeys)

	ids, rows := pageNumbers(t, page)
	require.Len(t, ids, len(js.Nodes))
	var inFlight int64
	for i, n := range js.Nodes {
		assert.Equal(t, n.ID, ids[i])
		r := rows[n.ID]
		for k, want := range map[string]float64{"weight": n.Weight, "share": n.Share, "fair": n.Fair, "load": n.Load,
			"in_flight": float64(n.InFlight), "bound": n.Bound, "away": float64(n.Away), "spilled": float64(n.Spilled), "spread": float64(n.Spread)} {
			assert.Equal(t, want, r[k], "%s %s", n.ID, k)
		}
		inFlight += n.InFlight
	}
	assert.EqualValues(t, js.Balancer.InFlight, inFlight)
	summary := map[string]string{}
	for _, m := range idRE.FindAllStringSubmatch(page, -1) {
		summary[m[1]] = m[2]
	}
	assert.Equal(t, strconv.FormatInt(js.Revision, 10), summary["revision"])
	assert.Equal(t, strconv.Itoa(js.Members), summary["members"])
	assert.Equal(t, strconv.FormatFloat(js.Peak, 'g', -1, 64), summary["peak"])
	assert.Equal(t, strconv.FormatInt(js.Balancer.InFlight, 10), summary["in-flight"])
	assert.Equal(t, js.Changed.Format(time.RFC3339Nano), summary["changed"])
	hot := hotRE.FindAllStringSubmatch(page, -1)
	require.Len(t, hot, len(js.HotKeys))
	for i, m := range hot {
		assert.Equal(t, js.HotKeys[i].Key, html.UnescapeString(m[1]))
	}
}

// Hostile member IDs, zones, titles and hot keys are escaped everywhere:
// the page holds no markup but its own, and every ID reads back intact.
func TestPageEscapesHostileIDs(t *testing.T) {
	nodes := make([]chash.Node, len(hostileIDs))
	for i, id := range hostileIDs {
		nodes[i] = chash.Node{ID: id, Zone: hostileIDs[len(hostileIDs)-1-i]}
	}
	s := newService(t, nodes, hostileIDs...)
	h, err := status.NewHandler(s.tracker, status.WithBalancer(s.lb), status.WithTitle(`</title><script>alert("title")</script>`))
	require.NoError(t, err)
	_, page := get(t, h, "text/html")
	lower := strings.ToLower(page)
	for _, bad := range []string{"<script", "<img", "<!--", "<![cdata[", "<link"} {
		assert.False(t, strings.Contains(lower, bad), "the page has %q", bad)
	}
	assert.Equal(t, 1, strings.Count(lower, "<style"), "only the page's own style element")
	assert.Equal(t, strings.Count(lower, "<svg"), strings.Count(lower, "</svg>"), "every </svg> is the page's own")
	assert.Equal(t, 1, strings.Count(lower, "</title>"))
	ids, _ := pageNumbers(t, page)
	assert.ElementsMatch(t, hostileIDs, ids)
	var keys []string
	for _, m := range hotRE.FindAllStringSubmatch(page, -1) {
		keys = append(keys, html.UnescapeString(m[1]))
	}
	assert.NotEmpty(t, keys)
	assert.Subset(t, hostileIDs, keys)
	js := getJSON(t, h)
	assert.Len(t, js.Nodes, len(hostileIDs))
}

func TestNewHandlerRefusesNil(t *testing.T) {
	_, err := status.NewHandler(nil)
	assert.ErrorIs(t, err, chash.ErrNilPlacer)
	var ring *chash.Ring
	_, err = status.NewHandler(ring)
	assert.ErrorIs(t, err, chash.ErrNilPlacer)
}

// An empty Holder, a zero Tracker and a Holder that changes: the page
// says what there is, and sees each change.
func TestPageFollowsChanges(t *testing.T) {
	var holder chash.Holder
	h, err := status.NewHandler(&holder)
	require.NoError(t, err)
	res, page := get(t, h, "")
	assert.Equal(t, http.StatusOK, res.StatusCode)
	assert.Contains(t, page, "no members")
	js := getJSON(t, h)
	assert.Equal(t, chash.FingerprintNone, js.Fingerprint)
	assert.Empty(t, js.Nodes)
	assert.Zero(t, js.Revision)

	ring, _ := chash.NewRing(chashtest.Nodes(4))
	holder.Store(ring)
	js = getJSON(t, h)
	assert.Equal(t, 4, js.Members)
	assert.True(t, js.ChangedObserved, "a Holder has no LastChange: the page says when it saw the change")
	assert.Equal(t, chash.Fingerprint(ring), js.Fingerprint)
	grown, _ := ring.Add(chash.Node{ID: "node-4"})
	holder.Store(grown)
	js = getJSON(t, h)
	assert.Equal(t, 5, js.Members)
	var sum float64
	for _, n := range js.Nodes {
		sum += n.Share
	}
	assert.InDelta(t, 1, sum, 1e-9)
}

func TestContentNegotiation(t *testing.T) {
	ring, _ := chash.NewRing(chashtest.Nodes(3))
	h, _ := status.NewHandler(ring)
	for _, c := range []struct {
		accept, query string
		json          bool
	}{
		{"", "", false},
		{"application/json", "", true},
		{"text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", "", false},
		{"application/json;q=0.5, text/html", "", false},
		{"text/html;q=0.5, application/json", "", true},
		{"application/json;q=0", "", false},
		{"*/*", "", false},
		{"garbage;;;=", "", false},
		{"", "format=json", true},
		{"application/json", "format=html", false},
	} {
		req := httptest.NewRequest(http.MethodGet, "/?"+c.query, nil)
		req.Header.Set("Accept", c.accept)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		ct := rec.Result().Header.Get("Content-Type")
		assert.Equal(t, c.json, ct == "application/json", "Accept %q, query %q: %s", c.accept, c.query, ct)
	}
	req := httptest.NewRequest(http.MethodPost, "/", nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	assert.Equal(t, http.StatusMethodNotAllowed, rec.Code)
	req = httptest.NewRequest(http.MethodHead, "/", nil)
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	assert.Equal(t, http.StatusOK, rec.Code)
	assert.Zero(t, rec.Body.Len())
	assert.NotEmpty(t, rec.Result().Header.Get("Content-Length"))
}

// Weights at the edges of float64 give finite numbers, which JSON can
// encode.
func TestExtremeWeights(t *testing.T) {
	nodes := []chash.Node{{ID: "huge", Weight: 0x1p100}, {ID: "big", Weight: 0x1p100}, {ID: "tiny", Weight: 0x1p-100}}
	p, err := chash.NewRendezvous(nodes)
	require.NoError(t, err)
	h, _ := status.NewHandler(p)
	js := getJSON(t, h)
	assert.Len(t, js.Nodes, 3)
	_, page := get(t, h, "")
	assert.True(t, strings.Contains(page, `data-id="tiny"`))
}

// BenchmarkPage serves the page and its JSON for 1,000 members with a
// balancer: the shares are cached, so a view costs O(members).
func BenchmarkPage(b *testing.B) {
	s := newService(b, chashtest.Nodes(1000), "hot:1")
	h := s.handler(b)
	for _, c := range []struct{ name, accept string }{{"html", ""}, {"json", "application/json"}} {
		b.Run(c.name+"-1000", func(b *testing.B) {
			req := httptest.NewRequest(http.MethodGet, "/", nil)
			req.Header.Set("Accept", c.accept)
			b.ReportAllocs()
			var size int
			for range b.N {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				size = rec.Body.Len()
			}
			b.ReportMetric(float64(size), "bytes/page")
		})
	}
}

// FuzzPageEscapes renders pages whose member IDs, zone and title are
// arbitrary: whatever they hold, the page has exactly the markup of a
// page of benign names (the same number of <, >, " and ' characters),
// so no input can open or close an element or an attribute.
func FuzzPageEscapes(f *testing.F) {
	for i, id := range hostileIDs {
		f.Add(id, hostileIDs[len(hostileIDs)-1-i])
	}
	f.Add("a\x00b", "\xff")
	markup := func(t *testing.T, id, zone string) map[rune]int {
		ring, err := chash.NewRing([]chash.Node{{ID: id, Zone: zone}, {ID: id + "-2", Zone: zone}})
		if err != nil {
			return nil
		}
		h, err := status.NewHandler(ring, status.WithTitle(id))
		require.NoError(t, err)
		_, page := get(t, h, "")
		counts := map[rune]int{}
		for _, r := range page {
			switch r {
			case '<', '>', '"', '\'':
				counts[r]++
			}
		}
		return counts
	}
	f.Fuzz(func(t *testing.T, id, zone string) {
		got := markup(t, id, zone)
		if got == nil {
			return // IDs the ring refuses
		}
		assert.Equal(t, markup(t, "x", "z"), got, "id %q zone %q", id, zone)
	})
}

// viewed is a placer with a member view, as a member.Watcher and an etcd
// watcher are.
type viewed struct {
	chash.Placer
	view *member.View
}

func (v viewed) View() *member.View { return v.view }

// A member watcher's view gives the page its revision (the view's
// Version) and the time of its last change (Built).
func TestPageOfMemberView(t *testing.T) {
	ring, _ := chash.NewRing(chashtest.Nodes(3))
	built := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	h, err := status.NewHandler(viewed{ring, &member.View{Version: 42, Built: built, Placer: ring}})
	require.NoError(t, err)
	js := getJSON(t, h)
	assert.EqualValues(t, 42, js.Revision)
	assert.True(t, built.Equal(js.Changed))
	assert.False(t, js.ChangedObserved)
	assert.Equal(t, 3, js.Members)
}
