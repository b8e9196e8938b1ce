package perturb

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dprec/dprec/internal/stattest"
	"gonum.org/v1/gonum/stat/distuv"
)

// ksAlpha is the false-reject probability of every KS test here (1e-6, as
// OpenDP's samplers use), so a correct sampler fails with probability
// below 1e-6 per test; seeds are fixed, so CI results are deterministic.
const ksAlpha = 1e-6

const nDraws = 100000

func TestLaplaceKS(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ sens, eps float64 }{{1, 1}, {2, 0.1}, {0.5, 5}} {
		l, err := NewLaplace(tc.sens, tc.eps)
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(SeededSource(1))
		xs := make([]float64, nDraws)
		for i := range xs {
			xs[i] = l.Sample(r)
		}
		m, v := stattest.MeanVar(xs)
		b := tc.sens / tc.eps
		// Google's tolerances: mean within Z5 sd/sqrt(n); variance within
		// Z5 sqrt(5) Var/sqrt(n) (Laplace excess kurtosis 3).
		if sd := math.Sqrt2 * b; math.Abs(m) > stattest.Z5*sd/math.Sqrt(nDraws) {
			t.Errorf("Laplace(%v): mean %v", b, m)
		}
		if want := 2 * b * b; math.Abs(v-want) > stattest.Z5*math.Sqrt(5)*want/math.Sqrt(nDraws) {
			t.Errorf("Laplace(%v): variance %v, want %v", b, v, want)
		}
		cdf := distuv.Laplace{Mu: 0, Scale: b}.CDF
		if d, crit := stattest.KS(xs, cdf), stattest.KSCritical(nDraws, ksAlpha); d > crit {
			t.Errorf("Laplace(%v): KS %v > %v", b, d, crit)
		}
	}
}

func TestGaussianKS(t *testing.T) {
	t.Parallel()
	g, err := NewGaussian(1, 1, 1e-5, Analytic)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(SeededSource(2))
	xs := make([]float64, nDraws)
	for i := range xs {
		xs[i] = g.Sample(r)
	}
	s := g.Sigma()
	m, v := stattest.MeanVar(xs)
	if math.Abs(m) > stattest.Z5*s/math.Sqrt(nDraws) {
		t.Errorf("Gaussian mean %v", m)
	}
	// Normal: Var(sample variance) = 2 sigma^4/(n-1).
	if math.Abs(v-s*s) > stattest.Z5*math.Sqrt2*s*s/math.Sqrt(nDraws) {
		t.Errorf("Gaussian variance %v, want %v", v, s*s)
	}
	cdf := distuv.Normal{Mu: 0, Sigma: s}.CDF
	if d, crit := stattest.KS(xs, cdf), stattest.KSCritical(nDraws, ksAlpha); d > crit {
		t.Errorf("Gaussian KS %v > %v", d, crit)
	}
}

// TestDiscreteSamplersExact checks the integer samplers behind the grid
// mechanisms at small scales, where an off-by-one (e.g. counting 0 twice in
// the two-sided geometric) is visible: chi-square against the exact pmf,
// false reject e^-12.5 < 1e-5 (z = 5).
func TestDiscreteSamplersExact(t *testing.T) {
	t.Parallel()
	const n = 200000
	const K = 12 // cells -K..K, tails pooled
	check := func(name string, draw func(*rand.Rand) int64, pmf func(int64) float64) {
		r := rand.New(SeededSource(3))
		obs := make([]int, 2*K+3)
		for i := 0; i < n; i++ {
			k := draw(r)
			switch {
			case k < -K:
				obs[0]++
			case k > K:
				obs[2*K+2]++
			default:
				obs[k+K+1]++
			}
		}
		exp := make([]float64, len(obs))
		var z, in float64
		for k := int64(-200); k <= 200; k++ {
			z += pmf(k)
		}
		for k := int64(-K); k <= K; k++ {
			exp[k+K+1] = n * pmf(k) / z
			in += pmf(k) / z
		}
		exp[0], exp[2*K+2] = n*(1-in)/2, n*(1-in)/2
		var o2 []int
		var e2 []float64
		for i := range obs { // pool cells with tiny expectations
			if exp[i] >= 5 {
				o2, e2 = append(o2, obs[i]), append(e2, exp[i])
			}
		}
		if c, crit := stattest.ChiSquare(o2, e2), stattest.ChiSquareCritical(len(o2)-1, 5); c > crit {
			t.Errorf("%s: chi-square %v > %v", name, c, crit)
		}
	}
	check("two-sided geometric lambda=0.7", func(r *rand.Rand) int64 { return twoSidedGeometric(r, 0.7) },
		func(k int64) float64 { return math.Exp(-0.7 * math.Abs(float64(k))) })
	check("discrete gaussian sigma=2.5", func(r *rand.Rand) int64 { return discreteGaussian(r, 2.5) },
		func(k int64) float64 { return math.Exp(-float64(k*k) / (2 * 2.5 * 2.5)) })
}

func TestGranularity(t *testing.T) {
	t.Parallel()
	for _, s := range []float64{1, 3.7, 1e-9, 1e9, 0x1p40, 0x1p-30} {
		g := Granularity(s)
		if fr, _ := math.Frexp(g); fr != 0.5 {
			t.Errorf("Granularity(%v) = %v not a power of two", s, g)
		}
		if q := s / g; q <= 0x1p39 || q > 0x1p40 {
			t.Errorf("Granularity(%v): scale/g = %v not in (2^39, 2^40]", s, q)
		}
	}
}

// TestOutputsOnGrid checks the floating-point mitigation (RELIABILITY item
// 8): every noised output is an exact multiple of the grid step, whatever
// the input's low-order bits.
func TestOutputsOnGrid(t *testing.T) {
	t.Parallel()
	r := rand.New(SeededSource(4))
	onGrid := func(x, g float64) bool { q := x / g; return q == math.Trunc(q) }
	in := func() []float64 {
		x := make([]float64, 50)
		for i := range x {
			x[i] = r.NormFloat64()*3 + 1e-7*r.Float64()
		}
		return x
	}
	l, _ := NewLaplace(1, 0.5)
	g, _ := NewGaussian(1, 0.5, 1e-6, Analytic)
	k, _ := NewL2Noise(1, 0.5, 50)
	for name, m := range map[string]struct {
		add  func([]float64, *rand.Rand)
		step float64
	}{"laplace": {l.AddTo, l.Granularity()}, "gaussian": {g.AddTo, g.Granularity()}, "l2": {k.AddTo, k.Granularity()}} {
		for rep := 0; rep < 20; rep++ {
			x := in()
			m.add(x, r)
			for i, v := range x {
				if !onGrid(v, m.step) {
					t.Fatalf("%s: output %d = %v is not a multiple of %v", name, i, v, m.step)
				}
			}
		}
	}
	for i := 0; i < 1000; i++ {
		if v := l.Sample(r); !onGrid(v, l.Granularity()) {
			t.Fatalf("Laplace sample %v off grid", v)
		}
		if v := g.Sample(r); !onGrid(v, g.Granularity()) {
			t.Fatalf("Gaussian sample %v off grid", v)
		}
	}
}

// TestAddToDistribution checks that snapping plus grid noise keeps the
// distribution: AddTo on a constant input is centred on it with the
// mechanism's variance (KS on x - x0).
func TestAddToDistribution(t *testing.T) {
	t.Parallel()
	r := rand.New(SeededSource(5))
	l, _ := NewLaplace(1, 1)
	x := make([]float64, nDraws)
	for i := range x {
		x[i] = 0.3
	}
	l.AddTo(x, r)
	for i := range x {
		x[i] -= 0.3
	}
	if d, crit := stattest.KS(x, distuv.Laplace{Scale: l.Scale()}.CDF), stattest.KSCritical(nDraws, ksAlpha); d > crit {
		t.Errorf("Laplace AddTo KS %v > %v", d, crit)
	}
	g, _ := NewGaussian(1, 1, 1e-5, Analytic)
	for i := range x {
		x[i] = -2.1
	}
	g.AddTo(x, r)
	for i := range x {
		x[i] += 2.1
	}
	if d, crit := stattest.KS(x, distuv.Normal{Sigma: g.Sigma()}.CDF), stattest.KSCritical(nDraws, ksAlpha); d > crit {
		t.Errorf("Gaussian AddTo KS %v > %v", d, crit)
	}
}

// TestL2Radius checks the norm of l2-norm noise against Gamma(d,
// Delta/eps) (KS, false reject 1e-6) and its direction's moments.
func TestL2Noise(t *testing.T) {
	t.Parallel()
	const d = 5
	m, err := NewL2Noise(2, 0.8, d)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(SeededSource(6))
	radii := make([]float64, nDraws)
	var mean [d]float64
	var second [d][d]float64
	v := make([]float64, d)
	for i := range radii {
		m.Sample(v, r)
		var s float64
		for _, x := range v {
			s += x * x
		}
		nrm := math.Sqrt(s)
		radii[i] = nrm
		for a := 0; a < d; a++ {
			u := v[a] / nrm
			mean[a] += u / nDraws
			for b := 0; b < d; b++ {
				second[a][b] += u * v[b] / nrm / nDraws
			}
		}
	}
	gam := distuv.Gamma{Alpha: d, Beta: 0.8 / 2}
	if D, crit := stattest.KS(radii, gam.CDF), stattest.KSCritical(nDraws, ksAlpha); D > crit {
		t.Errorf("radius KS %v > %v", D, crit)
	}
	// A uniform unit vector has E u = 0, Var u_a = 1/d, E u_a u_b = delta_ab/d;
	// Var(u_a^2) = E u_a^4 - 1/d^2 = 3/(d(d+2)) - 1/d^2; Var(u_a u_b) =
	// 1/(d(d+2)). Tolerances are Z5 standard errors (false reject 1e-5 each).
	se := math.Sqrt(1.0 / d / nDraws)
	seDiag := math.Sqrt((3.0/(d*(d+2)) - 1.0/(d*d)) / nDraws)
	seOff := math.Sqrt(1.0 / (d * (d + 2)) / nDraws)
	for a := 0; a < d; a++ {
		if math.Abs(mean[a]) > stattest.Z5*se {
			t.Errorf("direction mean[%d] = %v", a, mean[a])
		}
		for b := 0; b < d; b++ {
			want, tol := 0.0, stattest.Z5*seOff
			if a == b {
				want, tol = 1.0/d, stattest.Z5*seDiag
			}
			if math.Abs(second[a][b]-want) > tol {
				t.Errorf("direction second moment [%d][%d] = %v, want %v +- %v", a, b, second[a][b], want, tol)
			}
		}
	}
}

// TestNeighbourRatio is the diffprivlib test_neighbours_prob check on
// half-spaces: for neighbouring inputs x, x' at sensitivity distance,
// P[M(x) in S] <= e^eps P[M(x') in S] + slack, where slack is 5 binomial
// standard errors of the two estimates (false reject < 1e-6 per set). A
// deliberately under-noised mechanism (scale halved) must fail it, which
// shows the test has power.
func TestNeighbourRatio(t *testing.T) {
	t.Parallel()
	const n = 200000
	const eps = 1.0
	r := rand.New(SeededSource(7))
	ratioHolds := func(px, py float64) bool {
		slack := 5 * (math.Sqrt(px*(1-px)/n) + math.E*math.Sqrt(py*(1-py)/n))
		return px <= math.Exp(eps)*py+slack
	}
	type mech struct {
		name  string
		draws func(x0 float64) []float64 // first coordinate projections of M(x0 e1)
		broke bool
	}
	lap, _ := NewLaplace(1, eps)
	weak, _ := NewLaplace(0.5, eps) // claims eps for sensitivity 1 but calibrated for 0.5
	l2, _ := NewL2Noise(1, eps, 3)
	weakL2, _ := NewL2Noise(0.5, eps, 3)
	scalar := func(m *Laplace) func(float64) []float64 {
		return func(x0 float64) []float64 {
			out := make([]float64, n)
			for i := range out {
				x := []float64{x0}
				m.AddTo(x, r)
				out[i] = x[0]
			}
			return out
		}
	}
	vector := func(m *L2Noise) func(float64) []float64 {
		return func(x0 float64) []float64 {
			out := make([]float64, n)
			for i := range out {
				x := []float64{x0, 0, 0}
				m.AddTo(x, r)
				out[i] = x[0]
			}
			return out
		}
	}
	for _, m := range []mech{{"laplace", scalar(lap), false}, {"laplace-underNoised", scalar(weak), true},
		{"l2", vector(l2), false}, {"l2-underNoised", vector(weakL2), true}} {
		a, b := m.draws(0), m.draws(1) // neighbours at distance 1 = sensitivity
		violated := false
		for _, th := range []float64{-2, -1, -0.5, 0, 0.5, 1, 1.5, 2, 3} {
			// Half-spaces {y_1 >= th} and {y_1 < th}, both directions.
			var pa, pb float64
			for i := range a {
				if a[i] >= th {
					pa++
				}
				if b[i] >= th {
					pb++
				}
			}
			pa, pb = pa/n, pb/n
			if !ratioHolds(pb, pa) || !ratioHolds(1-pa, 1-pb) {
				violated = true
				if !m.broke {
					t.Errorf("%s: half-space y1 >= %v: P = %v vs neighbour %v breaks e^eps ratio", m.name, th, pb, pa)
				}
			}
		}
		if m.broke && !violated {
			t.Errorf("%s: under-noised mechanism was not detected", m.name)
		}
	}
}

// TestL2RadiusGammaLaw: L2Radius (gonum's Gamma sampler written out, with
// full-precision normal and exponential) follows Gamma(dim, scale):
// Kolmogorov-Smirnov against gonum's CDF (false reject 1e-6 each).
func TestL2RadiusGammaLaw(t *testing.T) {
	t.Parallel()
	const n = 20000
	for _, dim := range []int{1, 2, 3, 10, 64} {
		for _, scale := range []float64{0.01, 7.5} {
			r := rand.New(SeededSource(uint64(dim)))
			xs := make([]float64, n)
			for i := range xs {
				xs[i] = L2Radius(dim, scale, r)
			}
			cdf := distuv.Gamma{Alpha: float64(dim), Beta: 1 / scale}.CDF
			if d, crit := stattest.KS(xs, cdf), stattest.KSCritical(n, 1e-6); d > crit {
				t.Errorf("dim %d scale %v: KS %v > %v", dim, scale, d, crit)
			}
		}
	}
}

// scripted is a rand.Source returning its words in turn (the first again
// after the last).
type scripted struct {
	w []uint64
	i int
}

func (s *scripted) Uint64() uint64 {
	v := s.w[s.i%len(s.w)]
	s.i++
	return v
}

// TestL2NoiseReachesGrid: sweeping the low bits of one random word of a
// draw moves the snapped l2-norm noise across every grid point of the
// range it spans, in dimension 1 (the word is the mantissa of the
// exponential's uniform) and in dimension 3 (the dither of the first
// direction normal): the noise has no lattice coarser than the grid.
// With math/rand/v2's 32-bit NormFloat64 and ExpFloat64, which the
// sampler used before, neighbouring draws were hundreds of grid steps
// apart and this fails.
func TestL2NoiseReachesGrid(t *testing.T) {
	t.Parallel()
	m1, _ := NewL2Noise(1, 1, 1)
	m3, _ := NewL2Noise(1, 1, 3)
	// A fast-path ziggurat word: layer 64, magnitude 2^29, dither d.
	zig := func(d uint64) uint64 { return uint64(1<<29)<<32 | d<<7 | 64 }
	for _, tc := range []struct {
		name  string
		m     *L2Noise
		words func(j uint64) []uint64
		coord int
	}{
		// Dimension 1: uniformOpen's exponent word (top bit set: U in
		// [1/2, 1)), its mantissa word swept (16 mantissa steps a draw,
		// about 2^8 draws a grid step), then the direction's normal.
		{"dimension 1", m1, func(j uint64) []uint64 { return []uint64{1 << 63, (1<<40 + j*16) << 12, zig(0)} }, 0},
		// Dimension 3: the radius proposal's normal and an accepting
		// uniform (0), then three direction normals, the first with its
		// dither swept over 2^14 of its 2^25 values.
		{"dimension 3", m3, func(j uint64) []uint64 { return []uint64{zig(5), 0, zig(j << 11), zig(777), zig(12345)} }, 0},
	} {
		hit := map[float64]bool{}
		lo, hi := math.Inf(1), math.Inf(-1)
		v := make([]float64, tc.m.Dim())
		const sweep = 1 << 14
		for j := uint64(0); j < sweep; j++ {
			tc.m.Sample(v, rand.New(&scripted{w: tc.words(j)}))
			x := v[tc.coord]
			hit[x] = true
			lo, hi = math.Min(lo, x), math.Max(hi, x)
		}
		span := int(math.Round((hi-lo)/tc.m.Granularity())) + 1
		t.Logf("%s: %d distinct values, %d grid points spanned", tc.name, len(hit), span)
		if span < 8 || len(hit) != span {
			t.Errorf("%s: the sweep reaches %d of the %d grid points between %v and %v", tc.name, len(hit), span, lo, hi)
		}
	}
}
