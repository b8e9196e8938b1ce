package cape

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dprec/dprec/perturb"
)

func TestPlanEqualIsEq2(t *testing.T) {
	for _, s := range []int{2, 3, 5, 10} {
		tau2 := make([]float64, s)
		for i := range tau2 {
			tau2[i] = 0.37
		}
		p, err := NewPlan(tau2, nil)
		if err != nil {
			t.Fatal(err)
		}
		fs := float64(s)
		for i := 0; i < s; i++ {
			if p.TauE2[i] != 0.37-0.37/fs || p.TauF2[i] != 0.37-0.37/fs || p.TauG2[i] != 0.37/fs {
				t.Errorf("S=%d: got e %v f %v g %v, want eq. (2)", s, p.TauE2[i], p.TauF2[i], p.TauG2[i])
			}
			if math.Abs(p.EVar(i)-p.TauE2[i]) > 1e-15 {
				t.Errorf("S=%d: Var(e_s) = %v, want %v", s, p.EVar(i), p.TauE2[i])
			}
			// Independent closed form: (S+1)/(2S) tau_s^2 (doc.go).
			if j := p.JointVar(i); math.Abs(j-0.37*(fs+1)/(2*fs)) > 1e-12 {
				t.Errorf("S=%d: JointVar = %v, want %v", s, j, 0.37*(fs+1)/(2*fs))
			}
		}
		if math.Abs(p.TauC2-0.37/(fs*fs)) > 1e-18 {
			t.Errorf("S=%d: tau_c^2 = %v", s, p.TauC2)
		}
		if g := p.Gain(); math.Abs(g-fs) > 1e-12 {
			t.Errorf("S=%d: gain %v, want S", s, g)
		}
		if err := p.Check(); err != nil {
			t.Error(err)
		}
	}
}

// TestPlanFeasibleRandom checks constraints (C1)-(C3) on random unequal
// instances, and Proposition 1's gain formula for mu_s = N_s/N.
func TestPlanFeasibleRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 500; trial++ {
		s := 2 + r.IntN(20)
		ns := make([]int, s)
		tau2 := make([]float64, s)
		mu := make([]float64, s)
		var n float64
		for i := range ns {
			ns[i] = 1 + r.IntN(1000)
			n += float64(ns[i])
		}
		common := trial%2 == 0 // common (epsilon, delta): tau_s = c/N_s
		for i := range ns {
			mu[i] = float64(ns[i]) / n
			c := 1.0
			if !common {
				c = 0.1 + 3*r.Float64()
			}
			tau2[i] = math.Pow(c/float64(ns[i]), 2)
		}
		p, err := NewPlan(tau2, mu)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Check(); err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		for i := range mu {
			if p.TauG2[i] < 0 || p.TauF2[i] < 0 || p.TauE2[i] < 0 {
				t.Fatalf("negative variance at site %d", i)
			}
		}
		if common {
			// tau_c^2 is the pooled variance 1/N^2 and G = N^2/S^2 sum 1/N_s^2.
			if math.Abs(p.TauC2*n*n-1) > 1e-9 {
				t.Errorf("tau_c^2 N^2 = %v, want 1", p.TauC2*n*n)
			}
			var g float64
			for _, ni := range ns {
				g += 1 / float64(ni*ni)
			}
			g *= n * n / float64(s*s)
			if math.Abs(p.Gain()/g-1) > 1e-9 {
				t.Errorf("gain %v, Proposition 1 gives %v", p.Gain(), g)
			}
			if p.Gain() < float64(s)*(1-1e-12) {
				t.Errorf("gain %v below S = %d", p.Gain(), s)
			}
		}
	}
}

func TestPlanRejects(t *testing.T) {
	cases := []struct {
		name string
		tau2 []float64
		mu   []float64
	}{
		{"one site", []float64{1}, nil},
		{"zero tau", []float64{1, 0}, nil},
		{"NaN tau", []float64{1, math.NaN()}, nil},
		{"weights sum", []float64{1, 1}, []float64{0.5, 0.6}},
		{"negative weight", []float64{1, 1}, []float64{1.5, -0.5}},
		{"length", []float64{1, 1}, []float64{1}},
	}
	for _, c := range cases {
		if _, err := NewPlan(c.tau2, c.mu); err == nil {
			t.Errorf("%s: no error", c.name)
		}
	}
}

func TestZeroSumNoiseStatistics(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	mu := []float64{0.1, 0.2, 0.3, 0.4}
	const L = 20000
	e, err := ZeroSumNoise(mu, 2.5, L, r)
	if err != nil {
		t.Fatal(err)
	}
	for i := range mu {
		var m moments
		for _, v := range e[i] {
			m.add(v)
		}
		want := (1 - 1.0/4) * 2.5 / (mu[i] * mu[i])
		checkVar(t, "Var(e_s)", m, want)
	}
	var worst float64
	for j := 0; j < L; j++ {
		var s float64
		for i := range mu {
			s += mu[i] * e[i][j]
		}
		worst = math.Max(worst, math.Abs(s))
	}
	// e_s = w_s/mu_s snapped to the grid g of sigma_z = 1.58: the residual
	// is at most g/2 plus rounding (zerosum.go), about 1.58 * 2^-41.
	if g := perturb.Granularity(math.Sqrt(2.5)); worst > g*(1+1e-9) {
		t.Errorf("max |sum mu_s e_s| = %g above the grid step %g", worst, g)
	}
	t.Logf("unequal weights: max |sum mu_s e_s| = %g", worst)
}
