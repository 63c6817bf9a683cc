package main

import (
	"fmt"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/benchmarks"
)

// plots draws lookup cost and retained memory against node count, one
// line per algorithm, on log-log axes, into dir.
func (s *scale) plots(dir string) error {
	lookup := newLogLog("Lookup cost against node count (13-byte keys, 80-byte dashed)", "nodes", "ns per lookup")
	memory := newLogLog("Memory against node count", "nodes", "bytes retained by the placer")
	for i, a := range benchmarks.ScaleAlgorithms() {
		for _, size := range benchmarks.ScaleKeySizes {
			xys := s.series(a, fmt.Sprintf("Lookup/key=%d", size), "ns/op")
			name := a.String()
			if size != 13 {
				name = ""
			}
			if err := addLine(lookup, i, name, xys, size != 13); err != nil {
				return err
			}
		}
		if err := addLine(memory, i, a.String(), s.series(a, "Build", "retained-B"), false); err != nil {
			return err
		}
	}
	var hash plotter.XYs
	for _, n := range benchmarks.ScaleNodeCounts {
		if h, ok := s.hash(n, 13); ok && h > 0 {
			hash = append(hash, plotter.XY{X: float64(n), Y: h})
		}
	}
	if len(hash) > 0 {
		l, err := plotter.NewLine(hash)
		if err != nil {
			return err
		}
		l.Color = plotutil.Color(7)
		l.Dashes = []vg.Length{vg.Points(1), vg.Points(3)}
		lookup.Add(l)
		lookup.Legend.Add("bare xxhash", l)
	}
	// Headroom above the lines for the legend (the axes are logarithmic).
	fit(lookup, 6)
	fit(memory, 30)
	if err := lookup.Save(7*vg.Inch, 4.5*vg.Inch, filepath.Join(dir, lookupPlot)); err != nil {
		return err
	}
	return memory.Save(7*vg.Inch, 4.5*vg.Inch, filepath.Join(dir, memoryPlot))
}

// fit sets the axes to the node counts and the data, with headroom times
// the data's range above it; a plot without data gets a placeholder range,
// as a logarithmic axis needs positive bounds.
func fit(p *plot.Plot, headroom float64) {
	counts := benchmarks.ScaleNodeCounts
	p.X.Min, p.X.Max = float64(counts[0]), float64(counts[len(counts)-1])
	if !(p.Y.Min > 0) || p.Y.Max <= p.Y.Min {
		p.Y.Min, p.Y.Max = 1, 10
	}
	p.Y.Max *= headroom
}

func newLogLog(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text, p.Y.Label.Text = x, y
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
	p.Legend.Top, p.Legend.Left = true, true
	p.Add(plotter.NewGrid())
	return p
}

// addLine adds one algorithm's points (i picks its color and marker); an
// empty name leaves it out of the legend.
func addLine(p *plot.Plot, i int, name string, xys plotter.XYs, dashed bool) error {
	if len(xys) == 0 {
		return nil
	}
	l, pts, err := plotter.NewLinePoints(xys)
	if err != nil {
		return err
	}
	l.Color, pts.Color = plotutil.Color(i), plotutil.Color(i)
	pts.Shape = plotutil.Shape(i)
	if dashed {
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	}
	p.Add(l, pts)
	if name != "" {
		p.Legend.Add(name, l, pts)
	}
	return nil
}

// series returns a figure of a at every node count measured (positive
// values only: the axes are logarithmic).
func (s *scale) series(a chash.Algorithm, what, unit string) plotter.XYs {
	var xys plotter.XYs
	for _, n := range benchmarks.ScaleNodeCounts {
		if v, ok := s.get(a, n, what, unit); ok && v > 0 {
			xys = append(xys, plotter.XY{X: float64(n), Y: v})
		}
	}
	return xys
}
