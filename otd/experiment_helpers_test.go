package otd

// Helpers of the tests that the spectral experiment
// (cmd/dprec/internal/experiment/otdexp) also has: the experiment moved out
// of the package, these stayed for the tests that use them.

import (
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// meanStd returns the mean and sample standard deviation of v (NaN for
// an empty v, standard deviation 0 for one value).
func meanStd(v []float64) (float64, float64) {
	if len(v) == 0 {
		return math.NaN(), math.NaN()
	}
	m := floats.Sum(v) / float64(len(v))
	if len(v) == 1 {
		return m, 0
	}
	var s float64
	for _, x := range v {
		s += (x - m) * (x - m)
	}
	return m, math.Sqrt(s / float64(len(v)-1))
}

// randomBallColumns returns k columns drawn uniformly from the unit ball
// of R^d (so ||a_k|| <= 1, Imtiaz and Sarwate 2018b sec. V).
func randomBallColumns(d, k int, r *rand.Rand) *mat.Dense {
	A := mat.NewDense(d, k, nil)
	for c := 0; c < k; c++ {
		u := dptpmRandomUnit(r, d)
		rad := math.Pow(r.Float64(), 1/float64(d))
		for i := range u {
			A.Set(i, c, u[i]*rad)
		}
	}
	return A
}

// syntheticMOGRows draws n rows t = a_h + z, h uniform, z ~ N(0, sigma2
// I), from the mixture with mean columns A, then divides
// every row by the public constant zeta = 1 + sqrt(sigma2) (sqrt(D) + 3)
// (Imtiaz and Sarwate 2018b app. C: "divide the samples by a constant zeta such that
// ||t_n|| <= 1") and clips the rare row still longer than 1 to the unit
// sphere. It returns the rows and zeta; the scaled data have means a_k/zeta
// and variance sigma2/zeta^2.
// (SyntheticMoG divides by the largest row norm instead, which depends on
// the data; a public zeta keeps the experiment's scaling data-free.)
func syntheticMOGRows(A *mat.Dense, n int, sigma2 float64, r *rand.Rand) (*mat.Dense, float64) {
	d, k := A.Dims()
	sd := math.Sqrt(sigma2)
	zeta := 1 + sd*(math.Sqrt(float64(d))+3)
	X := mat.NewDense(n, d, nil)
	for i := 0; i < n; i++ {
		h := r.IntN(k)
		x := X.RawRowView(i)
		for j := range x {
			x[j] = (A.At(j, h) + sd*r.NormFloat64()) / zeta
		}
		if nr := floats.Norm(x, 2); nr > 1 {
			floats.Scale(1/nr, x)
		}
	}
	return X, zeta
}
