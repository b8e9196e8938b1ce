package stattest

import (
	"math"
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
