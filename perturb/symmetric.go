package perturb

import (
	"fmt"
	"math/rand/v2"

	"github.com/dprec/dprec/internal/packed"
	"gonum.org/v1/gonum/mat"
)

// SymmetricGaussianMatrix returns a d x d symmetric noise matrix E whose
// upper triangle including the diagonal is i.i.d. N(0, sigma^2) (drawn as
// discrete Gaussians on the grid of Granularity(sigma)) and whose lower
// triangle mirrors it: the Analyze-Gauss step of seeds 000 and 002 (Dwork,
// Talwar, Thakurta and Zhang 2014). Diagonal and off-diagonal entries have
// the same variance sigma^2. The guarantee is that of the Gaussian mechanism
// on the vector of the d(d+1)/2 upper-triangle entries, so sigma must be
// calibrated to the l2 sensitivity of that vector (at most the Frobenius
// sensitivity of the full matrix). It panics if d < 1 or sigma is not
// positive and finite (shape and calibration are the caller's to validate).
func SymmetricGaussianMatrix(d int, sigma float64, r *rand.Rand) *mat.SymDense {
	if d < 1 {
		panic(fmt.Sprintf("perturb: SymmetricGaussianMatrix: d = %d < 1", d))
	}
	g := Granularity(sigma)
	s := sigma / g
	e := mat.NewSymDense(d, nil)
	for i := 0; i < d; i++ {
		for j := i; j < d; j++ {
			e.SetSym(i, j, float64(discreteGaussian(r, s))*g)
		}
	}
	return e
}

// SymPackedSize returns D_sym = C(d+2, 3) = d(d+1)(d+2)/6, the number of
// distinct entries of a symmetric d x d x d tensor.
func SymPackedSize(d int) int { return packed.Len(d) }

// SymmetricTensorFromPacked returns the dense symmetric d x d x d tensor
// (row-major: entry (i, j, k) at index (i*d + j)*d + k) whose entry (i, j,
// k) is b[p], with p the position of the sorted index triple (i', j', k'),
// i' <= j' <= k', in the lexicographic enumeration of all such triples:
// (0,0,0), (0,0,1), ..., (0,0,d-1), (0,1,1), (0,1,2), ..., (d-1,d-1,d-1)
// (the layout of the module's internal/packed).
// It panics if len(b) != SymPackedSize(d) or d < 1.
func SymmetricTensorFromPacked(d int, b []float64) []float64 {
	if d < 1 || len(b) != SymPackedSize(d) {
		panic(fmt.Sprintf("perturb: SymmetricTensorFromPacked: d = %d, len(b) = %d, want C(d+2,3) = %d", d, len(b), SymPackedSize(d)))
	}
	t := make([]float64, d*d*d)
	packed.Unpack(d, b, t)
	return t
}

// SymPackedIndex returns the position of the sorted triple of (i, j, k) in
// the packed order of SymmetricTensorFromPacked.
func SymPackedIndex(d, i, j, k int) int { return packed.Position(d, i, j, k) }

// GaussianPacked returns a packed vector b of SymPackedSize(d) i.i.d.
// N(0, sigma^2) entries (discrete Gaussians on the grid), the AGN noise of
// Imtiaz and Sarwate 2018a step 5.
func GaussianPacked(d int, sigma float64, r *rand.Rand) []float64 {
	g := Granularity(sigma)
	b := make([]float64, SymPackedSize(d))
	for i := range b {
		b[i] = float64(discreteGaussian(r, sigma/g)) * g
	}
	return b
}

// L2Packed returns a packed vector b with density proportional to
// exp(-epsilon ||b||_2 / Delta) in SymPackedSize(d) dimensions, the AVN
// noise of Imtiaz and Sarwate 2018a step 5 (pure epsilon-DP for a packed vector of l2
// sensitivity Delta).
func L2Packed(d int, l2Sensitivity, epsilon float64, r *rand.Rand) ([]float64, error) {
	m, err := NewL2Noise(l2Sensitivity, epsilon, SymPackedSize(d))
	if err != nil {
		return nil, err
	}
	b := make([]float64, m.Dim())
	m.Sample(b, r)
	return b, nil
}
