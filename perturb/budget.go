package perturb

import (
	"fmt"
	"math"
)

// Budget is a user's total privacy budget (--epsilon, --delta).
type Budget struct {
	Epsilon, Delta float64
}

// Validate checks the budget's parameters (delta may be 0 for pure DP).
func (b Budget) Validate() error {
	if err := CheckEpsilon(b.Epsilon); err != nil {
		return fmt.Errorf("budget: %w", err)
	}
	if err := CheckDelta(b.Delta); err != nil {
		return fmt.Errorf("budget: %w", err)
	}
	return nil
}

// budgetTolerance absorbs the bisection error of the solvers (relative
// 1e-9): a plan solved to fit exactly is not refused for rounding.
const budgetTolerance = 1e-9

// Admit composes the accountant's releases and returns an error wrapping
// ErrBudget if they exceed the budget. method "" (or "best") uses the
// tightest valid method (Accountant.Total); otherwise the named method
// (basic, advanced, rdp, gdp) must apply and fit. It returns the composed
// guarantee and the method used.
func (b Budget) Admit(a *Accountant, method Composition) (eps, delta float64, used Composition, err error) {
	if err := b.Validate(); err != nil {
		return 0, 0, "", err
	}
	if method == "" || method == "best" {
		eps, delta, used = a.Total(b.Delta)
	} else {
		var ok bool
		eps, delta, ok = a.TotalBy(method, b.Delta)
		if !ok {
			return 0, 0, method, fmt.Errorf("%w: %s composition does not apply to these releases with delta %v", ErrBudget, method, b.Delta)
		}
		used = method
	}
	if eps > b.Epsilon*(1+budgetTolerance) || delta > b.Delta*(1+budgetTolerance) {
		return eps, delta, used, fmt.Errorf("%w: planned releases compose (%s) to epsilon %.6g, delta %.3g, over the budget epsilon %.6g, delta %.3g", ErrBudget, used, eps, delta, b.Epsilon, b.Delta)
	}
	return eps, delta, used, nil
}

// GaussianSigmaForBudget returns the smallest sigma (relative precision
// 1e-10) such that steps Gaussian releases of l2 sensitivity l2Sensitivity
// and noise sigma, composed by RDP (Accountant.TotalBy(RDP)), are (epsilon,
// delta)-DP.
func GaussianSigmaForBudget(l2Sensitivity float64, steps int, epsilon, delta float64) (float64, error) {
	return GaussianSigmaForBudgetBy(l2Sensitivity, steps, epsilon, delta, RDP)
}

// GaussianSigmaForBudgetBy is GaussianSigmaForBudget for a named method:
// RDP, or GDP (exact Gaussian composition: sigma = sqrt(steps) times the
// analytic single-release sigma, which is optimal).
func GaussianSigmaForBudgetBy(l2Sensitivity float64, steps int, epsilon, delta float64, method Composition) (float64, error) {
	if err := CheckSensitivity(l2Sensitivity); err != nil {
		return 0, err
	}
	if err := CheckEpsilon(epsilon); err != nil {
		return 0, err
	}
	if err := CheckPositiveDelta(delta); err != nil {
		return 0, err
	}
	if steps < 1 {
		return 0, fmt.Errorf("%w: steps is %d, must be >= 1", ErrDimension, steps)
	}
	switch method {
	case GDP:
		s, err := GaussianSigma(l2Sensitivity, epsilon, delta, Analytic)
		if err != nil {
			return 0, err
		}
		return s * math.Sqrt(float64(steps)), nil
	case RDP:
	default:
		return 0, fmt.Errorf("perturb: GaussianSigmaForBudgetBy: method %q not supported (want rdp or gdp)", method)
	}
	fits := func(sigma float64) bool {
		var a Accountant
		_ = a.Add(Release{Mechanism: MechGaussian, Sensitivity: l2Sensitivity, Scale: sigma}, steps)
		e, _, ok := a.TotalBy(RDP, delta)
		return ok && e <= epsilon
	}
	hi := l2Sensitivity
	for !fits(hi) {
		hi *= 2
		if math.IsInf(hi, 0) {
			return 0, fmt.Errorf("%w: no finite sigma fits epsilon %v, delta %v over %d steps", ErrBudget, epsilon, delta, steps)
		}
	}
	lo := hi / 2
	for fits(lo) && lo > l2Sensitivity*1e-300 {
		hi, lo = lo, lo/2
	}
	for i := 0; i < 200 && hi-lo > 1e-10*hi; i++ {
		mid := lo + (hi-lo)/2
		if fits(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi, nil
}

// PerStepEpsilon splits a total budget (total, delta) over steps pure-DP
// releases. method Basic: eps = total/steps, deltaPerStep = delta/steps
// (usable by pure mechanisms, which then leave it unused). Advanced: the
// largest eps with AdvancedComposition(eps, steps, delta) <= total
// (deltaPerStep = 0; the whole delta is the slack; needs delta > 0). RDP:
// the largest eps whose pure-DP RDP curve min(eps, alpha eps^2/2),
// composed steps times and converted at delta, is <= total (deltaPerStep =
// 0; needs delta > 0). "best": the largest per-step eps of the methods that
// apply.
func PerStepEpsilon(total, delta float64, steps int, method Composition) (eps, deltaPerStep float64, err error) {
	if err := CheckEpsilon(total); err != nil {
		return 0, 0, err
	}
	if err := CheckDelta(delta); err != nil {
		return 0, 0, err
	}
	if steps < 1 {
		return 0, 0, fmt.Errorf("%w: steps is %d, must be >= 1", ErrDimension, steps)
	}
	k := float64(steps)
	switch method {
	case Basic:
		return total / k, delta / k, nil
	case Advanced:
		if delta <= 0 {
			return 0, 0, fmt.Errorf("%w: advanced composition needs delta > 0 (slack), got %v", ErrDelta, delta)
		}
		return bisectEps(total, func(e float64) float64 { return AdvancedComposition(e, steps, delta) }), 0, nil
	case RDP:
		if delta <= 0 {
			return 0, 0, fmt.Errorf("%w: RDP conversion needs delta > 0, got %v", ErrDelta, delta)
		}
		return bisectEps(total, func(e float64) float64 {
			var a Accountant
			_ = a.Add(Release{Mechanism: MechL2, Sensitivity: 1, Epsilon: e}, steps)
			v, _, _ := a.TotalBy(RDP, delta)
			return v
		}), 0, nil
	case "best", "":
		e, d, _ := PerStepEpsilon(total, delta, steps, Basic)
		if delta > 0 {
			for _, m := range []Composition{Advanced, RDP} {
				if e2, d2, err := PerStepEpsilon(total, delta, steps, m); err == nil && e2 > e {
					e, d = e2, d2
				}
			}
		}
		return e, d, nil
	}
	return 0, 0, fmt.Errorf("perturb: PerStepEpsilon: unknown method %q (want basic, advanced, rdp or best)", method)
}

// bisectEps returns the largest eps in (0, total] with f(eps) <= total for
// an increasing f, to relative precision 1e-12 (the lower end of the final
// bracket, which always fits).
func bisectEps(total float64, f func(float64) float64) float64 {
	lo, hi := 0.0, total
	if f(hi) <= total {
		return hi
	}
	for i := 0; i < 200 && hi-lo > 1e-12*hi; i++ {
		mid := lo + (hi-lo)/2
		if f(mid) <= total {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// Fits reports whether the releases compose within the budget exactly, with
// no tolerance. Solvers use it as their predicate, so that what they plan
// never exceeds the budget even by rounding; Admit's tolerance only absorbs
// the inversion error when a plan calibrated in closed form is checked.
func (b Budget) Fits(a *Accountant, method Composition) bool {
	eps, delta, _, err := b.Admit(a, method)
	return err == nil && eps <= b.Epsilon && delta <= b.Delta
}
