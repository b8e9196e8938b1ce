package otd

import (
	"fmt"
	"math"
)

// Sensitivities are the l2 sensitivities of the two moment releases of
// AGN / AVN in the parametrisation the noise is added in: M2 as the vector
// of its D(D+1)/2 upper-triangle entries (i <= j) and M3 as the vector of
// its D_sym = C(D+2,3) packed entries (i <= j <= k, SymTensor.Packed), for
// corpora (or sample sets) of N records differing in one record. See the
// derivations in the package documentation ("# Sensitivities").
type Sensitivities struct {
	M2, M3 float64
	// M2Ref and M3Ref cite the derivation.
	M2Ref, M3Ref string
}

// STMSensitivities returns Delta_2 = Delta_3 = sqrt(2)/n for the
// single-topic model estimated from n documents (Imtiaz and Sarwate 2018a sec. 2; Imtiaz and Sarwate 2018b
// app. C), valid for both estimators (AllTriples, FirstThree) because each
// document contributes a probability matrix / tensor with weight 1/n
// (derivation (S1) in the package documentation ("# Sensitivities"); tight: "a a a" replaced by "b b b").
func STMSensitivities(n int) (Sensitivities, error) {
	if n < 1 {
		return Sensitivities{}, fmt.Errorf("otd: sensitivity for %d documents", n)
	}
	s := math.Sqrt2 / float64(n)
	return Sensitivities{M2: s, M3: s,
		M2Ref: "go doc otd (S1); Imtiaz and Sarwate 2018a sec. 2 (sqrt(2)/N)",
		M3Ref: "go doc otd (S1); Imtiaz and Sarwate 2018a sec. 2 (sqrt(2)/N), packed i<=j<=k entries"}, nil
}

// MOGSensitivities returns the sensitivities for the spherical Gaussian
// mixture from n samples with ||x||_2 <= 1 in d dimensions and noise
// variance sigma2 (derivation (S2) in the package documentation ("# Sensitivities")):
//
//	Delta_2 = sqrt(2)/n                             (Imtiaz and Sarwate 2018b app. C prints 1/n: that is the spectral-norm change, not the l2 change the Gaussian mechanism needs; e.g. x = e1 -> e2 moves the upper triangle by sqrt(2)/n)
//	Delta_3 = (2 + 2 sigma2 sqrt(d+8))/n            (Imtiaz and Sarwate 2018b app. C prints 2/n + 6 d sigma2/n, valid but looser)
func MOGSensitivities(n, d int, sigma2 float64) (Sensitivities, error) {
	if n < 1 || d < 1 {
		return Sensitivities{}, fmt.Errorf("otd: sensitivity for %d samples of dimension %d", n, d)
	}
	if !(sigma2 >= 0) || math.IsInf(sigma2, 0) {
		return Sensitivities{}, fmt.Errorf("otd: sigma2 = %v must be non-negative and finite", sigma2)
	}
	fn := float64(n)
	return Sensitivities{
		M2:    math.Sqrt2 / fn,
		M3:    (2 + 2*sigma2*math.Sqrt(float64(d)+8)) / fn,
		M2Ref: "go doc otd (S2): sqrt(2)/N (Imtiaz and Sarwate 2018b app. C prints 1/N, the spectral norm: too small for the Gaussian mechanism)",
		M3Ref: "go doc otd (S2): (2 + 2 sigma^2 sqrt(D+8))/N on packed entries (Imtiaz and Sarwate 2018b app. C: 2/N + 6 D sigma^2/N, valid but looser)",
	}, nil
}

// MOGSensitivitiesPaper returns the values printed in Imtiaz and Sarwate 2018b appendix C
// (Delta_2 = 1/n, Delta_3 = 2/n + 6 d sigma2/n), for comparison only:
// Delta_2 = 1/n is NOT a valid l2 sensitivity (see MOGSensitivities).
func MOGSensitivitiesPaper(n, d int, sigma2 float64) (m2, m3 float64) {
	fn := float64(n)
	return 1 / fn, 2/fn + 6*float64(d)*sigma2/fn
}

// packUpper returns the D(D+1)/2 upper-triangle entries (i <= j, row by
// row) of the symmetric matrix given by at.
func packUpper(d int, at func(i, j int) float64) []float64 {
	out := make([]float64, 0, d*(d+1)/2)
	for i := 0; i < d; i++ {
		for j := i; j < d; j++ {
			out = append(out, at(i, j))
		}
	}
	return out
}
