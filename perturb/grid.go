package perturb

import (
	"math"
	"math/bits"
	"math/rand/v2"
)

// granularityParam sets the noise grid relative to the noise scale: the
// grid step is the smallest power of two g with g >= scale/2^40, so a
// noise scale spans between 2^39 and 2^40 grid steps. This is the constant
// of Google's DP library (go/noise/laplace_noise.go, granularityParam =
// 2^40): fine enough that the discretisation changes the distribution by
// far less than any statistical test can see, coarse enough that the
// two-sided geometric and discrete Gaussian samples (at most about 2^46 steps
// within 2^-1000 probability) stay far below 2^53, where float64 stops
// representing every integer.
const granularityParam = 0x1p40

// Granularity returns the power-of-two grid step used for noise of the
// given scale (Laplace b, Gaussian sigma or l2 radius scale): the smallest
// power of two g >= scale/2^40. It panics if scale is not positive and
// finite (constructors validate scales first).
func Granularity(scale float64) float64 {
	if !(scale > 0) || math.IsInf(scale, 0) {
		panic("perturb: Granularity of a non-positive or infinite scale")
	}
	frac, exp := math.Frexp(scale / granularityParam) // scale/2^40 = frac * 2^exp, frac in [0.5, 1)
	if frac == 0.5 {
		exp-- // already a power of two
	}
	return math.Ldexp(1, exp)
}

// Snap rounds x to the nearest multiple of the power-of-two grid step g
// (ties to even). Division and multiplication by a power of two are exact in
// float64, so the result is exactly k*g for an integer k; values already
// beyond 2^53 g are returned unchanged (they are multiples of g already).
// NaN and infinities are returned unchanged.
func Snap(x, g float64) float64 {
	return math.RoundToEven(x/g) * g
}

// uniformOpen returns a uniform draw from (0, 1) with full relative
// precision at every magnitude: the binary exponent is drawn by counting
// leading zero bits of fresh 64-bit words (each bit halves the interval)
// and the 52 mantissa bits come from a separate word. A plain
// r.Float64() has absolute resolution 2^-53, which makes -log(U) coarse in
// the far tail (the gap Mironov's attack class exploits); this sampler does
// not have that gap above 2^-1074.
func uniformOpen(r *rand.Rand) float64 { return uniformOpenWords(r.Uint64) }

// uniformOpenWords is uniformOpen drawing its 64-bit words from next (the
// bulk sampler's tail calls it with its source's word method directly).
func uniformOpenWords(next func() uint64) float64 {
	exp := -1
	for {
		w := next()
		if w != 0 {
			exp -= bits.LeadingZeros64(w)
			break
		}
		exp -= 64
		if exp < -1074 {
			return math.SmallestNonzeroFloat64
		}
	}
	// U in [2^exp, 2^(exp+1)): the 52 mantissa bits uniform, so U is
	// uniform on the 2^52 floats of its binade, each exactly representable
	// (an earlier version added half a unit in the last place, which
	// float64 rounds to even: it reached only the even mantissas).
	m := next() >> 12
	return math.Ldexp(1+float64(m)*0x1p-52, exp)
}

// maxGridSteps bounds |k| for grid samples: 2^62 keeps k*g exact and far
// from int64 overflow. A geometric draw with lambda >= 2^-41 exceeds it with
// probability exp(-2^21), i.e. never.
const maxGridSteps = 1 << 62

func geometricFromU(u, lambda float64) int64 {
	k := math.Floor(-math.Log(u) / lambda)
	if k >= maxGridSteps {
		return maxGridSteps
	}
	return int64(k)
}

// signAndUniform draws a random sign and an independent uniform U in (0, 1]
// with full relative precision from (usually) one 64-bit word: bit 0 is the
// sign and the other 63 bits u give U = (u + 1/2)/2^63 (rounded to 53
// bits), which has relative precision 2^-52 whenever u >= 2^52, i.e. U >=
// 2^-11. Otherwise (probability 2^-11) U is redrawn as 2^-11 uniformOpen,
// the exact conditional law of U given U < 2^-11, so the far tail keeps
// full precision.
func signAndUniform(r *rand.Rand) (neg bool, u float64) {
	w := r.Uint64()
	neg = w&1 == 1
	m := w >> 1
	if m >= 1<<52 {
		return neg, (float64(m) + 0.5) * 0x1p-63
	}
	return neg, uniformOpen(r) * 0x1p-11
}

// twoSidedGeometric returns a draw of the discrete Laplace distribution on
// the integers, P(k) proportional to e^(-lambda |k|), k in Z (Google's
// construction): a geometric magnitude with a random sign, rejecting
// "negative zero" so that 0 is not counted twice.
func twoSidedGeometric(r *rand.Rand, lambda float64) int64 {
	for {
		neg, u := signAndUniform(r)
		k := geometricFromU(u, lambda)
		if neg && k == 0 {
			continue
		}
		if neg {
			return -k
		}
		return k
	}
}

// discreteGaussian returns a draw of the discrete Gaussian on the integers,
// P(k) proportional to exp(-k^2 / (2 sigma^2)), by the rejection sampler of
// Canonne, Kamath and Steinke (2020, Algorithm 3): propose Y from the
// discrete Laplace with scale t = floor(sigma) + 1 and accept with
// probability exp(-(|Y| - sigma^2/t)^2 / (2 sigma^2)). The expected number
// of proposals is below 2 for sigma >= 1 (CKS Section 5). The acceptance
// test compares a uniform double to the acceptance probability, so the
// output distribution is exact up to float64 rounding of that probability
// (relative error about 2^-52 per value, not a support gap).
func discreteGaussian(r *rand.Rand, sigma float64) int64 {
	t := math.Floor(sigma) + 1
	s2 := sigma * sigma
	for {
		y := twoSidedGeometric(r, 1/t)
		d := math.Abs(float64(y)) - s2/t
		if r.Float64() < math.Exp(-d*d/(2*s2)) {
			return y
		}
	}
}
