package perturb

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// MaxDimension bounds the dimension of vector mechanisms (2^31): larger
// vectors are certainly a programming or input error.
const MaxDimension = 1 << 31

// L2Noise is the l2-norm (K-norm with K the unit l2 ball) mechanism in d
// dimensions: noise n with density proportional to exp(-epsilon ||n||_2 /
// Delta) (Wei et al. 2021 Algorithms 2 and 3; Imtiaz and Sarwate 2018a AVN; Hardt and Talwar
// 2010). Adding it to a vector of l2 sensitivity Delta is pure epsilon-DP
// (derivation in the package doc). It is sampled as a radius ~ Gamma(shape
// d, scale Delta/epsilon) times a direction uniform on the unit sphere
// (normalised standard Gaussians), then snapped to a power-of-two grid.
// Every random quantity is resolved to float64 precision: the direction's
// normals and the normal inside the Gamma sampler are the dithered
// ziggurat normals of the bulk Gaussian noise (l2Normal; ziggurat.go), and
// the exponential of dimension 1 is -log U with U at full relative
// precision, so no coarse lattice survives in the noise (math/rand/v2's
// 32-bit normals and exponentials are hundreds of grid steps apart, and
// the snapped noise would reach only a sparse, input-independent subset of
// the grid: the floating-point attack of Mironov 2012;
// TestL2NoiseReachesGrid). What holds (package doc, "Floating
// point"): outputs are grid points; the discretised mechanism (continuous
// noise of the enlarged scale, rounded to the grid) is epsilon-DP in exact
// arithmetic; no proof covers the floating-point computation of the draw
// before rounding, unlike the exact discrete samplers of Laplace and
// Gaussian. L2NoiseNote says so in the reports of the modes that use it.
//
// Immutable and safe for concurrent use; the *rand.Rand arguments are not.
type L2Noise struct {
	sens, eps, scale, g float64
	dim                 int
	scaleEff            float64
}

// NewL2Noise returns the l2-norm mechanism for l2 sensitivity
// l2Sensitivity, privacy parameter epsilon and dimension dim.
func NewL2Noise(l2Sensitivity, epsilon float64, dim int) (*L2Noise, error) {
	if err := CheckSensitivity(l2Sensitivity); err != nil {
		return nil, fmt.Errorf("l2 noise: %w", err)
	}
	if err := CheckEpsilon(epsilon); err != nil {
		return nil, fmt.Errorf("l2 noise: %w", err)
	}
	if err := CheckDimension("dimension", dim, MaxDimension); err != nil {
		return nil, fmt.Errorf("l2 noise: %w", err)
	}
	scale := l2Sensitivity / epsilon
	if math.IsInf(scale, 0) {
		return nil, fmt.Errorf("l2 noise: %w: sensitivity/epsilon = %v/%v overflows", ErrSensitivity, l2Sensitivity, epsilon)
	}
	g := Granularity(scale)
	// Snapping the input moves it by at most sqrt(d) g/2 in l2, so
	// neighbours' snapped inputs are within Delta + sqrt(d) g: the radius
	// scale covers that enlarged sensitivity.
	eff := (l2Sensitivity + math.Sqrt(float64(dim))*g) / epsilon
	return &L2Noise{sens: l2Sensitivity, eps: epsilon, scale: scale, g: g, dim: dim, scaleEff: eff}, nil
}

// Scale returns the radius scale Delta/epsilon (the mean norm of the noise
// is Dim()*Scale()).
func (m *L2Noise) Scale() float64 { return m.scale }

// Dim returns the dimension.
func (m *L2Noise) Dim() int { return m.dim }

// Epsilon returns the privacy parameter.
func (m *L2Noise) Epsilon() float64 { return m.eps }

// Sensitivity returns the l2 sensitivity.
func (m *L2Noise) Sensitivity() float64 { return m.sens }

// Granularity returns the grid step of the noise.
func (m *L2Noise) Granularity() float64 { return m.g }

// Sample fills dst (length Dim(), else it panics: a shape error of the
// caller) with one noise vector, snapped to the grid.
func (m *L2Noise) Sample(dst []float64, r *rand.Rand) {
	m.sample(dst, m.scale, r)
	for i := range dst {
		dst[i] = Snap(dst[i], m.g)
	}
}

func (m *L2Noise) sample(dst []float64, scale float64, r *rand.Rand) {
	if len(dst) != m.dim {
		panic(fmt.Sprintf("perturb: L2Noise.Sample: len(dst) = %d, want dimension %d", len(dst), m.dim))
	}
	radius := L2Radius(m.dim, scale, r)
	for {
		var ss float64
		for i := range dst {
			z := l2Normal(r)
			dst[i] = z
			ss += z * z
		}
		if ss > 0 { // all-zero Gaussians have probability 0; redraw if it happens
			f := radius / math.Sqrt(ss)
			for i := range dst {
				dst[i] *= f
			}
			return
		}
	}
}

// L2Radius draws the norm of l2-norm noise in dim dimensions with radius
// scale: Gamma(shape dim, scale). In polar coordinates the density
// exp(-||n||/scale) has radial density proportional to r^(dim-1)
// e^(-r/scale), which is that Gamma law.
//
// The sampler is gonum's distuv.Gamma.Rand for shape >= 1 (Marsaglia and
// Tsang 2000; shape 1: an exponential), written out so that it draws from
// r directly (gonum wraps its source in a new rand.Rand and takes three
// method values per call, which cost more than the sampling itself for
// per-entry noise, --protect C), with its random inputs resolved to
// float64 precision: the normal of the Marsaglia-Tsang proposal is
// l2Normal (gonum: NormFloat64, 32 random bits) and the exponential of
// shape 1 is -log U with U at full relative precision (gonum:
// ExpFloat64, 32 random bits), so the radius has no lattice of its own
// (the uniform of the acceptance test only decides, it is not part of the
// value). TestL2RadiusGammaLaw checks the law against gonum's Gamma CDF.
func L2Radius(dim int, scale float64, r *rand.Rand) float64 {
	b := 1 / scale
	a := float64(dim)
	if a == 1 {
		return -math.Log(uniformOpen(r)) / b
	}
	d := a - 1.0/3
	m := 1.0
	c := 1 / (3 * math.Sqrt(d))
	for {
		x := l2Normal(r)
		v := 1 + x*c
		if v <= 0.0 {
			continue
		}
		v = v * v * v
		u := r.Float64()
		if u < 1.0-0.0331*(x*x)*(x*x) {
			return m * d * v / b
		}
		if math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return m * d * v / b
		}
	}
}

// l2Normal draws a standard normal resolved to float64 precision: the
// dithered ziggurat of the bulk Gaussian noise (ziggurat.go: zigFast, then
// zigSlow), reading r's words. The one place L2Noise depends on the
// ziggurat's internals.
func l2Normal(r *rand.Rand) float64 {
	u := r.Uint64()
	if z, ok := zigFast(u); ok {
		return z
	}
	return zigSlow(u, r.Uint64)
}

// AddTo adds one noise vector to x in place (len(x) must be Dim(), else it
// panics: a shape error of the caller): x is
// snapped to the grid, the noise is drawn with its radius scale enlarged to
// (Delta + sqrt(d) g)/epsilon to cover the snapping, and the sum is a
// multiple of g.
func (m *L2Noise) AddTo(x []float64, r *rand.Rand) {
	if len(x) != m.dim {
		panic(fmt.Sprintf("perturb: L2Noise.AddTo: len(x) = %d, want dimension %d", len(x), m.dim))
	}
	// A stack buffer for the usual small dimensions (factor ranks) keeps
	// the per-entry gradient path free of allocations.
	var buf [64]float64
	var n []float64
	if m.dim <= len(buf) {
		n = buf[:m.dim]
	} else {
		n = make([]float64, m.dim)
	}
	m.sample(n, m.scaleEff, r)
	for i := range x {
		x[i] = Snap(x[i], m.g) + Snap(n[i], m.g)
	}
}

// L2NoiseNote is the report note of a mode whose noise is drawn by
// L2Noise (AddTo): what its floating-point implementation guarantees.
const L2NoiseNote = "l2-norm noise sampler: perturb.L2Noise.AddTo (input snapped to the power-of-two grid g; radius Gamma(d, (Delta + sqrt(d) g)/epsilon) and uniform direction, every random draw resolved to float64 precision (dithered ziggurat normals, a full-precision exponential), so the noise has no lattice; noise snapped to the grid): outputs are grid points and the discretised mechanism is epsilon-DP in exact arithmetic, but no proof covers the floating-point computation of the draw before rounding, unlike the exact discrete Laplace and Gaussian samplers (perturb package doc, Floating point)"

// Release returns the record of one release of this mechanism.
func (m *L2Noise) Release(what string) Release {
	return Release{What: what, Mechanism: MechL2, SensitivityNorm: "l2", Sensitivity: m.sens,
		Scale: m.scale, Epsilon: m.eps, Count: 1}
}
