package decomposition

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// FoldIn solves the factor row of a new user (mode 0) against the frozen
// model from that user's own ratings, by regularised least squares:
//
//	a = argmin_a sum_e (r_e - o_e - <z_e, a>)^2 + lambda |a|^2
//
// where z_e = d xhat / d a at (item_e, time_e) and o_e is the model's offset
// without a user bias (mean + item bias + time bias). When the model has
// biases the user's bias is solved jointly (with the same penalty) and
// returned as one extra last element, so the result has Ranks[0] elements,
// or Ranks[0]+1 with biases; PredictFolded uses it directly.
//
// times must be nil for an order-2 model and have one bucket per rating for
// an order-3 model. lambda must be positive and finite.
func FoldIn(m *Model, items []int32, times []int32, ratings []float64, lambda float64) ([]float64, error) {
	if len(items) != len(ratings) {
		return nil, fmt.Errorf("decomposition: fold-in has %d items for %d ratings", len(items), len(ratings))
	}
	if len(ratings) == 0 {
		return nil, fmt.Errorf("decomposition: fold-in needs at least one rating")
	}
	if m.Order() == 3 && len(times) != len(ratings) {
		return nil, fmt.Errorf("decomposition: fold-in into an order-3 model needs one time bucket per rating (got %d for %d)", len(times), len(ratings))
	}
	if m.Order() == 2 && times != nil {
		return nil, fmt.Errorf("decomposition: fold-in into an order-2 model takes no time buckets")
	}
	if !(lambda > 0) || math.IsInf(lambda, 0) {
		return nil, fmt.Errorf("decomposition: fold-in lambda %g must be positive and finite", lambda)
	}
	R := m.Ranks[0]
	n := R
	if m.HasBias {
		n++
	}
	w := m.NewWork()
	idx := make([]int32, m.Order())
	ata := make([]float64, n*n)
	atb := make([]float64, n)
	z := make([]float64, n)
	for e, it := range items {
		if it < 0 || int(it) >= m.Dims[1] {
			return nil, fmt.Errorf("decomposition: fold-in rating %d: item index %d outside 0..%d", e, it, m.Dims[1]-1)
		}
		idx[1] = it
		if m.Order() == 3 {
			if times[e] < 0 || int(times[e]) >= m.Dims[2] {
				return nil, fmt.Errorf("decomposition: fold-in rating %d: time bucket %d outside 0..%d", e, times[e], m.Dims[2]-1)
			}
			idx[2] = times[e]
		}
		r := ratings[e]
		if math.IsNaN(r) || math.IsInf(r, 0) {
			return nil, fmt.Errorf("decomposition: fold-in rating %d is %g", e, r)
		}
		// Row 0 of mode 0 stands in for the new user: d xhat/d a does not
		// depend on a.
		m.Partial(idx, w)
		copy(z, w.Factor[0])
		y := r
		if m.HasBias {
			y -= m.OffsetWithout(idx, 0)
			z[R] = 1
		}
		for p := 0; p < n; p++ {
			atb[p] += y * z[p]
			for q := p; q < n; q++ {
				ata[p*n+q] += z[p] * z[q]
			}
		}
	}
	for p := 0; p < n; p++ {
		ata[p*n+p] += lambda
	}
	var chol mat.Cholesky
	if !chol.Factorize(mat.NewSymDense(n, ata)) {
		return nil, fmt.Errorf("decomposition: fold-in system is singular")
	}
	var sol mat.VecDense
	if err := chol.SolveVecTo(&sol, mat.NewVecDense(n, atb)); err != nil {
		return nil, fmt.Errorf("decomposition: fold-in: %w", err)
	}
	out := make([]float64, n)
	for p := range out {
		out[p] = sol.AtVec(p)
	}
	return out, nil
}

// PredictFolded predicts the entry (item, time) for a folded-in user whose
// row (and bias, last, when the model has biases) FoldIn returned. idx[0] is
// ignored; w is scratch from NewWork.
func (m *Model) PredictFolded(row []float64, idx []int32, w *Work) float64 {
	var buf [3]int32
	copy(buf[:], idx)
	buf[0] = 0 // any valid user: d xhat/d a does not depend on a
	idx = buf[:len(idx)]
	m.Partial(idx, w)
	R := m.Ranks[0]
	s := 0.0
	for p, z := range w.Factor[0][:R] {
		s += z * row[p]
	}
	if m.HasBias {
		s += m.OffsetWithout(idx, 0) + row[R]
	}
	return m.Clamp(s)
}
