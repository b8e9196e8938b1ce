package completion

import (
	"fmt"
	"math"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
	"gonum.org/v1/gonum/mat"
)

// RefitFactor replaces the factor of mode `mode` by the exact minimiser of
// objective (4) with every other parameter fixed: for each row i,
//
//	a_i = argmin_a  sum_{e: idx_mode(e) = i} (v_e - o_e - <z_e, a>)^2 + lambda |a|^2
//	    = (Z_i^T Z_i + lambda I)^{-1} Z_i^T (v - o)
//
// where z_e = d xhat_e / d a_i is the entry's design vector (the Hadamard
// product of the other rows for CP, the core contracted with them for
// Tucker) and o_e the bias offset (mean plus every mode's bias, held fixed).
// Rows with no observation become zero (the miniser of lambda |a|^2).
//
// When rowClip > 0 the rows of every other mode are first clipped in the
// model, in place, to l2 norm at most rowClip (row <- row / max(1,
// |row|/rowClip)), so the released model is exactly the one the refit was
// solved against (the output-perturbation sensitivity bound needs |z_e|
// bounded). vals, when non-nil, replaces train.Val (e.g. perturbed values).
// The R x R systems are solved by Cholesky (gonum); lambda must be positive
// unless every system is non-singular.
func RefitFactor(m *decomposition.Model, train *data.Store, vals []float64, mode int, lambda float64, rowClip float64) error {
	if err := checkShape(m, train); err != nil {
		return err
	}
	if mode < 0 || mode >= m.Order() {
		return &ShapeError{Reason: fmt.Sprintf("refit mode %d of an order-%d model", mode, m.Order())}
	}
	if math.IsNaN(lambda) || math.IsInf(lambda, 0) || lambda < 0 {
		return &SettingsError{Field: "lambda", Value: lambda, Rule: "must be non-negative and finite"}
	}
	if math.IsNaN(rowClip) || math.IsInf(rowClip, 0) {
		return &SettingsError{Field: "rowClip", Value: rowClip, Rule: "must be finite"}
	}
	if vals == nil {
		vals = train.Val
	}
	if len(vals) != train.NNZ() {
		return &ShapeError{Reason: fmt.Sprintf("refit got %d values for %d observations", len(vals), train.NNZ())}
	}
	if rowClip > 0 {
		for mo := range m.Dims {
			if mo != mode {
				clipRows(m.Factors[mo], m.Ranks[mo], rowClip)
			}
		}
	}
	// Group the observations by their index in mode (counting sort).
	D := m.Dims[mode]
	start := make([]int, D+1)
	for _, i := range train.Idx[mode] {
		start[i+1]++
	}
	for i := 0; i < D; i++ {
		start[i+1] += start[i]
	}
	order := make([]int32, train.NNZ())
	next := append([]int(nil), start[:D]...)
	for e, i := range train.Idx[mode] {
		order[next[i]] = int32(e)
		next[i]++
	}

	R := m.Ranks[mode]
	w := m.NewWork()
	idx := make([]int32, m.Order())
	ata := make([]float64, R*R)
	atb := make([]float64, R)
	sym := mat.NewSymDense(R, ata)
	rhs := mat.NewVecDense(R, atb)
	var chol mat.Cholesky
	var sol mat.VecDense
	for i := 0; i < D; i++ {
		row := m.Row(mode, i)
		if start[i] == start[i+1] {
			clear(row)
			continue
		}
		clear(ata)
		clear(atb)
		for _, e := range order[start[i]:start[i+1]] {
			train.Entry(int(e), idx)
			m.Partial(idx, w)
			y := vals[e] - m.Offset(idx)
			z := w.Factor[mode]
			for p := 0; p < R; p++ {
				atb[p] += y * z[p]
				zp := z[p]
				r := ata[p*R : p*R+R]
				for q := p; q < R; q++ {
					r[q] += zp * z[q]
				}
			}
		}
		for p := 0; p < R; p++ {
			ata[p*R+p] += lambda
		}
		// ata holds the upper triangle, which is what SymDense reads.
		if ok := chol.Factorize(sym); !ok {
			return fmt.Errorf("completion: refit of mode %d row %d: system is singular or ill-conditioned (use lambda > 0)", mode, i)
		}
		if err := chol.SolveVecTo(&sol, rhs); err != nil {
			return fmt.Errorf("completion: refit of mode %d row %d: %w", mode, i, err)
		}
		for p := range row {
			row[p] = sol.AtVec(p)
		}
	}
	return nil
}

// clipRows scales every row of f (row length r) to l2 norm at most c.
func clipRows(f []float64, r int, c float64) {
	for off := 0; off+r <= len(f); off += r {
		row := f[off : off+r]
		s := 0.0
		for _, v := range row {
			s += v * v
		}
		if n := math.Sqrt(s); n > c {
			k := c / n
			for t := range row {
				row[t] *= k
			}
		}
	}
}

// checkShape checks that the model fits the store.
func checkShape(m *decomposition.Model, st *data.Store) error {
	if m == nil {
		return &ShapeError{Reason: "nil model"}
	}
	if st == nil {
		return &ShapeError{Reason: "nil store"}
	}
	if st.Order() != m.Order() {
		return &ShapeError{Reason: fmt.Sprintf("order-%d model for an order-%d store", m.Order(), st.Order())}
	}
	for mo, d := range m.Dims {
		if st.Dims[mo] != d {
			return &ShapeError{Reason: fmt.Sprintf("mode %d has size %d in the model and %d in the store", mo, d, st.Dims[mo])}
		}
		if len(m.Factors[mo]) != d*m.Ranks[mo] {
			return &ShapeError{Reason: fmt.Sprintf("factor %d has %d values, want %d x %d", mo, len(m.Factors[mo]), d, m.Ranks[mo])}
		}
	}
	return nil
}
