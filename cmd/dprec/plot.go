package main

import (
	"fmt"
	"image/color"
	"io"
	"path/filepath"
	"strings"

	"github.com/dprec/dprec/data"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// plotSeries is one line of a line plot; YErr, when set, draws error bars
// (for example one standard deviation over seeds).
type plotSeries struct {
	Name string
	X, Y []float64
	YErr []float64
}

// plotLines draws series as lines with points and writes the plot to path
// (.png or .svg, chosen by extension) atomically, replacing an existing
// file only when force is set. logX / logY use log scales.
func plotLines(path string, force bool, title, xlabel, ylabel string, logX, logY bool, series []plotSeries) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xlabel
	p.Y.Label.Text = ylabel
	if logX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	if logY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	p.Add(plotter.NewGrid())
	for i, s := range series {
		if len(s.X) != len(s.Y) {
			return fmt.Errorf("plot %s: series %q has %d x and %d y values", path, s.Name, len(s.X), len(s.Y))
		}
		pts := make(plotter.XYs, 0, len(s.X))
		errs := make(plotter.YErrors, 0, len(s.X))
		for j := range s.X {
			if (logX && s.X[j] <= 0) || (logY && s.Y[j] <= 0) {
				continue
			}
			pts = append(pts, plotter.XY{X: s.X[j], Y: s.Y[j]})
			if s.YErr != nil {
				errs = append(errs, struct{ Low, High float64 }{s.YErr[j], s.YErr[j]})
			}
		}
		if len(pts) == 0 {
			continue
		}
		l, sc, err := plotter.NewLinePoints(pts)
		if err != nil {
			return fmt.Errorf("plot %s: %w", path, err)
		}
		c := plotutil.Color(i)
		l.Color = c
		sc.Color = c
		sc.Shape = plotutil.Shape(i)
		p.Add(l, sc)
		p.Legend.Add(s.Name, l, sc)
		if s.YErr != nil && !logY {
			eb, err := plotter.NewYErrorBars(struct {
				plotter.XYer
				plotter.YErrorer
			}{pts, errs})
			if err == nil {
				eb.Color = color.Gray{Y: 120}
				p.Add(eb)
			}
		}
	}
	// A log axis over a single value: gonum would widen it by one on each
	// side (to zero or below, where LogTicks panics); widen it by a
	// factor of two instead.
	for _, ax := range []struct {
		log bool
		a   *plot.Axis
	}{{logX, &p.X}, {logY, &p.Y}} {
		if ax.log && ax.a.Min == ax.a.Max && ax.a.Min > 0 {
			ax.a.Min, ax.a.Max = ax.a.Min/2, ax.a.Max*2
		}
	}
	p.Legend.Top = true
	ext := strings.ToLower(filepath.Ext(path))
	if ext != ".png" && ext != ".svg" {
		return fmt.Errorf("plot %s: want a .png or .svg file name", path)
	}
	wt, err := p.WriterTo(7*vg.Inch, 4.5*vg.Inch, ext[1:])
	if err != nil {
		return fmt.Errorf("plot %s: %w", path, err)
	}
	return data.WriteFileAtomic(path, force, func(w io.Writer) error {
		_, err := wt.WriteTo(w)
		return err
	})
}
