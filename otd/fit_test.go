package otd

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/gonum/mat"
)

func TestFitRecovers(t *testing.T) {
	t.Parallel()
	stm, err := SyntheticSTM(10, 5, 20000, 20, 1, nil, rand.NewPCG(1, 1))
	if err != nil {
		t.Fatal(err)
	}
	lda, err := SyntheticLDA(60, 4, 1, 4000, 50, 0.3, rand.NewPCG(2, 2))
	if err != nil {
		t.Fatal(err)
	}
	mog, _, err := SyntheticMoG(10, 3, 20000, 0.01, 0.7, rand.NewPCG(3, 3))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		syn  *Synthetic
		opts FitOptions
		// maxErr is about 3x the e_comp measured at these sizes (0.01-0.03);
		// random vectors give 0.3-0.5.
		maxErr float64
		raw    bool
	}{
		{"stm", stm, FitOptions{Model: "stm", K: 5}, 0.06, false},
		{"stm first-three", stm, FitOptions{Model: "stm", K: 5, Estimator: FirstThree}, 0.15, false},
		{"lda", lda, FitOptions{Model: "lda", K: 4, Alpha0: 1}, 0.06, false},
		{"mog", mog, FitOptions{Model: "mog", K: 3, Sigma2: 0.01 / 1}, 0.1, true},
	}
	for _, tc := range cases {
		res, err := Fit(&tc.syn.Input, tc.opts, rand.NewPCG(5, 5))
		if err != nil {
			t.Fatal(tc.name, err)
		}
		var e float64
		if tc.raw {
			e = ECompRaw(tc.syn.A, res.A)
		} else {
			e = EComp(tc.syn.A, res.A)
		}
		t.Logf("%s: e_comp %.4f, weights %.3f", tc.name, e, res.Weights)
		if e > tc.maxErr {
			t.Errorf("%s: e_comp %.4f > %.2f", tc.name, e, tc.maxErr)
		}
		if res.Report == nil || res.Report.Private() {
			t.Errorf("%s: non-private result must carry perturb.NonPrivate()", tc.name)
		}
	}
}

func TestFitErrors(t *testing.T) {
	t.Parallel()
	stm, _ := SyntheticSTM(5, 2, 50, 5, 1, nil, rand.NewPCG(1, 1))
	for _, tc := range []struct {
		opts FitOptions
		want string
	}{
		{FitOptions{Model: "stm", K: 6}, "K = 6"},
		{FitOptions{Model: "nope", K: 2}, "unknown model"},
		{FitOptions{Model: "lda", K: 2}, "alpha0"},
		{FitOptions{Model: "mog", K: 2}, "numeric rows"},
	} {
		_, err := Fit(&stm.Input, tc.opts, rand.NewPCG(1, 1))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want error containing %q", tc.opts, err, tc.want)
		}
	}
}

// The whitened path with randomized implicit whitening (large D) must agree
// with dense whitening.
func TestImplicitWhitening(t *testing.T) {
	t.Parallel()
	syn, err := SyntheticLDA(DenseWhitenMax+100, 3, 1, 1500, 60, 0.05, rand.NewPCG(7, 7))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	res, err := Fit(&syn.Input, FitOptions{Model: "lda", K: 3, Alpha0: 1}, rand.NewPCG(1, 1))
	if err != nil {
		t.Fatal(err)
	}
	e := EComp(syn.A, res.A)
	t.Logf("D=%d implicit whitening: e_comp %.4f in %v", DenseWhitenMax+100, e, time.Since(start))
	if e > 0.1 {
		t.Errorf("e_comp %.4f", e)
	}
}

func TestWhitenRankError(t *testing.T) {
	t.Parallel()
	// rank-1 M2 cannot be whitened to 2 dimensions.
	M2 := mat.NewSymDense(3, []float64{1, 1, 0, 1, 1, 0, 0, 0, 0})
	if _, err := Whiten(M2, 2); err == nil || !strings.Contains(err.Error(), "rank below 2") {
		t.Fatalf("got %v", err)
	}
	W, err := Whiten(M2, 1)
	if err != nil {
		t.Fatal(err)
	}
	var g mat.Dense
	g.Mul(W.T(), M2)
	var h mat.Dense
	h.Mul(&g, W)
	if math.Abs(h.At(0, 0)-1) > 1e-12 {
		t.Fatalf("W^T M2 W = %v", h.At(0, 0))
	}
}

func TestFitDeterministic(t *testing.T) {
	t.Parallel()
	syn, _ := SyntheticLDA(DenseWhitenMax+10, 3, 1, 300, 30, 0.1, rand.NewPCG(3, 1))
	a, err := Fit(&syn.Input, FitOptions{Model: "lda", K: 3, Alpha0: 1}, rand.NewPCG(8, 8))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Fit(&syn.Input, FitOptions{Model: "lda", K: 3, Alpha0: 1}, rand.NewPCG(8, 8))
	if !mat.Equal(a.A, b.A) || a.Weights[0] != b.Weights[0] {
		t.Fatal("same seed, different fits")
	}
}

// Randomized implicit whitening must whiten the dense M2 on its top-K
// subspace: W^T M2 W = I and the same column space as dense Whiten.
func TestWhitenImplicitMatchesDense(t *testing.T) {
	t.Parallel()
	syn, _ := SyntheticLDA(200, 4, 1, 2000, 40, 0.1, rand.NewPCG(5, 1))
	c := syn.Input.Corpus
	M2 := secondMoment(c, 1)
	Wi, err := whitenImplicit(c, 1, 4, rand.NewPCG(1, 1), nil)
	if err != nil {
		t.Fatal(err)
	}
	Wd, err := Whiten(M2, 4)
	if err != nil {
		t.Fatal(err)
	}
	var a, g mat.Dense
	a.Mul(Wi.T(), M2)
	g.Mul(&a, Wi)
	for i := 0; i < 4; i++ {
		for j := 0; j < 4; j++ {
			want := 0.0
			if i == j {
				want = 1
			}
			if math.Abs(g.At(i, j)-want) > 1e-6 {
				t.Fatalf("W^T M2 W (%d,%d) = %v", i, j, g.At(i, j))
			}
		}
	}
	// Same whitened space: Wd^T M2 Wi is orthogonal (columns may differ
	// by sign).
	var b, o, oo mat.Dense
	b.Mul(Wd.T(), M2)
	o.Mul(&b, Wi)
	oo.Mul(o.T(), &o)
	for i := 0; i < 4; i++ {
		if math.Abs(oo.At(i, i)-1) > 1e-6 {
			t.Fatalf("whitened spaces differ: %v", mat.Formatted(&oo))
		}
	}
}

// TestNormalizeWeights: estimated weights become a distribution
// (non-positive and non-finite ones 0 and flagged), and the warning fires
// exactly when the estimates are outside (0, 1] or their sum is more than
// 1/(2 sqrt(K)) from 1 (issue 15: the tour's private mixture printed
// weights 0.06, 6.2 and 0.69 without one).
func TestNormalizeWeights(t *testing.T) {
	w, zero := NormalizeWeights([]float64{0.06, 6.2, 0.69})
	if s := w[0] + w[1] + w[2]; math.Abs(s-1) > 1e-15 || math.Abs(w[1]-6.2/6.95) > 1e-15 || zero[0] || zero[1] || zero[2] {
		t.Errorf("weights %v (sum %v), zero %v", w, s, zero)
	}
	w, zero = NormalizeWeights([]float64{0.5, -0.1, math.NaN(), math.Inf(1), 0.5})
	if w[0] != 0.5 || w[4] != 0.5 || w[1] != 0 || w[2] != 0 || w[3] != 0 || zero[0] || !zero[1] || !zero[2] || !zero[3] {
		t.Errorf("weights %v, zero %v", w, zero)
	}
	if w, zero := NormalizeWeights([]float64{-1, 0}); w[0] != 0 || w[1] != 0 || !zero[0] || !zero[1] {
		t.Errorf("no positive weight: %v, %v", w, zero)
	}
	for _, tc := range []struct {
		raw  []float64
		warn bool
	}{
		{[]float64{0.06, 6.2, 0.69}, true},                     // the tour's
		{[]float64{1.0 / 3, 1.0 / 3, 1.0 / 3}, false},          // exact
		{[]float64{0.33, 0.331, 0.3312}, false},                // the non-private fit
		{[]float64{0.2, 0.25, 0.3}, false},                     // sum 0.75: 0.25 < 1/(2 sqrt 3) = 0.289
		{[]float64{0.1, 0.15, 0.45}, true},                     // sum 0.7
		{[]float64{0.5, 0.6, -0.1}, true},                      // a negative weight
		{[]float64{1.2, 0.1}, true},                            // a weight above 1
		{[]float64{0.3, 0.3, 0.2, 0.2, 0.1, 0.1, 0.05}, true},  // sum 1.25, K = 7: 0.25 > 1/(2 sqrt 7) = 0.189
		{[]float64{0.2, 0.2, 0.2, 0.2, 0.1, 0.1, 0.05}, false}, // sum 1.05
	} {
		if got := WeightNoiseWarning(tc.raw) != ""; got != tc.warn {
			t.Errorf("%v: warning %v, want %v", tc.raw, got, tc.warn)
		}
	}
}
