package cape

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"
)

// SyntheticPCA draws S sites of n rows in R^D from a zero-mean Gaussian
// with a fixed covariance (the set-up of Imtiaz and Sarwate 2018b Section VI-A, whose exact
// spectrum is not printed): Sigma = Q diag(lambda) Q^T with lambda_i =
// exp(-(i-1)/10) (a geometric decay: the top 50 of D = 200 directions hold
// 99% of the variance) and Q a random orthonormal basis. All rows are
// divided by the largest row norm so that every row has norm <= 1.
func SyntheticPCA(S, n, d int, r *rand.Rand) ([]*mat.Dense, error) {
	if S < 1 || n < 1 || d < 1 {
		return nil, fmt.Errorf("cape: bad synthetic sizes S=%d N=%d D=%d", S, n, d)
	}
	g := mat.NewDense(d, d, nil)
	for i := 0; i < d; i++ {
		for j := 0; j < d; j++ {
			g.Set(i, j, r.NormFloat64())
		}
	}
	var qr mat.QR
	qr.Factorize(g)
	var Q mat.Dense
	qr.QTo(&Q)
	// L = Q diag(sqrt(lambda)): x = L z has covariance Sigma.
	L := mat.NewDense(d, d, nil)
	for j := 0; j < d; j++ {
		s := math.Sqrt(math.Exp(-float64(j) / 10))
		for i := 0; i < d; i++ {
			L.Set(i, j, Q.At(i, j)*s)
		}
	}
	out := make([]*mat.Dense, S)
	maxNorm := 0.0
	for s := range out {
		z := mat.NewDense(n, d, nil)
		for i := 0; i < n; i++ {
			for j := 0; j < d; j++ {
				z.Set(i, j, r.NormFloat64())
			}
		}
		x := mat.NewDense(n, d, nil)
		x.Mul(z, L.T())
		for i := 0; i < n; i++ {
			maxNorm = math.Max(maxNorm, mat.Norm(x.RowView(i), 2))
		}
		out[s] = x
	}
	for _, x := range out {
		x.Scale(1/maxNorm, x)
	}
	return out, nil
}
