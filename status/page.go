package status

import (
	"bytes"
	"html/template"
	"io"
	"math"
	"strconv"
	"time"
)

// barWidth is the width, in pixels, of a bar chart's longest bar.
const barWidth = 160

// The member rows are rendered in two parts, so that a page view at 1,000
// members stays cheap: the cells that change only with the placement (ID,
// zone, weight, shares and the share bar, where every string is) by
// html/template once per fingerprint, and the balancer's cells, numbers
// only, on each view.

// staticRow is what the row template renders of a member.
type staticRow struct {
	N             *NodeStatus
	ShareW, FairW float64 // the share bar and the fair-share mark, in pixels
	Class         string  // "over", "under" or "" for the share bar's colour
}

// pageView is what the page template renders.
type pageView struct {
	*Snapshot
	Rows []template.HTML
	Age  string
}

// staticRows renders, once per placement, the start of each member's row.
func (pl *placement) staticRows() []template.HTML {
	pl.rowsOnce.Do(func() {
		var top float64
		for _, n := range pl.nodes {
			top = max(top, n.Share, n.Fair)
		}
		pl.rows = make([]template.HTML, len(pl.nodes))
		var buf bytes.Buffer
		for i := range pl.nodes {
			n := &pl.nodes[i]
			r := staticRow{N: n, ShareW: scale(n.Share, top), FairW: scale(n.Fair, top)}
			switch {
			case n.Load > 1.1:
				r.Class = "over"
			case n.Load < 0.9:
				r.Class = "under"
			}
			buf.Reset()
			if err := rowTemplate.Execute(&buf, r); err != nil {
				buf.Reset() // cannot happen: the template's data is fixed
			}
			pl.rows[i] = template.HTML(buf.String()) //nolint:gosec // html/template's output
		}
	})
	return pl.rows
}

// renderPage writes s, which shows pl, as HTML.
func renderPage(w io.Writer, s *Snapshot, pl *placement) error {
	static := pl.staticRows()
	v := pageView{Snapshot: s, Rows: make([]template.HTML, len(s.Nodes))}
	v.Age = (time.Duration(s.AgeSeconds * float64(time.Second))).Round(time.Second).String()
	var loadTop float64
	for _, n := range s.Nodes {
		loadTop = max(loadTop, float64(n.InFlight), n.Bound)
	}
	var b []byte
	for i := range s.Nodes {
		b = append(b[:0], static[i]...)
		if s.Balancer != nil {
			b = balancerCells(b, &s.Nodes[i], loadTop)
		}
		b = append(b, "</tr>"...)
		v.Rows[i] = template.HTML(b) //nolint:gosec // numbers and fixed markup only
	}
	return page.Execute(w, v)
}

// balancerCells appends a member's balancer cells: numbers and fixed
// markup only, so nothing in them needs escaping.
func balancerCells(b []byte, n *NodeStatus, top float64) []byte {
	cell := func(b []byte, k, v, text string) []byte {
		b = append(b, `<td data-k="`...)
		b = append(b, k...)
		b = append(b, `" data-v="`...)
		b = append(b, v...)
		b = append(b, `">`...)
		b = append(b, text...)
		return append(b, "</td>"...)
	}
	u := func(x uint64) string { return strconv.FormatUint(x, 10) }
	inFlight := strconv.FormatInt(n.InFlight, 10)
	b = cell(b, "in_flight", inFlight, inFlight)
	b = cell(b, "bound", strconv.FormatFloat(n.Bound, 'g', -1, 64), strconv.FormatFloat(n.Bound, 'g', 6, 64))
	b = append(b, `<td class="c"><svg><rect class="load" width="`...)
	b = strconv.AppendFloat(b, scale(float64(n.InFlight), top), 'f', -1, 64)
	b = append(b, `"/><path class="bound" d="M`...)
	b = strconv.AppendFloat(b, scale(n.Bound, top), 'f', -1, 64)
	b = append(b, ` 0v14"/></svg></td>`...)
	b = cell(b, "away", u(n.Away), u(n.Away))
	b = cell(b, "spilled", u(n.Spilled), u(n.Spilled))
	return cell(b, "spread", u(n.Spread), u(n.Spread))
}

// scale returns x as a bar of barWidth pixels for top, to 0.1 pixel.
func scale(x, top float64) float64 {
	if !(top > 0) || !(x > 0) {
		return 0
	}
	return math.Round(10*barWidth*min(x/top, 1)) / 10
}

var funcs = template.FuncMap{
	"pct": func(x float64) string { return strconv.FormatFloat(100*x, 'f', 2, 64) + "%" },
	"num": func(x float64) string { return strconv.FormatFloat(x, 'g', 6, 64) },
	"fix": func(x float64) string { return strconv.FormatFloat(x, 'f', 3, 64) },
	"secs": func(x float64) string {
		return (time.Duration(x * float64(time.Second))).Round(time.Microsecond).String()
	},
	"time": func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"nano": func(t time.Time) string { return t.Format(time.RFC3339Nano) },
	"zone": func(z string) string {
		if z == "" {
			return "(none)"
		}
		return z
	},
}

var (
	page        = template.Must(template.New("status").Funcs(funcs).Parse(pageTemplate))
	rowTemplate = template.Must(template.New("row").Funcs(funcs).Parse(rowHTML))
)

// rowHTML is the start of a member's row, up to the balancer's cells.
const rowHTML = `<tr class="member" data-id="{{.N.ID}}"><td class="id">{{.N.ID}}</td><td class="zone">{{zone .N.Zone}}</td>` +
	`<td data-k="weight" data-v="{{.N.Weight}}">{{num .N.Weight}}</td>` +
	`<td data-k="share" data-v="{{.N.Share}}">{{pct .N.Share}}</td>` +
	`<td data-k="fair" data-v="{{.N.Fair}}">{{pct .N.Fair}}</td>` +
	`<td data-k="load" data-v="{{.N.Load}}">{{fix .N.Load}}</td>` +
	`<td class="c"><svg><rect class="share {{.Class}}" width="{{.ShareW}}"/><path class="fair" d="M{{.FairW}} 0v14"/></svg></td>`

const pageTemplate = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}: {{if .Algorithm}}{{.Algorithm}}, {{.Members}} members{{else}}empty{{end}}</title>
<style>
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:1.5em;color:#1d2330;background:#fff}
h1{font-size:1.4em;margin:0 0 .6em}h2{font-size:1.1em;margin:1.6em 0 .5em}
dl.summary{display:grid;grid-template-columns:max-content auto max-content auto;gap:.2em 1.2em;margin:0}
dl.summary dt{color:#5b6578}dl.summary dd{margin:0;font-variant-numeric:tabular-nums}
code{font:12px ui-monospace,SFMono-Regular,Menlo,monospace;background:#f1f3f7;padding:1px 4px;border-radius:3px}
table{border-collapse:collapse;font-variant-numeric:tabular-nums}
th,td{padding:2px 10px;text-align:right;white-space:nowrap}th{color:#5b6578;font-weight:600;border-bottom:1px solid #d5d9e2}
td.id,th.id,td.zone,th.zone,td.key,th.key{text-align:left}td.id,td.key{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:12px;max-width:28em;overflow:hidden;text-overflow:ellipsis}
tbody tr:nth-child(even){background:#f7f8fa}
td.c{padding:0 10px}td.c svg{display:block;width:160px;height:14px}td.c rect{y:2px;height:10px}
rect.share{fill:#4c78a8}rect.over{fill:#e45756}rect.under{fill:#9ecae9}rect.load{fill:#54a24b}
path.fair{stroke:#1d2330;stroke-width:2}path.bound{stroke:#b279a2;stroke-width:2;stroke-dasharray:3 2}
.legend{color:#5b6578;font-size:12px;margin:.3em 0}.legend i{display:inline-block;width:10px;height:10px;margin:0 4px 0 12px;vertical-align:-1px}
.error{color:#b42318}footer{margin-top:2em;color:#5b6578;font-size:12px}
</style>
</head>
<body>
<h1 id="title">{{.Title}}</h1>
<dl class="summary">
<dt>algorithm</dt><dd id="algorithm">{{if .Algorithm}}{{.Algorithm}}{{else}}none{{end}}</dd>
<dt>fingerprint</dt><dd><code id="fingerprint">{{.Fingerprint}}</code></dd>
<dt>revision</dt><dd id="revision" data-v="{{.Revision}}">{{if .Revision}}{{.Revision}}{{else}}not tracked{{end}}</dd>
<dt>changed</dt><dd id="changed" data-v="{{nano .Changed}}">{{time .Changed}} ({{.Age}} ago{{if .ChangedObserved}}, first seen by this page{{end}})</dd>
<dt>members</dt><dd id="members" data-v="{{.Members}}">{{.Members}}</dd>
<dt>zones</dt><dd id="zones" data-v="{{len .Zones}}">{{len .Zones}}</dd>
<dt>peak share / fair</dt><dd id="peak" data-v="{{.Peak}}">{{fix .Peak}}</dd>
<dt>CV of share / fair</dt><dd id="cv" data-v="{{.CV}}">{{fix .CV}}</dd>
<dt>shares</dt><dd id="exact">{{if .Exact}}exact{{else if .Samples}}estimated from {{.Samples}} keys{{else}}none{{end}}</dd>
<dt>builds</dt><dd id="builds" data-v="{{.Builds}}">{{if .Builds}}{{.Builds}} in {{secs .BuildSeconds}}{{else}}not tracked{{end}}</dd>
{{- with .Balancer}}
<dt>requests in flight</dt><dd id="in-flight" data-v="{{.InFlight}}">{{.InFlight}}</dd>
<dt>load factor</dt><dd id="load-factor" data-v="{{.LoadFactor}}">{{if .LoadFactor}}{{num .LoadFactor}}{{else}}unbounded{{end}}</dd>
<dt>served away from first choice</dt><dd id="away" data-v="{{.Away}}">{{.Away}}</dd>
<dt>spills</dt><dd id="spills" data-v="{{.Spills}}">{{.Spills}}</dd>
<dt>spread hot reads</dt><dd id="spread" data-v="{{.Spread}}">{{.Spread}}</dd>
<dt>overloads</dt><dd id="overloads" data-v="{{.Overloads}}">{{.Overloads}}</dd>
{{- end}}
</dl>
{{if .Error}}<p class="error" id="error">{{.Error}}</p>{{end}}
{{- if .Zones}}
<h2>Zones</h2>
<table id="zone-table"><thead><tr><th class="zone">zone</th><th>members</th><th>share</th></tr></thead><tbody>
{{- range .Zones}}
<tr data-zone="{{.Zone}}"><td class="zone">{{zone .Zone}}</td><td data-k="members" data-v="{{.Members}}">{{.Members}}</td><td data-k="share" data-v="{{.Share}}">{{pct .Share}}</td></tr>
{{- end}}
</tbody></table>
{{- end}}
<h2>Members</h2>
<p class="legend"><i style="background:#4c78a8"></i>share of keys<i style="background:#1d2330;width:2px"></i>fair share (weight / total)<i style="background:#e45756"></i>over 1.1&times; fair<i style="background:#9ecae9"></i>under 0.9&times; fair{{if .Balancer}}<i style="background:#54a24b"></i>requests in flight<i style="background:#b279a2;width:2px"></i>load bound{{end}}</p>
<table id="member-table">
<thead><tr><th class="id">member</th><th class="zone">zone</th><th>weight</th><th>share</th><th>fair</th><th>share / fair</th><th class="id">share against fair share</th>
{{- if .Balancer}}<th>in flight</th><th>bound</th><th class="id">load</th><th>away</th><th>spilled</th><th>spread</th>{{end}}</tr></thead>
<tbody>
{{- range .Rows}}
{{.}}
{{- end}}
</tbody></table>
<h2>Hot keys</h2>
{{- if .HotKeys}}
<table id="hot-table"><thead><tr><th class="key">key</th><th>share of recent requests</th></tr></thead><tbody>
{{- range .HotKeys}}
<tr class="hot" data-key="{{.Key}}"><td class="key">{{.Key}}{{if .Truncated}}&hellip;{{end}}</td><td data-k="share" data-v="{{.Share}}">{{pct .Share}}</td></tr>
{{- end}}
</tbody></table>
{{- else}}
<p id="no-hot-keys">none now</p>
{{- end}}
<footer>generated <span id="generated">{{time .Generated}}</span> by chash/status; the same numbers as JSON: request with <code>Accept: application/json</code> or <code>?format=json</code>.</footer>
</body>
</html>
`
