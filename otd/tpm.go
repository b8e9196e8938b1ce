package otd

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"
)

// TPMOptions configures the robust tensor power method (Wang and Anandkumar 2016,
// Algorithm 1). Zero fields take the documented defaults.
type TPMOptions struct {
	// Restarts is L, the number of random starting vectors per component
	// (default 20; Anandkumar et al. 2014 take L = poly(k) log(1/eta), and
	// 20 finds every component of an orthogonal K <= 50 tensor in our tests).
	Restarts int
	// Iters is R (and N, the refinement iterations from the best restart):
	// the maximum number of power updates u <- T(I,u,u)/||T(I,u,u)|| (default 100).
	Iters int
	// Tol stops an iteration early once ||u_new - u||_2 < Tol (default 1e-12;
	// negative disables early stopping).
	Tol float64
}

func (o TPMOptions) withDefaults() TPMOptions {
	if o.Restarts <= 0 {
		o.Restarts = 20
	}
	if o.Iters <= 0 {
		o.Iters = 100
	}
	if o.Tol == 0 {
		o.Tol = 1e-12
	}
	return o
}

// PowerIteration runs the robust tensor power method with deflation on the
// symmetric K x K x K tensor T (Wang and Anandkumar 2016 Algorithm 1): for each of k
// components it draws opts.Restarts random unit vectors, runs opts.Iters
// power updates from each, keeps the one with the largest T(u,u,u), runs
// opts.Iters more updates from it, sets lambda = T(u,u,u) and deflates
// T <- T - lambda u(x)u(x)u. T is not modified (a copy is deflated).
//
// It returns the eigenvalues (in order of extraction, which is by
// decreasing lambda for an orthogonally decomposable tensor) and V, K x k,
// whose columns are the unit eigenvectors. It returns an error when k is
// not in [1, K] or the tensor holds NaN/Inf. src seeds the restarts.
func PowerIteration(T *SymTensor, k int, opts TPMOptions, src rand.Source) (lambda []float64, V *mat.Dense, err error) {
	if T == nil {
		return nil, nil, errors.New("otd: nil tensor")
	}
	d := T.D
	if k < 1 || k > d {
		return nil, nil, fmt.Errorf("otd: %d components requested from a %d-dimensional tensor", k, d)
	}
	for _, v := range T.Data {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, nil, errors.New("otd: tensor holds NaN or Inf")
		}
	}
	opts = opts.withDefaults()
	rng := rand.New(src)
	work := T.Clone()
	lambda = make([]float64, k)
	V = mat.NewDense(d, k, nil)
	u := make([]float64, d)
	best := make([]float64, d)
	tmp := make([]float64, d)
	for c := 0; c < k; c++ {
		bestVal := math.Inf(-1)
		for l := 0; l < opts.Restarts; l++ {
			randomUnit(rng, u)
			powerUpdates(work, u, tmp, opts.Iters, opts.Tol)
			if val := work.Tuuu(u); val > bestVal {
				bestVal = val
				copy(best, u)
			}
		}
		powerUpdates(work, best, tmp, opts.Iters, opts.Tol)
		lam := work.Tuuu(best)
		lambda[c] = lam
		V.SetCol(c, best)
		work.AddRankOne(-lam, best)
	}
	return lambda, V, nil
}

// powerUpdates runs at most iters updates u <- T(I,u,u)/||.|| in place,
// stopping when the step is below tol. A zero T(I,u,u) leaves u unchanged.
func powerUpdates(t *SymTensor, u, tmp []float64, iters int, tol float64) {
	for it := 0; it < iters; it++ {
		tmp = t.TIuu(u, tmp)
		n := norm2(tmp)
		if n == 0 {
			return
		}
		var step float64
		for i := range u {
			x := tmp[i] / n
			step += (x - u[i]) * (x - u[i])
			u[i] = x
		}
		if math.Sqrt(step) < tol {
			return
		}
	}
}

func randomUnit(rng *rand.Rand, u []float64) {
	for {
		for i := range u {
			u[i] = rng.NormFloat64()
		}
		if n := norm2(u); n > 0 {
			for i := range u {
				u[i] /= n
			}
			return
		}
	}
}

func norm2(x []float64) float64 {
	var s float64
	for _, v := range x {
		s += v * v
	}
	return math.Sqrt(s)
}
