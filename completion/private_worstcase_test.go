package completion

import (
	"math"
	"strings"
	"testing"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/perturb"
)

// TestSensitivityWorstCase attacks the sensitivities whose neighbour tests
// drew random neighbours and had no floor near the bound (issue 24: each
// released statistic gets a test of its noise, TestReleasedNoiseVariance,
// and one that attacks its sensitivity with a worst-case neighbour; the
// others are TestBiasSensitivityNeighbours, TestInputSensitivityEmpirical,
// TestInputResidualSensitivity, TestDPSGDSensitivityNeighbours,
// TestALSSensitivityAdversarial and TestALSUserSensitivityNeighbours,
// which reach their bounds). Each constructed neighbour moves its
// statistic by exactly the declared bound (output: by lambda/(rho^4 +
// lambda) of it, the most a ridge refit allows), so a bound set any
// smaller fails.
func TestSensitivityWorstCase(t *testing.T) {
	t.Parallel()
	t.Run("bias user: a user with k extreme ratings", func(t *testing.T) {
		t.Parallel()
		const k = 6
		o := userOpts(k)
		st, err := BoundForUnit(userStore([]int{25, 30}, 400, 5), &o)
		if err != nil {
			t.Fatal(err)
		}
		// The adversary rates k distinct items r_max; with the released
		// mean mu = 3 each residual clips to c = (r_max - r_min)/3, and
		// each centred rating is (r_max - r_min)/2.
		adv := *st
		adv.Dims = []int{st.Dims[0] + 1, st.Dims[1]}
		adv.Idx = [][]int32{append([]int32(nil), st.Idx[0]...), append([]int32(nil), st.Idx[1]...)}
		adv.Val = append([]float64(nil), st.Val...)
		for i := 0; i < k; i++ {
			adv.Idx[0] = append(adv.Idx[0], int32(st.Dims[0]))
			adv.Idx[1] = append(adv.Idx[1], int32(i))
			adv.Val = append(adv.Val, o.RatingMax)
		}
		if err := checkUserContributions(&adv, k); err != nil {
			t.Fatal(err)
		}
		a, b := biasUserTruth(&adv, &o, 3), biasUserTruth(withoutUser(&adv, int32(st.Dims[0])), &o, 3)
		for _, rel := range userBiasReleases(&o) {
			var l1, l2 float64
			for i := range a[rel.what] {
				d := math.Abs(a[rel.what][i] - b[rel.what][i])
				l1 += d
				l2 += d * d
			}
			l2 = math.Sqrt(l2)
			if math.Abs(l1-rel.l1) > 1e-9*rel.l1 || math.Abs(l2-rel.l2) > 1e-9*rel.l2 {
				t.Errorf("%s: the adversarial user moves it by l1 %v, l2 %v; declared %v, %v", rel.what, l1, l2, rel.l1, rel.l2)
			}
		}
	})
	t.Run("input user unit: every rating of a user flipped", func(t *testing.T) {
		t.Parallel()
		const k = 4
		o := userOpts(k)
		st := privStore([]int{30, 20, 5}, 400, 1)
		b, _, err := BoundUserRatings(st, k, perturb.SeededSource(1))
		if err != nil {
			t.Fatal(err)
		}
		l1, l2 := InputSensitivity(&o)
		for u := int32(0); u < int32(b.Dims[0]); u++ {
			var n int
			for _, uu := range b.Idx[0] {
				if uu == u {
					n++
				}
			}
			if n < k {
				continue
			}
			// Every rating of u far below r_min against far above r_max:
			// the released vector of clamped values.
			va, vb := make([]float64, b.NNZ()), make([]float64, b.NNZ())
			for e, v := range b.Val {
				va[e], vb[e] = v, v
				if b.Idx[0][e] == u {
					va[e], vb[e] = o.RatingMin-3, o.RatingMax+9
				}
				va[e] = clampValue(va[e], o.RatingMin, o.RatingMax)
				vb[e] = clampValue(vb[e], o.RatingMin, o.RatingMax)
			}
			var got1 float64
			for e := range va {
				got1 += math.Abs(va[e] - vb[e])
			}
			if got2 := l2dist(va, vb); math.Abs(got1-l1) > 1e-12*l1 || math.Abs(got2-l2) > 1e-12*l2 {
				t.Errorf("a user with %d ratings flipped moves the values by l1 %v, l2 %v; declared %v, %v", n, got1, got2, l1, l2)
			}
			return
		}
		t.Fatal("no user with k ratings: the test cannot reach the bound")
	})
	t.Run("gradient per-entry: opposite clipped gradients", func(t *testing.T) {
		t.Parallel()
		// x^ = 3 exactly (mean 3, biases 0, sum_r a_r b_r c_r = 0), so
		// the ratings r_min and r_max have residuals -2 and 2, the joint
		// gradient (and the C row's) point in opposite directions, and
		// both exceed the clip: clipped, they differ by 2m.
		const clip = 0.7
		for _, kind := range []decomposition.Kind{decomposition.CP, decomposition.Tucker} {
			m := privModel(t, kind, []int{2, 2, 2}, 2, true, 1, 1)
			for _, f := range m.Factors {
				clear(f)
			}
			s := 2.0
			copy(m.Row(0, 0), []float64{s, s})
			copy(m.Row(1, 0), []float64{s, -s})
			copy(m.Row(2, 0), []float64{s, s})
			if kind == decomposition.Tucker {
				clear(m.Core)
				m.Core[0], m.Core[len(m.Core)-1] = 1, 1 // superdiagonal: x^ = sum_r a_r b_r c_r
			}
			for _, b := range m.Bias {
				clear(b)
			}
			m.Mean = 3
			idx := []int32{0, 0, 0}
			if got := m.Predict(idx); math.Abs(got-3) > 1e-12 {
				t.Fatalf("%s: x^ = %v, want 3", kind, got)
			}
			pre := func(x float64, all bool) []float64 {
				w := m.NewWork()
				m.DataGrad(idx, x, w)
				g := &EntryGrad{Idx: idx, Factor: w.Factor, Core: w.Core, Bias: w.Bias}
				if all {
					return append([]float64(nil), (&clipNoiseAll{clip: clip}).preNoise(g)...)
				}
				return append([]float64(nil), (&clipNoiseC{mode: 2, clip: clip}).preNoise(g)...)
			}
			for _, all := range []bool{true, false} {
				if d := l2dist(pre(1, all), pre(5, all)); math.Abs(d-GradientSensitivity(clip)) > 1e-12 {
					t.Errorf("%s all=%v: opposite clipped gradients differ by %v, declared 2m = %v", kind, all, d, GradientSensitivity(clip))
				}
			}
		}
	})
	t.Run("gradient mean: one rating from r_min to r_max", func(t *testing.T) {
		t.Parallel()
		st := privStore([]int{30, 20, 5}, 400, 2)
		mean := func(v float64) (float64, *perturb.Report) {
			o := baseOpts()
			o.Protect, o.DPSGD, o.Noise = ProtectAll, DPSGDPerEntry, perturb.SeededNoise(1)
			p, err := NewGradientPerturbation(&o)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Plan(st, &Settings{Epochs: 1, hasBias: true}); err != nil {
				t.Fatal(err)
			}
			vals := append([]float64(nil), st.Val...)
			vals[0] = v
			if err := p.PerturbInput(vals, st); err != nil {
				t.Fatal(err)
			}
			return p.mu, p.Report()
		}
		lo, rep := mean(1)
		hi, _ := mean(5)
		sens := rep.Releases[0].Sensitivity
		if !strings.HasPrefix(rep.Releases[0].What, "global mean") || math.Abs(hi-lo-sens) > 1e-12 {
			t.Errorf("the mean moves by %v; the release %q declares %v", hi-lo, rep.Releases[0].What, sens)
		}
	})
	t.Run("output: one rating on a row, design vector at its bound", func(t *testing.T) {
		t.Parallel()
		// Time row 0 has one rating, at (user 0, item 0), whose clipped
		// rows are rho e_1, so z = rho^2 e_1 has the largest norm; the
		// refit row moves by rho^2 Delta_r/(rho^4 + lambda) when the
		// rating goes from r_min to r_max: lambda/(rho^4 + lambda) of
		// Delta_O = Delta_r rho^2/lambda.
		o := baseOpts()
		st := &data.Store{Dims: []int{3, 3, 2}, Idx: make([][]int32, 3)}
		add := func(i, j, k int32, v float64) {
			st.Idx[0] = append(st.Idx[0], i)
			st.Idx[1] = append(st.Idx[1], j)
			st.Idx[2] = append(st.Idx[2], k)
			st.Val = append(st.Val, v)
		}
		add(0, 0, 0, o.RatingMin)
		for i := int32(0); i < 3; i++ {
			for j := int32(0); j < 3; j++ {
				add(i, j, 1, 3)
			}
		}
		for _, tc := range []struct{ rho, lambda float64 }{{DefaultRowClip, DefaultOutputLambda}, {0.8, 2}} {
			base := privModel(t, decomposition.CP, st.Dims, 3, true, 3, 1)
			copy(base.Row(0, 0), []float64{10, 0, 0})
			copy(base.Row(1, 0), []float64{10, 0, 0})
			refit := func(v float64) []float64 {
				m := cloneModel(base)
				vals := append([]float64(nil), st.Val...)
				vals[0] = v
				if err := RefitFactor(m, st, vals, 2, tc.lambda, tc.rho); err != nil {
					t.Fatal(err)
				}
				return append([]float64(nil), m.Row(2, 0)...)
			}
			d := l2dist(refit(o.RatingMin), refit(o.RatingMax))
			dO := OutputSensitivity(base, o.ratingRange(), tc.rho, tc.lambda)
			r4 := math.Pow(tc.rho, 4)
			if want := tc.lambda / (r4 + tc.lambda) * dO; math.Abs(d-want) > 1e-9*want || d > dO {
				t.Errorf("rho %g, lambda %g: the row moves by %v, want lambda/(rho^4 + lambda) Delta_O = %v (Delta_O = %v)", tc.rho, tc.lambda, d, want, dO)
			}
		}
	})
}
