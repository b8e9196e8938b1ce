package cape

import (
	"math"
	"math/rand/v2"
	"testing"

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
