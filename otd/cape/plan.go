package cape

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// SiteSpec is what one site announces before a round: its sample size
// N_s and its privacy requirement (epsilon_s, delta_s). Together with the
// l2 sensitivity of its statistic (a function of N_s fixed by the job) it
// determines tau_s.
type SiteSpec struct {
	N       int     `json:"n"`
	Epsilon float64 `json:"epsilon"`
	Delta   float64 `json:"delta"`
}

// Plan holds the CAPE noise variances of one release round (doc.go,
// "Variances"). All slices have one entry per site, in site order.
type Plan struct {
	// Mu are the aggregation weights mu_s (sum 1, each > 0).
	Mu []float64 `json:"mu"`
	// Tau2 are the per-site Gaussian-mechanism variances tau_s^2.
	Tau2 []float64 `json:"tau2"`
	// TauC2 is the target variance of the aggregate's noise, tau_c^2 =
	// max_s mu_s^2 tau_s^2 (the pooled-data variance; equal to tau_s^2/S^2
	// for equal sites).
	TauC2 float64 `json:"tau_c2"`
	// TauG2, TauF2 are the variances of the site noise g_s and of the
	// aggregator noise f_s; TauE2 is the variance of the correlated noise
	// e_s the generator must reach (at least; see ZeroSumSigma2).
	TauG2 []float64 `json:"tau_g2"`
	TauF2 []float64 `json:"tau_f2"`
	TauE2 []float64 `json:"tau_e2"`
	// ZeroSumSigma2 is the variance sigma_z^2 of the independent draws
	// z_s from which the generator builds w_s = mu_s e_s = z_s - mean(z);
	// Var(e_s) = (1 - 1/S) sigma_z^2 / mu_s^2 >= TauE2[s].
	ZeroSumSigma2 float64 `json:"zero_sum_sigma2"`
	// Equal is set when all sites have the same tau_s and mu_s = 1/S: the
	// variances are then exactly those of eq. (2).
	Equal bool `json:"equal"`
}

// S returns the number of sites.
func (p *Plan) S() int { return len(p.Mu) }

// ErrPlan wraps every invalid plan input.
var ErrPlan = errors.New("cape: invalid plan")

// NewPlan computes the variances for sites with Gaussian-mechanism
// variances tau2 (tau_s^2) and weights mu (nil means equal weights 1/S).
// It returns an error for S < 2, non-positive or non-finite tau2, or
// weights that are not positive or do not sum to 1 (within 1e-9).
func NewPlan(tau2, mu []float64) (*Plan, error) {
	s := len(tau2)
	if s < 2 {
		return nil, fmt.Errorf("%w: %d sites, CAPE needs at least 2", ErrPlan, s)
	}
	if mu == nil {
		mu = make([]float64, s)
		for i := range mu {
			mu[i] = 1 / float64(s)
		}
	}
	if len(mu) != s {
		return nil, fmt.Errorf("%w: %d weights for %d sites", ErrPlan, len(mu), s)
	}
	var sum float64
	for i, m := range mu {
		if !(m > 0) || math.IsInf(m, 0) {
			return nil, fmt.Errorf("%w: weight mu_%d = %v must be positive and finite", ErrPlan, i+1, m)
		}
		sum += m
	}
	// 1e-9: weights computed as N_s/N sum to 1 within a few ulps.
	if math.Abs(sum-1) > 1e-9 {
		return nil, fmt.Errorf("%w: weights sum to %v, must sum to 1", ErrPlan, sum)
	}
	for i, t := range tau2 {
		if !(t > 0) || math.IsInf(t, 0) {
			return nil, fmt.Errorf("%w: tau_%d^2 = %v must be positive and finite", ErrPlan, i+1, t)
		}
	}
	p := &Plan{Mu: append([]float64(nil), mu...), Tau2: append([]float64(nil), tau2...),
		TauG2: make([]float64, s), TauF2: make([]float64, s), TauE2: make([]float64, s)}
	fs := float64(s)
	p.Equal = true
	for i := range tau2 {
		if tau2[i] != tau2[0] || mu[i] != mu[0] {
			p.Equal = false
		}
	}
	if p.Equal {
		// Eq. (2): tau_e^2 = tau_f^2 = (1 - 1/S) tau_s^2, tau_g^2 = tau_s^2/S,
		// tau_c^2 = tau_s^2/S^2.
		t := tau2[0]
		p.TauC2 = t / (fs * fs)
		for i := range tau2 {
			p.TauG2[i] = t / fs
			p.TauF2[i] = t - t/fs
			p.TauE2[i] = t - t/fs
		}
		// w_s = mu_s e_s = z_s - mean(z) with Var(z) = mu^2 tau_s^2 gives
		// Var(e_s) = (1 - 1/S) tau_s^2 exactly.
		p.ZeroSumSigma2 = mu[0] * mu[0] * t
		return p, nil
	}
	// General case (doc.go, "Variances", steps 1-4).
	var q float64 // sum_s mu_s^2 tau_s^2
	for i := range tau2 {
		v := mu[i] * mu[i] * tau2[i]
		q += v
		if v > p.TauC2 {
			p.TauC2 = v
		}
	}
	for i := range tau2 {
		p.TauG2[i] = tau2[i] * p.TauC2 / q
		rest := tau2[i] - p.TauG2[i]
		if rest < 0 {
			rest = 0
		}
		p.TauF2[i] = rest
		p.TauE2[i] = rest
		// Need (1 - 1/S) sigma_z^2 / mu_s^2 >= rest.
		if z := mu[i] * mu[i] * rest / (1 - 1/fs); z > p.ZeroSumSigma2 {
			p.ZeroSumSigma2 = z
		}
	}
	return p, nil
}

// EVar returns the variance of site s's correlated noise e_s under the
// generator's construction: (1 - 1/S) sigma_z^2 / mu_s^2.
func (p *Plan) EVar(s int) float64 {
	fs := float64(p.S())
	return (1 - 1/fs) * p.ZeroSumSigma2 / (p.Mu[s] * p.Mu[s])
}

// AggregateVar returns the variance of each entry of the aggregator's
// estimate sum_{s in present} mu_s (a^_s - f_s) / sum_{s in present} mu_s
// around the weighted mean of the site statistics, when only the sites
// with present[s] set delivered their release. With every site present it
// is tau_c^2 (Lemma 1). With drop-outs the e_s of the present sites no
// longer cancel: the sum over r present sites of w_s = z_s - mean(z) has
// variance sigma_z^2 r (S - r)/S, which is added to the g variance.
func (p *Plan) AggregateVar(present []bool) float64 {
	s := p.S()
	var m, gv float64
	r := 0
	for i := 0; i < s; i++ {
		if present[i] {
			r++
			m += p.Mu[i]
			gv += p.Mu[i] * p.Mu[i] * p.TauG2[i]
		}
	}
	if r == 0 {
		return math.Inf(1)
	}
	fs, fr := float64(s), float64(r)
	ev := p.ZeroSumSigma2 * fr * (fs - fr) / fs
	return (gv + ev) / (m * m)
}

// ConvVar returns the variance of the conventional scheme's estimate over
// the present sites (each site adds N(0, tau_s^2) and the aggregator takes
// the renormalised weighted mean): sum mu_s^2 tau_s^2 / (sum mu_s)^2.
func (p *Plan) ConvVar(present []bool) float64 {
	var m, v float64
	for i := range p.Mu {
		if present == nil || present[i] {
			m += p.Mu[i]
			v += p.Mu[i] * p.Mu[i] * p.Tau2[i]
		}
	}
	if m == 0 {
		return math.Inf(1)
	}
	return v / (m * m)
}

// ConvEqualVar returns the variance of the conventional scheme's plain
// average (1/S) sum_s a^_s with a^_s = a_s + N(0, tau_s^2): sum tau_s^2/S^2,
// the tau_ag^2 of Proposition 1.
func (p *Plan) ConvEqualVar() float64 {
	var v float64
	for _, t := range p.Tau2 {
		v += t
	}
	fs := float64(p.S())
	return v / (fs * fs)
}

// Gain returns Proposition 1's gain G = tau_ag^2 / tau_imp^2 =
// ConvEqualVar / TauC2. With mu_s = N_s/N and a common (epsilon, delta) it
// equals N^2/S^2 sum_s 1/N_s^2, which is S for equal sample sizes.
func (p *Plan) Gain() float64 { return p.ConvEqualVar() / p.TauC2 }

// JointVar returns the variance with which the aggregator's joint view of
// all releases (a^_t - f_t for every t, correlated through the e_t) reveals
// site s's statistic: 1/[Sigma^-1]_ss with Sigma = Cov(e) + diag(tau_g^2)
// (doc.go, "What the guarantee covers"). It is below tau_s^2: for equal
// sites it is tau_s^2 (S+1)/(2S).
func (p *Plan) JointVar(s int) float64 {
	u, v := p.JointWeights(s)
	if u == nil {
		return 0
	}
	return v
}

// JointWeights returns the weights u = Sigma^-1 e_s / [Sigma^-1]_ss of the
// aggregator's best unbiased linear estimate of site s's statistic from all
// releases, sum_t u_t (a^_t - f_t - a_t) + a_s with u_s = 1 (worst case: the
// other sites' statistics a_t known), and its noise variance JointVar(s).
// It returns nil if Sigma is not positive definite. The Lemma 1 tests
// measure this variance on protocol runs.
func (p *Plan) JointWeights(s int) ([]float64, float64) {
	n := p.S()
	fs := float64(n)
	sig := mat.NewSymDense(n, nil)
	for i := 0; i < n; i++ {
		for j := i; j < n; j++ {
			// Cov(w_i, w_j) = sigma_z^2 ([i=j] - 1/S), e = w/mu.
			c := -p.ZeroSumSigma2 / fs
			if i == j {
				c += p.ZeroSumSigma2
			}
			c /= p.Mu[i] * p.Mu[j]
			if i == j {
				c += p.TauG2[i]
			}
			sig.SetSym(i, j, c)
		}
	}
	var ch mat.Cholesky
	if !ch.Factorize(sig) {
		return nil, 0
	}
	var inv mat.SymDense
	if err := ch.InverseTo(&inv); err != nil {
		return nil, 0
	}
	pss := inv.At(s, s)
	u := make([]float64, n)
	for t := range u {
		u[t] = inv.At(t, s) / pss
	}
	return u, 1 / pss
}

// CollusionVar returns the noise variance protecting site s's statistic in
// the aggregate (in units of site s's statistic, comparable to tau_s^2)
// against parties that know the g_t of the sites in known (s itself is
// never known): sum_{t not known} mu_t^2 tau_g,t^2 / mu_s^2. With nobody
// known it is tau_c^2/mu_s^2 >= tau_s^2; colluding sites that pool their
// own g_t lower it (doc.go, "What the guarantee covers").
func (p *Plan) CollusionVar(s int, known []bool) float64 {
	var v float64
	for t := range p.Mu {
		if t == s || known == nil || !known[t] {
			v += p.Mu[t] * p.Mu[t] * p.TauG2[t]
		}
	}
	return v / (p.Mu[s] * p.Mu[s])
}

// Check verifies the feasibility constraints of Section III-A for the
// plan: tau_f^2 + tau_g^2 >= tau_s^2, Var(e_s) + tau_g^2 >= tau_s^2 (both
// within relative 1e-12 for rounding), sum mu_s^2 tau_g^2 = tau_c^2
// (relative 1e-12) and tau_c^2 >= mu_s^2 tau_s^2. It returns the first
// violation.
func (p *Plan) Check() error {
	const tol = 1e-12 // relative rounding slack of the float64 arithmetic above
	var sg float64
	for i := range p.Mu {
		t := p.Tau2[i]
		if p.TauF2[i]+p.TauG2[i] < t*(1-tol) {
			return fmt.Errorf("%w: site %d: tau_f^2 + tau_g^2 = %g < tau_s^2 = %g", ErrPlan, i+1, p.TauF2[i]+p.TauG2[i], t)
		}
		if p.EVar(i)+p.TauG2[i] < t*(1-tol) {
			return fmt.Errorf("%w: site %d: Var(e_s) + tau_g^2 = %g < tau_s^2 = %g", ErrPlan, i+1, p.EVar(i)+p.TauG2[i], t)
		}
		if p.TauC2 < p.Mu[i]*p.Mu[i]*t*(1-tol) {
			return fmt.Errorf("%w: site %d: tau_c^2 = %g < mu_s^2 tau_s^2 = %g", ErrPlan, i+1, p.TauC2, p.Mu[i]*p.Mu[i]*t)
		}
		sg += p.Mu[i] * p.Mu[i] * p.TauG2[i]
	}
	if math.Abs(sg-p.TauC2) > tol*p.TauC2*float64(p.S()) {
		return fmt.Errorf("%w: sum mu_s^2 tau_g^2 = %g != tau_c^2 = %g", ErrPlan, sg, p.TauC2)
	}
	return nil
}
