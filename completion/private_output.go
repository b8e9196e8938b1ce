package completion

// OUTPUT PERTURBATION (Wei et al. 2021, Algorithm 3).
//
// Mechanism: train non-privately; then refit the protected factor (C, the
// last mode by default) exactly by ridge least squares with every other
// parameter fixed, after clipping the rows of the other factors to l2 norm
// rho (RefitFactor, which clips them in the released model too); then add
// to every row c_k independent noise with density proportional to
// exp(-epsilon ||n||/Delta_O) (perturb.L2Noise).
//
// Sensitivity (derivation). For row k let E_k be its observed entries, z_e
// = d xhat_e/d c_k the design vector of entry e (CP: the Hadamard product
// of the other rows; Tucker: the core contracted with them), y_e = x_e -
// o_e the clamped value minus the fixed offset (mean and biases). The refit
// minimises F(c) = sum_{e in E_k} (y_e - <z_e, c>)^2 + lambda ||c||^2, which
// is 2 lambda-strongly convex, and its minimiser is c_k = (Z^T Z + lambda
// I)^{-1} Z^T y. Changing one rating changes exactly one y_e, of one row k,
// by t with |t| <= Delta_r = r_max - r_min (values are clamped). Then c_k'
// - c_k = (Z^T Z + lambda I)^{-1} z_e t, and since the smallest eigenvalue
// of Z^T Z + lambda I is at least lambda,
//
//	||c_k' - c_k|| <= |t| ||z_e|| / lambda <= Delta_r max_e ||z_e|| / lambda = Delta_O,
//
// while every other row is unchanged. Bound on ||z_e||: with the other
// rows clipped to rho, CP gives ||a ∘ b||_2 <= ||a||_2 ||b||_inf <= rho^2
// (rho^(N-1) for order N; rho for order 2), and Tucker gives ||z_e|| <=
// ||G||_F rho^(N-1) (the contraction of G with unit-bounded rows is a
// product of G's unfolding, whose operator norm is at most ||G||_F, with a
// Kronecker product of norm at most rho^(N-1)). Each row is then released
// with l2-norm noise calibrated to Delta_O: pure epsilon-DP per row, and
// since one rating affects one row, the whole of C is epsilon-DP (parallel
// composition). One release, delta = 0.
//
// CAVEAT, stated in the report: the derivation holds with the other
// parameters fixed. They were trained non-privately on the same ratings and
// are released too, so C's guarantee is conditional on them (it would be
// end-to-end if they were public or trained on other data); the report
// lists every parameter as not covered and explains this. The user unit is
// refused: a user's k ratings can fall in one row and the single-rating
// bound above would not hold.

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/perturb"
)

// OutputPerturbation is the output-perturbation plug-in (Algorithm 3).
type OutputPerturbation struct {
	o      PrivateOptions
	report *perturb.Report
	done   bool
	// DeltaO is the sensitivity used (set by PerturbOutput).
	DeltaO float64
}

var _ Privacy = (*OutputPerturbation)(nil)

// NewOutputPerturbation returns the output-perturbation mode. opts.Clip is
// the row bound rho (default DefaultRowClip), opts.Lambda the refit ridge
// (default DefaultOutputLambda), opts.ProtectMode the refitted mode.
func NewOutputPerturbation(opts *PrivateOptions) (*OutputPerturbation, error) {
	o, err := opts.resolve("output")
	if err != nil {
		return nil, err
	}
	if o.Unit == UnitUser {
		return nil, fmt.Errorf("completion: output perturbation supports only the entry unit (a user's ratings may share one row; see completion/private_output.go)")
	}
	if o.Clip == 0 {
		o.Clip = DefaultRowClip
	}
	if o.Lambda == 0 {
		o.Lambda = DefaultOutputLambda
	}
	return &OutputPerturbation{o: o}, nil
}

// OutputSensitivity returns Delta_O = Delta_r zmax/lambda, zmax the bound on
// the design vectors of the refit of mode pm: rho^(N-1) for CP,
// ||G||_F rho^(N-1) for Tucker.
func OutputSensitivity(m *decomposition.Model, ratingRange, rho, lambda float64) float64 {
	z := math.Pow(rho, float64(m.Order()-1))
	if m.Kind == decomposition.Tucker {
		s := 0.0
		for _, g := range m.Core {
			s += g * g
		}
		z *= math.Sqrt(s)
	}
	return ratingRange * z / lambda
}

// Plan checks the budget for one pure epsilon release per row.
func (p *OutputPerturbation) Plan(train *data.Store, s *Settings) error {
	if p.done {
		return fmt.Errorf("completion: output perturbation: %w: this plug-in already released a model (make a new one)", perturb.ErrBudget)
	}
	pm := p.mode(train.Order())
	if pm >= train.Order() {
		return fmt.Errorf("completion: output perturbation: protected mode %d does not exist in an order-%d store", pm+1, train.Order())
	}
	var acc perturb.Accountant
	// Sensitivity 1 is a placeholder; PerturbOutput records the real Delta_O
	// (the guarantee depends only on epsilon).
	if err := acc.Add(perturb.Release{What: "refitted factor rows", Mechanism: perturb.MechL2, SensitivityNorm: "l2", Sensitivity: 1, Epsilon: p.o.Epsilon}, 1); err != nil {
		return err
	}
	method := p.o.Accounting
	if method != perturb.Basic {
		method = ""
	}
	eps, delta, used, err := perturb.Budget{Epsilon: p.o.Epsilon, Delta: p.o.Delta}.Admit(&acc, method)
	if err != nil {
		return fmt.Errorf("completion: output perturbation: %w", err)
	}
	p.report = baseReport(&p.o, "output", &acc, eps, delta, used)
	p.report.Composition = "single release per row, parallel over rows"
	return nil
}

func (p *OutputPerturbation) mode(order int) int {
	if p.o.ProtectMode > 0 {
		return p.o.ProtectMode - 1
	}
	return order - 1
}

// PerturbInput is a no-op: output perturbation trains on the raw values.
func (p *OutputPerturbation) PerturbInput([]float64, *data.Store) error { return nil }

// GradientTransform returns nil: training is non-private.
func (p *OutputPerturbation) GradientTransform(int) GradientTransform { return nil }

// PerturbOutput refits the protected factor on the clamped ratings with the
// other rows clipped, and adds l2-norm noise to every row.
func (p *OutputPerturbation) PerturbOutput(m *decomposition.Model, train *data.Store) error {
	if p.report == nil {
		return fmt.Errorf("completion: output perturbation: PerturbOutput before Plan")
	}
	if p.done {
		return fmt.Errorf("completion: output perturbation: %w: noise already drawn once", perturb.ErrBudget)
	}
	pm := p.mode(m.Order())
	vals := make([]float64, train.NNZ())
	for i, v := range train.Val {
		vals[i] = clampValue(v, p.o.RatingMin, p.o.RatingMax)
	}
	if err := RefitFactor(m, train, vals, pm, p.o.Lambda, p.o.Clip); err != nil {
		return err
	}
	p.DeltaO = OutputSensitivity(m, p.o.ratingRange(), p.o.Clip, p.o.Lambda)
	if p.DeltaO == 0 { // a zero Tucker core: the refit rows are all 0 whatever the data
		p.DeltaO = math.SmallestNonzeroFloat64
	}
	noise, err := perturb.NewL2Noise(p.DeltaO, p.o.Epsilon, m.Ranks[pm])
	if err != nil {
		return fmt.Errorf("completion: output perturbation: %w", err)
	}
	r := rand.New(p.o.source(streamOutput))
	for i := 0; i < m.Dims[pm]; i++ {
		noise.AddTo(m.Row(pm, i), r)
	}
	p.done = true
	publicClamp(&p.o, m, p.report)
	rel := noise.Release(fmt.Sprintf("rows of the refitted mode-%d factor", pm+1))
	rel.Derivation = fmt.Sprintf("ridge refit, lambda = %g, other rows clipped to %g: Delta_O = (r_max - r_min) max|z|/lambda (completion/private_output.go)", p.o.Lambda, p.o.Clip)
	p.report.Releases = []perturb.Release{rel}
	p.report.NotCovered = paramNames(m.Order(), m.Kind == decomposition.Tucker, m.HasBias)
	p.report.Notes = append(p.report.Notes,
		fmt.Sprintf("output perturbation (Wei et al. 2021 Algorithm 3): mode-%d factor refitted by ridge (lambda = %g) and each row perturbed with l2-norm noise, Delta_O = %g", pm+1, p.o.Lambda, p.DeltaO),
		perturb.L2NoiseNote,
		"the guarantee of the refitted factor is conditional on the other parameters, which are trained on the same ratings without noise and released: no released parameter has an end-to-end guarantee")
	return nil
}

// Report returns the privacy report (nil before Plan).
func (p *OutputPerturbation) Report() *perturb.Report { return p.report }
