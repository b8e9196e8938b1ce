// Package stattest holds the statistical helpers of dprec's tests (the
// role of Google's stattestutils): Kolmogorov-Smirnov and chi-square
// statistics with critical values for a stated false-reject probability,
// the z quantile Z5 of moment tests, sample mean/variance and correlation.
// perturb's noise tests and completion's noise and shuffle tests use it;
// it is imported only by _test.go files. It is a leaf package (the
// standard library only).
package stattest

import (
	"math"
	"sort"
)

// KS returns the Kolmogorov-Smirnov statistic sup |F_n(x) - F(x)| of the
// sample xs (sorted in place) against the continuous CDF cdf.
func KS(xs []float64, cdf func(float64) float64) float64 {
	sort.Float64s(xs)
	n := float64(len(xs))
	var d float64
	for i, x := range xs {
		f := cdf(x)
		d = math.Max(d, math.Max(f-float64(i)/n, float64(i+1)/n-f))
	}
	return d
}

// KSCritical returns the critical value of the one-sample KS statistic for
// n draws at false-reject probability alpha, from the asymptotic
// Kolmogorov distribution: P(sqrt(n) D > t) <= 2 exp(-2 t^2) (the
// Dvoretzky-Kiefer-Wolfowitz inequality with Massart's constant, valid for
// every n), so t = sqrt(ln(2/alpha)/2).
func KSCritical(n int, alpha float64) float64 {
	return math.Sqrt(math.Log(2/alpha)/2) / math.Sqrt(float64(n))
}

// ChiSquare returns Pearson's statistic sum (O-E)^2/E for observed counts
// and expected counts.
func ChiSquare(obs []int, exp []float64) float64 {
	var s float64
	for i, o := range obs {
		d := float64(o) - exp[i]
		s += d * d / exp[i]
	}
	return s
}

// ChiSquareCritical returns a conservative critical value of a chi-square
// statistic with df degrees of freedom, df + z sqrt(2 df) + z^2 (the
// Laurent-Massart tail bound P(X >= df + 2 sqrt(df x) + 2x) <= e^-x with
// x = z^2/2), so the false-reject probability is at most e^(-z^2/2).
func ChiSquareCritical(df int, z float64) float64 {
	x := z * z / 2
	return float64(df) + 2*math.Sqrt(float64(df)*x) + 2*x
}

// Z5 is the standard-normal quantile used for moment tests: 4.41717 is the
// 99.9995% quantile (two-sided false reject 1e-5), as in Google's DP
// library tests.
const Z5 = 4.41717

// MeanVar returns the sample mean and (unbiased) variance.
func MeanVar(xs []float64) (mean, variance float64) {
	n := float64(len(xs))
	for _, x := range xs {
		mean += x
	}
	mean /= n
	for _, x := range xs {
		d := x - mean
		variance += d * d
	}
	return mean, variance / (n - 1)
}

// Corr returns the Pearson correlation of x and y (same length).
func Corr(x, y []float64) float64 {
	mx, vx := MeanVar(x)
	my, vy := MeanVar(y)
	var c float64
	for i := range x {
		c += (x[i] - mx) * (y[i] - my)
	}
	c /= float64(len(x) - 1)
	return c / math.Sqrt(vx*vy)
}

// KS2 returns the two-sample Kolmogorov-Smirnov statistic sup |F_a(x) -
// F_b(x)| of samples a and b (both sorted in place).
func KS2(a, b []float64) float64 {
	sort.Float64s(a)
	sort.Float64s(b)
	na, nb := float64(len(a)), float64(len(b))
	var d float64
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		x := min(a[i], b[j])
		for i < len(a) && a[i] == x {
			i++
		}
		for j < len(b) && b[j] == x {
			j++
		}
		d = math.Max(d, math.Abs(float64(i)/na-float64(j)/nb))
	}
	return d
}

// KS2Critical returns the critical value of KS2 for samples of sizes n and
// m at false-reject probability alpha, from the asymptotic Kolmogorov
// distribution: P(sqrt(nm/(n+m)) D > t) ~ 2 exp(-2 t^2).
func KS2Critical(n, m int, alpha float64) float64 {
	return math.Sqrt(math.Log(2/alpha)/2) * math.Sqrt(float64(n+m)/float64(n*m))
}
