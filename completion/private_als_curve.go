package completion

import (
	"fmt"
	"math"
	"strings"

	"gonum.org/v1/gonum/stat"

	"github.com/dprec/dprec/decomposition"
)

// ALSCurveColumns is the most curve columns (curveItemColumns) the
// branches that learn no factor from the ratings release after the free
// columns and the position columns, in the item rows' zero columns.
const ALSCurveColumns = 3

// ALSCurveColumnScale is the curve columns' standard deviation over the
// items, as a fraction of the slope column's: it sets how hard the
// fold-in's one row ridge shrinks a user's weights on them. Chosen on
// the validation parts with the three columns (TestPrivateALSSweep, user
// unit, k = 100, noise seeds 1 and 2, epsilon 1 / 3 / 10 / 30 / 100;
// the change in RMSE against no curve columns at scale 1 -> 0.5):
//
//	ml-latest-small                -0.0011 / -0.0027 / -0.0031 / -0.0027 / -0.0024 -> -0.0005 / -0.0016 / -0.0023 / -0.0021 / -0.0020
//	MovieLens-100K's training part -0.0002 / -0.0021 / -0.0024 / -0.0030 / 0 -> -0.0003 / -0.0014 / -0.0019 / -0.0025 / 0
//	Jester5k, epsilon 1            -0.0253 -> -0.0133 (from epsilon 3 the covariance stage runs)
//	the planted MovieLens-shaped synth +0.0003 / +0.0013 / +0.0034 / +0.0052 / 0 -> +0.0001 / +0.0002 / +0.0006 / +0.0013 / +0.0010
//	heavy (data.Synth, Zipf 1)     +0.0018 / +0.0029 / +0.0010 / 0 / 0 -> +0.0005 / +0.0011 / +0.0011 / 0 / 0
//	the joke-shaped synth, epsilon 1 +0.0032 -> +0.0004
//
// (0: the item steps or the covariance stage run, or the position
// columns fill the rank; at scale 1 the columns were measured before the
// position columns, which then overwrote them.) The planted logs have no
// such structure, so there the columns can only cost: the scale of 0.5
// keeps that cost at 0.0013 or less and keeps most of the real logs'
// gain. (One column alone, scale 1: the popularity column squared gained
// most of the three, -0.0014 to -0.0028 on ml-latest-small at epsilon >=
// 3 and -0.0175 on Jester5k at epsilon 1, and cost up to 0.0022 on the
// planted log; hence it comes first. The other two gained 0.0003-0.0012
// on the MovieLens logs.) At the entry unit only the planted log reaches
// the fallback (epsilon 1 and 3: +0.0009 and +0.0008); the real logs run
// the positions stage. Never on a test part.
const ALSCurveColumnScale = 0.5

// curveItemColumns sets item columns col, col+1, ... (at most
// ALSCurveColumns, none at or beyond the rank) to the curve columns: with
// w1 and w2 the two free columns (freeItemColumnsAt, columns 0 and 1: the
// slope column and the popularity column) over the slope column's
// standard deviation sd, the products
//
//	w2^2, w1 w2, w1^2      (each centred over the items and rescaled
//	                        to standard deviation ALSCurveColumnScale sd)
//
// in that order. A product that is constant over the items (the
// popularity column is zero when every count is the same) is skipped and
// takes no column. With them a user folding in fits a curve of their own
// in the item's released bias and popularity, not only a slope on each:
// real users' liking of an item bends with its popularity (a niche viewer
// may like the rarest items and the most popular ones less than the
// middle), which the two slopes cannot follow. (w1 is not centred, so
// w1 w2 and w1^2 also carry a part linear in the free columns; the
// fold-in's slopes absorb it.) Like the free columns they read only the
// released (or public) item biases and counts: post-processing, no
// budget, no sensitivity. It returns the names of the columns it set, in
// order (none when col < 2, when col is at or beyond the rank, or when
// the slope column is constant). See ALSCurveColumnScale for the
// validation figures.
func curveItemColumns(m *decomposition.Model, col int) []string {
	R := m.Ranks[0]
	if col < ALSFreeColumns || col >= R {
		return nil
	}
	I := m.Dims[1]
	sd := columnSD(m.Factors[1], R, 0)
	if !(sd > 0) || I < 2 {
		return nil
	}
	terms := []struct {
		name string
		f    func(w1, w2 float64) float64
	}{
		{"the popularity column squared", func(_, w2 float64) float64 { return w2 * w2 }},
		{"the product of the slope and popularity columns", func(w1, w2 float64) float64 { return w1 * w2 }},
		{"the slope column squared", func(w1, _ float64) float64 { return w1 * w1 }},
	}
	var set []string
	x := make([]float64, I)
	for _, t := range terms {
		if col+len(set) >= R || len(set) == ALSCurveColumns {
			break
		}
		for i := range I {
			x[i] = t.f(m.Factors[1][i*R]/sd, m.Factors[1][i*R+1]/sd)
		}
		mean, s := stat.PopMeanStdDev(x, nil)
		if !(s > 1e-12*(1+math.Abs(mean))) {
			continue // constant over the items: nothing to fit
		}
		c := col + len(set)
		for i := range I {
			m.Factors[1][i*R+c] = ALSCurveColumnScale * sd * (x[i] - mean) / s
		}
		set = append(set, t.name)
	}
	return set
}

// fallbackItemRows sets m's item rows where private ALS learns no factor
// from the ratings: the free columns from counts (freeItemColumns), the
// position columns up (nil: none) after them, then the curve columns
// after those. The other columns are left as they are (zero). It returns
// the curve columns' names, for the report.
func fallbackItemRows(m *decomposition.Model, o *PrivateOptions, counts []float64, up *userPositions) []string {
	freeItemColumns(m, o, counts)
	up.apply(m)
	return curveItemColumns(m, ALSFreeColumns+up.columns())
}

// curveColumnsNote states, for a report, the curve columns named in set,
// which curveItemColumns wrote from column col (0-based).
func curveColumnsNote(col int, set []string) string {
	if len(set) == 0 {
		return ""
	}
	what := "the curve column"
	if len(set) > 1 {
		what = "the curve columns"
	}
	return columnsNote(col+1, col+len(set), fmt.Sprintf("%s: %s, each a product of the free columns over the slope column's standard deviation, centred over the items and scaled to %g times that deviation (ALSCurveColumnScale; post-processing: no budget), so that each user fits a curve of their own in the item's released bias and popularity when folding in", what, strings.Join(set, ", "), ALSCurveColumnScale))
}

// columnsNote says that the 1-based columns a to b are what.
func columnsNote(a, b int, what string) string {
	if a == b {
		return fmt.Sprintf("column %d is %s", a, what)
	}
	return fmt.Sprintf("columns %d to %d are %s", a, b, what)
}
