package stattest

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestHelpers checks each helper on inputs with hand-computed results.
func TestHelpers(t *testing.T) {
	uniform := func(x float64) float64 { return math.Min(math.Max(x, 0), 1) }
	m, v := MeanVar([]float64{1, 2, 3, 4})
	for _, tc := range []struct {
		name      string
		got, want float64
	}{
		{"KS of the uniform quantiles", KS([]float64{0.75, 0.25}, uniform), 0.25},
		{"KS of a point mass", KS([]float64{0, 0}, uniform), 1},
		{"KSCritical", KSCritical(100, 0.05), math.Sqrt(math.Log(40)/2) / 10},
		{"ChiSquare", ChiSquare([]int{10, 30}, []float64{20, 20}), 10},
		{"ChiSquareCritical", ChiSquareCritical(8, 2), 8 + 2*math.Sqrt(16) + 4},
		{"mean", m, 2.5},
		{"variance", v, 5.0 / 3},
		{"Corr", Corr([]float64{1, 2, 3}, []float64{6, 4, 2}), -1},
	} {
		if math.Abs(tc.got-tc.want) > 1e-12 {
			t.Errorf("%s = %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}

// TestKS2 checks the two-sample statistic on hand-computed cases and that
// it accepts two samples of one law and rejects a shifted one.
func TestKS2(t *testing.T) {
	if d := KS2([]float64{1, 2, 3}, []float64{1, 2, 3}); d != 0 {
		t.Errorf("equal samples: %v, want 0", d)
	}
	if d := KS2([]float64{1, 2}, []float64{3, 4}); d != 1 {
		t.Errorf("disjoint samples: %v, want 1", d)
	}
	if d := KS2([]float64{1, 3}, []float64{2, 4}); d != 0.5 {
		t.Errorf("interleaved samples: %v, want 0.5", d)
	}
	r := rand.New(rand.NewPCG(1, 2))
	const n = 20000
	a, b, c := make([]float64, n), make([]float64, n), make([]float64, n)
	for i := range a {
		a[i], b[i], c[i] = r.NormFloat64(), r.NormFloat64(), r.NormFloat64()+0.1
	}
	crit := KS2Critical(n, n, 1e-6)
	if d := KS2(a, b); d > crit {
		t.Errorf("same law: %v > critical %v", d, crit)
	}
	if d := KS2(a, c); d <= crit {
		t.Errorf("shifted by 0.1 sd: %v <= critical %v", d, crit)
	}
}
