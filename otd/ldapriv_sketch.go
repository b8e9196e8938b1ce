package otd

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/internal/eigen"
	"github.com/dprec/dprec/perturb"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// sketchOversample: the sketch has 2K + sketchOversample columns (Halko,
// Martinsson and Tropp 2011 recommend at least K + 5 to K + 10; the extra
// K columns make the one-pass range finder robust to the sketch noise).
const sketchOversample = 10

// privateWhitenSketch computes a private whitening matrix for a large
// vocabulary without forming M2 or a D x D noise matrix (derivation (S7)
// in the package documentation ("# Sensitivities")): with Omega a public random D x p matrix with
// orthonormal columns (p = 2K + 10), it releases Y = M2 Omega + G (G i.i.d.
// Gaussian, budget (eps/2, delta/2)), takes Q = orth(Y), releases
// B = Q^T M2 Q + H (H symmetric Gaussian on the upper triangle, budget
// (eps/2, delta/2)), and returns W = Q U_K |Lambda_K|^{-1/2} from the K
// eigenpairs of B of largest absolute value. Both releases have l2
// sensitivity at most the Frobenius sensitivity sensF of M2, because
// ||Delta Omega||_F <= ||Delta||_F ||Omega||_2 = ||Delta||_F and
// ||Q^T Delta Q||_F <= ||Delta||_F. M2 is applied implicitly from the
// corpus (m2Apply, O(nnz p) per product).
func privateWhitenSketch(c *data.Corpus, alpha0 float64, k int, sensF, eps, delta float64, cal perturb.Calibration, r *rand.Rand) (*mat.Dense, []perturb.Release, error) {
	W, rels, _, err := privateWhitenSketchEig(c, alpha0, k, sensF, eps, delta, cal, r)
	return W, rels, err
}

// privateWhitenSketchEig is privateWhitenSketch that also returns the K largest
// singular values of the noisy sketch Y (released values), descending, for the swamp
// warning of (S10).
func privateWhitenSketchEig(c *data.Corpus, alpha0 float64, k int, sensF, eps, delta float64, cal perturb.Calibration, r *rand.Rand) (*mat.Dense, []perturb.Release, []float64, error) {
	d := c.V()
	p := 2*k + sketchOversample
	if p > d {
		p = d
	}
	omega := mat.NewDense(d, p, nil)
	for i := 0; i < d; i++ {
		for j := 0; j < p; j++ {
			omega.Set(i, j, r.NormFloat64())
		}
	}
	omega = orthonormalColumns(omega)
	Y := mat.NewDense(d, p, nil)
	m2Apply(c, alpha0, omega, Y)
	g1, err := perturb.NewGaussian(sensF, eps/2, delta/2, cal)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("otd: noise on the M2 sketch: %w", err)
	}
	g1.AddTo(Y.RawMatrix().Data, r) // a new Dense is contiguous (stride p)
	rel1 := g1.Release("M2 sketch M2 Omega (D x (2K+10), Omega public orthonormal)")
	rel1.Derivation = "go doc otd (S7): ||Delta M2 Omega||_F <= ||Delta M2||_F <= Delta_2(l1)"
	var yty mat.SymDense
	yty.SymOuterK(1, Y.T())
	topY, err := topAbsEigen(&yty, k)
	if err != nil {
		return nil, nil, nil, err
	}
	for i, v := range topY {
		topY[i] = math.Sqrt(v)
	}
	Q := orthonormalColumns(Y)
	Z := mat.NewDense(d, p, nil)
	m2Apply(c, alpha0, Q, Z)
	var B mat.Dense
	B.Mul(Q.T(), Z)
	Bs := mat.NewSymDense(p, nil)
	for i := 0; i < p; i++ {
		for j := i; j < p; j++ {
			Bs.SetSym(i, j, (B.At(i, j)+B.At(j, i))/2)
		}
	}
	Bn, rel2, err := AnalyzeGaussM2(Bs, sensF, eps/2, delta/2, cal, r)
	if err != nil {
		return nil, nil, nil, err
	}
	rel2.What = "projected M2 Q^T M2 Q ((2K+10) x (2K+10) upper triangle)"
	rel2.Derivation = "go doc otd (S7): ||Q^T Delta M2 Q||_F <= ||Delta M2||_F <= Delta_2(l1)"
	vals, vecs, ok := eigen.Top(Bn, k, eigen.ByAbs)
	if !ok {
		return nil, nil, nil, errors.New("otd: eigendecomposition of the projected noisy M2 failed")
	}
	if kth := math.Abs(vals[k-1]); !(kth > 1e-12*math.Abs(vals[0])) {
		return nil, nil, nil, fmt.Errorf("otd: the %d-th singular value of the projected noisy M2 is %.3g: rank below %d", k, kth, k)
	}
	UK := mat.NewDense(p, k, nil)
	for cc := 0; cc < k; cc++ {
		s := 1 / math.Sqrt(math.Abs(vals[cc]))
		for i := 0; i < p; i++ {
			UK.Set(i, cc, vecs.At(i, cc)*s)
		}
	}
	W := mat.NewDense(d, k, nil)
	W.Mul(Q, UK)
	return W, []perturb.Release{rel1, rel2}, topY, nil
}

// orthonormalColumns returns an orthonormal basis of the columns of m
// (same shape) by modified Gram-Schmidt applied twice ("twice is enough",
// Giraud et al. 2005), O(D p^2), without the D x D Q of a full QR. A
// column that is numerically dependent (norm below 1e-300) is replaced by
// zeros.
func orthonormalColumns(m *mat.Dense) *mat.Dense {
	r, c := m.Dims()
	cols := make([][]float64, c)
	for j := range cols {
		cols[j] = make([]float64, r)
		mat.Col(cols[j], j, m)
	}
	for pass := 0; pass < 2; pass++ {
		for j := range cols {
			for i := 0; i < j; i++ {
				floats.AddScaled(cols[j], -floats.Dot(cols[i], cols[j]), cols[i])
			}
			if n := floats.Norm(cols[j], 2); n > 1e-300 {
				floats.Scale(1/n, cols[j])
			} else {
				for i := range cols[j] {
					cols[j][i] = 0
				}
			}
		}
	}
	out := mat.NewDense(r, c, nil)
	for j, col := range cols {
		out.SetCol(j, col)
	}
	return out
}
