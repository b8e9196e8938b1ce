package perturb

import (
	"math"
)

// ZIGGURAT NORMALS FOR BULK NOISE. Gaussian.AddToFast draws one standard
// normal per coordinate, up to 10^6 per DP-SGD step. math/rand/v2's
// NormFloat64, which it used before, draws a signed 32-bit value (and the
// layer from other bits of the same word), so its normals are multiples of
// x_i 2^-31 (the privacy flaw zigPoint explains), and it reaches the source
// through an interface call for every draw: 11-13.6 ns a coordinate with
// the secure source on this machine (BenchmarkGaussianAddToFast_100000).
// AddToFast's draw (zigFast, then zigSlow for the rest) is the same
// algorithm (Marsaglia and Tsang 2000, "The ziggurat method for generating
// random variables", 128 layers) with four changes:
//
//   - the layer comes from the low 7 bits of a 64-bit word, the sign from
//     its top bit and the magnitude from the 31 bits below it, so layer and
//     value are independent (as in math/rand/v2; the original shared them,
//     which Doornik 2005 showed to correlate them), and the law is exactly
//     symmetric (sign and magnitude, not two's complement);
//   - the 25 bits left over dither the magnitude within its 2^-31 step
//     (zigPoint), so the normals are resolved to float64 precision (2^-53
//     relative) instead of 2^-31: rounded to the noise grid (sigma 2^-40) they
//     reach every grid point of the body of the law, which the 32-bit
//     ziggurat of math/rand/v2 does not (zigPoint says why that matters);
//   - the two sources dprec draws bulk noise from (the ChaCha8 of
//     Noise.FastSource and the PCG of StreamSource) are called directly,
//     not through the rand.Source interface;
//   - the tables are computed at start-up from the paper's recurrence in
//     float64 (zigTables), not stored as float32 literals.
//
// The fast path (the point lies inside the layer's rectangle: about 98.8%
// of draws) costs one word and a multiplication. Otherwise the draw falls
// back to the paper's wedge test (one more uniform and an exponential) or,
// in the base layer, to Marsaglia's tail method beyond r = 3.4426...; both
// take fresh words, so every draw is exact for the ziggurat's density up
// to floating-point rounding. TestZigguratNormal checks the output against
// N(0, 1) (Kolmogorov-Smirnov on 10^6 draws, the tail mass beyond r, the
// first four moments).

// zigR is the start of the tail, r, and zigV the common area of the 128
// layers, for 128 layers (Marsaglia and Tsang 2000, Table 1).
const (
	zigR = 3.442619855899
	zigV = 9.91256303526217e-3
	zigM = 1 << 31 // scale of the 32-bit signed value
)

// zigK[i] is the largest |j| (31-bit) for which layer i's rectangle
// contains the point outright; zigW[i] maps j to x; zigF[i] = exp(-x_i^2/2).
var zigK [128]uint32
var zigW, zigF [128]float64

func init() { zigTables() }

// zigTables fills the tables by the paper's recurrence:
// x_127 = r, x_{i} = sqrt(-2 log(v/x_{i+1} + f(x_{i+1}))), with the base
// layer's rectangle of width v/f(r) standing in for layer 0 and its tail.
func zigTables() {
	dn, tn := zigR, zigR
	q := zigV / math.Exp(-0.5*dn*dn)
	zigK[0] = uint32(dn / q * zigM)
	zigK[1] = 0
	zigW[0] = q / zigM
	zigW[127] = dn / zigM
	zigF[0] = 1
	zigF[127] = math.Exp(-0.5 * dn * dn)
	for i := 126; i >= 1; i-- {
		dn = math.Sqrt(-2 * math.Log(zigV/dn+math.Exp(-0.5*dn*dn)))
		zigK[i+1] = uint32(dn / tn * zigM)
		tn = dn
		zigF[i] = math.Exp(-0.5 * dn * dn)
		zigW[i] = dn / zigM
	}
}

// Bits of one 64-bit word of a draw: the layer i (bits 0-6), a dither of
// zigDitherBits bits (7-31), the magnitude a (31 bits, 32-62) and the
// sign (bit 63), all independent.
const (
	zigDitherBits = 25
	zigDither     = 1.0 / (1 << zigDitherBits)
)

// zigPoint returns layer i, the integer magnitude a and the signed point
// x = +-(a + dither) w_i of word u: a uniform point of [0, x_i) in
// magnitude, to float64 precision (56 random bits, 53 kept). The dither matters for privacy, not for the
// distribution's shape: without it the normals are multiples of w_i =
// x_i 2^-31, about 2^9 steps of the noise grid g = sigma 2^-40 apart, so
// the snapped noise would reach only a sparse, input-independent subset
// of the grid, and the set of reachable outputs would depend on the input
// (the floating-point attack of Mironov 2012 in another form). With it,
// neighbouring draws are at most 2^-52 |x| apart, far below g for |x| <
// 2^12, and every grid point in the body of the law is reachable.
func zigPoint(u uint64) (i uint64, a uint32, x float64) {
	i = u & 127
	d := int64(u>>7) & (1<<zigDitherBits - 1)
	a = uint32(u>>32) & 0x7fffffff
	x = (float64(int64(a)) + float64(d)*zigDither) * zigW[i]
	// The sign bit of u becomes the sign bit of x (no branch: it is a coin).
	x = math.Float64frombits(math.Float64bits(x) | u&(1<<63))
	return i, a, x
}

// zigFast returns the normal of word u when it falls inside its layer's
// inner rectangle (ok: a < k_i, so (a + dither) 2^-31 x_i < x_{i-1}),
// else ok = false and the caller takes zigSlow.
func zigFast(u uint64) (x float64, ok bool) {
	i, a, x := zigPoint(u)
	return x, a < zigK[i]
}

// zigSlow finishes a draw whose word u missed its rectangle: the wedge test
// of layer i (uniform point under the curve, Marsaglia and Tsang's
// acceptance) or the tail beyond r in layer 0, then a fresh draw if it is
// rejected.
func zigSlow(u uint64, next func() uint64) float64 {
	for {
		i, _, x := zigPoint(u)
		if i == 0 {
			// Tail (Marsaglia 1964): x = -log(U1)/r, y = -log(U2), accept
			// when 2y >= x^2; the normal is r + x with the sign of u's
			// top bit.
			x = zigTail(next)
			if u>>63 == 0 {
				return zigR + x
			}
			return -zigR - x
		}
		if zigF[i]+unitOpen(next())*(zigF[i-1]-zigF[i]) < math.Exp(-0.5*x*x) {
			return x
		}
		u = next()
		if x, ok := zigFast(u); ok {
			return x
		}
	}
}

// zigTail returns the excess x = |X| - r of a normal beyond the tail
// start r (Marsaglia 1964): x = -log(U1)/r, y = -log(U2), accepted when
// 2y >= x^2. Both uniforms are drawn with full relative precision
// (uniformOpenWords: 52 mantissa bits at every binary exponent), not as
// 53-bit fixed-point numbers:
//
//   - with an absolute resolution of 2^-53, -log(U1) steps by 2^-53/U1,
//     which beyond about 6.4 sigma is coarser than the noise grid (sigma
//     2^-40): only part of the grid's cells could be reached (76% at 6.5
//     sigma, 13.5% at 7, 0.4% at 8), and the set of reachable outputs
//     moved with the input (Mironov 2012, in the tail). With 52 relative
//     bits -log(U1) steps by at most about 2^-51 wherever U1 lies in the
//     normal floats, so x steps by less than 2^-52, far below the grid;
//   - a fixed-point U2 is at least 2^-54, so y <= 37.4 and no excess
//     beyond sqrt(2 37.4) = 8.65 (12.09 sigma) could be accepted: the
//     reachable window of the noise ended at 12.09 sigma, and the windows
//     of two neighbouring inputs differed in their last Delta/sigma. With
//     U2 down to 2^-1022, y reaches 708 and the window 41 sigma.
//
// TestZigguratTailGrid counts the reachable grid cells from 6 to 20 sigma
// and fails on the fixed-point uniforms (its control counts them).
func zigTail(next func() uint64) float64 {
	for {
		x := -math.Log(uniformOpenWords(next)) / zigR
		y := -math.Log(uniformOpenWords(next))
		if y+y >= x*x {
			return x
		}
	}
}

// unitOpen maps a word to a uniform in (0, 1): the top 53 bits plus half a
// step, never 0 or 1 (so its logarithm is finite). Its resolution is
// absolute (2^-53): fine for the wedge test, which compares it with a
// density between f(x_i) and f(x_(i-1)) > 0.3 f(r), not for the tail
// (zigTail), where its logarithm sets a draw's value or its range.
func unitOpen(u uint64) float64 {
	return (float64(u>>11) + 0.5) * 0x1p-53
}
