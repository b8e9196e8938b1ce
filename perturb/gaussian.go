package perturb

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Calibration selects how a Gaussian mechanism's sigma is derived from
// (Delta_2, epsilon, delta).
type Calibration string

// Gaussian calibrations (DeCarolis et al. 2020, appendix A, Proposition 22 and the text
// after it; Balle and Wang 2018).
const (
	// Analytic is the optimal calibration of Balle and Wang (2018, Theorem
	// 8): the smallest sigma with Phi(Delta/(2 sigma) - epsilon sigma/Delta)
	// - e^epsilon Phi(-Delta/(2 sigma) - epsilon sigma/Delta) <= delta,
	// found by bisection. It is the default (the empty Calibration means
	// Analytic).
	Analytic Calibration = "analytic"
	// Classic is sigma = Delta sqrt(2 ln(1.25/delta))/epsilon (Dwork and
	// Roth 2014, Theorem A.1), valid only for epsilon <= 1.
	Classic Calibration = "classic"
	// Tight is the closed form after Proposition 22 of DeCarolis et al. 2020, CORRECTED:
	// printed there as sigma = Delta (sqrt(epsilon + log(1/delta)) +
	// sqrt(log(1/delta)))/(2 epsilon), which falls below the analytic
	// optimum (e.g. 3.47 < 3.73 at epsilon = 1, delta = 1e-5) and is
	// therefore not DP as printed. The derivation in the package doc gives
	// the denominator sqrt(2) epsilon instead of 2 epsilon; that is what
	// Tight computes.
	Tight Calibration = "tight"
)

// ParseCalibration maps "analytic", "classic", "tight" (or "") to a
// Calibration.
func ParseCalibration(s string) (Calibration, error) {
	switch Calibration(s) {
	case "", Analytic:
		return Analytic, nil
	case Classic, Tight:
		return Calibration(s), nil
	}
	return "", fmt.Errorf("perturb: unknown Gaussian calibration %q (want analytic, classic or tight)", s)
}

// MinGaussianDelta is the smallest delta accepted by the Gaussian
// calibrations: below it the terms of the analytic condition underflow
// float64 and the bisection could not tell a valid sigma from an invalid
// one.
const MinGaussianDelta = 1e-100

// GaussianSigma returns the noise standard deviation of the Gaussian
// mechanism for l2 sensitivity l2Sensitivity and (epsilon, delta)-DP under
// the calibration cal ("" means Analytic).
func GaussianSigma(l2Sensitivity, epsilon, delta float64, cal Calibration) (float64, error) {
	if err := CheckSensitivity(l2Sensitivity); err != nil {
		return 0, fmt.Errorf("gaussian: %w", err)
	}
	if err := CheckEpsilon(epsilon); err != nil {
		return 0, fmt.Errorf("gaussian: %w", err)
	}
	if err := CheckPositiveDelta(delta); err != nil {
		return 0, fmt.Errorf("gaussian: %w", err)
	}
	if delta < MinGaussianDelta {
		return 0, fmt.Errorf("gaussian: %w: delta is %v, must be at least %v", ErrDelta, delta, MinGaussianDelta)
	}
	var s float64
	switch cal {
	case "", Analytic:
		s = analyticSigma(l2Sensitivity, epsilon, delta)
	case Classic:
		if epsilon > 1 {
			return 0, fmt.Errorf("gaussian: %w: epsilon is %v, the classic calibration is valid only for epsilon <= 1 (use analytic)", ErrEpsilon, epsilon)
		}
		s = l2Sensitivity * math.Sqrt(2*math.Log(1.25/delta)) / epsilon
	case Tight:
		s = tightSigma(l2Sensitivity, epsilon, delta)
	default:
		return 0, fmt.Errorf("gaussian: unknown calibration %q", cal)
	}
	if math.IsInf(s, 0) || math.IsNaN(s) {
		return 0, fmt.Errorf("gaussian: %w: sigma for sensitivity %v, epsilon %v, delta %v overflows", ErrSensitivity, l2Sensitivity, epsilon, delta)
	}
	return s, nil
}

// tightSigma is the corrected closed form: sigma = Delta (sqrt(eps + L) +
// sqrt(L))/(sqrt(2) eps), L = ln(1/delta). See the package doc for the
// derivation.
func tightSigma(sens, eps, delta float64) float64 {
	l := math.Log(1 / delta)
	return sens * (math.Sqrt(eps+l) + math.Sqrt(l)) / (math.Sqrt2 * eps)
}

// TightSigmaAsPrinted is the closed form exactly as printed in DeCarolis et al. 2020
// (denominator 2 epsilon). It is NOT differentially private (it falls below
// the analytic optimum); it is exported only so tests and documentation can
// show that.
func TightSigmaAsPrinted(sens, eps, delta float64) float64 {
	l := math.Log(1 / delta)
	return sens * (math.Sqrt(eps+l) + math.Sqrt(l)) / (2 * eps)
}

// stdNormalCDF is Phi, computed through erfc for accuracy in the lower tail.
func stdNormalCDF(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }

// DeltaForGaussian returns the exact delta of the Gaussian mechanism with
// noise sigma, l2 sensitivity sens, at epsilon (Balle and Wang 2018,
// Theorem 8): Phi(sens/(2 sigma) - eps sigma/sens) - e^eps
// Phi(-sens/(2 sigma) - eps sigma/sens). It is decreasing in sigma.
func DeltaForGaussian(sens, sigma, eps float64) float64 {
	return gaussianDeltaMu(sens/sigma, eps)
}

// gaussianDeltaMu is the delta(eps) curve of mu-GDP (the Gaussian mechanism
// with sens/sigma = mu).
func gaussianDeltaMu(mu, eps float64) float64 {
	a := mu/2 - eps/mu
	b := -mu/2 - eps/mu
	pb := stdNormalCDF(b)
	t2 := 0.0
	if pb > 0 {
		t2 = math.Exp(eps + math.Log(pb))
	}
	d := stdNormalCDF(a) - t2
	if d < 0 {
		return 0
	}
	return d
}

// analyticSigma bisects for the smallest sigma (to relative precision
// 1e-13) with DeltaForGaussian(sens, sigma, eps) <= delta and returns the
// upper end of the final bracket, which always satisfies the condition.
func analyticSigma(sens, eps, delta float64) float64 {
	hi := sens
	for DeltaForGaussian(sens, hi, eps) > delta {
		hi *= 2
	}
	lo := hi / 2
	for DeltaForGaussian(sens, lo, eps) <= delta && lo > sens*1e-300 {
		hi = lo
		lo /= 2
	}
	for i := 0; i < 200 && hi-lo > 1e-13*hi; i++ {
		mid := lo + (hi-lo)/2
		if DeltaForGaussian(sens, mid, eps) <= delta {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

// GaussianEpsilonForMu returns the smallest epsilon with delta(eps) <=
// delta for the Gaussian mechanism with sensitivity-to-noise ratio mu =
// Delta/sigma (mu-GDP). Composition of Gaussian mechanisms with ratios mu_i
// is exactly sqrt(sum mu_i^2)-GDP (Dong, Roth and Su 2022, Corollary 3.3),
// so this converts a composed Gaussian budget exactly.
func GaussianEpsilonForMu(mu, delta float64) float64 {
	if gaussianDeltaMu(mu, 0) <= delta {
		return 0
	}
	hi := 1.0
	for gaussianDeltaMu(mu, hi) > delta {
		hi *= 2
		if hi > 1e6 {
			return math.Inf(1)
		}
	}
	lo := 0.0
	for i := 0; i < 200 && hi-lo > 1e-13*hi; i++ {
		mid := lo + (hi-lo)/2
		if gaussianDeltaMu(mu, mid) <= delta {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

// Gaussian is the Gaussian mechanism: adding i.i.d. N(0, sigma^2) noise to a
// vector of l2 sensitivity Delta_2. It is sampled on a power-of-two grid as
// a discrete Gaussian (package doc, "Floating point"). Immutable and safe
// for concurrent use; the *rand.Rand arguments are not.
type Gaussian struct {
	sens, sigma, eps, delta, g float64
	cal                        Calibration
}

// NewGaussian returns the Gaussian mechanism calibrated to (epsilon,
// delta)-DP for l2 sensitivity l2Sensitivity under cal.
func NewGaussian(l2Sensitivity, epsilon, delta float64, cal Calibration) (*Gaussian, error) {
	s, err := GaussianSigma(l2Sensitivity, epsilon, delta, cal)
	if err != nil {
		return nil, err
	}
	if cal == "" {
		cal = Analytic
	}
	return &Gaussian{sens: l2Sensitivity, sigma: s, eps: epsilon, delta: delta, g: Granularity(s), cal: cal}, nil
}

// NewGaussianSigma returns the Gaussian mechanism with the given noise
// sigma, for steps whose privacy is accounted by Renyi DP (its Release has
// Epsilon = Delta = 0 and the accountant uses the RDP curve alpha
// Delta^2/(2 sigma^2)).
func NewGaussianSigma(l2Sensitivity, sigma float64) (*Gaussian, error) {
	if err := CheckSensitivity(l2Sensitivity); err != nil {
		return nil, fmt.Errorf("gaussian: %w", err)
	}
	if err := checkNamedPositive(ErrSensitivity, "sigma", sigma); err != nil {
		return nil, fmt.Errorf("gaussian: %w", err)
	}
	return &Gaussian{sens: l2Sensitivity, sigma: sigma, g: Granularity(sigma), cal: "sigma"}, nil
}

// Sigma returns the noise standard deviation.
func (m *Gaussian) Sigma() float64 { return m.sigma }

// Sensitivity returns the l2 sensitivity.
func (m *Gaussian) Sensitivity() float64 { return m.sens }

// Epsilon and Delta return the calibrated guarantee (0 for NewGaussianSigma).
func (m *Gaussian) Epsilon() float64 { return m.eps }

// Delta returns the calibrated delta (0 for NewGaussianSigma).
func (m *Gaussian) Delta() float64 { return m.delta }

// Granularity returns the noise grid step, a power of two near sigma/2^40.
func (m *Gaussian) Granularity() float64 { return m.g }

// Sample returns one N(0, sigma^2) noise value drawn as a discrete Gaussian
// on the grid (an exact multiple of Granularity()).
func (m *Gaussian) Sample(r *rand.Rand) float64 {
	return float64(discreteGaussian(r, m.sigma/m.g)) * m.g
}

// AddTo adds i.i.d. Gaussian noise to x in place. Each x[i] is snapped to
// the grid first; snapping can increase the l2 distance of neighbours by
// sqrt(len(x)) g, so sigma is scaled by (Delta + sqrt(len(x)) g)/Delta,
// keeping Delta/sigma (hence the guarantee) exact. Outputs are multiples of g.
func (m *Gaussian) AddTo(x []float64, r *rand.Rand) {
	if len(x) == 0 {
		return
	}
	sEff := m.sigma * (m.sens + math.Sqrt(float64(len(x)))*m.g) / m.sens / m.g
	for i, v := range x {
		x[i] = Snap(v, m.g) + float64(discreteGaussian(r, sEff))*m.g
	}
}

// Release returns the record of one release of this mechanism.
func (m *Gaussian) Release(what string) Release {
	return Release{What: what, Mechanism: MechGaussian, SensitivityNorm: "l2", Sensitivity: m.sens,
		Scale: m.sigma, Epsilon: m.eps, Delta: m.delta, Calibration: string(m.cal), Count: 1}
}
