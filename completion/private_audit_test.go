package completion

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/perturb"
)

// auditEpsilonLowerBound returns an empirical lower bound on epsilon from
// samples of a scalar output under neighbours a and b: the largest, over
// thresholds at pooled quantiles and both tails and directions, of
// log((p1 - 4 se1)/(p2 + 4 se2)). With 4 standard errors per estimate and
// 36 tests the bound exceeds the true epsilon with probability below about
// 36 * 3e-5 = 1e-3 (normal approximation); seeds are fixed, so the test is
// deterministic.
func auditEpsilonLowerBound(a, b []float64) float64 {
	pooled := append(append([]float64(nil), a...), b...)
	sort.Float64s(pooled)
	frac := func(x []float64, t float64) float64 {
		c := 0
		for _, v := range x {
			if v > t {
				c++
			}
		}
		return float64(c) / float64(len(x))
	}
	best := 0.0
	for q := 1; q < 10; q++ {
		t := pooled[q*len(pooled)/10]
		pa, pb := frac(a, t), frac(b, t)
		for _, pr := range [][2]float64{{pa, pb}, {pb, pa}, {1 - pa, 1 - pb}, {1 - pb, 1 - pa}} {
			p1, p2 := pr[0], pr[1]
			lo := p1 - 4*math.Sqrt(p1*(1-p1)/float64(len(a)))
			hi := p2 + 4*math.Sqrt(p2*(1-p2)/float64(len(b)))
			if lo > 0 && hi > 0 {
				best = math.Max(best, math.Log(lo/hi))
			}
		}
	}
	return best
}

// TestDPAudit is a small stochastic DP test (RELIABILITY item 24, after
// Google's stochastic tester): gradient perturbation --protect all is run
// many times on two neighbouring logs (one rating at r_min versus r_max),
// and an empirical lower bound on epsilon from the released item bias must
// not exceed the claimed epsilon. A deliberately under-noised variant
// (sigma divided by 30 while the report still claims epsilon) must be
// flagged, which shows the audit has power.
func TestDPAudit(t *testing.T) {
	t.Parallel()
	runs := 2000
	mk := func(v0 float64) *data.Store {
		s := &data.Store{Dims: []int{3, 3}, Idx: [][]int32{{0, 0, 1, 1, 2, 2}, {0, 1, 1, 2, 2, 0}}, Val: []float64{v0, 3, 4, 2, 5, 3}}
		return s
	}
	d1, d2 := mk(1), mk(5) // neighbours: entry 0 is r_min or r_max
	const eps = 1.0
	base := PrivateOptions{Epsilon: eps, Delta: 1e-5, RatingMin: 1, RatingMax: 5, Protect: ProtectAll, Clip: 1, DPSGD: DPSGDPerEntry}
	// Solve sigma once (Plan's bisection is the slow part), then fix it:
	// each run's Plan re-checks it against the budget.
	p0, _ := NewGradientPerturbation(&base)
	if err := p0.Plan(d1, &Settings{Epochs: 1}); err != nil {
		t.Fatal(err)
	}
	sigma := p0.gauss.Sigma()
	release := func(st *data.Store, run int, weaken float64) float64 {
		o := base
		o.Noise, o.Sigma = perturb.SeededNoise(uint64(run)), sigma
		p, err := NewGradientPerturbation(&o)
		if err != nil {
			t.Fatal(err)
		}
		// No biases (no mean release); rank 1.
		// A fixed starting point (the same initial draw every run: the
		// training source is fixed, the noise is seeded per run; the
		// private modes refuse WarmStart), so only the data and the noise
		// vary between runs. Source (28, 1) draws the changed rating's
		// rows as u = 1.10, v = 1.66: the same sign and away from zero, so
		// the rating's gradient is large and the audit has power (sources
		// whose u v is negative or near zero leave the under-noised
		// variant unflagged).
		m, _ := decomposition.NewModel(decomposition.CP, []int{3, 3}, []int{1}, false)
		s := &Settings{Epochs: 1, Threads: 1, LearningRate: 0.5, Decay: -1, Reg: -1, InitScale: 1, Privacy: p}
		if weaken != 1 {
			s.Privacy = &weakened{p, weaken}
		}
		if _, err := Train(st, nil, m, s, rand.NewPCG(28, 1), nil); err != nil {
			t.Fatal(err)
		}
		return m.Factors[0][0] + m.Factors[1][0] // the user and item rows of the changed rating
	}
	for _, tc := range []struct {
		name   string
		weaken float64
		broken bool
	}{{"calibrated", 1, false}, {"under-noised", 30, true}} {
		a, b := make([]float64, runs), make([]float64, runs)
		for i := range a {
			a[i] = release(d1, 2*i, tc.weaken)
			b[i] = release(d2, 2*i+1, tc.weaken)
		}
		lb := auditEpsilonLowerBound(a, b)
		t.Logf("%s: empirical epsilon lower bound %.3f (claimed %g)", tc.name, lb, eps)
		if !tc.broken && lb > eps {
			t.Errorf("%s: empirical epsilon %v exceeds the claimed %v", tc.name, lb, eps)
		}
		if tc.broken && lb <= eps {
			t.Errorf("%s: the audit did not flag a mechanism with sigma/%v (lower bound %v)", tc.name, tc.weaken, lb)
		}
	}
}

// weakened wraps a planned GradientPerturbation and divides its noise by k
// after planning (a deliberately broken mechanism for the audit's power).
type weakened struct {
	*GradientPerturbation
	k float64
}

func (w *weakened) Plan(train *data.Store, s *Settings) error {
	if err := w.GradientPerturbation.Plan(train, s); err != nil {
		return err
	}
	g, err := perturb.NewGaussianSigma(w.gauss.Sensitivity(), w.gauss.Sigma()/w.k)
	w.gauss = g
	return err
}
