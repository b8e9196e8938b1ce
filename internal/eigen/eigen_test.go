package eigen

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// TestTop: on a diagonal matrix with known eigenvalues, Top, Order and
// Largest rank by value and by absolute value, and the vectors are the
// matching unit vectors.
func TestTop(t *testing.T) {
	diag := []float64{1, -5, 3, 0.5, -2}
	a := mat.NewSymDense(len(diag), nil)
	for i, v := range diag {
		a.SetSym(i, i, v)
	}
	for _, tc := range []struct {
		by      By
		k       int
		want    []float64
		wantIdx []int // the diagonal position of each chosen vector
		largest []float64
	}{
		{ByValue, 3, []float64{3, 1, 0.5}, []int{2, 0, 3}, []float64{3, 1, 0.5}},
		{ByAbs, 3, []float64{-5, 3, -2}, []int{1, 2, 4}, []float64{5, 3, 2}},
		{ByAbs, 1, []float64{-5}, []int{1}, []float64{5}},
	} {
		vals, vecs, ok := Top(a, tc.k, tc.by)
		if !ok {
			t.Fatal("factorisation failed")
		}
		for c := range tc.want {
			if math.Abs(vals[c]-tc.want[c]) > 1e-12 {
				t.Errorf("by %d: value %d = %v, want %v", tc.by, c, vals[c], tc.want[c])
			}
			if got := math.Abs(vecs.At(tc.wantIdx[c], c)); math.Abs(got-1) > 1e-12 {
				t.Errorf("by %d: vector %d has |v[%d]| = %v, want 1", tc.by, c, tc.wantIdx[c], got)
			}
		}
		all, _, _ := Decompose(a, false)
		l := Largest(all, tc.k, tc.by)
		for c := range tc.largest {
			if math.Abs(l[c]-tc.largest[c]) > 1e-12 {
				t.Errorf("by %d: Largest[%d] = %v, want %v", tc.by, c, l[c], tc.largest[c])
			}
		}
	}
	if got := Order([]float64{2, 7, 2, 9}, ByValue); got[0] != 3 || got[1] != 1 || got[2] != 0 || got[3] != 2 {
		t.Errorf("Order = %v, want [3 1 0 2] (stable)", got)
	}
}
