package otd

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// checkRows validates numeric rows for the Gaussian mixture: at least one
// row, finite entries, and ||t_n||_2 <= 1 (the bound behind the
// sensitivities of Imtiaz and Sarwate 2018b app. C; data.ReadRows can rescale).
func checkRows(X *mat.Dense, sigma2 float64) error {
	if X == nil {
		return errors.New("otd: no data rows")
	}
	n, d := X.Dims()
	if n == 0 || d == 0 {
		return errors.New("otd: no data rows")
	}
	if !(sigma2 >= 0) || math.IsInf(sigma2, 0) {
		return fmt.Errorf("otd: sigma2 = %g must be finite and non-negative", sigma2)
	}
	for i := 0; i < n; i++ {
		r := X.RawRowView(i)
		var s float64
		for j, v := range r {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("otd: row %d column %d is %g", i+1, j+1, v)
			}
			s += v * v
		}
		// 1e-9 slack for rows rescaled to norm exactly 1.
		if s > 1+1e-9 {
			return fmt.Errorf("otd: row %d has norm %.4g > 1; the mixture moments assume ||t|| <= 1 (rescale the data, e.g. dprec spectral --rescale, and sigma2 by the square of the same factor)", i+1, math.Sqrt(s))
		}
	}
	return nil
}

// MoGMoments returns the moments of a mixture of spherical Gaussians with
// common variance sigma2 (Imtiaz and Sarwate 2018b app. B-B): M2 = E[t t^T] - sigma2 I and
// M3 = E[t^(x)3] - sigma2 sum_d (E[t] e_d e_d + e_d E[t] e_d + e_d e_d E[t]),
// whose expectations are sum_k w_k a_k a_k^T and sum_k w_k a_k^(x)3. X holds
// one observation per row, each of norm at most 1.
func MoGMoments(X *mat.Dense, sigma2 float64) (M2 *mat.SymDense, M3 *SymTensor, err error) {
	if err := checkRows(X, sigma2); err != nil {
		return nil, nil, err
	}
	n, d := X.Dims()
	if err := checkDense(d); err != nil { // refuse before the packed moments are accumulated
		return nil, nil, err
	}
	M2 = mogM2(X, sigma2)
	pi := newPackedIndex(d)
	p := make([]float64, PackedLen(d))
	m1 := make([]float64, d)
	for r := 0; r < n; r++ {
		t := X.RawRowView(r)
		for i, ti := range t {
			m1[i] += ti
			for j := i; j < d; j++ {
				tij := ti * t[j]
				base := pi.at(i, j, j) - j
				for k := j; k < d; k++ {
					p[base+k] += tij * t[k]
				}
			}
		}
	}
	inv := 1 / float64(n)
	for i := range p {
		p[i] *= inv
	}
	for i := range m1 {
		m1[i] *= inv
	}
	// subtract sigma2 sym3(m1 (x) I): entry {i,i,j} gets m1_j, {i,i,i} 3 m1_i.
	for i := 0; i < d; i++ {
		for j := 0; j < d; j++ {
			switch {
			case i == j:
				p[pi.at(i, i, i)] -= 3 * sigma2 * m1[i]
			case j < i:
				p[pi.at(j, i, i)] -= sigma2 * m1[j]
			default:
				p[pi.at(i, i, j)] -= sigma2 * m1[j]
			}
		}
	}
	M3, err = FromPacked(d, p)
	return M2, M3, err
}

// MoGSecondMoment returns M2 of MoGMoments only.
func MoGSecondMoment(X *mat.Dense, sigma2 float64) (*mat.SymDense, error) {
	if err := checkRows(X, sigma2); err != nil {
		return nil, err
	}
	return mogM2(X, sigma2), nil
}

func mogM2(X *mat.Dense, sigma2 float64) *mat.SymDense {
	n, d := X.Dims()
	M2 := mat.NewSymDense(d, nil)
	M2.SymRankK(M2, 1/float64(n), X.T())
	for i := 0; i < d; i++ {
		M2.SetSym(i, i, M2.At(i, i)-sigma2)
	}
	return M2
}

// MoGWhitenedM3 returns M3(W,W,W) of MoGMoments from the whitened rows
// y_n = W^T t_n in O(N D K + N K^3): (1/N) sum_n y_n^(x)3 -
// sigma2 sym3(W^T E[t] (x) W^T W).
func MoGWhitenedM3(X *mat.Dense, W *mat.Dense, sigma2 float64) (*SymTensor, error) {
	if err := checkRows(X, sigma2); err != nil {
		return nil, err
	}
	n, d := X.Dims()
	wd, k := W.Dims()
	if wd != d {
		return nil, fmt.Errorf("otd: whitening matrix has %d rows, data has %d columns", wd, d)
	}
	var Y mat.Dense
	Y.Mul(X, W)
	pi := newPackedIndex(k)
	p := make([]float64, PackedLen(k))
	m := make([]float64, k)
	for r := 0; r < n; r++ {
		y := Y.RawRowView(r)
		for i, yi := range y {
			m[i] += yi
			for j := i; j < k; j++ {
				yij := yi * y[j]
				base := pi.at(i, j, j) - j
				for l := j; l < k; l++ {
					p[base+l] += yij * y[l]
				}
			}
		}
	}
	inv := 1 / float64(n)
	for i := range p {
		p[i] *= inv
	}
	for i := range m {
		m[i] *= inv
	}
	var G mat.Dense
	G.Mul(W.T(), W)
	for x := 0; x < k; x++ {
		for y := x; y < k; y++ {
			for z := y; z < k; z++ {
				p[pi.at(x, y, z)] -= sigma2 * (G.At(x, y)*m[z] + G.At(x, z)*m[y] + G.At(y, z)*m[x])
			}
		}
	}
	return FromPacked(k, p)
}
