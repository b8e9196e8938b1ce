package decomposition

import (
	"math"
	"testing"
)

// TestClampOnePoint: a one-point range (every training rating had one
// value) clamps every prediction to that value, 0 included; the zero
// value [0, 0] still means no clamp (issue 24 item 14: such models were
// left unclamped and predicted 5.65, 5.17 or 1.93 for a log of one 5).
func TestClampOnePoint(t *testing.T) {
	for _, tc := range []struct {
		lo, hi  float64
		in, out []float64
	}{
		{5, 5, []float64{5.65, 5.17, 1.93, 5, -3}, []float64{5, 5, 5, 5, 5}},
		{0, 0, []float64{0.4, -2, 0}, []float64{0, 0, 0}},
		{-1.5, -1.5, []float64{3, -7}, []float64{-1.5, -1.5}},
		{1, 5, []float64{0, 3.3, 9}, []float64{1, 3.3, 5}},
	} {
		m := &Model{}
		m.SetClamp(tc.lo, tc.hi)
		if !m.Clamps() {
			t.Errorf("SetClamp(%g, %g): Clamps false", tc.lo, tc.hi)
		}
		for i, v := range tc.in {
			got := m.Clamp(v)
			if got != tc.out[i] || math.Signbit(got) != math.Signbit(tc.out[i]) {
				t.Errorf("[%g, %g]: Clamp(%g) = %g, want %g", tc.lo, tc.hi, v, got, tc.out[i])
			}
		}
	}
	var none Model
	if none.Clamps() || none.Clamp(7.5) != 7.5 {
		t.Error("the zero value [0, 0] clamps")
	}
	if ClampActive(2, 1) {
		t.Error("an inverted range clamps")
	}
}
