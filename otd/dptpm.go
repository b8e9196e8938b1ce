package otd

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/dprec/dprec/perturb"
	"gonum.org/v1/gonum/floats"
)

// DPTPMOptions configures the differentially private robust tensor power
// method (DP-TPM, Wang and Anandkumar 2016 Algorithm 3). The zero value means the
// documented defaults.
type DPTPMOptions struct {
	// L is the number of random restarts per component (default 10).
	L int
	// R is the number of power iterations per restart (default 10).
	R int
	// Epsilon and Delta are the budget of the whole power method (all
	// k L (R+1) noisy queries together), composed with the advanced
	// composition theorem (Dwork and Roth 2014, Thm 3.20): each query gets
	// delta' = Delta/(2 kL(R+1)) and the largest epsilon' with
	// sqrt(2 K ln(2/Delta)) eps' + K eps' (e^eps' - 1) <= Epsilon.
	Epsilon, Delta float64
}

const (
	// dptpmDefaultL and dptpmDefaultR: Wang and Anandkumar 2016 Theorem 4.2 asks for
	// L = Theta(k log k) and R = Theta(log(lambda_max d)); 10 and 10 are
	// the values of the non-private defaults of this package and keep the
	// number of noisy queries (and so the per-query noise) moderate.
	dptpmDefaultL = 10
	dptpmDefaultR = 10
)

// DPTPMSensitivity returns the l2 sensitivities of the two queries of
// DP-TPM at the unit vector u: f1(u) = T(I,u,u) (a vector) and
// f2(u) = T(u,u,u) (a scalar), for the tensor T the power method runs on
// and the neighbouring relation of the data it was built from.
type DPTPMSensitivity func(u []float64) (f1, f2 float64)

// DPTPMResult is the output of DPTPM: k noisy eigenpairs and the
// per-query privacy parameters actually used.
type DPTPMResult struct {
	Lambda  []float64   // noisy eigenvalues, in extraction order
	V       [][]float64 // unit eigenvectors, V[i] pairs with Lambda[i]
	Queries int         // k L (R+1)
	EpsQ    float64     // per-query epsilon'
	DeltaQ  float64     // per-query delta'
	// SigmaMultiplier is the Gaussian noise standard deviation per unit of
	// l2 sensitivity: each query's noise is N(0, (SigmaMultiplier*Delta_f)^2 I).
	SigmaMultiplier float64
}

// DPTPM runs the differentially private robust tensor power method of
// Wang and Anandkumar 2016 Algorithm 3 on the symmetric k' x k' x k' tensor t, extracting k
// eigenpairs. Every power-iteration output T(I,u,u) and every eigenvalue
// T(u,u,u) is released with Gaussian noise of standard deviation
// sigmaMult * Delta_f(u), where Delta_f comes from sens (Imtiaz and Sarwate 2018a sec. 4
// replaces the nu of Wang and Anandkumar 2016 by 2/eps' sqrt(2 ln(1.25/delta')), i.e. the
// sensitivity 2 ||u||_inf^2 of its neighbouring relation; sens generalises
// this to the tensor actually decomposed) and sigmaMult =
// gaussSigma(1, eps', delta'). Deflation and normalisation are
// post-processing. The rand.Source src draws the restarts and the noise.
//
// gaussSigma is the Gaussian calibration (sensitivity, epsilon, delta) ->
// sigma; fitPrivate passes perturb.GaussianSigma.
func DPTPM(t *SymTensor, k int, sens DPTPMSensitivity, opts DPTPMOptions, gaussSigma func(s, e, d float64) (float64, error), src rand.Source) (*DPTPMResult, error) {
	if t == nil || t.D < 1 {
		return nil, errors.New("otd: DP-TPM needs a non-empty tensor")
	}
	if k < 1 || k > t.D {
		return nil, fmt.Errorf("otd: DP-TPM: %d components asked of a tensor of side %d", k, t.D)
	}
	L, R := opts.L, opts.R
	if L == 0 {
		L = dptpmDefaultL
	}
	if R == 0 {
		R = dptpmDefaultR
	}
	if L < 1 || R < 1 {
		return nil, fmt.Errorf("otd: DP-TPM restarts L=%d and iterations R=%d must be positive", L, R)
	}
	queries := k * L * (R + 1)
	epsQ, deltaQ, err := AdvancedCompositionSplit(opts.Epsilon, opts.Delta, queries)
	if err != nil {
		return nil, err
	}
	mult, err := gaussSigma(1, epsQ, deltaQ)
	if err != nil {
		return nil, fmt.Errorf("otd: DP-TPM noise calibration: %w", err)
	}
	r := rand.New(src)
	d := t.D
	work := t.Clone() // T - D, deflated in place
	res := &DPTPMResult{Queries: queries, EpsQ: epsQ, DeltaQ: deltaQ, SigmaMultiplier: mult}
	buf := make([]float64, d)
	for i := 0; i < k; i++ {
		bestLam := math.Inf(-1)
		var bestU []float64
		for tau := 0; tau < L; tau++ {
			u := dptpmRandomUnit(r, d)
			for it := 0; it < R; it++ {
				s1, _ := sens(u)
				work.TIuu(u, buf)
				if err := dptpmNoise(buf, s1, mult, r); err != nil {
					return nil, err
				}
				nrm := floats.Norm(buf, 2)
				if nrm == 0 || math.IsNaN(nrm) || math.IsInf(nrm, 0) {
					// A zero (or overflowing) noisy vector carries no
					// direction: restart from a fresh random point, which
					// is independent of the data (post-processing).
					u = dptpmRandomUnit(r, d)
					continue
				}
				for j := range u {
					u[j] = buf[j] / nrm
				}
			}
			_, s2 := sens(u)
			lamBuf := []float64{work.Tuuu(u)}
			if err := dptpmNoise(lamBuf, s2, mult, r); err != nil {
				return nil, err
			}
			lam := lamBuf[0]
			if lam > bestLam {
				bestLam, bestU = lam, u
			}
		}
		res.Lambda = append(res.Lambda, bestLam)
		res.V = append(res.V, bestU)
		work.AddRankOne(-bestLam, bestU)
	}
	return res, nil
}

// dptpmNoise adds the query's Gaussian noise to x in place through
// perturb's Gaussian mechanism (discrete Gaussian on a grid, the package's
// floating-point defence), with l2 sensitivity sens and standard deviation
// mult*sens. A zero sensitivity (a query that does not depend on the data)
// gets no noise.
func dptpmNoise(x []float64, sens, mult float64, r *rand.Rand) error {
	if sens == 0 {
		return nil
	}
	g, err := perturb.NewGaussianSigma(sens, mult*sens)
	if err != nil {
		return fmt.Errorf("otd: DP-TPM query noise: %w", err)
	}
	g.AddTo(x, r)
	return nil
}

// dptpmRandomUnit draws a vector uniformly from the unit sphere of R^d.
func dptpmRandomUnit(r *rand.Rand, d int) []float64 {
	u := make([]float64, d)
	for {
		for j := range u {
			u[j] = r.NormFloat64()
		}
		if n := floats.Norm(u, 2); n > 0 {
			floats.Scale(1/n, u)
			return u
		}
	}
}

// AdvancedCompositionSplit returns the per-query (eps', delta') that make
// q adaptively composed (eps', delta')-DP queries (eps, delta)-DP by the
// advanced composition theorem (Dwork and Roth 2014, Thm 3.20, with
// slack delta/2): delta' = delta/(2q) and eps' is the largest value with
// sqrt(2 q ln(2/delta)) eps' + q eps' (e^eps' - 1) <= eps, found by
// bisection. Seed 003 uses the closed form eps/sqrt(q(4+ln(2/delta))),
// whose composed epsilon exceeds the budget: at the default q = 550
// queries (K = 5, L = 10, R = 10) by 8% at (eps, delta) = (0.1, 0.01), 18%
// at (1, 0.01), 29% at (1, 1e-5) and 122% at (10, 0.01)
// (TestSeed003ClosedFormOvershoot), so the exact inversion is used instead.
func AdvancedCompositionSplit(eps, delta float64, q int) (epsQ, deltaQ float64, err error) {
	if math.IsNaN(eps) || math.IsInf(eps, 0) || eps <= 0 {
		return 0, 0, fmt.Errorf("otd: DP-TPM epsilon is %v, must be positive and finite", eps)
	}
	if math.IsNaN(delta) || delta <= 0 || delta >= 1 {
		return 0, 0, fmt.Errorf("otd: DP-TPM delta is %v, must be in (0, 1)", delta)
	}
	if q < 1 {
		return 0, 0, fmt.Errorf("otd: DP-TPM query count %d must be positive", q)
	}
	fq := float64(q)
	total := func(e float64) float64 { return perturb.AdvancedComposition(e, q, delta/2) }
	lo, hi := 0.0, eps // total(e) >= e for q >= 1 and delta < 1, so eps' <= eps
	for it := 0; it < 200; it++ {
		mid := (lo + hi) / 2
		if total(mid) <= eps {
			lo = mid
		} else {
			hi = mid
		}
	}
	if lo <= 0 {
		return 0, 0, fmt.Errorf("otd: DP-TPM epsilon %v is too small for %d queries", eps, q)
	}
	return lo, delta / (2 * fq), nil
}
