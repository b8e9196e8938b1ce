package cape

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/dprec/dprec/perturb"
)

// MaxSites bounds the number of sites. The zero-sum construction keeps
// every partial sum of the grid integers below S * 2^46 (a discrete
// Gaussian draw of scale 2^40 grid steps exceeds 2^46 steps with
// probability below e^-2000), so S <= 100 keeps them below 2^53, where
// float64 represents every integer exactly.
const MaxSites = 100

// ZeroSumNoise draws the correlated noise of the trusted generator for one
// round: L entries for each of the S = len(mu) sites, with
// sum_s mu_s e_s[j] = 0 for every entry j (doc.go, "Zero-sum noise").
//
// For each entry it draws z_1..z_S i.i.d. N(0, sigma2) with perturb's
// Gaussian sampler, which returns exact multiples n_s g of a power-of-two
// grid step g; it splits T = sum_s n_s into integers m_s (each floor(T/S)
// or floor(T/S)+1, the extra units going to T mod S sites starting at a
// random offset) and sets w_s = (n_s - m_s) g, so sum_s w_s = 0 exactly in
// integer arithmetic and therefore also in float64 in any summation order.
// Then e_s = w_s / mu_s; when every mu_s = 1/S this is w_s * S, again an
// exact grid multiple, and sum_s e_s == 0 holds bit for bit. For unequal
// weights w_s / mu_s is in general not a grid multiple, so it is snapped
// to the grid g (perturb.Snap): every e_s is then a multiple of g, like
// every other noise value of the protocol, and sum_s mu_s e_s is no longer
// exactly 0 but at most g/2 sum_s mu_s = g/2 in absolute value (plus
// float64 rounding of the products), about sigma 2^-41 (measured by the
// tests).
//
// Var(w_s) = (1 - 1/S) sigma2 + O(g^2), g ~ sigma 2^-40. It returns an
// error when sigma2 is not positive and finite or S is out of [2, MaxSites].
func ZeroSumNoise(mu []float64, sigma2 float64, L int, r *rand.Rand) ([][]float64, error) {
	s := len(mu)
	if s < 2 || s > MaxSites {
		return nil, fmt.Errorf("cape: %d sites, want 2..%d", s, MaxSites)
	}
	if L < 0 {
		return nil, fmt.Errorf("cape: negative noise length %d", L)
	}
	gauss, err := perturb.NewGaussianSigma(1, math.Sqrt(sigma2))
	if err != nil {
		return nil, fmt.Errorf("cape: zero-sum noise: %w", err)
	}
	g := gauss.Granularity()
	equal := true
	for _, m := range mu {
		if m != mu[0] {
			equal = false
		}
	}
	out := make([][]float64, s)
	for i := range out {
		out[i] = make([]float64, L)
	}
	n := make([]int64, s)
	for j := 0; j < L; j++ {
		var t int64
		for i := range n {
			n[i] = int64(gauss.Sample(r) / g) // exact: Sample returns k*g
			t += n[i]
		}
		q, rem := floorDiv(t, int64(s))
		off := int(r.Uint64N(uint64(s)))
		for i := range n {
			m := q
			if int64((i-off+s)%s) < rem {
				m++
			}
			w := float64(n[i]-m) * g
			if equal {
				out[i][j] = w * float64(s)
			} else {
				out[i][j] = perturb.Snap(w/mu[i], g)
			}
		}
	}
	return out, nil
}

// floorDiv returns q = floor(a/b) and r = a - q b in [0, b) for b > 0.
func floorDiv(a, b int64) (q, r int64) {
	q, r = a/b, a%b
	if r < 0 {
		q--
		r += b
	}
	return q, r
}

// gaussianVector returns L i.i.d. N(0, sigma2) draws from perturb's grid
// Gaussian sampler (zeros when sigma2 == 0).
func gaussianVector(sigma2 float64, L int, r *rand.Rand) ([]float64, error) {
	v := make([]float64, L)
	if sigma2 == 0 {
		return v, nil
	}
	m, err := perturb.NewGaussianSigma(1, math.Sqrt(sigma2))
	if err != nil {
		return nil, fmt.Errorf("cape: %w", err)
	}
	for i := range v {
		v[i] = m.Sample(r)
	}
	return v, nil
}
