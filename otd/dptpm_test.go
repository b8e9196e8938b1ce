package otd

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dprec/dprec/perturb"
	"gonum.org/v1/gonum/floats"
)

func gaussSigmaAnalytic(s, e, d float64) (float64, error) {
	return perturb.GaussianSigma(s, e, d, perturb.Analytic)
}

// TestAdvancedCompositionSplit checks that the per-query epsilon meets the
// advanced composition theorem with equality (to 1e-9) and that seed 003's
// closed form eps/sqrt(q(4+ln(2/delta))) would exceed the target.
func TestAdvancedCompositionSplit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		eps, delta float64
		q          int
	}{{1, 0.01, 550}, {0.1, 1e-5, 100}, {10, 0.01, 1}, {2, 0.05, 2200}} {
		e, d, err := AdvancedCompositionSplit(tc.eps, tc.delta, tc.q)
		if err != nil {
			t.Fatal(err)
		}
		if d != tc.delta/(2*float64(tc.q)) {
			t.Errorf("delta' = %v, want delta/(2q)", d)
		}
		tot := perturb.AdvancedComposition(e, tc.q, tc.delta/2)
		if tot > tc.eps || tot < tc.eps*(1-1e-9) {
			t.Errorf("%+v: composed epsilon %v, want just below %v", tc, tot, tc.eps)
		}
		paper := tc.eps / math.Sqrt(float64(tc.q)*(4+math.Log(2/tc.delta)))
		if tc.q > 1 && perturb.AdvancedComposition(paper, tc.q, tc.delta/2) <= tc.eps {
			t.Errorf("%+v: expected seed 003's closed form to exceed the budget", tc)
		}
	}
	for _, bad := range []struct {
		eps, delta float64
		q          int
	}{{0, 0.01, 1}, {1, 0, 1}, {1, 1, 1}, {1, 0.01, 0}, {math.NaN(), 0.01, 3}} {
		if _, _, err := AdvancedCompositionSplit(bad.eps, bad.delta, bad.q); err == nil {
			t.Errorf("%+v: want an error", bad)
		}
	}
}

// dptpmOrthoTensor returns sum_i lam_i v_i^(x)3 for an orthonormal basis.
func dptpmOrthoTensor(t *testing.T, k int, lam []float64, r *rand.Rand) (*SymTensor, [][]float64) {
	t.Helper()
	T, err := NewSymTensor(k)
	if err != nil {
		t.Fatal(err)
	}
	var vs [][]float64
	for i := 0; i < len(lam); i++ {
		v := dptpmRandomUnit(r, k)
		for _, p := range vs { // Gram-Schmidt
			floats.AddScaled(v, -floats.Dot(v, p), p)
		}
		floats.Scale(1/floats.Norm(v, 2), v)
		vs = append(vs, v)
		T.AddRankOne(lam[i], v)
	}
	return T, vs
}

// TestDPTPMRecoversWithSmallNoise: with a tiny sensitivity the noisy power
// method finds the eigenpairs of an orthogonal tensor.
func TestDPTPMRecoversWithSmallNoise(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(11, 12))
	lam := []float64{5, 3, 2, 1}
	T, vs := dptpmOrthoTensor(t, 5, lam, r)
	sens := func(u []float64) (float64, float64) { return 1e-9, 1e-9 }
	res, err := DPTPM(T, 4, sens, DPTPMOptions{L: 10, R: 30, Epsilon: 1, Delta: 1e-3}, gaussSigmaAnalytic, rand.NewPCG(1, 1))
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range res.Lambda {
		if math.Abs(l-lam[i]) > 1e-4 {
			t.Errorf("lambda %d = %v, want %v", i, l, lam[i])
		}
		if d := math.Abs(floats.Dot(res.V[i], vs[i])); d < 1-1e-6 {
			t.Errorf("vector %d: |<v, v_true>| = %v", i, d)
		}
	}
	if res.Queries != 4*10*31 {
		t.Errorf("queries %d, want k L (R+1) = %d", res.Queries, 4*10*31)
	}
}

// TestDPTPMEigenvalueNoise checks the noise of the released eigenvalue:
// on the zero tensor with k = L = 1, lambda = sigmaMult * Delta f2 * z, so
// over 4000 independent runs its standard deviation must match. The
// sample standard deviation has relative standard error 1/sqrt(2*4000) =
// 1.1%; the 6% tolerance is 5.4 standard errors (false-reject rate about
// 1e-7).
func TestDPTPMEigenvalueNoise(t *testing.T) {
	t.Parallel()
	T, _ := NewSymTensor(3)
	const s2 = 0.25
	sens := func(u []float64) (float64, float64) { return 1, s2 }
	opts := DPTPMOptions{L: 1, R: 2, Epsilon: 0.5, Delta: 1e-4}
	var xs []float64
	var mult float64
	for i := 0; i < 4000; i++ {
		res, err := DPTPM(T, 1, sens, opts, gaussSigmaAnalytic, rand.NewPCG(uint64(i), 77))
		if err != nil {
			t.Fatal(err)
		}
		xs = append(xs, res.Lambda[0])
		mult = res.SigmaMultiplier
	}
	_, sd := meanStd(xs)
	want := mult * s2
	if math.Abs(sd/want-1) > 0.06 {
		t.Errorf("eigenvalue noise sd %v, want %v", sd, want)
	}
	epsQ, deltaQ, _ := AdvancedCompositionSplit(0.5, 1e-4, 3)
	if w, _ := perturb.GaussianSigma(1, epsQ, deltaQ, perturb.Analytic); math.Abs(mult-w) > 1e-12*w {
		t.Errorf("sigma multiplier %v, want GaussianSigma(1, eps', delta') = %v", mult, w)
	}
}

func TestDPTPMErrors(t *testing.T) {
	t.Parallel()
	T, _ := NewSymTensor(3)
	sens := func(u []float64) (float64, float64) { return 1, 1 }
	for _, tc := range []struct {
		k    int
		opts DPTPMOptions
	}{
		{0, DPTPMOptions{Epsilon: 1, Delta: 0.01}},
		{4, DPTPMOptions{Epsilon: 1, Delta: 0.01}},
		{1, DPTPMOptions{Epsilon: 0, Delta: 0.01}},
		{1, DPTPMOptions{Epsilon: 1, Delta: 0}},
		{1, DPTPMOptions{L: -1, Epsilon: 1, Delta: 0.01}},
	} {
		if _, err := DPTPM(T, tc.k, sens, tc.opts, gaussSigmaAnalytic, rand.NewPCG(1, 1)); err == nil {
			t.Errorf("k=%d %+v: want an error", tc.k, tc.opts)
		}
	}
}
