package completion

// INPUT PERTURBATION (Wei et al. 2021, Algorithm 1).
//
// Mechanism: clamp every observed value to [r_min, r_max], add i.i.d. noise
// once to every observed value, then train non-privately on the result.
// Models with biases at entry level with Laplace noise use the residual
// release instead (private_input_residual.go): the bias mode's mean and
// item biases first, then noise on each rating's clipped residual from
// them; what follows is Algorithm 1 as used otherwise.
//
// Sensitivity. The released quantity is the vector v of clamped observed
// values (its positions are public under the relation). Entry unit: one
// rating changes, so v and v' differ in one coordinate by at most Delta_r =
// r_max - r_min: ||v - v'||_1 = ||v - v'||_2 <= Delta_r. User unit with at
// most k ratings per user: up to k coordinates change, each by at most
// Delta_r, so ||v - v'||_1 <= k Delta_r and ||v - v'||_2 <= sqrt(k)
// Delta_r.
//
// Noise: Laplace with b = Delta_1/epsilon (pure epsilon-DP, the seed's
// choice) or Gaussian with sigma calibrated to (epsilon, delta) and
// Delta_2 (the "Gaussian variant"; analytic calibration by default).
//
// Composition: one release. Coverage: everything the trainer outputs (every
// factor, the core, the biases and the global mean, which the trainer
// computes from the noisy values) is post-processing of the noisy vector,
// so the guarantee covers the whole model, the training history and any
// early-stopping decision (validation data, if any, is not part of the
// protected log).

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/perturb"
)

// InputPerturbation is the input-perturbation plug-in (Algorithm 1). Use it
// for one training run only (Settings.Privacy); it is not safe for
// concurrent use.
type InputPerturbation struct {
	o      PrivateOptions
	lap    *perturb.Laplace
	gauss  *perturb.Gaussian
	report *perturb.Report
	done   bool
	// fallback holds the bias-only release when the rule of
	// private_input_fallback.go applies (nil otherwise).
	fallback *decomposition.Model
	// res is the residual release (private_input_residual.go; nil
	// otherwise).
	res *residualRelease
}

var _ Privacy = (*InputPerturbation)(nil)

// NewInputPerturbation returns the input-perturbation mode. opts.Mechanism
// selects "laplace" (default) or "gaussian".
func NewInputPerturbation(opts *PrivateOptions) (*InputPerturbation, error) {
	o, err := opts.resolve("input")
	if err != nil {
		return nil, err
	}
	switch o.Mechanism {
	case "", perturb.MechLaplace:
		o.Mechanism = perturb.MechLaplace
	case perturb.MechGaussian:
		if err := perturb.CheckPositiveDelta(o.Delta); err != nil {
			return nil, fmt.Errorf("completion: input perturbation (gaussian): %w", err)
		}
	default:
		return nil, fmt.Errorf("completion: input perturbation: unknown mechanism %q (want laplace or gaussian)", o.Mechanism)
	}
	return &InputPerturbation{o: o}, nil
}

// InputSensitivity returns the l1 and l2 sensitivities of the clamped
// value vector under the options' unit: (k Delta_r, sqrt(k) Delta_r), k =
// 1 for entries.
func InputSensitivity(o *PrivateOptions) (l1, l2 float64) {
	k := float64(o.unitCount())
	return k * o.ratingRange(), math.Sqrt(k) * o.ratingRange()
}

// Plan checks the user bound, builds the mechanism and refuses a plan over
// budget.
func (p *InputPerturbation) Plan(train *data.Store, s *Settings) error {
	if p.done {
		return fmt.Errorf("completion: input perturbation: %w: this plug-in already perturbed a training run (make a new one)", perturb.ErrBudget)
	}
	if p.o.Unit == UnitUser {
		if err := checkUserBound(train, p.o.MaxRatingsPerUser); err != nil {
			return err
		}
	}
	if p.inputResidualApplies(s) {
		return p.planResidual(train, s)
	}
	l1, l2 := InputSensitivity(&p.o)
	if s.hasBias && p.o.Unit == UnitEntry {
		v := 2 * l1 * l1 / (p.o.Epsilon * p.o.Epsilon) // Laplace variance
		if p.o.Mechanism == perturb.MechGaussian {
			sg, err := perturb.GaussianSigma(l2, p.o.Epsilon, p.o.Delta, p.o.Calibration)
			if err != nil {
				return fmt.Errorf("completion: input perturbation: %w", err)
			}
			v = sg * sg
		}
		if InputFallsBack(&p.o, v, train.NNZ()) {
			p.done = true
			return p.planFallback(train, v)
		}
	}
	var acc perturb.Accountant
	var rel perturb.Release
	what := "observed ratings (clamped)"
	if p.o.Mechanism == perturb.MechGaussian {
		g, err := perturb.NewGaussian(l2, p.o.Epsilon, p.o.Delta, p.o.Calibration)
		if err != nil {
			return fmt.Errorf("completion: input perturbation: %w", err)
		}
		p.gauss, rel = g, g.Release(what)
	} else {
		l, err := perturb.NewLaplace(l1, p.o.Epsilon)
		if err != nil {
			return fmt.Errorf("completion: input perturbation: %w", err)
		}
		p.lap, rel = l, l.Release(what)
	}
	rel.Derivation = fmt.Sprintf("one %s changes at most %d clamped values by r_max - r_min = %g each (completion/private_input.go)", p.o.Unit, p.o.unitCount(), p.o.ratingRange())
	if err := acc.Add(rel, 1); err != nil {
		return err
	}
	method := p.o.Accounting
	if method == perturb.Advanced || method == perturb.RDP {
		method = "" // a single release: the tightest applicable is exact
	}
	eps, delta, used, err := perturb.Budget{Epsilon: p.o.Epsilon, Delta: p.o.Delta}.Admit(&acc, method)
	if err != nil {
		return fmt.Errorf("completion: input perturbation: %w", err)
	}
	p.report = baseReport(&p.o, "input", &acc, eps, delta, used)
	p.report.Composition = "single release (" + string(used) + ")"
	// A noisy value v + z enters the data gradient of a bias as 2 z.
	s2 := 4 * p.scale() * p.scale()
	if p.lap != nil {
		s2 *= 2 // Laplace variance 2 b^2
	}
	p.capEpochs(s, s2)
	return nil
}

// capEpochs caps the step (capStep) and cuts the epochs for noise of
// variance s2/4 per value (s2: the variance of a bias's data gradient).
func (p *InputPerturbation) capEpochs(s *Settings, s2 float64) {
	if s.Solver != SolverSGD {
		// Gibbs and ALS solve on the noisy values as they are: the
		// sampler's noise precision, or ALS's ridge, absorbs the noise;
		// neither has a step.
		return
	}
	if note := capStep(&p.o, s, s2); note != "" {
		p.report.Notes = append(p.report.Notes, note)
	}
	// The noise of input perturbation is drawn once, so more epochs fit it
	// instead of averaging it away: the epochs are cut to the share of the
	// signal in a noisy value, sigma_r^2/(sigma_r^2 + v), sigma_r =
	// (r_max - r_min)/4, v the noise variance (at least one epoch).
	sr := p.o.ratingRange() / 4
	if e := int(math.Ceil(float64(s.Epochs) * sr * sr / (sr*sr + s2/4))); e < s.Epochs {
		p.report.Notes = append(p.report.Notes, fmt.Sprintf("epochs cut from %d to %d = ceil(epochs sigma_r^2/(sigma_r^2 + v)), v = %.4g the noise variance of a value (completion/private_input.go)", s.Epochs, e, s2/4))
		s.Epochs = e
	}
}

// PerturbInput clamps every value to the public range and adds the noise.
func (p *InputPerturbation) PerturbInput(vals []float64, train *data.Store) error {
	if p.report == nil {
		return fmt.Errorf("completion: input perturbation: PerturbInput before Plan")
	}
	if p.fallback != nil {
		for i, v := range vals { // the fallback trains nothing on them
			vals[i] = clampValue(v, p.o.RatingMin, p.o.RatingMax)
		}
		return nil
	}
	if p.done {
		return fmt.Errorf("completion: input perturbation: %w: noise already drawn once", perturb.ErrBudget)
	}
	if p.res != nil {
		p.perturbResidual(vals, train)
		p.done = true
		return nil
	}
	for i, v := range vals {
		vals[i] = clampValue(v, p.o.RatingMin, p.o.RatingMax)
	}
	r := rand.New(p.o.source(streamInput))
	if p.gauss != nil {
		p.gauss.AddTo(vals, r)
	} else {
		p.lap.AddTo(vals, r)
	}
	p.done = true
	return nil
}

// GradientTransform returns nil: input perturbation trains non-privately.
func (p *InputPerturbation) GradientTransform(int) GradientTransform { return nil }

// PerturbOutput records the covered parameters (everything).
func (p *InputPerturbation) PerturbOutput(m *decomposition.Model, train *data.Store) error {
	if p.fallback != nil {
		publicClamp(&p.o, m, p.report)
		p.report.Covered = inputCovered(m)
		return nil
	}
	if p.res != nil {
		publicClamp(&p.o, m, p.report)
		p.report.Covered = inputCovered(m)
		p.report.Notes = append(p.report.Notes,
			fmt.Sprintf("input perturbation, residual release (completion/private_input_residual.go): the bias mode's global mean and item biases at epsilon %g, then every rating's residual from them clipped to [-%g, %g] with Laplace noise of scale %g; the model is trained on mean + item bias + noisy residual, so every released parameter is post-processing of the two releases", p.res.biasEps, p.res.clip, p.res.clip, p.res.lap.Scale()),
			fmt.Sprintf("noise: laplace with scale %g on each of the %d observed residuals", p.res.lap.Scale(), train.NNZ()))
		return nil
	}
	if p.report != nil {
		publicClamp(&p.o, m, p.report)
		p.report.Covered = inputCovered(m)
		p.report.Notes = append(p.report.Notes,
			"input perturbation (Wei et al. 2021 Algorithm 1): every released parameter is post-processing of the noisy ratings",
			fmt.Sprintf("noise: %s with scale %g on each of the %d observed values", p.mechName(), p.scale(), train.NNZ()))
	}
	return nil
}

// inputCovered names the parameters of m an input-perturbation run
// releases: all of them, post-processing of the noisy values (the Gibbs
// sampler and ALS also fit the pair biases of a time model).
func inputCovered(m *decomposition.Model) []string {
	out := paramNames(m.Order(), m.Kind == decomposition.Tucker, m.HasBias)
	if len(m.Pairs) > 0 {
		out = append(out, "pair biases (user x time bucket, item x period)")
	}
	return out
}

func (p *InputPerturbation) mechName() string {
	if p.gauss != nil {
		return "gaussian (" + string(p.o.Calibration) + ")"
	}
	return "laplace"
}

func (p *InputPerturbation) scale() float64 {
	if p.gauss != nil {
		return p.gauss.Sigma()
	}
	return p.lap.Scale()
}

// Report returns the privacy report (nil before Plan).
func (p *InputPerturbation) Report() *perturb.Report { return p.report }
