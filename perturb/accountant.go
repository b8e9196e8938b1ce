package perturb

import (
	"fmt"
	"math"
)

// Composition is an accounting method, as named in reports and accepted by
// TotalBy, Admit and Fits; the empty Composition means the tightest that
// applies.
type Composition string

// Accounting methods.
const (
	// Basic is sequential composition: epsilons and deltas add (DeCarolis et al. 2020,
	// Proposition 23).
	Basic Composition = "basic"
	// Advanced is the advanced composition theorem of Dwork, Rothblum and
	// Vadhan (2010; Dwork and Roth 2014, Theorem 3.20) with slack delta'.
	Advanced Composition = "advanced"
	// RDP is Renyi-DP composition (Mironov 2017) converted to (epsilon,
	// delta) by the bound of Canonne, Kamath and Steinke (2020, Proposition
	// 12), minimised over a grid of orders.
	RDP Composition = "rdp"
	// GDP is the exact composition of Gaussian mechanisms (Dong, Roth and
	// Su 2022): k Gaussian releases with ratios mu_i = Delta_i/sigma_i
	// compose to one Gaussian with mu = sqrt(sum mu_i^2), converted with
	// the exact Balle-Wang curve. Only available when every release is
	// Gaussian.
	GDP Composition = "gdp"
)

// rdpOrders is the grid of Renyi orders: Opacus's DEFAULT_ALPHAS (1.1 to
// 10.9 by 0.1, then 12 to 63) extended to large orders, which small
// compositions of pure-DP releases need.
var rdpOrders = func() []float64 {
	var a []float64
	for x := 1; x < 100; x++ {
		a = append(a, 1+float64(x)/10)
	}
	for x := 12; x < 64; x++ {
		a = append(a, float64(x))
	}
	a = append(a, 80, 96, 128, 160, 192, 256, 384, 512, 768, 1024, 2048, 4096, 8192, 16384, 65536)
	return a
}()

// Accountant records every noisy release of a computation and composes
// them. The zero value is an empty accountant ready to use. Not safe for
// concurrent use.
type Accountant struct {
	releases []Release
}

// Add records count repetitions of rel (count >= 1; epochs, steps). The
// stored record has Count = count. It returns an error if the release's
// parameters are invalid or count < 1.
func (a *Accountant) Add(rel Release, count int) error {
	if count < 1 {
		return fmt.Errorf("accountant: count is %d, must be >= 1", count)
	}
	if err := CheckSensitivity(rel.Sensitivity); err != nil {
		return fmt.Errorf("accountant: %s: %w", rel.What, err)
	}
	switch rel.Mechanism {
	case MechGaussian:
		if err := checkNamedPositive(ErrSensitivity, "sigma", rel.Scale); err != nil {
			return fmt.Errorf("accountant: %s: %w", rel.What, err)
		}
		if math.IsNaN(rel.SampleRate) || rel.SampleRate < 0 || rel.SampleRate > 1 {
			return fmt.Errorf("accountant: %s: %w: sampling rate is %v, must be in [0, 1]", rel.What, ErrSensitivity, rel.SampleRate)
		}
		if rel.SampleRate > 0 && rel.SampleRate < 1 && (rel.Epsilon != 0 || rel.Delta != 0) {
			return fmt.Errorf("accountant: %s: a subsampled Gaussian step is accounted by RDP only (epsilon and delta must be 0)", rel.What)
		}
		if rel.Epsilon != 0 || rel.Delta != 0 {
			if err := CheckEpsilon(rel.Epsilon); err != nil {
				return fmt.Errorf("accountant: %s: %w", rel.What, err)
			}
			if err := CheckDelta(rel.Delta); err != nil {
				return fmt.Errorf("accountant: %s: %w", rel.What, err)
			}
		}
	default:
		if err := CheckEpsilon(rel.Epsilon); err != nil {
			return fmt.Errorf("accountant: %s: %w", rel.What, err)
		}
		if err := CheckDelta(rel.Delta); err != nil {
			return fmt.Errorf("accountant: %s: %w", rel.What, err)
		}
	}
	rel.Count = count
	a.releases = append(a.releases, rel)
	return nil
}

// Releases returns a copy of the recorded releases, in order.
func (a *Accountant) Releases() []Release {
	return append([]Release(nil), a.releases...)
}

// Steps returns the total number of recorded releases (sum of counts).
func (a *Accountant) Steps() int {
	n := 0
	for _, r := range a.releases {
		n += r.Count
	}
	return n
}

// RDPAt returns the Renyi-DP epsilon of the whole composition at order
// alpha > 1, and false if some release has no RDP curve (an approximate-DP
// release other than a Gaussian). Curves (Mironov 2017, Table II; Bun and
// Steinke 2016, Proposition 3.3): Gaussian alpha Delta^2/(2 sigma^2);
// Laplace with b = scale/Delta: (1/(alpha-1)) log(alpha/(2 alpha-1)
// e^((alpha-1)/b) + (alpha-1)/(2 alpha-1) e^(-alpha/b)); any other pure
// epsilon-DP release min(epsilon, alpha epsilon^2/2).
func (a *Accountant) RDPAt(alpha float64) (float64, bool) {
	var total float64
	for _, r := range a.releases {
		e, ok := releaseRDP(r, alpha)
		if !ok {
			return 0, false
		}
		total += float64(r.Count) * e
	}
	return total, true
}

func releaseRDP(r Release, alpha float64) (float64, bool) {
	switch {
	case r.Mechanism == MechGaussian && r.SampleRate > 0 && r.SampleRate < 1:
		return sampledGaussianRDP(r.SampleRate, r.Scale/r.Sensitivity, alpha), true
	case r.Mechanism == MechGaussian:
		mu := r.Sensitivity / r.Scale
		return alpha * mu * mu / 2, true
	case r.Delta != 0:
		return 0, false
	case r.Mechanism == MechLaplace && r.Scale > 0:
		return laplaceRDP(r.Scale/r.Sensitivity, alpha, r.Epsilon), true
	default:
		return math.Min(r.Epsilon, alpha*r.Epsilon*r.Epsilon/2), true
	}
}

// laplaceRDP is Mironov's Laplace RDP curve for b = scale/sensitivity,
// evaluated in log space (log-sum-exp) so large orders do not overflow, and
// capped by the pure bound min(eps, alpha eps^2/2).
func laplaceRDP(b, alpha, eps float64) float64 {
	x := math.Log(alpha/(2*alpha-1)) + (alpha-1)/b
	y := math.Log((alpha-1)/(2*alpha-1)) - alpha/b
	m := math.Max(x, y)
	v := (m + math.Log(math.Exp(x-m)+math.Exp(y-m))) / (alpha - 1)
	return math.Min(v, math.Min(eps, alpha*eps*eps/2))
}

// rdpToDP converts an RDP guarantee (alpha, rho) to epsilon at delta by
// Canonne, Kamath and Steinke (2020, Proposition 12) (the conversion
// Opacus adopted, issue #157): eps = rho + log((alpha-1)/alpha) - (log delta
// + log alpha)/(alpha-1). It is never worse than Mironov's classic rho +
// log(1/delta)/(alpha-1), since both extra terms are negative.
func rdpToDP(alpha, rho, delta float64) float64 {
	e := rho + math.Log((alpha-1)/alpha) - (math.Log(delta)+math.Log(alpha))/(alpha-1)
	return math.Max(e, 0)
}

// rdpEpsilon is the RDP total at delta, minimised over the order grid
// (minOverOrders: orders whose lower bound already exceeds the minimum are
// not evaluated; the minimum is exactly that of the full grid).
func (a *Accountant) rdpEpsilon(delta float64) (float64, bool) {
	eps, _, ok := minOverOrders(monotoneCurve(a.RDPAt), delta)
	if !ok {
		return 0, false
	}
	return eps, true
}

// TotalBy returns the composed (epsilon, delta) of all recorded releases by
// one method, for a target total delta where the method needs one
// (advanced: slack delta' = delta - sum delta_i; rdp, gdp: the conversion
// delta). ok is false when the method does not apply (advanced or basic
// with a Gaussian release that has no (epsilon, delta); rdp with a
// non-Gaussian approximate-DP release; gdp unless every release is
// Gaussian; advanced or rdp/gdp with delta <= sum delta_i).
func (a *Accountant) TotalBy(method Composition, delta float64) (eps, deltaOut float64, ok bool) {
	if len(a.releases) == 0 {
		return 0, 0, true
	}
	var sumEps, sumDelta, maxEps float64
	pureEpsOK := true
	allGauss := true
	var mu2 float64
	k := 0
	for _, r := range a.releases {
		if r.Mechanism == MechGaussian && !(r.SampleRate > 0 && r.SampleRate < 1) {
			mu := r.Sensitivity / r.Scale
			mu2 += float64(r.Count) * mu * mu
		} else {
			allGauss = false
		}
		if r.Epsilon == 0 {
			pureEpsOK = false
		}
		sumEps += float64(r.Count) * r.Epsilon
		sumDelta += float64(r.Count) * r.Delta
		maxEps = math.Max(maxEps, r.Epsilon)
		k += r.Count
	}
	switch method {
	case Basic:
		if !pureEpsOK {
			return 0, 0, false
		}
		return sumEps, sumDelta, true
	case Advanced:
		slack := delta - sumDelta
		if !pureEpsOK || !(slack > 0) || slack >= 1 {
			return 0, 0, false
		}
		return AdvancedComposition(maxEps, k, slack), delta, true
	case RDP:
		if !(delta > 0) || delta >= 1 {
			return 0, 0, false
		}
		e, ok := a.rdpEpsilon(delta)
		if !ok {
			return 0, 0, false
		}
		return e, delta, true
	case GDP:
		if !allGauss || !(delta > 0) || delta >= 1 {
			return 0, 0, false
		}
		return GaussianEpsilonForMu(math.Sqrt(mu2), delta), delta, true
	}
	return 0, 0, false
}

// AdvancedComposition returns the epsilon of k-fold adaptive composition of
// eps-DP mechanisms with slack deltaSlack (Dwork, Rothblum and Vadhan 2010;
// Dwork and Roth 2014, Theorem 3.20): sqrt(2k ln(1/delta')) eps + k eps
// (e^eps - 1). Heterogeneous releases are composed with eps = their maximum
// (each is max-eps-DP), which is valid and conservative.
func AdvancedComposition(eps float64, k int, deltaSlack float64) float64 {
	kf := float64(k)
	return math.Sqrt(2*kf*math.Log(1/deltaSlack))*eps + kf*eps*math.Expm1(eps)
}

// Total returns the tightest valid composed guarantee with total delta at
// most delta, trying basic, advanced, rdp and gdp, and names the method.
// With delta = 0 only basic (pure) composition applies. If no method
// satisfies the delta target (for example sum delta_i > delta), it returns
// the basic totals with method "basic" and deltaOut > delta, and the caller
// must treat it as over budget; if not even basic applies, eps is +Inf.
func (a *Accountant) Total(delta float64) (eps, deltaOut float64, method Composition) {
	if len(a.releases) == 0 {
		return 0, 0, Basic
	}
	eps, deltaOut, method = math.Inf(1), math.Inf(1), ""
	for _, m := range []Composition{Basic, Advanced, RDP, GDP} {
		e, d, ok := a.TotalBy(m, delta)
		if !ok || d > delta {
			continue
		}
		if e < eps {
			eps, deltaOut, method = e, d, m
		}
	}
	if method != "" {
		return eps, deltaOut, method
	}
	if e, d, ok := a.TotalBy(Basic, delta); ok {
		return e, d, Basic
	}
	return math.Inf(1), math.Inf(1), "none"
}
