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
// ALSCurveColumns, none at or beyond the rank) to the curve columns: the
// quadratic terms of the two free columns (freeItemColumnsAt, columns 0
// and 1: the slope column v1 and the popularity column v2, both of
// standard deviation sd over the items), in the order
//
//	v2^2, v1 v2, v1^2      (each of (v/sd) centred over the items,
//	                        rescaled to standard deviation ALSCurveColumnScale sd)
//
// With them a user folding in fits a quadratic curve of their own in the
// item's released bias and popularity, not only a slope on each: real
// users' liking of an item bends with its popularity (a niche viewer may
// like the rarest items and the most popular ones less than the middle),
// which the two slopes cannot follow. Like the free columns they read
// only the released (or public) item biases and counts: post-processing,
// no budget, no sensitivity. It returns the number of columns set, and
// sets none when the free columns are absent (col < 2, rank below col + 1)
// or constant. See ALSCurveColumnScale for the validation figures.
func curveItemColumns(m *decomposition.Model, col int) int {
	R := m.Ranks[0]
	if col < ALSFreeColumns || col >= R {
		return 0
	}
	I := m.Dims[1]
	sd := columnSD(m.Factors[1], R, 0)
	if !(sd > 0) || I < 2 {
		return 0
	}
	n := min(ALSCurveColumns, R-col)
	x := make([]float64, I)
	for j := 0; j < n; j++ {
		for i := range I {
			v1 := m.Factors[1][i*R] / sd
			v2 := m.Factors[1][i*R+1] / sd
			switch j {
			case 0:
				x[i] = v2 * v2
			case 1:
				x[i] = v1 * v2
			default:
				x[i] = v1 * v1
			}
		}
		mean, s := stat.PopMeanStdDev(x, nil)
		for i := range I {
			v := 0.0
			if s > 0 && !math.IsNaN(s) {
				v = ALSCurveColumnScale * sd * (x[i] - mean) / s
			}
			m.Factors[1][i*R+col+j] = v
		}
	}
	return n
}

// curveColumnsNote states, for a report, the curve columns that
// curveItemColumns sets from column col (0-based) of a rank-R model's item
// rows, and that the columns after them are zero.
func curveColumnsNote(col, R int) string {
	n := 0
	if col >= ALSFreeColumns && col < R {
		n = min(ALSCurveColumns, R-col)
	}
	var s string
	if n > 0 {
		what := []string{"the popularity column squared", "the product of the slope and popularity columns", "the slope column squared"}[:n]
		s = fmt.Sprintf("columns %d to %d are the curve columns: %s, each over the slope column's standard deviation, centred over the items and scaled to %g times that deviation (post-processing: no budget; ALSCurveColumns), so that each user fits a quadratic curve of their own in the item's released bias and popularity when folding in", col+1, col+n, strings.Join(what, ", "), ALSCurveColumnScale)
	}
	if z := R - col - n; z > 0 {
		if s != "" {
			s += "; "
		}
		s += fmt.Sprintf("the other %d columns are zero", z)
	}
	return s
}
