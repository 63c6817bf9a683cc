package browsertest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/keyplace/chash/adapters/browsertest"
	"github.com/keyplace/chash/status"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hostile are member IDs and hot keys that would be markup, or fetch from
// elsewhere, were they not escaped.
var hostile = []string{
	`<script>alert(1)</script>`,
	`"><img src=http://203.0.113.9/x.png onerror=alert(2)>`,
	`</svg><script>alert(3)</script>`,
	`<link rel=stylesheet href=http://203.0.113.9/x.css>`,
	`'quoted' & "double"`,
	`</title></head><body onload=alert(4)>`,
}

var (
	browserOnce sync.Once
	sharedB     *browsertest.Browser
	browserErr  error
)

// browser returns the shared headless Chromium, or skips the test where
// there is none (and fails it under CI, where .ci/services.sh installs it).
func browser(t *testing.T) *browsertest.Browser {
	t.Helper()
	browserOnce.Do(func() { sharedB, browserErr = browsertest.Start(context.Background(), 1400, 1000) })
	if browserErr != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI needs Chromium: %v", browserErr)
		}
		t.Skipf("no browser: %v", browserErr)
	}
	return sharedB
}

func TestMain(m *testing.M) {
	code := m.Run()
	if sharedB != nil {
		sharedB.Close()
	}
	os.Exit(code)
}

var (
	artifactsOnce sync.Once
	artifacts     string
)

// artifact returns the path of a test artefact: under $CHASH_ARTIFACTS, or
// a temporary directory kept after the test (its name is logged).
func artifact(t *testing.T, name string) string {
	t.Helper()
	artifactsOnce.Do(func() {
		artifacts = os.Getenv("CHASH_ARTIFACTS")
		if artifacts == "" {
			artifacts, _ = os.MkdirTemp("", "chash-browser-artifacts-")
		}
		_ = os.MkdirAll(artifacts, 0o755)
	})
	p := filepath.Join(artifacts, name)
	t.Logf("artefact: %s", p)
	return p
}

// checkClean asserts that the tab fetched nothing but from its own server
// and logged no error.
func checkClean(t *testing.T, tab *browsertest.Tab, origin string) {
	t.Helper()
	tab.Settle()
	assert.Empty(t, tab.Blocked(), "requests to anywhere but the page's server")
	assert.Empty(t, tab.Problems(), "console errors, exceptions, failed loads")
	for _, u := range tab.Requests() {
		assert.True(t, strings.HasPrefix(u, origin), "request to %s", u)
	}
}

// statusDOM is what the rendered status page shows, read from its DOM.
type statusDOM struct {
	Title    string            `json:"title"`
	Scripts  int               `json:"scripts"`
	Images   int               `json:"images"`
	Links    int               `json:"links"`
	Summary  map[string]string `json:"summary"`
	Rows     []domRow          `json:"rows"`
	HotKeys  []string          `json:"hot"`
	BodyText string            `json:"text"`
}

type domRow struct {
	ID     string             `json:"id"`
	Text   string             `json:"text"`
	Cells  map[string]float64 `json:"cells"`
	BarW   float64            `json:"bar"`
	Height float64            `json:"height"`
}

const readStatus = `(() => ({
	title: document.getElementById('title').textContent,
	scripts: document.scripts.length,
	images: document.images.length,
	links: document.querySelectorAll('link').length,
	summary: Object.assign(Object.fromEntries(Array.from(document.querySelectorAll('dd[id]')).map(d => [d.id, d.dataset.v === undefined ? d.textContent : d.dataset.v])),
		{fingerprint: document.getElementById('fingerprint').textContent}),
	rows: Array.from(document.querySelectorAll('tr.member')).map(tr => ({
		id: tr.dataset.id,
		text: tr.querySelector('td.id').textContent,
		cells: Object.fromEntries(Array.from(tr.querySelectorAll('[data-k]')).map(td => [td.dataset.k, Number(td.dataset.v)])),
		bar: tr.querySelector('rect.share').getBoundingClientRect().width,
		height: tr.getBoundingClientRect().height,
	})),
	hot: Array.from(document.querySelectorAll('tr.hot')).map(tr => tr.querySelector('td.key').textContent),
	text: document.body.innerText,
}))()`

// The status page of a running service, as Chromium renders it: every
// member there and visible, hostile IDs shown as text, the numbers those
// of the JSON, no script, no error, nothing fetched from elsewhere.
func TestStatusPageInBrowser(t *testing.T) {
	b := browser(t)
	nodes := browsertest.Nodes(24)
	for i, id := range hostile {
		nodes[i].ID = id
	}
	demo, err := browsertest.NewDemo("cache fleet <eu>", nodes, []string{"user:42:cart", hostile[1]}, 300)
	require.NoError(t, err)
	srv := httptest.NewServer(demo.Handler())
	defer srv.Close()

	tab, err := b.Open(srv.URL + "/status")
	require.NoError(t, err)
	defer tab.Close()
	raw, err := tab.Eval(readStatus)
	require.NoError(t, err)
	var dom statusDOM
	require.NoError(t, json.Unmarshal(raw, &dom))

	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/status", nil)
	req.Header.Set("Accept", "application/json")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	var js status.Snapshot
	require.NoError(t, json.NewDecoder(res.Body).Decode(&js))

	assert.Equal(t, "cache fleet <eu>", dom.Title)
	assert.Zero(t, dom.Scripts, "no script element")
	assert.Zero(t, dom.Images, "no image element")
	assert.Zero(t, dom.Links, "no link element")
	assert.Equal(t, strconv.FormatInt(js.Revision, 10), dom.Summary["revision"])
	assert.Equal(t, strconv.Itoa(js.Members), dom.Summary["members"])
	assert.Equal(t, js.Fingerprint, dom.Summary["fingerprint"])
	assert.Equal(t, js.Algorithm, dom.Summary["algorithm"])
	require.NotNil(t, js.Balancer)
	assert.Equal(t, strconv.FormatInt(js.Balancer.InFlight, 10), dom.Summary["in-flight"])

	require.Len(t, dom.Rows, len(js.Nodes), "every member has a row")
	for i, n := range js.Nodes {
		r := dom.Rows[i]
		assert.Equal(t, n.ID, r.ID)
		assert.Equal(t, n.ID, r.Text, "the ID is shown as text")
		assert.Contains(t, dom.BodyText, n.ID)
		assert.Positive(t, r.Height, "%s: row rendered", n.ID)
		want := map[string]float64{"weight": n.Weight, "share": n.Share, "fair": n.Fair, "load": n.Load, "in_flight": float64(n.InFlight),
			"bound": n.Bound, "away": float64(n.Away), "spilled": float64(n.Spilled), "spread": float64(n.Spread)}
		assert.Equal(t, want, r.Cells, n.ID)
		assert.Positive(t, r.BarW, "%s: a share bar", n.ID)
	}
	var keys []string
	for _, k := range js.HotKeys {
		keys = append(keys, k.Key)
	}
	assert.Equal(t, keys, dom.HotKeys)
	assert.Contains(t, dom.HotKeys, hostile[1], "a hostile hot key, as text")
	checkClean(t, tab, srv.URL)
	require.NoError(t, tab.Screenshot(artifact(t, "status.png")))
}

// reportDOM is the figures of a rendered report.
type reportDOM struct {
	Scripts int         `json:"scripts"`
	Figures []domFigure `json:"figures"`
	Rows    []string    `json:"rows"`
	Charts  int         `json:"charts"`
	Text    string      `json:"text"`
}

type domFigure struct {
	Path string  `json:"p"`
	V    float64 `json:"v"`
	Text string  `json:"text"`
}

const readReport = `(() => ({
	scripts: document.scripts.length,
	figures: Array.from(document.querySelectorAll('[data-p]')).map(e => ({p: e.dataset.p, v: Number(e.dataset.v), text: e.textContent})),
	rows: Array.from(document.querySelectorAll('tr[data-id]')).map(tr => tr.dataset.id),
	charts: Array.from(document.querySelectorAll('svg.chart polyline')).filter(p => p.getBoundingClientRect().width > 0).length,
	text: document.body.innerText,
}))()`

// lookup returns the number at a dotted path of a decoded JSON document
// ("length" of an array is its length).
func lookup(t *testing.T, doc any, path string) float64 {
	t.Helper()
	v := doc
	for _, k := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			v = x[k]
		case []any:
			if k == "length" {
				return float64(len(x))
			}
			i, err := strconv.Atoi(k)
			require.NoError(t, err, path)
			require.Less(t, i, len(x), path)
			v = x[i]
		}
	}
	f, ok := v.(float64)
	require.True(t, ok, "%s: %v", path, v)
	return f
}

var (
	chashOnce sync.Once
	chashBin  string
	chashErr  error
)

// chashCommand builds the workspace's chash command once.
func chashCommand(t *testing.T) string {
	t.Helper()
	chashOnce.Do(func() {
		dir, err := os.MkdirTemp("", "chash-bin-")
		if err != nil {
			chashErr = err
			return
		}
		chashBin, chashErr = browsertest.BuildChash(dir)
	})
	require.NoError(t, chashErr)
	return chashBin
}

func runChash(t *testing.T, args ...string) []byte {
	t.Helper()
	out, err := exec.Command(chashCommand(t), args...).Output()
	require.NoError(t, err, "chash %v", args)
	return out
}

// Reports of the chash command, as Chromium renders them: each figure
// shown equals the report's -json (which embeds the command's own), every
// node has its row, the charts draw, and nothing else is fetched or
// logged.
func TestReportInBrowser(t *testing.T) {
	b := browser(t)
	dir := t.TempDir()
	var old, grown strings.Builder
	for i, n := range browsertest.Nodes(12) {
		id := n.ID
		if i < 3 {
			id = strings.NewReplacer(" ", "", "=", "").Replace(hostile[i]) // membership files split on spaces
		}
		fmt.Fprintf(&old, "%s %g %s\n", id, n.Weight, n.Zone)
		fmt.Fprintf(&grown, "%s %g %s\n", id, n.Weight, n.Zone)
	}
	fmt.Fprintf(&grown, "cache-12 2 eu-1\ncache-13 1 eu-2\n")
	files := map[string]string{"old.txt": old.String(), "new.txt": grown.String()}
	for name, text := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
	}
	oldMap := runChash(t, "shardmap", "build", "-partitions", "128", "-replicas", "3", filepath.Join(dir, "old.txt"))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "old.json"), oldMap, 0o644))
	cmd := exec.Command(chashCommand(t), "shardmap", "rebalance", filepath.Join(dir, "old.json"), filepath.Join(dir, "new.txt"))
	newMap, err := cmd.Output()
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "new.json"), newMap, 0o644))

	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	defer srv.Close()
	for _, c := range []struct {
		kind   string
		args   []string
		rows   int
		charts int
	}{
		{"diff", []string{"-algo", "maglev", filepath.Join(dir, "old.txt"), filepath.Join(dir, "new.txt")}, 14 + 12, 0},
		{"plan", []string{"-algo", "ring", "-from", "10", "-to", "20", "-step", "2", "-rate", "200k", "-hit", "0.94", "-origin", "25k"}, 0, 4},
		{"shardmap", []string{"-size", "2G", filepath.Join(dir, "old.json"), filepath.Join(dir, "new.json")}, 14, 0},
	} {
		t.Run(c.kind, func(t *testing.T) {
			page := filepath.Join(dir, c.kind+".html")
			runChash(t, append([]string{"report", c.kind, "-o", page}, c.args...)...)
			var doc any
			require.NoError(t, json.Unmarshal(runChash(t, append([]string{"report", c.kind, "-json"}, c.args...)...), &doc))

			start := time.Now()
			tab, err := b.Open(srv.URL + "/" + c.kind + ".html")
			require.NoError(t, err)
			defer tab.Close()
			raw, err := tab.Eval(readReport)
			require.NoError(t, err)
			t.Logf("%s: loaded and read in %v", c.kind, time.Since(start).Round(time.Millisecond))
			var dom reportDOM
			require.NoError(t, json.Unmarshal(raw, &dom))
			assert.Zero(t, dom.Scripts)
			assert.NotEmpty(t, dom.Figures)
			for _, f := range dom.Figures {
				assert.Equal(t, lookup(t, doc, f.Path), f.V, f.Path)
				assert.NotEmpty(t, strings.TrimSpace(f.Text), "%s is shown", f.Path)
			}
			assert.Len(t, dom.Rows, c.rows, "node rows")
			assert.Equal(t, c.charts, dom.Charts, "chart lines drawn")
			if c.kind == "diff" {
				for _, h := range hostile[:3] {
					id := strings.NewReplacer(" ", "", "=", "").Replace(h)
					assert.Contains(t, dom.Rows, id)
					assert.Contains(t, dom.Text, id, "shown as text")
				}
			}
			checkClean(t, tab, srv.URL)
			require.NoError(t, tab.Screenshot(artifact(t, "report-"+c.kind+".png")))
		})
	}
}

// The interception itself: a page that asks for anything but its own
// server has the request refused before it is sent, and reported. (The
// pages under test never do; this shows the check would see it. The
// request here goes to another loopback port, so that even a broken
// interception would not leave the machine.)
func TestBlocksForeignRequests(t *testing.T) {
	b := browser(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!DOCTYPE html><html><head><title>x</title></head><body><img src="http://127.0.0.1:9/pixel.png"></body></html>`)
	}))
	defer srv.Close()
	tab, err := b.Open(srv.URL)
	require.NoError(t, err)
	defer tab.Close()
	tab.Settle()
	assert.Equal(t, []string{"http://127.0.0.1:9/pixel.png"}, tab.Blocked())
	assert.NotEmpty(t, tab.Problems(), "the refused load is logged")
	_, err = b.Open("http://203.0.113.9/")
	assert.Error(t, err, "only loopback pages are opened")
}
