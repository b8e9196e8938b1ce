package otd

import (
	"math"

	"gonum.org/v1/gonum/mat"
)

// EComp returns the component error of Imtiaz and Sarwate 2018a sec. 4 for topic models:
// e_comp = (1/K) sum_k min_k' ||a^_k - a_k'||_2 over the K estimated
// columns a^_k of Aest and the true columns a_k' of Atrue, after the
// post-processing Imtiaz and Sarwate 2018a applies to every method: negative entries of
// each estimated column are set to 0 and the column is renormalised to sum
// 1 (a column with no positive entry becomes uniform). The minimum is over
// all true columns (not a one-to-one matching), as in the paper. Atrue is
// not modified. It panics if the row counts differ.
func EComp(Atrue, Aest *mat.Dense) float64 {
	d, k := Aest.Dims()
	P := mat.NewDense(d, k, nil)
	for c := 0; c < k; c++ {
		var s float64
		for i := 0; i < d; i++ {
			if v := Aest.At(i, c); v > 0 {
				s += v
			}
		}
		for i := 0; i < d; i++ {
			v := Aest.At(i, c)
			switch {
			case s == 0:
				P.Set(i, c, 1/float64(d))
			case v > 0:
				P.Set(i, c, v/s)
			}
		}
	}
	return ECompRaw(Atrue, P)
}

// ECompRaw is EComp without the simplex post-processing, for components
// that are not probability vectors (Gaussian-mixture means).
func ECompRaw(Atrue, Aest *mat.Dense) float64 {
	d, k := Aest.Dims()
	dt, kt := Atrue.Dims()
	if d != dt {
		panic("otd: EComp row mismatch")
	}
	var tot float64
	for c := 0; c < k; c++ {
		best := math.Inf(1)
		for t := 0; t < kt; t++ {
			var s float64
			for i := 0; i < d; i++ {
				x := Aest.At(i, c) - Atrue.At(i, t)
				s += x * x
			}
			best = math.Min(best, math.Sqrt(s))
		}
		tot += best
	}
	return tot / float64(k)
}
