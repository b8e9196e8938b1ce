package perturb

import (
	"math"
)

// ZIGGURAT NORMALS FOR BULK NOISE. Gaussian.AddToFast draws one standard
// normal per coordinate, up to 10^6 per DP-SGD step. rand.Rand.NormFloat64
// reaches the source through an interface call for every draw and uses one
// 32-bit number both for the layer and for the value; on this path that
// cost 8-13 ns a coordinate, a quarter of a private ALS or DP-SGD step on
// ml-latest-small. AddToFast's draw (zigFast, then zigSlow for the rest)
// is the same algorithm (Marsaglia and
// Tsang 2000, "The ziggurat method for generating random variables", 128
// layers) with three changes:
//
//   - the layer comes from the low 7 bits of a 64-bit word and the signed
//     value from its high 32 bits, so layer and value are independent
//     (Doornik 2005 showed the correlation of the shared-bits version);
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

// zigFast returns the normal of word u when it falls inside its layer's
// rectangle (ok), else ok = false and the caller takes zigSlow.
func zigFast(u uint64) (x float64, ok bool) {
	i := u & 127
	j := int32(u >> 32)
	a := uint32(j)
	if j < 0 {
		a = uint32(-j) // |j| <= 2^31 fits
	}
	return float64(j) * zigW[i], a < zigK[i]
}

// zigSlow finishes a draw whose word u missed its rectangle: the wedge test
// of layer i (uniform point under the curve, Marsaglia and Tsang's
// acceptance) or the tail beyond r in layer 0, then a fresh draw if it is
// rejected.
func zigSlow(u uint64, next func() uint64) float64 {
	for {
		i := u & 127
		j := int32(u >> 32)
		x := float64(j) * zigW[i]
		if i == 0 {
			// Tail (Marsaglia 1964): x = -log(U1)/r, y = -log(U2), accept
			// when 2y >= x^2; the normal is r + x with j's sign.
			for {
				x = -math.Log(unitOpen(next())) / zigR
				y := -math.Log(unitOpen(next()))
				if y+y >= x*x {
					break
				}
			}
			if j > 0 {
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

// unitOpen maps a word to a uniform in (0, 1): the top 53 bits plus half a
// step, never 0 or 1 (so its logarithm is finite).
func unitOpen(u uint64) float64 {
	return (float64(u>>11) + 0.5) * 0x1p-53
}
