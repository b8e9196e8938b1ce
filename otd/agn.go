package otd

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/dprec/dprec/internal/eigen"
	"github.com/dprec/dprec/perturb"
	"gonum.org/v1/gonum/mat"
)

// PrivacyBudget is the (epsilon, delta) of a two-stage private spectral
// method and its split between the stages. The zero Split means the
// seeds' equal split.
type PrivacyBudget struct {
	Epsilon, Delta float64
	// Split is the fraction of Epsilon given to the first release (M2 for
	// AGN, AVN, DP-TPM and lda-*); the rest goes to the second. For
	// Gaussian second stages Delta is split in the same proportion; for AVN
	// (pure epsilon-DP second stage) all of Delta goes to M2, as in seed
	// 000 Algorithm 1 step 1. 0 means 0.5; otherwise it must be in (0, 1).
	Split float64
	// Calibration of the Gaussian mechanisms ("" = perturb.Analytic; seed
	// 000 uses perturb.Classic, valid only for per-stage epsilon <= 1).
	Calibration perturb.Calibration
}

// stages returns (eps1, delta1, eps2, delta2); pureSecond gives all of
// delta to the first stage.
func (b PrivacyBudget) stages(pureSecond bool) (e1, d1, e2, d2 float64, err error) {
	s := b.Split
	if s == 0 {
		s = 0.5
	}
	if !(s > 0 && s < 1) {
		return 0, 0, 0, 0, fmt.Errorf("otd: budget split %v must be in (0, 1)", b.Split)
	}
	if err := perturb.CheckEpsilon(b.Epsilon); err != nil {
		return 0, 0, 0, 0, err
	}
	if err := perturb.CheckPositiveDelta(b.Delta); err != nil {
		return 0, 0, 0, 0, err
	}
	e1, e2 = s*b.Epsilon, (1-s)*b.Epsilon
	if pureSecond {
		return e1, b.Delta, e2, 0, nil
	}
	return e1, s * b.Delta, e2, (1 - s) * b.Delta, nil
}

// AnalyzeGaussM2 returns M2 + E with E symmetric, its upper triangle
// i.i.d. Gaussian calibrated to (eps, delta) for l2 sensitivity sens of the
// upper-triangle vector (Analyze Gauss, Imtiaz and Sarwate 2018a Algorithm 1 steps 1-2),
// drawn by perturb's Gaussian mechanism (grid-snapped), and the record of
// the release.
func AnalyzeGaussM2(M2 *mat.SymDense, sens, eps, delta float64, cal perturb.Calibration, r *rand.Rand) (*mat.SymDense, perturb.Release, error) {
	g, err := perturb.NewGaussian(sens, eps, delta, cal)
	if err != nil {
		return nil, perturb.Release{}, fmt.Errorf("otd: noise on M2: %w", err)
	}
	d := M2.SymmetricDim()
	v := packUpper(d, M2.At)
	g.AddTo(v, r)
	out := mat.NewSymDense(d, nil)
	p := 0
	for i := 0; i < d; i++ {
		for j := i; j < d; j++ {
			out.SetSym(i, j, v[p])
			p++
		}
	}
	return out, g.Release("M2 (upper triangle, D(D+1)/2 entries)"), nil
}

// PerturbM3 returns the symmetric tensor whose packed entries (i <= j <=
// k) are those of M3 plus a noise vector b (Imtiaz and Sarwate 2018a Algorithm 1 steps
// 5-7): i.i.d. Gaussian for AGN (avn false, calibrated to (eps, delta)) or
// the l2-norm density exp(-eps ||b||/sens) for AVN (pure eps-DP; delta must
// be 0). Both come from perturb and are snapped to its grid.
func PerturbM3(M3 *SymTensor, sens, eps, delta float64, avn bool, cal perturb.Calibration, r *rand.Rand) (*SymTensor, perturb.Release, error) {
	b := M3.Packed()
	var rel perturb.Release
	if avn {
		if err := perturb.CheckNoDelta(delta); err != nil {
			return nil, rel, fmt.Errorf("otd: AVN noise on M3: %w", err)
		}
		m, err := perturb.NewL2Noise(sens, eps, len(b))
		if err != nil {
			return nil, rel, fmt.Errorf("otd: AVN noise on M3: %w", err)
		}
		m.AddTo(b, r)
		rel = m.Release("M3 (packed, C(D+2,3) entries)")
	} else {
		g, err := perturb.NewGaussian(sens, eps, delta, cal)
		if err != nil {
			return nil, rel, fmt.Errorf("otd: AGN noise on M3: %w", err)
		}
		g.AddTo(b, r)
		rel = g.Release("M3 (packed, C(D+2,3) entries)")
	}
	t, err := FromPacked(M3.D, b)
	if err != nil {
		return nil, rel, err
	}
	return t, rel, nil
}

// WhitenSVD returns W = U |D|^{-1/2} from the k eigenpairs of the symmetric
// M2 of largest absolute value (SVD(K) of Imtiaz and Sarwate 2018a Algorithm 1 steps 3-4).
// On a noisy M2 some of those eigenvalues can be negative; the singular
// values |lambda| are used, as an SVD would. It returns an error only when
// the k-th singular value is zero (relative 1e-12) or the factorisation
// fails.
func WhitenSVD(M2 *mat.SymDense, k int) (*mat.Dense, error) {
	d := M2.SymmetricDim()
	if k < 1 || k > d {
		return nil, fmt.Errorf("otd: cannot whiten to %d dimensions a %d x %d moment", k, d, d)
	}
	vals, vecs, ok := eigen.Top(M2, k, eigen.ByAbs)
	if !ok {
		return nil, errors.New("otd: eigendecomposition of the noisy M2 failed")
	}
	top, kth := math.Abs(vals[0]), math.Abs(vals[k-1])
	// 1e-12 relative: below it the direction is rounding noise.
	if !(kth > 1e-12*top) {
		return nil, fmt.Errorf("otd: the %d-th singular value of M2 is %.3g (largest %.3g): rank below %d", k, kth, top, k)
	}
	W := mat.NewDense(d, k, nil)
	for c := 0; c < k; c++ {
		s := 1 / math.Sqrt(math.Abs(vals[c]))
		for i := 0; i < d; i++ {
			W.Set(i, c, vecs.At(i, c)*s)
		}
	}
	return W, nil
}

// agnOutcome is the private whitened problem of AGN / AVN.
type agnOutcome struct {
	W        *mat.Dense // D x K, from the noisy M2
	T        *SymTensor // noisy M3 projected: M3~(W,W,W), K x K x K
	Releases []perturb.Release
}

// agnAvn runs Imtiaz and Sarwate 2018a Algorithm 1 on dense moments: noisy M2 (Analyze
// Gauss, (eps1, delta1)), W from its SVD(K), noisy packed M3 (AGN Gaussian
// (eps2, delta2) or AVN l2-norm eps2), and T = M3~(W,W,W). All noise is
// drawn from r.
func agnAvn(M2 *mat.SymDense, M3 *SymTensor, k int, avn bool, sens Sensitivities, b PrivacyBudget, r *rand.Rand) (*agnOutcome, error) {
	if M2.SymmetricDim() != M3.D {
		return nil, fmt.Errorf("otd: M2 is %d x %d but M3 has side %d", M2.SymmetricDim(), M2.SymmetricDim(), M3.D)
	}
	e1, d1, e2, d2, err := b.stages(avn)
	if err != nil {
		return nil, err
	}
	m2n, rel2, err := AnalyzeGaussM2(M2, sens.M2, e1, d1, b.Calibration, r)
	if err != nil {
		return nil, err
	}
	rel2.Derivation = sens.M2Ref
	W, err := WhitenSVD(m2n, k)
	if err != nil {
		return nil, err
	}
	m3n, rel3, err := PerturbM3(M3, sens.M3, e2, d2, avn, b.Calibration, r)
	if err != nil {
		return nil, err
	}
	rel3.Derivation = sens.M3Ref
	return &agnOutcome{W: W, T: m3n.Multilinear(W), Releases: []perturb.Release{rel2, rel3}}, nil
}
