package otd

import (
	"fmt"
	"math/rand/v2"

	"github.com/dprec/dprec/perturb"
	"gonum.org/v1/gonum/mat"
)

// Private spectral method names (FitOptions.Method).
const (
	MethodAGN              Method = "agn"
	MethodAVN              Method = "avn"
	MethodDPTPM            Method = "dptpm"
	MethodLDAInput         Method = "lda-input"
	MethodLDAWhitened      Method = "lda-whitened"
	MethodLDADecomposition Method = "lda-decomposition"
	MethodLDAOutput        Method = "lda-output"
)

// privateProblem is the data-dependent input of the moment-perturbing
// private methods: dense moments, their sensitivities and the DP-TPM query
// sensitivities given the (already private) whitening matrix.
type privateProblem struct {
	M2      *mat.SymDense
	M3      *SymTensor
	K       int
	Sens    Sensitivities
	TPMSens func(W *mat.Dense) DPTPMSensitivity
}

// privateOutput is what a private method returns before packaging.
type privateOutput struct {
	W        *mat.Dense // private whitening matrix
	Lambda   []float64
	V        *mat.Dense // K x K eigenvectors (columns)
	Releases []perturb.Release
	Counts   []int // repetitions of each release (1 except DP-TPM queries)
	// Composition names the accounting of the total.
	Composition string
}

// runPrivateMoments runs AGN, AVN or DP-TPM on p with budget b. Noise and
// restarts are drawn from r.
func runPrivateMoments(method Method, p *privateProblem, b PrivacyBudget, tpm TPMOptions, dp DPTPMOptions, r *rand.Rand) (*privateOutput, error) {
	switch method {
	case MethodAGN, MethodAVN:
		o, err := agnAvn(p.M2, p.M3, p.K, method == MethodAVN, p.Sens, b, r)
		if err != nil {
			return nil, err
		}
		lam, V, err := PowerIteration(o.T, p.K, tpm, r)
		if err != nil {
			return nil, err
		}
		return &privateOutput{W: o.W, Lambda: lam, V: V, Releases: o.Releases, Counts: []int{1, 1},
			Composition: "basic (Imtiaz and Sarwate 2018a Theorem 1: (eps1+eps2, delta1+delta2))"}, nil
	case MethodDPTPM:
		e1, d1, e2, d2, err := b.stages(false)
		if err != nil {
			return nil, err
		}
		m2n, rel2, err := AnalyzeGaussM2(p.M2, p.Sens.M2, e1, d1, b.Calibration, r)
		if err != nil {
			return nil, err
		}
		rel2.Derivation = p.Sens.M2Ref
		W, err := WhitenSVD(m2n, p.K)
		if err != nil {
			return nil, err
		}
		T := p.M3.Multilinear(W)
		dp.Epsilon, dp.Delta = e2, d2
		cal := b.Calibration
		res, err := DPTPM(T, p.K, p.TPMSens(W), dp, func(s, e, d float64) (float64, error) {
			return perturb.GaussianSigma(s, e, d, cal)
		}, r)
		if err != nil {
			return nil, err
		}
		V := mat.NewDense(p.K, p.K, nil)
		for c, v := range res.V {
			V.SetCol(c, v)
		}
		relQ := perturb.Release{
			What:            "DP-TPM queries T(I,u,u) and T(u,u,u) of the whitened tensor M3(W,W,W)",
			Mechanism:       perturb.MechGaussian,
			SensitivityNorm: "l2",
			// The sensitivity varies with u; Scale is the sigma per unit of
			// sensitivity and Derivation names the bound.
			Sensitivity: 1,
			Derivation:  "go doc otd (S4): data-space bound 2 r_W ||Wu||_inf^2/N (stm) at each query; Wang and Anandkumar 2016 Thm 4.1, Imtiaz and Sarwate 2018a sec. 4",
			Scale:       res.SigmaMultiplier,
			Epsilon:     res.EpsQ,
			Delta:       res.DeltaQ,
			Calibration: string(cal),
			Count:       res.Queries,
		}
		if relQ.Calibration == "" {
			relQ.Calibration = string(perturb.Analytic)
		}
		return &privateOutput{W: W, Lambda: res.Lambda, V: V, Releases: []perturb.Release{rel2, relQ}, Counts: []int{1, res.Queries},
			Composition: fmt.Sprintf("basic over the two stages; advanced composition (Dwork-Roth Thm 3.20, slack %.3g) over the %d DP-TPM queries", d2/2, res.Queries)}, nil
	}
	return nil, fmt.Errorf("otd: %q is not a moment-perturbing private method", method)
}
