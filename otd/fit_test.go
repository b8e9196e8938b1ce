package otd

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"
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
