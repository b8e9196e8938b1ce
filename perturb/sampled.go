package perturb

import (
	"fmt"
	"math"
)

// SampledGaussianRDP returns the Renyi-DP epsilon at order alpha > 1 of
// one step of the Poisson-subsampled Gaussian mechanism: every record is
// included independently with probability q, the (l2-clipped) sum of the
// included records' contributions gets N(0, (noiseMultiplier
// Delta)^2) noise on every coordinate, and neighbours differ by adding or
// removing one record (equivalently: by zeroing out one record's
// contribution, which keeps every count). It is the bound of Mironov,
// Talwar and Zhang (2019, "Renyi Differential Privacy of the Sampled
// Gaussian Mechanism"): with mu0 = N(0, s^2), mu1 = N(1, s^2), s =
// noiseMultiplier and mu = (1-q) mu0 + q mu1, the step is (alpha,
// log(A_alpha)/(alpha-1))-RDP with A_alpha = E_{z~mu0}[(mu(z)/mu0(z))^alpha];
//
//   - integer alpha (Section 3.3, their eq. for A_alpha as a binomial sum):
//     A_alpha = sum_{i=0}^{alpha} C(alpha, i) (1-q)^(alpha-i) q^i
//     exp((i^2 - i)/(2 s^2)), summed in log space;
//   - fractional alpha (Section 3.3, the two-series form with erfc
//     weights, z0 = s^2 log(1/q - 1) + 1/2), as in Opacus's
//     _compute_log_a_frac and TF-Privacy's rdp_accountant.
//
// q = 1 gives the Gaussian curve alpha/(2 s^2); q = 0 gives 0.
func SampledGaussianRDP(q, noiseMultiplier, alpha float64) (float64, error) {
	if math.IsNaN(q) || q < 0 || q > 1 {
		return 0, fmt.Errorf("%w: sampling rate is %v, must be in [0, 1]", ErrSensitivity, q)
	}
	if err := checkNamedPositive(ErrSensitivity, "noise multiplier", noiseMultiplier); err != nil {
		return 0, err
	}
	if math.IsNaN(alpha) || !(alpha > 1) {
		return 0, fmt.Errorf("%w: Renyi order is %v, must be > 1", ErrSensitivity, alpha)
	}
	return sampledGaussianRDP(q, noiseMultiplier, alpha), nil
}

// sampledGaussianRDP is SampledGaussianRDP for validated arguments.
func sampledGaussianRDP(q, s, alpha float64) float64 {
	switch {
	case q == 0:
		return 0
	case q == 1:
		return alpha / (2 * s * s)
	case math.IsInf(alpha, 1):
		return math.Inf(1)
	}
	if alpha > maxSampledOrder {
		// The subsampled curve never exceeds the full Gaussian's (q = 1);
		// beyond this order the exact sum (O(alpha) terms) is not worth
		// its cost, and the bound stays valid.
		return alpha / (2 * s * s)
	}
	var la float64
	if alpha == math.Trunc(alpha) {
		la = logAInt(q, s, int(alpha)) // alpha <= maxSampledOrder here
	} else {
		la = logAFrac(q, s, alpha)
	}
	return la / (alpha - 1)
}

// maxSampledOrder is the largest order at which the subsampled curve is
// computed exactly; above it the (valid, larger) plain Gaussian curve is
// used. Optimal orders of DP-SGD budgets down to epsilon 0.1 at delta
// 1e-5 lie below 300.
const maxSampledOrder = 1024

// logAdd returns log(e^a + e^b).
func logAdd(a, b float64) float64 {
	if math.IsInf(a, -1) {
		return b
	}
	if math.IsInf(b, -1) {
		return a
	}
	m := math.Max(a, b)
	return m + math.Log1p(math.Exp(-math.Abs(a-b)))
}

// logSub returns log(e^a - e^b) for a >= b (-Inf when equal).
func logSub(a, b float64) float64 {
	if math.IsInf(b, -1) {
		return a
	}
	if a <= b {
		return math.Inf(-1)
	}
	return a + math.Log(-math.Expm1(b-a))
}

// logInts[k] = log k for k <= maxSampledOrder (logInts[0] unused).
var logInts = func() []float64 {
	t := make([]float64, maxSampledOrder+1)
	for k := 1; k < len(t); k++ {
		t[k] = math.Log(float64(k))
	}
	return t
}()

// logAInt is log A_alpha for integer 2 <= alpha <= maxSampledOrder
// (binomial expansion), as a two-pass log-sum-exp: the terms' maximum
// first, then one exponential per term.
func logAInt(q, s float64, alpha int) float64 {
	lq, l1q := math.Log(q), math.Log1p(-q)
	term := func(i int, lc float64) float64 {
		fi := float64(i)
		return lc + fi*lq + float64(alpha-i)*l1q + (fi*fi-fi)/(2*s*s)
	}
	mx, lc := math.Inf(-1), 0.0 // lc = log C(alpha, i), updated incrementally
	for i := 0; i <= alpha; i++ {
		if i > 0 {
			lc += logInts[alpha-i+1] - logInts[i]
		}
		mx = math.Max(mx, term(i, lc))
	}
	sum := 0.0
	lc = 0
	for i := 0; i <= alpha; i++ {
		if i > 0 {
			lc += logInts[alpha-i+1] - logInts[i]
		}
		sum += math.Exp(term(i, lc) - mx)
	}
	return mx + math.Log(sum)
}

// logErfc returns log(erfc(x)), with the asymptotic series where erfc
// underflows.
func logErfc(x float64) float64 {
	if x < 25 {
		return math.Log(math.Erfc(x))
	}
	x2 := x * x
	return -x2 - math.Log(x) - 0.5*math.Log(math.Pi) + math.Log1p(-1/(2*x2)+3/(4*x2*x2)-15/(8*x2*x2*x2))
}

// logAFrac is log A_alpha for fractional alpha (Mironov, Talwar and Zhang
// 2019, Section 3.3): two series over i >= 0,
//
//	t0_i = C(alpha, i) q^i (1-q)^(alpha-i) e^((i^2-i)/(2 s^2)) erfc((i-z0)/(sqrt2 s))/2,
//	t1_i = C(alpha, i) q^j (1-q)^i e^((j^2-j)/(2 s^2)) erfc((z0-j)/(sqrt2 s))/2, j = alpha - i.
//
// Truncation. For i <= alpha every C(alpha, i) is positive and the terms
// are the bulk of the sums (a binomial around q alpha and (1-q) alpha),
// so none of them is skipped: stopping as soon as a term is below e^-30
// (the Opacus rule, applied from i = 0) cuts the sum at i = 0 whenever
// alpha log(1-q) < -30 and returns a negative RDP (-30/(alpha-1)). Past
// alpha the signs alternate and the magnitudes decrease: |t_{i+1}/t_i|
// is |alpha-i|/(i+1) < 1 times q/(1-q) e^(i/s^2) erfc(x+h)/erfc(x) (x the
// erfc argument, h = 1/(sqrt2 s); the mirror factor for t1), and the log
// of that factor is non-decreasing in i (its increment is 1/s^2 plus a
// second difference of log erfc, whose second derivative exceeds -2, so
// the increment is >= 1/s^2 - 2h^2 = 0) with limit 0 (the tail asymptote
// of erfc, z0 = s^2 log(1/q-1) + 1/2), hence <= 1. So once i > alpha the
// remainder of each series is at most its last term's magnitude. The
// loop stops when both are below e^-40, under half a unit in the last
// place of A_alpha >= 1 (Jensen), so the truncation is below the
// rounding of A itself; if maxFracTerms terms do not get there, both
// magnitudes are added, which keeps the result an upper bound.
// TestSampledGaussianRDPMonotone checks the result against the integer
// orders.
func logAFrac(q, s, alpha float64) float64 {
	la0, la1 := math.Inf(-1), math.Inf(-1)
	z0 := s*s*math.Log(1/q-1) + 0.5
	lq, l1q := math.Log(q), math.Log1p(-q)
	lc, pos := 0.0, true // log |C(alpha, i)| and its sign, updated incrementally
	var ls0, ls1 float64
	for i := 0; ; i++ {
		if i > 0 {
			f := alpha - float64(i-1) // C(alpha, i) = C(alpha, i-1) (alpha-i+1)/i
			lc += math.Log(math.Abs(f)) - math.Log(float64(i))
			if f < 0 {
				pos = !pos
			}
		}
		fi := float64(i)
		j := alpha - fi
		lt0 := lc + fi*lq + j*l1q
		lt1 := lc + j*lq + fi*l1q
		le0 := math.Log(0.5) + logErfc((fi-z0)/(math.Sqrt2*s))
		le1 := math.Log(0.5) + logErfc((z0-j)/(math.Sqrt2*s))
		ls0 = lt0 + (fi*fi-fi)/(2*s*s) + le0
		ls1 = lt1 + (j*j-j)/(2*s*s) + le1
		if pos {
			la0, la1 = logAdd(la0, ls0), logAdd(la1, ls1)
		} else {
			la0, la1 = logSub(la0, ls0), logSub(la1, ls1)
		}
		if fi > alpha && math.Max(ls0, ls1) < -40 {
			break
		}
		if fi > alpha && i >= maxFracTerms {
			// The remainders, each at most its last term's magnitude.
			la0, la1 = logAdd(la0, ls0), logAdd(la1, ls1)
			break
		}
	}
	return logAdd(la0, la1)
}

// maxFracTerms caps the terms of logAFrac's series (beyond alpha; the
// remainder bound keeps the result an upper bound when it is reached).
const maxFracTerms = 100000

// SampledGaussianEpsilon returns the (epsilon, delta) guarantee of steps
// compositions of the Poisson-subsampled Gaussian mechanism with sampling
// rate q and noise multiplier s (sigma/Delta), by RDP composition over the
// accountant's grid of orders and the conversion of Canonne, Kamath and
// Steinke (2020, Proposition 12; the one Opacus uses since its issue #157):
// epsilon = min_alpha steps RDP(alpha) + log((alpha-1)/alpha) - (log delta
// + log alpha)/(alpha-1). It also returns the minimising order.
func SampledGaussianEpsilon(q, s float64, steps int, delta float64) (eps, order float64, err error) {
	if steps < 1 {
		return 0, 0, fmt.Errorf("%w: steps is %d, must be >= 1", ErrSensitivity, steps)
	}
	if err := CheckPositiveDelta(delta); err != nil {
		return 0, 0, err
	}
	if _, err := SampledGaussianRDP(q, s, 2); err != nil {
		return 0, 0, err
	}
	eps = math.Inf(1)
	for _, a := range rdpOrders {
		if e := rdpToDP(a, float64(steps)*sampledGaussianRDP(q, s, a), delta); e < eps {
			eps, order = e, a
		}
	}
	return eps, order, nil
}

// SampledGaussianNoiseMultiplier returns the smallest noise multiplier s
// (to relative precision 1e-4, the returned value always satisfying the
// target) such that steps Poisson-subsampled Gaussian steps at rate q,
// composed with the RDP curve of extra (already spent releases; may be
// nil), are (epsilon, delta)-DP under RDP accounting. It bisects over s,
// the guarantee being decreasing in s; an error wrapping ErrBudget means
// no s up to 1e6 fits (extra alone exhausts the budget).
func SampledGaussianNoiseMultiplier(q float64, steps int, epsilon, delta float64, extra *Accountant) (float64, error) {
	if err := (Budget{Epsilon: epsilon, Delta: delta}).Validate(); err != nil {
		return 0, err
	}
	if err := CheckPositiveDelta(delta); err != nil {
		return 0, err
	}
	if steps < 1 {
		return 0, fmt.Errorf("%w: steps is %d, must be >= 1", ErrSensitivity, steps)
	}
	if _, err := SampledGaussianRDP(q, 1, 2); err != nil {
		return 0, err
	}
	fits := func(s float64) bool {
		var a Accountant
		if extra != nil {
			a.releases = append(a.releases, extra.releases...)
		}
		a.releases = append(a.releases, Release{What: "step", Mechanism: MechGaussian, SensitivityNorm: "l2", Sensitivity: 1, Scale: s, SampleRate: q, Count: steps, Calibration: "sigma"})
		return a.rdpFitsFast(delta, epsilon)
	}
	hi := 1.0
	for !fits(hi) {
		hi *= 2
		if hi > 1e6 {
			return 0, fmt.Errorf("%w: no noise multiplier fits epsilon %v, delta %v over %d steps at rate %v", ErrBudget, epsilon, delta, steps, q)
		}
	}
	lo := hi / 2
	if hi == 1 {
		lo = 0
	}
	for hi-lo > 1e-4*hi {
		mid := lo + (hi-lo)/2
		if mid > 0 && fits(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi, nil
}

// rdpFitsFast reports whether the RDP total at delta, minimised over the
// integer orders of the grid up to four past the best one and over the
// fractional ones within 1 of the best integer order, is at most epsilon
// (false if a release has no RDP curve). The curve in alpha is smooth and
// unimodal for Gaussian and Laplace releases, so the minimum lies there;
// the minimum over a subset of orders is still a valid bound, never below
// the full grid's, so a noise multiplier accepted here is accepted by the
// full grid too. It returns as soon as an evaluated order fits, and skips
// a fractional order whose lower bound (the composed RDP at floor(alpha),
// or 0, converted at alpha; orders.go) already exceeds epsilon, since that
// order's value cannot fit either: the answer is that of evaluating every
// order of the subset (TestOrderShortcutsExact). The bisection of
// SampledGaussianNoiseMultiplier starts its bracket at multipliers far
// below the answer, where the fractional orders near 2 cost milliseconds
// each (logAFrac).
func (a *Accountant) rdpFitsFast(delta, epsilon float64) bool {
	best, bestA := math.Inf(1), 0.0
	rising := 0
	ints := map[float64]float64{}
	for _, al := range rdpOrders {
		if al != math.Trunc(al) {
			continue
		}
		rho, ok := a.RDPAt(al)
		if !ok {
			return false
		}
		ints[al] = rho
		e := rdpToDP(al, rho, delta)
		if e <= epsilon {
			return true
		}
		if e < best {
			best, bestA, rising = e, al, 0
		} else if rising++; rising == 4 {
			break
		}
	}
	for _, al := range rdpOrders {
		if al == math.Trunc(al) || math.Abs(al-bestA) >= 1 {
			continue
		}
		lb := 0.0
		if r, ok := ints[math.Floor(al)]; ok {
			lb = r
		}
		if skipAbove(rdpToDP(al, lb, delta), epsilon) {
			continue
		}
		rho, _ := a.RDPAt(al)
		if rdpToDP(al, rho, delta) <= epsilon {
			return true
		}
	}
	return false
}

// GroupTwoEpsilon returns an (epsilon, delta) guarantee, minimised over
// the accountant's grid of orders, for two inputs two neighbouring steps
// apart (D ~ D0 ~ D', as one rating's value change is two zero-out steps
// through the log with that rating nulled) when the releases in single
// were accounted for one step; the releases in direct (may be nil) have
// sensitivities that already cover the two-step change and enter once.
// Its RDP curve is
//
//	rho2(alpha) = direct(alpha) + (alpha - 1/2)/(alpha - 1) single(2 alpha) + single(2 alpha - 1),
//
// group privacy for RDP (Mironov 2017, Proposition 11, with p = q = 2):
// writing P, R, Q for the output laws on D, D0, D', Hoelder's inequality
// on E_R[(P/R)^alpha (R/Q)^(alpha-1)] with exponents 2 and 2 gives
// D_alpha(P||Q) <= (alpha - 1/2)/(alpha - 1) D_2alpha(P||R) +
// D_(2 alpha - 1)(R||Q). It needs single's curve for both directions of a
// step, which the sampled Gaussian bound gives (Mironov, Talwar and Zhang
// 2019, Theorem 5), and applies to an adaptive composition (the bound
// holds for the conditional laws of each step given the released past,
// and direct composes before it). The result is converted by
// Canonne, Kamath and Steinke (2020, Proposition 12), as TotalBy does;
// order is the minimising order, and ok is false when some release has
// no RDP curve or delta is not in (0, 1).
func GroupTwoEpsilon(single, direct *Accountant, delta float64) (eps, order float64, ok bool) {
	if !(delta > 0) || delta >= 1 || single == nil {
		return 0, 0, false
	}
	if direct == nil {
		direct = &Accountant{}
	}
	// The three curves are non-decreasing in their orders and the
	// coefficient (a - 1/2)/(a - 1) is positive, so their values at a
	// smaller order b bound rho2(a) from below (orders.go).
	parts := map[float64][3]float64{}
	curve := orderCurve{
		eval: func(a float64) (float64, bool) {
			d, ok1 := direct.RDPAt(a)
			s2, ok2 := single.RDPAt(2 * a)
			s1, ok3 := single.RDPAt(2*a - 1)
			if !ok1 || !ok2 || !ok3 {
				return 0, false
			}
			parts[a] = [3]float64{d, s2, s1}
			return d + (a-0.5)/(a-1)*s2 + s1, true
		},
		lower: func(a, b float64) float64 {
			p := parts[b]
			return p[0] + (a-0.5)/(a-1)*p[1] + p[2]
		},
	}
	if eps, order, ok = minOverOrders(curve, delta); !ok {
		return 0, 0, false
	}
	return eps, order, true
}
