package completion

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/internal/stattest"
	"github.com/dprec/dprec/perturb"
)

// TestInputResidualSensitivity: with the bias release fixed (it is a
// released value, so the residual release is analysed conditionally on
// it), the clipped residual vectors of two logs that differ in one rating
// differ in that coordinate only, by at most 2c, and the bound is reached.
func TestInputResidualSensitivity(t *testing.T) {
	t.Parallel()
	st := privStore([]int{30, 20, 5}, 400, 1)
	o := baseOpts()
	o.RatingMin, o.RatingMax = 1, 5
	warm, err := decomposition.NewModel(decomposition.CP, st.Dims, []int{1}, true)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(4, 4))
	warm.Mean = 3.4
	for j := range warm.Bias[1] {
		warm.Bias[1][j] = 0.8 * r.NormFloat64()
	}
	c := inputResidualClip(&o)
	base := func(v []float64) []float64 {
		out := append([]float64(nil), v...)
		clippedResiduals(out, st, &o, warm, c)
		return out
	}
	worst := 0.0
	for trial := 0; trial < 2000; trial++ {
		v1, v2 := append([]float64(nil), st.Val...), append([]float64(nil), st.Val...)
		e := r.IntN(len(v1))
		switch trial % 3 {
		case 0:
			v1[e], v2[e] = o.RatingMin-3, o.RatingMax+7
		case 1:
			v2[e] = o.RatingMin + r.Float64()*4
		default:
			v2[e] = 100 * r.NormFloat64()
		}
		a, b := base(v1), base(v2)
		l1 := 0.0
		for i := range a {
			d := math.Abs(a[i] - b[i])
			if d != 0 && i != e {
				t.Fatalf("trial %d: coordinate %d moved by %v, only %d changed", trial, i, d, e)
			}
			l1 += d
		}
		worst = math.Max(worst, l1)
		if l1 > 2*c+1e-12 {
			t.Fatalf("trial %d: residual vectors differ by %v > 2c = %v", trial, l1, 2*c)
		}
	}
	if worst < 2*c-1e-12 {
		t.Errorf("worst case %v never reached 2c = %v: test too weak", worst, 2*c)
	}
}

// TestInputResidualRelease: on a model with biases at entry level the
// input mode makes the bias release and the residual release, composes
// them within the budget (the report recomputes), covers every parameter,
// and the released values are mean + item bias + clipped residual + noise
// with Laplace noise of scale 2c/((1 - f) epsilon) (mean 0, variance 2b^2
// within 4.4 standard errors).
func TestInputResidualRelease(t *testing.T) {
	t.Parallel()
	dims := []int{80, 60, 4}
	st := privStore(dims, 4000, 7)
	// Strong item effects, so that the released item biases spread.
	rng := rand.New(rand.NewPCG(8, 8))
	eff := make([]float64, dims[1])
	for j := range eff {
		eff[j] = rng.NormFloat64()
	}
	for e, j := range st.Idx[1] {
		st.Val[e] = 3 + eff[j] + 0.5*rng.NormFloat64()
	}
	o := baseOpts()
	o.Epsilon = 6 // above 4.19: the residual noise stays below the rating spread
	p, err := NewInputPerturbation(&o)
	if err != nil {
		t.Fatal(err)
	}
	s := &Settings{Epochs: 5, hasBias: true}
	if err := p.Plan(st, s); err != nil {
		t.Fatal(err)
	}
	if p.res == nil || p.fallback != nil {
		t.Fatalf("residual release not used (fallback %v)", p.fallback != nil)
	}
	rep := p.Report()
	if bad := rep.Check(); bad != nil {
		t.Errorf("report does not recompute: %v", bad)
	}
	if rep.Epsilon > o.Epsilon*(1+1e-9) || rep.Delta != 0 {
		t.Errorf("report (%v, %v), budget epsilon %v, delta 0", rep.Epsilon, rep.Delta, o.Epsilon)
	}
	var sum float64
	var resid *perturb.Release
	for i, r := range rep.Releases {
		sum += r.Epsilon * float64(max(r.Count, 1))
		if strings.HasPrefix(r.What, "residuals") {
			resid = &rep.Releases[i]
		}
	}
	c := inputResidualClip(&o)
	b := 2 * c / ((1 - DefaultInputBiasFraction) * o.Epsilon)
	if resid == nil || math.Abs(resid.Scale-b) > 1e-12*b || math.Abs(resid.Sensitivity-2*c) > 1e-12 || len(rep.Releases) < 2 {
		t.Fatalf("releases %+v, want the bias releases and a residual release of scale %v", rep.Releases, b)
	}
	if math.Abs(sum-o.Epsilon) > 1e-9 {
		t.Errorf("releases sum to epsilon %v, want %v", sum, o.Epsilon)
	}
	vals := append([]float64(nil), st.Val...)
	if err := p.PerturbInput(vals, st); err != nil {
		t.Fatal(err)
	}
	want := append([]float64(nil), st.Val...)
	clippedResiduals(want, st, &o, p.res.warm, c)
	// z is the noise alone; its slope on the released item bias is 0
	// (an offset added wrongly would show there).
	var m1, m2, bm float64
	bs := p.res.warm.Bias[1]
	for _, j := range st.Idx[1] {
		bm += bs[j]
	}
	n := float64(len(vals))
	bm /= n
	var zb, bb float64
	for e, v := range vals {
		bj := bs[st.Idx[1][e]]
		z := v - (p.res.warm.Mean + bj + want[e])
		m1 += z
		m2 += z * z
		zb += z * (bj - bm)
		bb += (bj - bm) * (bj - bm)
	}
	m1 /= n
	vr := m2/n - m1*m1
	v := 2 * b * b // Laplace: variance 2b^2, fourth moment 24b^4, so Var(z^2) = 5v^2
	if math.Abs(m1) > stattest.Z5*math.Sqrt(v/n) || math.Abs(vr-v) > stattest.Z5*math.Sqrt(5*v*v/n) {
		t.Errorf("noise mean %v, variance %v; want 0 and %v", m1, vr, v)
	}
	if slope, se := zb/bb, math.Sqrt(v/bb); bb == 0 || math.Abs(slope) > stattest.Z5*se {
		t.Errorf("noise slope %v on the item bias (se %v), want 0", slope, se)
	}
	m, err := decomposition.NewModel(decomposition.CP, dims, []int{2}, true)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.PerturbOutput(m, st); err != nil {
		t.Fatal(err)
	}
	if !rep.FullyCovered() {
		t.Errorf("not every parameter covered: %v", rep.NotCovered)
	}
	// Without biases, with Gaussian noise or at user level the input mode
	// keeps Algorithm 1 (one release of the clamped values).
	for _, tc := range []struct {
		name string
		mod  func(*PrivateOptions, *Settings)
	}{
		{"no biases", func(_ *PrivateOptions, s *Settings) { s.hasBias = false }},
		{"gaussian", func(o *PrivateOptions, _ *Settings) { o.Mechanism = perturb.MechGaussian }},
		// k residuals change with one user: 2ck, not 2c (Algorithm 1
		// covers the user unit with its own sensitivity).
		{"user unit", func(o *PrivateOptions, _ *Settings) { o.Unit, o.MaxRatingsPerUser = UnitUser, 200 }},
	} {
		o2, s2 := baseOpts(), &Settings{Epochs: 5, hasBias: true}
		o2.Epsilon = 40 // no fallback (private_input_fallback.go)
		tc.mod(&o2, s2)
		p2, err := NewInputPerturbation(&o2)
		if err != nil {
			t.Fatal(err)
		}
		if err := p2.Plan(st, s2); err != nil {
			t.Fatal(err)
		}
		if p2.res != nil || len(p2.Report().Releases) != 1 {
			t.Errorf("%s: residual release used (%d releases)", tc.name, len(p2.Report().Releases))
		}
	}
}

// TestInputResidualPlan: the residual release plans under every
// accounting choice (its two pure releases compose by basic composition),
// its epoch cut and fallback use the residual variance 2 (2c/((1 - f)
// epsilon))^2, and at an epsilon where Algorithm 1's variance would fall
// back it does not.
func TestInputResidualPlan(t *testing.T) {
	t.Parallel()
	st := privStore([]int{80, 60, 4}, 4000, 7)
	for _, acc := range []perturb.Composition{"", perturb.Basic, perturb.Advanced, perturb.RDP} {
		o := baseOpts()
		o.Epsilon, o.Accounting = 6, acc
		p, err := NewInputPerturbation(&o)
		if err != nil {
			t.Fatal(err)
		}
		s := &Settings{Epochs: 60, hasBias: true, Solver: SolverSGD}
		if err := p.Plan(st, s); err != nil || p.res == nil {
			t.Fatalf("accounting %q: %v (residual release %v)", acc, err, p.res != nil)
		}
		v, _ := residualVariance(&o)
		note := fmt.Sprintf("v = %.4g the noise variance of a value", v)
		found := false
		for _, n := range p.Report().Notes {
			found = found || strings.Contains(n, note)
		}
		if !found {
			t.Errorf("accounting %q: no epoch cut at the residual variance (%s): %q", acc, note, p.Report().Notes)
		}
	}
	// Find an epsilon where Algorithm 1's variance falls back and the
	// residual variance does not.
	o := baseOpts()
	n := st.NNZ()
	eps := 0.0
	for e := 0.01; e < 10; e *= 1.1 {
		o.Epsilon = e
		l1, _ := InputSensitivity(&o)
		v, _ := residualVariance(&o)
		if InputFallsBack(&o, 2*l1*l1/(e*e), n) && !InputFallsBack(&o, v, n) {
			eps = e
			break
		}
	}
	if eps == 0 {
		t.Fatal("no epsilon separates the two variances")
	}
	o.Epsilon = eps
	p, err := NewInputPerturbation(&o)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Plan(st, &Settings{Epochs: 60, hasBias: true}); err != nil || p.fallback != nil || p.res == nil {
		t.Errorf("epsilon %v: fell back %v, residual %v (%v)", eps, p.fallback != nil, p.res != nil, err)
	}
}
