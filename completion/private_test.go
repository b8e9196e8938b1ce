package completion

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/perturb"
)

// privStore returns n distinct cells of a dims-shaped tensor (order 2 or 3)
// with ratings from a rank-2 model mapped into [1, 5] (half stars), plus a
// "heavy" first index in the last mode that receives about a third of the
// entries (a heavily rated row for worst-case sensitivity tests).
func privStore(dims []int, n int, seed uint64) *data.Store {
	rng := rand.New(rand.NewPCG(seed, 99))
	s := &data.Store{Dims: append([]int(nil), dims...), Idx: make([][]int32, len(dims))}
	seen := map[[3]int32]bool{}
	last := len(dims) - 1
	for len(s.Val) < n {
		var c [3]int32
		for m, d := range dims {
			c[m] = int32(rng.IntN(d))
		}
		if rng.IntN(3) == 0 {
			c[last] = 0
		}
		if seen[c] {
			continue
		}
		seen[c] = true
		for m := range dims {
			s.Idx[m] = append(s.Idx[m], c[m])
		}
		v := 3 + math.Sin(float64(c[0]))*math.Cos(float64(c[1]))*2 + 0.3*rng.NormFloat64()
		s.Val = append(s.Val, math.Round(clampValue(v, 1, 5)*2)/2)
	}
	return s
}

func privModel(t testing.TB, kind decomposition.Kind, dims []int, rank int, bias bool, seed uint64, scale float64) *decomposition.Model {
	t.Helper()
	ranks := []int{rank}
	if kind == decomposition.Tucker {
		ranks = make([]int, len(dims))
		for i := range ranks {
			ranks[i] = rank
		}
	}
	m, err := decomposition.NewModel(kind, dims, ranks, bias)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(seed, 5))
	for _, f := range m.Factors {
		for i := range f {
			f[i] = scale * r.NormFloat64()
		}
	}
	for i := range m.Core {
		m.Core[i] = r.NormFloat64()
	}
	for _, b := range m.Bias {
		for i := range b {
			b[i] = 0.3 * r.NormFloat64()
		}
	}
	m.Mean = 3
	return m
}

func baseOpts() PrivateOptions {
	return PrivateOptions{Epsilon: 1, Delta: 1e-5, RatingMin: 1, RatingMax: 5, Noise: perturb.SeededNoise(11)}
}

func TestPrivateOptionsValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		mod  func(*PrivateOptions)
		want error
	}{
		{"ok", func(*PrivateOptions) {}, nil},
		{"eps NaN", func(o *PrivateOptions) { o.Epsilon = math.NaN() }, perturb.ErrEpsilon},
		{"eps 0", func(o *PrivateOptions) { o.Epsilon = 0 }, perturb.ErrEpsilon},
		{"eps Inf", func(o *PrivateOptions) { o.Epsilon = math.Inf(1) }, perturb.ErrEpsilon},
		{"delta 1", func(o *PrivateOptions) { o.Delta = 1 }, perturb.ErrDelta},
		{"delta neg", func(o *PrivateOptions) { o.Delta = -1e-9 }, perturb.ErrDelta},
		{"range empty", func(o *PrivateOptions) { o.RatingMin, o.RatingMax = 0, 0 }, perturb.ErrSensitivity},
		{"range reversed", func(o *PrivateOptions) { o.RatingMin, o.RatingMax = 5, 1 }, perturb.ErrSensitivity},
		{"range NaN", func(o *PrivateOptions) { o.RatingMax = math.NaN() }, perturb.ErrSensitivity},
		{"clip neg", func(o *PrivateOptions) { o.Clip = -1 }, perturb.ErrSensitivity},
		{"user without k", func(o *PrivateOptions) { o.Unit = UnitUser }, perturb.ErrDimension},
	} {
		o := baseOpts()
		tc.mod(&o)
		for name, ctor := range map[string]func(*PrivateOptions) error{
			"input":    func(o *PrivateOptions) error { _, err := NewInputPerturbation(o); return err },
			"gradient": func(o *PrivateOptions) error { _, err := NewGradientPerturbation(o); return err },
			"output": func(o *PrivateOptions) error {
				if o.Unit == UnitUser {
					return perturb.ErrDimension // refused for another reason, tested below
				}
				_, err := NewOutputPerturbation(o)
				return err
			},
		} {
			err := ctor(&o)
			if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("%s %s: err = %v, want %v", name, tc.name, err, tc.want)
			}
		}
	}
	o := baseOpts()
	o.Unit, o.MaxRatingsPerUser = UnitUser, 3
	if _, err := NewOutputPerturbation(&o); err == nil {
		t.Error("output perturbation accepted the user unit")
	}
	o = baseOpts()
	o.Mechanism, o.Delta = "gaussian", 0
	if _, err := NewInputPerturbation(&o); !errors.Is(err, perturb.ErrDelta) {
		t.Errorf("gaussian input with delta 0: %v", err)
	}
	o = baseOpts()
	o.Protect = "everything"
	if _, err := NewGradientPerturbation(&o); err == nil {
		t.Error("unknown protect target accepted")
	}
	// The default target is ProtectAll (Gaussian): delta 0 is refused at
	// construction, before any data is read; ProtectC is pure and plans.
	o = baseOpts()
	o.Delta = 0
	if _, err := NewGradientPerturbation(&o); !errors.Is(err, perturb.ErrDelta) {
		t.Errorf("default gradient target with delta 0: %v, want ErrDelta", err)
	}
	if _, err := NewALSMode(&o); !errors.Is(err, perturb.ErrDelta) {
		t.Errorf("private ALS with delta 0: %v, want ErrDelta", err)
	}
	o.Protect = ProtectC
	if _, err := NewGradientPerturbation(&o); err != nil {
		t.Errorf("ProtectC with delta 0: %v", err)
	}
}

// TestParseProtectDefault: the empty target is ProtectAll (TestPrivateTrain
// checks that a gradient run with the zero Protect covers every released
// parameter; the seed's ProtectC, which covers none, is asked for by name).
func TestParseProtectDefault(t *testing.T) {
	if got, err := ParseProtect(""); got != ProtectAll || err != nil {
		t.Errorf(`ParseProtect("") = %q, %v; want all`, got, err)
	}
	o := baseOpts()
	p, err := NewGradientPerturbation(&o)
	if err != nil {
		t.Fatal(err)
	}
	if p.Protect() != ProtectAll || p.o.DPSGD != DPSGDMinibatch {
		t.Errorf("zero options: target %q, variant %v; want all, minibatch", p.Protect(), p.o.DPSGD)
	}
}

// TestInputSensitivityEmpirical builds neighbouring logs (one rating
// changed, including r_min vs r_max on the heavy row; for the user unit
// all of one user's ratings changed) and checks that the clamped value
// vector, the pre-noise quantity of input perturbation, moves by at most
// the declared l1 and l2 sensitivities.
func TestInputSensitivityEmpirical(t *testing.T) {
	t.Parallel()
	st := privStore([]int{30, 20, 5}, 400, 1)
	o := baseOpts()
	o.RatingMin, o.RatingMax = 1, 5
	clamped := func(v []float64) []float64 {
		out := make([]float64, len(v))
		for i, x := range v {
			out[i] = clampValue(x, o.RatingMin, o.RatingMax)
		}
		return out
	}
	r := rand.New(rand.NewPCG(3, 3))
	dist := func(a, b []float64) (l1, l2 float64) {
		for i := range a {
			d := math.Abs(a[i] - b[i])
			l1 += d
			l2 += d * d
		}
		return l1, math.Sqrt(l2)
	}
	l1Max, _ := InputSensitivity(&o)
	worst := 0.0
	for trial := 0; trial < 2000; trial++ {
		v2 := append([]float64(nil), st.Val...)
		e := r.IntN(len(v2))
		switch trial % 3 {
		case 0: // worst case: r_min vs r_max (values outside the range too)
			st.Val[e], v2[e] = o.RatingMin-3, o.RatingMax+7
		case 1:
			v2[e] = o.RatingMin + r.Float64()*4
		default:
			v2[e] = 100 * r.NormFloat64() // wild value, clamped
		}
		l1, l2 := dist(clamped(st.Val), clamped(v2))
		worst = math.Max(worst, l1)
		if l1 > l1Max+1e-12 || l2 > l1Max+1e-12 {
			t.Fatalf("trial %d: clamped vectors differ by l1 %v, l2 %v > %v", trial, l1, l2, l1Max)
		}
	}
	if worst < l1Max-1e-12 {
		t.Errorf("worst case %v never reached the declared sensitivity %v: test too weak", worst, l1Max)
	}
	// User unit: change every rating of one user (bounded to k).
	const k = 4
	bounded, _, err := BoundUserRatings(st, k, rand.NewPCG(1, 1))
	if err != nil {
		t.Fatal(err)
	}
	o.Unit, o.MaxRatingsPerUser = UnitUser, k
	l1U, l2U := InputSensitivity(&o)
	for trial := 0; trial < 500; trial++ {
		u := int32(r.IntN(bounded.Dims[0]))
		a, b := clamped(bounded.Val), clamped(bounded.Val)
		for e, uu := range bounded.Idx[0] {
			if uu == u {
				a[e], b[e] = o.RatingMin, o.RatingMax
			}
		}
		l1, l2 := dist(a, b)
		if l1 > l1U+1e-12 || l2 > l2U+1e-12 {
			t.Fatalf("user %d: l1 %v > %v or l2 %v > %v", u, l1, l1U, l2, l2U)
		}
	}
}

func TestBoundUserRatings(t *testing.T) {
	t.Parallel()
	st := privStore([]int{10, 40, 3}, 300, 2)
	for _, k := range []int{1, 3, 1000} {
		b, pos, err := BoundUserRatings(st, k, rand.NewPCG(4, 4))
		if err != nil {
			t.Fatal(err)
		}
		cnt := make([]int, st.Dims[0])
		for _, u := range b.Idx[0] {
			cnt[u]++
		}
		orig := make([]int, st.Dims[0])
		for _, u := range st.Idx[0] {
			orig[u]++
		}
		for u := range cnt {
			if cnt[u] > k || cnt[u] != min(k, orig[u]) {
				t.Errorf("k=%d user %d keeps %d of %d", k, u, cnt[u], orig[u])
			}
		}
		if len(pos) != b.NNZ() || checkUserBound(b, k) != nil {
			t.Errorf("k=%d: positions %d, store %d, bound check %v", k, len(pos), b.NNZ(), checkUserBound(b, k))
		}
		if k < 1000 && !errors.Is(checkUserBound(st, k), ErrUserBound) {
			t.Errorf("k=%d: unbounded store passed the check", k)
		}
	}
	if _, _, err := BoundUserRatings(st, 0, rand.NewPCG(1, 1)); err == nil {
		t.Error("k = 0 accepted")
	}
}

// TestGradientSensitivityEmpirical checks, over many random states and
// neighbouring values (including r_min vs r_max), that the clipped
// gradient handed to the noise moves by at most Delta_G = 2m, for both
// protection targets, CP and Tucker, with and without biases.
func TestGradientSensitivityEmpirical(t *testing.T) {
	t.Parallel()
	dims := []int{8, 7, 4}
	const clip = 0.7
	r := rand.New(rand.NewPCG(5, 5))
	for _, kind := range []decomposition.Kind{decomposition.CP, decomposition.Tucker} {
		for _, bias := range []bool{false, true} {
			worst := 0.0
			for trial := 0; trial < 400; trial++ {
				m := privModel(t, kind, dims, 3, bias, uint64(trial), 0.2+2*r.Float64())
				idx := []int32{int32(r.IntN(8)), int32(r.IntN(7)), int32(r.IntN(4))}
				x, x2 := 1.0, 5.0
				if trial%2 == 1 {
					x, x2 = 1+4*r.Float64(), 1+4*r.Float64()
				}
				shift := 0.3 * r.NormFloat64()
				pre := func(x float64, all bool) []float64 {
					w := m.NewWork()
					m.DataGrad(idx, x, w)
					g := &EntryGrad{Idx: idx, Factor: w.Factor, Core: w.Core, Bias: w.Bias}
					if all {
						tr := &clipNoiseAll{clip: clip, shift: shift, fix: bias}
						return append([]float64(nil), tr.preNoise(g)...)
					}
					tr := &clipNoiseC{mode: 2, clip: clip}
					return append([]float64(nil), tr.preNoise(g)...)
				}
				for _, all := range []bool{false, true} {
					a, b := pre(x, all), pre(x2, all)
					d := 0.0
					for i := range a {
						d += (a[i] - b[i]) * (a[i] - b[i])
					}
					d = math.Sqrt(d)
					worst = math.Max(worst, d)
					if d > GradientSensitivity(clip)*(1+1e-12) {
						t.Fatalf("%s bias=%v all=%v: clipped gradients differ by %v > 2m = %v", kind, bias, all, d, 2*clip)
					}
					var nrm float64
					for _, v := range a {
						nrm += v * v
					}
					if math.Sqrt(nrm) > clip*(1+1e-12) {
						t.Fatalf("post-clip norm %v > m = %v", math.Sqrt(nrm), clip)
					}
				}
			}
			if worst < clip {
				t.Errorf("%s bias=%v: worst difference %v, the test never came near 2m", kind, bias, worst)
			}
		}
	}
}

// TestMeanCorrection checks that the --protect all transform turns the
// trainer's gradient (residual with the true mean) into the gradient at the
// noisy mean.
func TestMeanCorrection(t *testing.T) {
	t.Parallel()
	m := privModel(t, decomposition.CP, []int{5, 5, 3}, 2, true, 1, 0.5)
	idx := []int32{1, 2, 0}
	const mu, muT = 3.0, 3.4
	m.Mean = mu
	w := m.NewWork()
	m.DataGrad(idx, 4.5, w)
	g := &EntryGrad{Idx: idx, Factor: w.Factor, Core: w.Core, Bias: w.Bias}
	tr := &clipNoiseAll{clip: 1e9, shift: mu - muT, fix: true}
	got := append([]float64(nil), tr.preNoise(g)...)
	m.Mean = muT
	w2 := m.NewWork()
	m.DataGrad(idx, 4.5, w2)
	var want []float64
	for _, f := range w2.Factor {
		want = append(want, f...)
	}
	want = append(want, w2.Bias...)
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-12 {
			t.Fatalf("corrected gradient[%d] = %v, want %v", i, got[i], want[i])
		}
	}
}

// TestOutputSensitivityEmpirical: the refitted row of the protected mode
// moves by at most Delta_O when one rating changes (worst case r_min vs
// r_max on the heavily rated row 0), and no other row moves.
func TestOutputSensitivityEmpirical(t *testing.T) {
	t.Parallel()
	dims := []int{25, 20, 4}
	st := privStore(dims, 600, 6)
	const rho, lambda = 0.8, 2.0
	r := rand.New(rand.NewPCG(6, 6))
	for _, kind := range []decomposition.Kind{decomposition.CP, decomposition.Tucker} {
		worst := 0.0
		for trial := 0; trial < 60; trial++ {
			base := privModel(t, kind, dims, 3, true, uint64(100+trial), 0.3+r.Float64())
			v1 := make([]float64, st.NNZ())
			for i, v := range st.Val {
				v1[i] = clampValue(v, 1, 5)
			}
			// Pick an entry, preferring the heavy row 0 of the last mode.
			e := r.IntN(st.NNZ())
			for trial%2 == 0 && st.Idx[2][e] != 0 {
				e = r.IntN(st.NNZ())
			}
			v2 := append([]float64(nil), v1...)
			v1[e], v2[e] = 1, 5
			m1, m2 := cloneModel(base), cloneModel(base)
			if err := RefitFactor(m1, st, v1, 2, lambda, rho); err != nil {
				t.Fatal(err)
			}
			if err := RefitFactor(m2, st, v2, 2, lambda, rho); err != nil {
				t.Fatal(err)
			}
			dO := OutputSensitivity(m1, 4, rho, lambda)
			for k := 0; k < dims[2]; k++ {
				a, b := m1.Row(2, k), m2.Row(2, k)
				d := 0.0
				for i := range a {
					d += (a[i] - b[i]) * (a[i] - b[i])
				}
				d = math.Sqrt(d)
				if k != int(st.Idx[2][e]) && d != 0 {
					t.Fatalf("%s: row %d moved by %v though the changed rating is in row %d", kind, k, d, st.Idx[2][e])
				}
				if d > dO*(1+1e-9) {
					t.Fatalf("%s trial %d: row %d moved by %v > Delta_O = %v", kind, trial, k, d, dO)
				}
				if dO > 0 {
					worst = math.Max(worst, d/dO)
				}
			}
		}
		t.Logf("%s: largest observed move %.3f of Delta_O", kind, worst)
		if worst == 0 {
			t.Errorf("%s: no row ever moved: test too weak", kind)
		}
	}
}

func cloneModel(m *decomposition.Model) *decomposition.Model {
	c := *m
	c.Factors = make([][]float64, len(m.Factors))
	for i, f := range m.Factors {
		c.Factors[i] = append([]float64(nil), f...)
	}
	c.Core = append([]float64(nil), m.Core...)
	c.Bias = make([][]float64, len(m.Bias))
	for i, b := range m.Bias {
		c.Bias[i] = append([]float64(nil), b...)
	}
	return &c
}

// TestPrivateTrain runs every mode end to end on a small log: training
// succeeds, the report states relation, budget, composition, coverage and
// randomness, the budget is respected, and the same seed and thread count
// reproduce the model exactly.
func TestPrivateTrain(t *testing.T) {
	t.Parallel()
	dims := []int{30, 25, 4}
	st := privStore(dims, 900, 7)
	type mk func(o *PrivateOptions) (Privacy, error)
	modes := []struct {
		name    string
		mk      mk
		mod     func(o *PrivateOptions)
		covered bool
	}{
		{"input-laplace", func(o *PrivateOptions) (Privacy, error) { return NewInputPerturbation(o) }, func(o *PrivateOptions) { o.Delta = 0 }, true},
		{"input-gaussian", func(o *PrivateOptions) (Privacy, error) { return NewInputPerturbation(o) }, func(o *PrivateOptions) { o.Mechanism = "gaussian" }, true},
		{"gradient-C", func(o *PrivateOptions) (Privacy, error) { return NewGradientPerturbation(o) }, func(o *PrivateOptions) { o.Protect = ProtectC }, false},
		{"gradient-C-basic", func(o *PrivateOptions) (Privacy, error) { return NewGradientPerturbation(o) }, func(o *PrivateOptions) { o.Protect, o.Accounting, o.Delta = ProtectC, "basic", 0 }, false},
		{"gradient-all", func(o *PrivateOptions) (Privacy, error) { return NewGradientPerturbation(o) }, func(o *PrivateOptions) { o.Protect = ProtectAll }, true},
		{"gradient-default", func(o *PrivateOptions) (Privacy, error) { return NewGradientPerturbation(o) }, func(o *PrivateOptions) {}, true},
		{"gradient-all-advanced", func(o *PrivateOptions) (Privacy, error) { return NewGradientPerturbation(o) }, func(o *PrivateOptions) { o.Protect = ProtectAll; o.Accounting = "advanced"; o.DPSGD = DPSGDPerEntry }, true},
		{"gradient-all-per-entry", func(o *PrivateOptions) (Privacy, error) { return NewGradientPerturbation(o) }, func(o *PrivateOptions) { o.Protect = ProtectAll; o.DPSGD = DPSGDPerEntry }, true},
		{"output", func(o *PrivateOptions) (Privacy, error) { return NewOutputPerturbation(o) }, func(o *PrivateOptions) { o.Delta = 0 }, false},
	}
	for _, kind := range []decomposition.Kind{decomposition.CP, decomposition.Tucker} {
		for _, md := range modes {
			run := func() (*decomposition.Model, *perturb.Report) {
				o := baseOpts()
				md.mod(&o)
				p, err := md.mk(&o)
				if err != nil {
					t.Fatalf("%s: %v", md.name, err)
				}
				m := privModel(t, kind, dims, 2, true, 1, 0.1)
				res, err := Train(st, nil, m, &Settings{Epochs: 3, Threads: 2, Privacy: p}, rand.NewPCG(1, 2), nil)
				if err != nil {
					t.Fatalf("%s %s: %v", kind, md.name, err)
				}
				return m, res.Privacy
			}
			m1, rep := run()
			m2, _ := run()
			if !modelsIdentical(m1, m2) {
				t.Errorf("%s %s: same seed and threads gave different models", kind, md.name)
			}
			o := baseOpts()
			md.mod(&o)
			switch {
			case !rep.Private() || rep.Relation == "" || rep.Unit != string(UnitEntry) || rep.Composition == "":
				t.Errorf("%s %s: incomplete report %+v", kind, md.name, rep)
			case rep.Epsilon > o.Epsilon*(1+1e-9) || rep.Delta > o.Delta*(1+1e-9):
				t.Errorf("%s %s: report (%v, %v) over budget (%v, %v)", kind, md.name, rep.Epsilon, rep.Delta, o.Epsilon, o.Delta)
			case rep.Randomness != perturb.LabelSeeded:
				t.Errorf("%s %s: randomness %q", kind, md.name, rep.Randomness)
			case rep.FullyCovered() != md.covered:
				t.Errorf("%s %s: FullyCovered = %v, want %v (covered %v, not %v)", kind, md.name, rep.FullyCovered(), md.covered, rep.Covered, rep.NotCovered)
			case len(rep.Releases) == 0:
				t.Errorf("%s %s: no releases recorded", kind, md.name)
			}
			if !modelFinite(m1) {
				t.Errorf("%s %s: non-finite model", kind, md.name)
			}
			checkDerivations(t, string(kind)+" "+md.name, rep)
		}
	}
}

func modelsIdentical(a, b *decomposition.Model) bool {
	eq := func(x, y []float64) bool {
		if len(x) != len(y) {
			return false
		}
		for i := range x {
			if x[i] != y[i] {
				return false
			}
		}
		return true
	}
	for i := range a.Factors {
		if !eq(a.Factors[i], b.Factors[i]) {
			return false
		}
	}
	for i := range a.Bias {
		if !eq(a.Bias[i], b.Bias[i]) {
			return false
		}
	}
	return eq(a.Core, b.Core) && a.Mean == b.Mean
}

// TestPrivateRefusals: plans over budget, unbounded users and misuse are
// refused before training starts.
func TestPrivateRefusals(t *testing.T) {
	t.Parallel()
	dims := []int{12, 10, 3}
	st := privStore(dims, 200, 8)
	train := func(p Privacy) error {
		m := privModel(t, decomposition.CP, dims, 2, true, 1, 0.1)
		_, err := Train(st, nil, m, &Settings{Epochs: 5, Threads: 1, Privacy: p}, rand.NewPCG(1, 2), nil)
		return err
	}
	o := baseOpts()
	o.Protect, o.Sigma, o.DPSGD = ProtectAll, 0.5, DPSGDPerEntry // far too little noise for eps = 1 over 5 epochs
	p, _ := NewGradientPerturbation(&o)
	if err := train(p); !errors.Is(err, perturb.ErrBudget) {
		t.Errorf("under-noised --protect all: %v, want ErrBudget", err)
	}
	o = baseOpts()
	o.Protect, o.Sigma = ProtectAll, 0.3 // minibatch: noise multiplier 0.3 over 10 steps at q = 0.5
	p, _ = NewGradientPerturbation(&o)
	if err := train(p); !errors.Is(err, perturb.ErrBudget) {
		t.Errorf("under-noised minibatch DP-SGD: %v, want ErrBudget", err)
	}
	o = baseOpts()
	o.Protect, o.StepEpsilon = ProtectC, 0.5 // 5 epochs x 0.5 > 1 by every method
	p, _ = NewGradientPerturbation(&o)
	if err := train(p); !errors.Is(err, perturb.ErrBudget) {
		t.Errorf("over-budget step epsilon: %v, want ErrBudget", err)
	}
	o = baseOpts()
	o.Protect, o.StepEpsilon = ProtectC, 0.2 // 5 x 0.2 = 1 fits by basic composition
	o.Accounting = "basic"
	p, _ = NewGradientPerturbation(&o)
	if err := train(p); err != nil {
		t.Errorf("budget-exact step epsilon refused: %v", err)
	}
	o = baseOpts()
	o.Unit, o.MaxRatingsPerUser = UnitUser, 2
	in, _ := NewInputPerturbation(&o)
	if err := train(in); !errors.Is(err, ErrUserBound) {
		t.Errorf("unbounded user store: %v, want ErrUserBound", err)
	}
	o = baseOpts()
	o.Mechanism, o.Calibration, o.Epsilon = "gaussian", perturb.Classic, 2
	in, _ = NewInputPerturbation(&o)
	if err := train(in); !errors.Is(err, perturb.ErrEpsilon) {
		t.Errorf("classic calibration at epsilon 2: %v, want ErrEpsilon", err)
	}
	// A plug-in is single use: a second run would spend the budget twice.
	o = baseOpts()
	in, _ = NewInputPerturbation(&o)
	if err := train(in); err != nil {
		t.Fatal(err)
	}
	if err := train(in); !errors.Is(err, perturb.ErrBudget) {
		t.Errorf("reused input plug-in: %v, want ErrBudget", err)
	}
}

// TestUserLevelGradient checks the user unit's accounting: k ratings per
// user mean k times as many steps per unit, hence more noise than the entry
// unit for the same budget.
func TestUserLevelGradient(t *testing.T) {
	t.Parallel()
	dims := []int{12, 10, 3}
	st := privStore(dims, 200, 9)
	b, _, _ := BoundUserRatings(st, 3, rand.NewPCG(2, 2))
	sigma := func(unit Unit) float64 {
		o := baseOpts()
		o.Protect, o.Unit, o.MaxRatingsPerUser, o.DPSGD = ProtectAll, unit, 3, DPSGDPerEntry
		p, err := NewGradientPerturbation(&o)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Plan(b, &Settings{Epochs: 4}); err != nil {
			t.Fatal(err)
		}
		if p.steps != 4*map[Unit]int{UnitEntry: 1, UnitUser: 3}[unit] {
			t.Errorf("%s: %d steps", unit, p.steps)
		}
		return p.gauss.Sigma()
	}
	se, su := sigma(UnitEntry), sigma(UnitUser)
	// RDP of Gaussians is linear in the number of steps, so sigma grows
	// about like sqrt(3) (exactly, up to the mean release and the order grid).
	if ratio := su / se; ratio < 1.6 || ratio > 1.9 {
		t.Errorf("user/entry sigma ratio %v, want about sqrt(3) = 1.73", ratio)
	}
}

// TestSecureDefault: without a seed the noise comes from crypto/rand, the
// report says so, and two runs with the same trainer seed differ (the noise
// is not derived from any seed).
func TestSecureDefault(t *testing.T) {
	t.Parallel()
	dims := []int{10, 8, 2}
	st := privStore(dims, 80, 10)
	run := func() (*decomposition.Model, *perturb.Report) {
		o := baseOpts()
		o.Noise = perturb.SecureNoise()
		p, err := NewInputPerturbation(&o)
		if err != nil {
			t.Fatal(err)
		}
		m := privModel(t, decomposition.CP, dims, 2, true, 1, 0.1)
		res, err := Train(st, nil, m, &Settings{Epochs: 2, Threads: 1, Privacy: p}, rand.NewPCG(1, 2), nil)
		if err != nil {
			t.Fatal(err)
		}
		return m, res.Privacy
	}
	m1, rep := run()
	m2, _ := run()
	if rep.Randomness != perturb.LabelSecure {
		t.Errorf("randomness %q, want %q", rep.Randomness, perturb.LabelSecure)
	}
	if modelsIdentical(m1, m2) {
		t.Error("two unseeded private runs gave identical models: noise is not from the secure source")
	}
	if _, ok := (&PrivateOptions{}).source(1).(interface{ Uint64() uint64 }); !ok {
		t.Error("source is not a rand.Source")
	}
}

// TestProtectAllValidUsesNoisyMean: with --protect all the validation RMSE
// in the history is that of the model with the released mean mu~ (the
// audit found it computed with the raw mean).
func TestProtectAllValidUsesNoisyMean(t *testing.T) {
	t.Parallel()
	st := privStore([]int{30, 20, 5}, 400, 21)
	valid := privStore([]int{30, 20, 5}, 60, 22)
	o := baseOpts()
	o.Protect, o.DPSGD = ProtectAll, DPSGDPerEntry
	o.MeanFraction = 0.001 // a very noisy mean, so a raw-mean RMSE would differ
	p, err := NewGradientPerturbation(&o)
	if err != nil {
		t.Fatal(err)
	}
	m := privModel(t, decomposition.CP, st.Dims, 2, true, 1, 0.1)
	res, err := Train(st, valid, m, &Settings{Epochs: 1, Patience: -1, Threads: 1, Privacy: p}, rand.NewPCG(1, 2), nil)
	if err != nil {
		t.Fatal(err)
	}
	if m.Mean == p.mu {
		t.Fatal("released mean equals the raw mean: test cannot tell them apart")
	}
	if got, want := res.History[0].ValidRMSE, RMSE(m, valid, 1); math.Abs(got-want) > 1e-12 {
		t.Errorf("history validation RMSE %v, model with the released mean %v", got, want)
	}
}

// TestPrivateRefusesWarmStart: every private SGD mode refuses
// Settings.WarmStart with a SettingsError before anything is released
// (the plug-in still plans a fresh run afterwards), while a non-private
// run accepts it.
func TestPrivateRefusesWarmStart(t *testing.T) {
	t.Parallel()
	dims := []int{20, 15, 3}
	st := privStore(dims, 400, 7)
	for _, tc := range []struct {
		name string
		make func(o *PrivateOptions) (Privacy, error)
	}{
		{"input", func(o *PrivateOptions) (Privacy, error) { return NewInputPerturbation(o) }},
		{"gradient C", func(o *PrivateOptions) (Privacy, error) {
			o.Protect = ProtectC
			return NewGradientPerturbation(o)
		}},
		{"gradient all minibatch", func(o *PrivateOptions) (Privacy, error) {
			o.Protect = ProtectAll
			return NewGradientPerturbation(o)
		}},
		{"gradient all per-entry", func(o *PrivateOptions) (Privacy, error) {
			o.Protect, o.DPSGD = ProtectAll, DPSGDPerEntry
			return NewGradientPerturbation(o)
		}},
		{"output", func(o *PrivateOptions) (Privacy, error) { return NewOutputPerturbation(o) }},
	} {
		o := baseOpts()
		p, err := tc.make(&o)
		if err != nil {
			t.Fatal(err)
		}
		m := privModel(t, decomposition.CP, dims, 2, true, 1, 0.1)
		_, err = Train(st, nil, m, &Settings{Epochs: 2, Threads: 1, WarmStart: true, Privacy: p}, rand.NewPCG(1, 1), nil)
		var se *SettingsError
		if !errors.As(err, &se) || se.Field != "WarmStart" {
			t.Errorf("%s: warm start gave %v, want a SettingsError on WarmStart", tc.name, err)
		}
		if _, err := Train(st, nil, m, &Settings{Epochs: 2, Threads: 1, Privacy: p}, rand.NewPCG(1, 1), nil); err != nil {
			t.Errorf("%s: a fresh run after the refusal: %v", tc.name, err)
		}
	}
	m := privModel(t, decomposition.CP, dims, 2, true, 1, 0.1)
	if _, err := Train(st, nil, m, &Settings{Epochs: 2, Threads: 1, WarmStart: true, Solver: SolverSGD}, rand.NewPCG(1, 1), nil); err != nil {
		t.Errorf("non-private warm start: %v", err)
	}
}

// blowUp is a private plug-in whose gradients are scaled far beyond any
// finite step, so that its run diverges after drawing noise.
type blowUp struct{ *GradientPerturbation }

func (b blowUp) GradientTransform(w int) GradientTransform {
	return blowUpT{b.GradientPerturbation.GradientTransform(w)}
}

type blowUpT struct{ GradientTransform }

func (t blowUpT) Transform(g *EntryGrad) {
	t.GradientTransform.Transform(g)
	for _, f := range g.Factor {
		for i := range f {
			f[i] *= 1e300
		}
	}
}

// TestPrivateDivergenceSpendsBudget: a private run that diverges returns
// ErrDiverged carrying its report, and the error says that the budget is
// spent and that a retry composes with it (issue 24); a non-private
// divergence says nothing of the kind.
func TestPrivateDivergenceSpendsBudget(t *testing.T) {
	t.Parallel()
	st := privStore([]int{20, 15, 3}, 300, 4)
	o := baseOpts()
	o.Protect, o.DPSGD = ProtectAll, DPSGDPerEntry
	gp, err := NewGradientPerturbation(&o)
	if err != nil {
		t.Fatal(err)
	}
	m := privModel(t, decomposition.CP, st.Dims, 2, true, 1, 0.1)
	_, err = Train(st, nil, m, &Settings{Epochs: 3, Threads: 1, Privacy: blowUp{gp}}, rand.NewPCG(1, 2), nil)
	var div *ErrDiverged
	if !errors.As(err, &div) {
		t.Fatalf("error %v, want ErrDiverged", err)
	}
	if div.Privacy == nil || div.Privacy != gp.Report() {
		t.Fatalf("ErrDiverged.Privacy = %v, want the run's report", div.Privacy)
	}
	for _, want := range []string{"budget", "is spent", "retry", "add to these", fmt.Sprintf("epsilon %g", gp.Report().Epsilon)} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("diverged private run: %q lacks %q", err, want)
		}
	}
	plain := &ErrDiverged{Epoch: 1, Loss: math.Inf(1)}
	if strings.Contains(plain.Error(), "privacy") || plain.BudgetNote() != "" {
		t.Errorf("non-private divergence: %q", plain)
	}
	out := &ErrDiverged{Epoch: 1, Privacy: &perturb.Report{Mode: "output"}}
	if !strings.Contains(out.Error(), "no guarantee covers") {
		t.Errorf("output mode divergence: %q", out)
	}
}
