package cape

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dprec/dprec/perturb"
	"gonum.org/v1/gonum/mat"
)

func l2diff(a, b []float64) float64 {
	var s float64
	for i := range a {
		s += (a[i] - b[i]) * (a[i] - b[i])
	}
	return math.Sqrt(s)
}

// TestSensitivityEmpirical replaces one row of a site by another valid row
// and checks the packed statistic moves by at most Job.Sensitivity, with
// equality at the worst cases of doc.go (mean: x -> -x; PCA: e1 -> e2),
// and never above it on random neighbours.
func TestSensitivityEmpirical(t *testing.T) {
	const n, d = 30, 4
	r := rand.New(rand.NewPCG(5, 5))
	base := unitRows(n, d, r)
	e := func(i int, s float64) []float64 { v := make([]float64, d); v[i] = s; return v }
	cases := []struct {
		job        Job
		from, to   []float64
		tightEqual bool
	}{
		{Job{Kind: JobMean, D: d}, e(0, 1), e(0, -1), true},
		{Job{Kind: JobPCA, D: d, K: 1}, e(0, 1), e(1, 1), true},
	}
	for _, c := range cases {
		sens, _ := c.job.Sensitivity(0, n)
		x1, x2 := mat.DenseCopyOf(base), mat.DenseCopyOf(base)
		x1.SetRow(n-1, c.from)
		x2.SetRow(n-1, c.to)
		a, _ := c.job.Statistic(0, &SiteData{Rows: x1})
		b, _ := c.job.Statistic(0, &SiteData{Rows: x2})
		got := l2diff(a, b)
		if got > sens*(1+1e-12) || (c.tightEqual && math.Abs(got-sens) > 1e-12*sens) {
			t.Errorf("%s worst case: change %.17g, sensitivity %.17g", c.job.Kind, got, sens)
		}
		for trial := 0; trial < 500; trial++ {
			y := unitRows(2, d, r)
			x1.SetRow(n-1, y.RawRowView(0))
			x2.SetRow(n-1, y.RawRowView(1))
			a, _ := c.job.Statistic(0, &SiteData{Rows: x1})
			b, _ := c.job.Statistic(0, &SiteData{Rows: x2})
			if got := l2diff(a, b); got > sens*(1+1e-12) {
				t.Fatalf("%s random neighbours: change %g > sensitivity %g", c.job.Kind, got, sens)
			}
		}
	}
}

// TestSnapInflatedGrid: the sigma Tau2 returns is scaled for the grid the
// site snaps to, the grid of that sigma itself, also when the scaling
// crosses a power of two (sigma just below 2^0: the grid doubles).
func TestSnapInflatedGrid(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		sigma, sens float64
		L           int
	}{
		{1 - 1e-12, 1e-3, 1_000_000}, // crosses 1: grid 2^-40 -> 2^-39
		{3.7, 0.01, 1000},
		{0.25, 0.25, 1},
		{1e-6, 1e-7, 50_000},
	} {
		out := snapInflated(c.sigma, c.sens, c.L)
		g := perturb.Granularity(out)
		// Delta/sigma after snapping must not exceed the calibrated ratio.
		if eff := (c.sens + math.Sqrt(float64(c.L))*g) / out; eff > c.sens/c.sigma*(1+1e-15) {
			t.Errorf("%+v: sigma %v on grid %v: effective ratio %v > calibrated %v", c, out, g, eff, c.sens/c.sigma)
		}
		if out < c.sigma {
			t.Errorf("%+v: sigma shrank to %v", c, out)
		}
	}
}
