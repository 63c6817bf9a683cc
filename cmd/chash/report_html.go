package main

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"strconv"
	"strings"
)

// The HTML of chash report: one page of sections, each a note, an
// optional chart and a table. Every figure is a cell that carries the
// path of its value in the report's -json (data-p) and the value itself
// (data-v), so that a test, or a reader's tool, can check the page against
// the command's output. Strings (node IDs, zones, algorithm names) go
// through html/template; the charts are built from numbers only.

// cell is one table cell: text, or bars; with a path, a figure.
type cell struct {
	Text  string
	Path  string // the value's path in the report's JSON, such as "diff.shares.3.old"
	V     string // the value, exactly as JSON has it
	Class string
	Bars  []bar
}

// bar is one horizontal bar of a cell's chart, in pixels.
type bar struct {
	Y, W, H float64
	Class   string
}

type row struct {
	ID    string // data-id, for rows that are a node
	Cells []cell
}

type section struct {
	ID, Title, Note string
	Chart           template.HTML // inline SVG of numbers only
	Legend          []legend
	Head            []string
	Left            []bool // columns of text, aligned left
	Rows            []row
	Details         bool // the table folds away (long lists)
}

type legend struct{ Class, Text string }

type reportView struct {
	Title, Subtitle string
	Summary         []row
	Sections        []section
}

// figure returns a cell showing text for the value v at path.
func figure(path string, v float64, text string) cell {
	return cell{Text: text, Path: path, V: strconv.FormatFloat(v, 'g', -1, 64)}
}

func pctCell(path string, v float64) cell { return figure(path, v, percent(v)) }
func intCell(path string, v int64) cell   { return figure(path, float64(v), commas(v)) }
func loadCell(path string, v float64) cell {
	return figure(path, v, commas(int64(v+0.5))+"/s")
}
func textCell(s string) cell  { return cell{Text: s, Class: "t"} }
func labelCell(s string) cell { return cell{Text: s, Class: "k"} }

// barsCell draws values as bars of up to barMax pixels for top, one under
// the other.
func barsCell(top float64, vs []float64, classes ...string) cell {
	c := cell{Class: "c"}
	h := 14.0 / float64(len(vs))
	for i, v := range vs {
		w := 0.0
		if top > 0 && v > 0 {
			w = math.Round(10*barMax*min(v/top, 1)) / 10
		}
		c.Bars = append(c.Bars, bar{Y: float64(i) * h, W: w, H: h - 1, Class: classes[i]})
	}
	return c
}

const barMax = 220

// writeReportHTML renders rep.
func writeReportHTML(w io.Writer, rep *report, limit int) error {
	var v reportView
	switch {
	case rep.Diff != nil:
		v = diffView(rep.Diff, limit)
	case rep.Plan != nil:
		v = planView(rep.Plan, rep.Fallback)
	case rep.ShardMap != nil:
		v = shardMapView(rep.ShardMap, limit)
	default:
		return fmt.Errorf("empty report")
	}
	for i := range v.Sections {
		s := &v.Sections[i]
		s.Left = make([]bool, len(s.Head))
		if len(s.Rows) > 0 {
			for j, c := range s.Rows[0].Cells {
				if j < len(s.Left) {
					s.Left[j] = c.Class == "t"
				}
			}
		}
	}
	return reportPage.Execute(w, v)
}

func diffView(d *diffReport, limit int) reportView {
	v := reportView{Title: "chash diff: " + d.Algorithm,
		Subtitle: fmt.Sprintf("%d -> %d nodes; fractions %s", d.OldNodes, d.NewNodes, methodText(d))}
	v.Summary = []row{
		{Cells: []cell{labelCell("keys that change node"), pctCell("diff.moved", d.Moved)}},
		{Cells: []cell{labelCell("of which between nodes in both"), pctCell("diff.moved_between_kept_nodes", d.Between)}},
		{Cells: []cell{labelCell("old nodes"), intCell("diff.old_nodes", int64(d.OldNodes))}},
		{Cells: []cell{labelCell("new nodes"), intCell("diff.new_nodes", int64(d.NewNodes))}},
	}
	var top float64
	for _, s := range d.Shares {
		top = max(top, s.Old, s.New)
	}
	shares := section{ID: "shares", Title: "Shares of the key space, before and after",
		Legend: []legend{{"old", "old share"}, {"new", "new share"}},
		Head:   []string{"node", "old share", "new share", "change", ""}}
	for i, s := range d.Shares {
		p := "diff.shares." + strconv.Itoa(i) + "."
		shares.Rows = append(shares.Rows, row{ID: s.ID, Cells: []cell{textCell(s.ID), pctCell(p+"old", s.Old), pctCell(p+"new", s.New),
			{Text: fmt.Sprintf("%+.2f%%", 100*(s.New-s.Old))}, barsCell(top, []float64{s.Old, s.New}, "old", "new")}})
	}
	v.Sections = append(v.Sections, shares)
	if m, ok := flowMatrix(d); ok {
		v.Sections = append(v.Sections, m)
	}
	flows := section{ID: "flows", Title: "Flows of moved keys, largest first", Head: []string{"from", "to", "share of keys", ""},
		Legend: []legend{{"flow", "share of all keys"}}}
	switch {
	case !d.Listed:
		flows.Note = fmt.Sprintf("Not listed: %s x %s node pairs are too many (chash diff -h).", commas(int64(d.OldNodes)), commas(int64(d.NewNodes)))
	case len(d.Flows) == 0:
		flows.Note = "No key moves."
	}
	n := len(d.Flows)
	if limit > 0 && n > limit {
		n = limit
		flows.Note = fmt.Sprintf("The %d largest of %s flows (-top; chash diff -json lists all).", limit, commas(int64(len(d.Flows))))
	}
	ftop := 0.0
	if len(d.Flows) > 0 {
		ftop = d.Flows[0].Fraction
	}
	for i, f := range d.Flows[:n] {
		flows.Rows = append(flows.Rows, row{Cells: []cell{textCell(f.From), textCell(f.To),
			pctCell("diff.flows."+strconv.Itoa(i)+".fraction", f.Fraction), barsCell(ftop, []float64{f.Fraction}, "flow")}})
	}
	return append2(v, flows)
}

func append2(v reportView, s section) reportView { v.Sections = append(v.Sections, s); return v }

func methodText(d *diffReport) string {
	switch d.Method {
	case methodClosed:
		return "exact by closed form"
	case methodSample:
		return "estimated from " + commas(int64(d.Samples)) + " sampled keys"
	}
	return "exact over the whole hash space"
}

// maxMatrix is the most nodes on each side of a flow matrix.
const maxMatrix = 24

// flowMatrix returns the from -> to matrix of moved keys, for memberships
// small enough to show it whole.
func flowMatrix(d *diffReport) (section, bool) {
	var from, to []string
	for _, s := range d.Shares {
		if s.Old > 0 {
			from = append(from, s.ID)
		}
		if s.New > 0 {
			to = append(to, s.ID)
		}
	}
	if !d.Listed || len(d.Flows) == 0 || len(from) > maxMatrix || len(to) > maxMatrix {
		return section{}, false
	}
	at := map[[2]string]int{}
	top := 0.0
	for i, f := range d.Flows {
		at[[2]string{f.From, f.To}] = i
		top = max(top, f.Fraction)
	}
	s := section{ID: "matrix", Title: "What moves from which node to which",
		Note: "Rows: the old owner; columns: the new one; each figure is a share of all keys.",
		Head: append([]string{"from \\ to"}, to...)}
	for _, a := range from {
		r := row{ID: a, Cells: []cell{textCell(a)}}
		for _, b := range to {
			i, ok := at[[2]string{a, b}]
			if !ok {
				r.Cells = append(r.Cells, cell{})
				continue
			}
			c := pctCell("diff.flows."+strconv.Itoa(i)+".fraction", d.Flows[i].Fraction)
			c.Class = "m" + strconv.Itoa(int(math.Ceil(4*d.Flows[i].Fraction/top)))
			r.Cells = append(r.Cells, c)
		}
		s.Rows = append(s.Rows, r)
	}
	return s, true
}

func planView(p *planReport, fb []fallbackStep) reportView {
	verb := "grow"
	if p.To < p.From {
		verb = "shrink"
	}
	v := reportView{Title: fmt.Sprintf("chash plan: %s %d -> %d nodes, %d at a time", verb, p.From, p.To, p.Step),
		Subtitle: fmt.Sprintf("movement: %s; %s requests/s at %.1f%% hits, origin capacity %s/s", p.Algorithm, commas(int64(p.Rate)), 100*p.Hit, commas(int64(p.Origin)))}
	v.Summary = []row{
		{Cells: []cell{labelCell("origin load before any step"), loadCell("plan.steady_origin_load", p.Steady)}},
		{Cells: []cell{labelCell("at once: keys moved"), pctCell("plan.at_once.moved", p.AtOnce.Moved)}},
		{Cells: []cell{labelCell("at once: origin load"), loadCell("plan.at_once.origin_load", p.AtOnce.OriginLoad)}},
		{Cells: []cell{labelCell("mod-N at once: origin load"), loadCell("plan.mod_n_at_once.origin_load", p.ModN.OriginLoad)}},
		{Cells: []cell{labelCell("largest safe step"), intCell("plan.safe_step", int64(p.SafeStep))}},
	}
	hit := make([][2]float64, len(p.Steps))
	load := make([][2]float64, len(p.Steps))
	for i, s := range p.Steps {
		hit[i] = [2]float64{s.HitRate, fb[i].HitRate}
		load[i] = [2]float64{s.OriginLoad, fb[i].OriginLoad}
	}
	v.Sections = append(v.Sections,
		section{ID: "hit-chart", Title: "Hit rate right after each step", Chart: lineChart(hit, floorTo(minOf(hit)-0.02, 0.05), 1, -1, true),
			Legend: []legend{{"l0", "without fallback reads"}, {"l1", "with fallback reads"}}},
		section{ID: "load-chart", Title: "Origin load right after each step", Chart: lineChart(load, 0, niceCeil(max(p.Origin, maxOf(load))*1.1), p.Origin, false),
			Legend: []legend{{"l0", "without fallback reads"}, {"l1", "with fallback reads"}, {"cap", "origin capacity"}}})
	steps := section{ID: "steps", Title: "Steps",
		Head: []string{"step", "nodes", "keys moved", "hit rate", "with fallback", "origin load", "with fallback", "extra cache reads", ""}}
	for i, s := range p.Steps {
		pp, fp := "plan.steps."+strconv.Itoa(i)+".", "with_fallback."+strconv.Itoa(i)+"."
		flag := ""
		if s.Over {
			flag = fmt.Sprintf("OVER %.2fx", s.OriginLoad/p.Origin)
		}
		steps.Rows = append(steps.Rows, row{Cells: []cell{intCell(pp+"step", int64(s.N)), textCell(fmt.Sprintf("%d -> %d", s.From, s.To)),
			pctCell(pp+"moved", s.Moved), pctCell(pp+"hit_rate", s.HitRate), pctCell(fp+"hit_rate", fb[i].HitRate),
			loadCell(pp+"origin_load", s.OriginLoad), loadCell(fp+"origin_load", fb[i].OriginLoad), loadCell(fp+"extra_reads", fb[i].ExtraReads),
			{Text: flag, Class: "over"}}})
	}
	return append2(v, steps)
}

func minOf(xs [][2]float64) float64 {
	m := 1.0
	for _, x := range xs {
		m = min(m, x[0], x[1])
	}
	return m
}

// floorTo rounds x down to a multiple of unit, and not below 0.
func floorTo(x, unit float64) float64 { return max(0, math.Floor(x/unit)*unit) }

// niceCeil rounds x up to two significant digits, for an axis's top.
func niceCeil(x float64) float64 {
	if !(x > 0) || math.IsInf(x, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(x))-1)
	return math.Ceil(x/p) * p
}

func maxOf(xs [][2]float64) float64 {
	m := 0.0
	for _, x := range xs {
		m = max(m, x[0], x[1])
	}
	return m
}

// lineChart draws two series over the steps, from lo to hi, with a dashed
// line at mark (if mark >= 0), as inline SVG: numbers only.
func lineChart(series [][2]float64, lo, hi, mark float64, pct bool) template.HTML {
	const w, h, left, bottom = 720.0, 220.0, 64.0, 24.0
	if !(hi > lo) {
		hi = lo + 1
	}
	x := func(i int) float64 {
		if len(series) < 2 {
			return left + (w-left)/2
		}
		return left + 8 + float64(i)*(w-left-16)/float64(len(series)-1)
	}
	y := func(v float64) float64 { return 8 + (h-bottom-8)*(1-(v-lo)/(hi-lo)) }
	num := func(f float64) string { return strconv.FormatFloat(math.Round(f*10)/10, 'f', -1, 64) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" viewBox="0 0 %g %g" width="%g" height="%g">`, w, h, w, h)
	for k := 0; k <= 4; k++ {
		v := lo + (hi-lo)*float64(k)/4
		label := commas(int64(v + 0.5))
		if pct {
			label = strconv.FormatFloat(100*v, 'f', 0, 64) + "%"
		}
		fmt.Fprintf(&b, `<path class="grid" d="M%s %sH%g"/><text class="ax" x="%g" y="%s">%s</text>`, num(left), num(y(v)), w, left-6, num(y(v)+4), label)
	}
	if mark >= 0 {
		fmt.Fprintf(&b, `<path class="cap" d="M%s %sH%g"/>`, num(left), num(y(mark)), w)
	}
	for s := 0; s < 2; s++ {
		fmt.Fprintf(&b, `<polyline class="l%d" points="`, s)
		for i, p := range series {
			fmt.Fprintf(&b, "%s,%s ", num(x(i)), num(y(p[s])))
		}
		b.WriteString(`"/>`)
	}
	step := max(1, len(series)/10)
	for i := 0; i < len(series); i += step {
		fmt.Fprintf(&b, `<text class="ax" x="%s" y="%g" text-anchor="middle">%d</text>`, num(x(i)), h-6, i+1)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) //nolint:gosec // numbers and fixed markup only
}

func shardMapView(r *shardMapReport, limit int) reportView {
	v := reportView{Title: fmt.Sprintf("chash shardmap plan: version %d -> %d", r.OldVersion, r.NewVersion),
		Subtitle: fmt.Sprintf("%d partitions x %d replicas", r.Partitions, r.Replicas)}
	v.Summary = []row{
		{Cells: []cell{labelCell("steps"), intCell("shardmap.plan.steps.length", int64(len(r.Plan.Steps)))}},
		{Cells: []cell{labelCell("replicas copied"), intCell("shardmap.plan.moves", int64(r.Plan.Moves))}},
		{Cells: []cell{labelCell("bytes copied"), figure("shardmap.plan.bytes", float64(r.Plan.Bytes), bytesize(r.Plan.Bytes))}},
		{Cells: []cell{labelCell("bytes in a partition"), figure("shardmap.partition_bytes", float64(r.Bytes), bytesize(r.Bytes))}},
	}
	var top float64
	for _, n := range r.Nodes {
		top = max(top, float64(n.OldReplicas), float64(n.NewReplicas))
	}
	nodes := section{ID: "nodes", Title: "Replicas per node, before and after",
		Legend: []legend{{"old", "old replicas"}, {"new", "new replicas"}},
		Head:   []string{"node", "zone", "old weight", "new weight", "old replicas", "new replicas", "", "old primaries", "new primaries", "old bytes", "new bytes", "adds", "removes", "promotions"}}
	for i, n := range r.Nodes {
		p := "shardmap.nodes." + strconv.Itoa(i) + "."
		nodes.Rows = append(nodes.Rows, row{ID: n.ID, Cells: []cell{textCell(n.ID), textCell(n.Zone),
			figure(p+"old_weight", n.OldWeight, strconv.FormatFloat(n.OldWeight, 'g', 6, 64)),
			figure(p+"new_weight", n.NewWeight, strconv.FormatFloat(n.NewWeight, 'g', 6, 64)),
			intCell(p+"old_replicas", int64(n.OldReplicas)), intCell(p+"new_replicas", int64(n.NewReplicas)),
			barsCell(top, []float64{float64(n.OldReplicas), float64(n.NewReplicas)}, "old", "new"),
			intCell(p+"old_primaries", int64(n.OldPrimaries)), intCell(p+"new_primaries", int64(n.NewPrimaries)),
			figure(p+"old_bytes", float64(n.OldBytes), bytesize(n.OldBytes)), figure(p+"new_bytes", float64(n.NewBytes), bytesize(n.NewBytes)),
			intCell(p+"adds", int64(n.Adds)), intCell(p+"removes", int64(n.Removes)), intCell(p+"promotions", int64(n.Promotions))}})
	}
	steps := section{ID: "steps", Title: "The plan's steps, in order", Head: []string{"#", "action", "partition", "node", "from"}, Details: true}
	n := min(len(r.Plan.Steps), limit)
	if n < len(r.Plan.Steps) {
		steps.Note = fmt.Sprintf("The first %s of %s steps (-steps; -json lists all).", commas(int64(n)), commas(int64(len(r.Plan.Steps))))
	}
	for i, st := range r.Plan.Steps[:n] {
		steps.Rows = append(steps.Rows, row{Cells: []cell{{Text: strconv.Itoa(i + 1)}, textCell(st.Kind.String()),
			intCell("shardmap.plan.steps."+strconv.Itoa(i)+".partition", int64(st.Partition)), textCell(st.Node), textCell(st.From)}})
	}
	v.Sections = append(v.Sections, nodes, steps)
	return v
}

var reportPage = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<title>{{.Title}}</title>
<style>
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:1.5em;color:#1d2330;background:#fff}
h1{font-size:1.4em;margin:0}h2{font-size:1.1em;margin:1.6em 0 .4em}.sub{color:#5b6578;margin:.2em 0 1em}
table{border-collapse:collapse;font-variant-numeric:tabular-nums}th,td{padding:2px 10px;text-align:right;white-space:nowrap}
th{color:#5b6578;font-weight:600;border-bottom:1px solid #d5d9e2}th.l{text-align:left}td.t{text-align:left}td.k{text-align:left;color:#5b6578}td.t:first-child{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:12px}
tbody tr:nth-child(even){background:#f7f8fa}td.c{padding:0 10px}td.c svg{display:block;width:220px;height:14px}
rect.old{fill:#b8c2d3}rect.new{fill:#4c78a8}rect.flow{fill:#f58518}td.over{color:#b42318;font-weight:600}
td.m1{background:#fde8d4}td.m2{background:#fbc99c}td.m3{background:#f8a65e}td.m4{background:#f58518;color:#fff}
svg.chart{display:block;max-width:100%}.grid{stroke:#e3e7ee}.ax{fill:#5b6578;font-size:11px;text-anchor:end}
polyline{fill:none;stroke-width:2}.l0{stroke:#e45756}.l1{stroke:#4c78a8;stroke-dasharray:6 3}.cap{stroke:#1d2330;stroke-dasharray:2 3}
.legend{color:#5b6578;font-size:12px;margin:.3em 0}.legend i{display:inline-block;width:12px;height:10px;margin:0 4px 0 12px;vertical-align:-1px}
i.old{background:#b8c2d3}i.new,i.l1{background:#4c78a8}i.flow{background:#f58518}i.l0{background:#e45756}i.cap{background:#1d2330;height:2px}
footer{margin-top:2em;color:#5b6578;font-size:12px}
</style>
</head>
<body>
<h1 id="title">{{.Title}}</h1>
<p class="sub">{{.Subtitle}}</p>
<table id="summary"><tbody>
{{- range .Summary}}<tr>{{template "cells" .Cells}}</tr>{{end}}
</tbody></table>
{{- range .Sections}}
<section id="{{.ID}}">
<h2>{{.Title}}</h2>
{{- with .Legend}}<p class="legend">{{range .}}<i class="{{.Class}}"></i>{{.Text}}{{end}}</p>{{end}}
{{- with .Note}}<p class="note">{{.}}</p>{{end}}
{{- .Chart}}
{{- if .Rows}}
{{if .Details}}<details open><summary>{{len .Rows}} rows</summary>{{end}}
<table><thead><tr>{{$left := .Left}}{{range $i, $h := .Head}}<th{{if index $left $i}} class="l"{{end}}>{{$h}}</th>{{end}}</tr></thead><tbody>
{{- range .Rows}}
<tr{{with .ID}} data-id="{{.}}"{{end}}>{{template "cells" .Cells}}</tr>
{{- end}}
</tbody></table>
{{- if .Details}}</details>{{end}}
{{- end}}
</section>
{{- end}}
<footer>Written by chash report. Every figure carries its value (data-v) and its path in the report's -json (data-p).</footer>
</body>
</html>
{{define "cells"}}{{range .}}<td{{with .Class}} class="{{.}}"{{end}}{{with .Path}} data-p="{{.}}"{{end}}{{with .V}} data-v="{{.}}"{{end}}>
{{- if .Bars}}<svg>{{range .Bars}}<rect class="{{.Class}}" y="{{.Y}}" width="{{.W}}" height="{{.H}}"/>{{end}}</svg>{{else}}{{.Text}}{{end}}</td>{{end}}{{end}}
`))
