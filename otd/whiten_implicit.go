package otd

import (
	"errors"
	"math"
	"math/rand/v2"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/internal/eigen"
	"gonum.org/v1/gonum/mat"
)

// DenseWhitenMax is the largest vocabulary for which Fit forms the dense
// D x D second moment and factorises it with mat.EigenSym (O(D^3) time,
// 8 D^2 bytes; at 400 this takes well under a second). Larger vocabularies
// use randomized subspace iteration on M2 applied implicitly from the
// documents (O(nnz (K+p)) per iteration), which never forms M2 and agrees
// with the dense whitening to about 1e-6 (TestWhitenImplicitMatchesDense).
const DenseWhitenMax = 400

// m2Apply computes dst = M2 X for the corpus moment M2 (alpha0 = 0:
// single topic) without forming M2. X is D x p.
func m2Apply(c *data.Corpus, alpha0 float64, X *mat.Dense, dst *mat.Dense) {
	d, p := X.Dims()
	dst.Zero()
	N := float64(c.NumDocs())
	a, _, _ := ldaCoef(alpha0)
	xr := X.RawMatrix()
	dr := dst.RawMatrix()
	cx := make([]float64, p)
	s := make([]float64, d)
	sx := make([]float64, p)
	for n := 0; n < c.NumDocs(); n++ {
		ws, cs := c.Doc(n)
		l := float64(c.DocLen(n))
		for j := range cx {
			cx[j] = 0
		}
		for i, w := range ws {
			row := xr.Data[int(w)*xr.Stride : int(w)*xr.Stride+p]
			x := float64(cs[i])
			for j, v := range row {
				cx[j] += x * v
			}
		}
		// (c c^T - diag c) X / (l(l-1)) / N  and  + a/(N(N-1)) m m^T X
		f := 1 / (l * (l - 1) * N)
		fy := 0.0
		if a != 0 {
			fy = a / (N * (N - 1) * l * l)
		}
		for i, w := range ws {
			x := float64(cs[i])
			row := xr.Data[int(w)*xr.Stride : int(w)*xr.Stride+p]
			out := dr.Data[int(w)*dr.Stride : int(w)*dr.Stride+p]
			for j := range out {
				out[j] += f*x*(cx[j]-row[j]) + fy*x*cx[j]
			}
			if a != 0 {
				s[w] += x / l
			}
		}
	}
	if a != 0 {
		// - a/(N(N-1)) S S^T X
		for i, si := range s {
			if si == 0 {
				continue
			}
			row := xr.Data[i*xr.Stride : i*xr.Stride+p]
			for j, v := range row {
				sx[j] += si * v
			}
		}
		g := a / (N * (N - 1))
		for i, si := range s {
			if si == 0 {
				continue
			}
			out := dr.Data[i*dr.Stride : i*dr.Stride+p]
			for j := range out {
				out[j] -= g * si * sx[j]
			}
		}
	}
}

// whitenImplicit computes W for the corpus M2 by randomized subspace
// iteration (Halko, Martinsson, Tropp 2011, Alg. 4.4) with oversampling
// p = 10: Z = M2 Q, Rayleigh-Ritz on Q^T Z, Q = orth(Z), until the top-k
// Ritz values change by less than 1e-10 of the largest between two
// iterations (eigenvalue errors are quadratic in the subspace error, so
// this leaves a subspace error around 1e-5) or after 25 iterations.
func whitenImplicit(c *data.Corpus, alpha0 float64, k int, src rand.Source, prog ProgressFunc) (*mat.Dense, error) {
	d := c.V()
	p := k + 10 // oversampling of 10 columns (Halko et al. recommend 5-10)
	if p > d {
		p = d
	}
	const maxIters = 25
	const relTol = 1e-10
	rng := rand.New(src)
	Q := mat.NewDense(d, p, nil)
	for i := 0; i < d; i++ {
		for j := 0; j < p; j++ {
			Q.Set(i, j, rng.NormFloat64())
		}
	}
	if err := orthonormalize(Q); err != nil {
		return nil, err
	}
	Z := mat.NewDense(d, p, nil)
	var prev, vals []float64
	var vecs *mat.Dense
	for it := 0; ; it++ {
		m2Apply(c, alpha0, Q, Z)
		var B mat.Dense
		B.Mul(Q.T(), Z)
		Bs := mat.NewSymDense(p, nil)
		for i := 0; i < p; i++ {
			for j := i; j < p; j++ {
				Bs.SetSym(i, j, (B.At(i, j)+B.At(j, i))/2)
			}
		}
		var ok bool
		if vals, vecs, ok = eigen.Decompose(Bs, true); !ok {
			return nil, errors.New("otd: eigendecomposition of the projected M2 failed")
		}
		top := eigen.Largest(vals, k, eigen.ByValue)
		if prog != nil {
			prog("whitening", it+1, maxIters)
		}
		if it+1 >= maxIters || (prev != nil && ritzConverged(prev, top, relTol)) {
			break
		}
		prev = top
		if err := orthonormalize(Z); err != nil {
			return nil, err
		}
		Q, Z = Z, Q
	}
	if prog != nil {
		prog("whitening", maxIters, maxIters)
	}
	var U mat.Dense
	U.Mul(Q, vecs)
	return whitenFromEigen(vals, &U, k)
}

func ritzConverged(prev, cur []float64, tol float64) bool {
	scale := math.Abs(cur[0])
	for i := range cur {
		if math.Abs(cur[i]-prev[i]) > tol*scale {
			return false
		}
	}
	return true
}

// orthonormalize replaces the columns of m (D x p, D >= p) by an
// orthonormal basis of their span by modified Gram-Schmidt applied twice
// ("twice is enough", Giraud et al. 2005), in O(D p^2) time and no extra
// D x D memory (gonum's QR only offers the full D x D Q factor).
func orthonormalize(m *mat.Dense) error {
	d, p := m.Dims()
	col := make([][]float64, p)
	for j := range col {
		col[j] = mat.Col(nil, j, m)
	}
	for pass := 0; pass < 2; pass++ {
		for j := 0; j < p; j++ {
			for i := 0; i < j; i++ {
				var dot float64
				for r := 0; r < d; r++ {
					dot += col[i][r] * col[j][r]
				}
				for r := 0; r < d; r++ {
					col[j][r] -= dot * col[i][r]
				}
			}
			n := norm2(col[j])
			if n == 0 || n != n {
				return errors.New("otd: subspace iteration lost rank (M2 has rank below K + oversampling; use dense whitening or fewer topics)")
			}
			for r := range col[j] {
				col[j][r] /= n
			}
		}
	}
	for j := range col {
		m.SetCol(j, col[j])
	}
	return nil
}
