package completion

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/perturb"
)

// TestBiasSensitivityNeighbours changes one rating of a log (to values in,
// at the ends of, and far outside the public range) and checks that the
// two statistics the bias mode releases move by at most the sensitivities
// it declares, for several released means mu~, and that the worst case is
// reached (so a smaller declared sensitivity would fail).
func TestBiasSensitivityNeighbours(t *testing.T) {
	t.Parallel()
	st := privStore([]int{30, 20, 5}, 400, 1)
	o := baseOpts()
	meanL1, itemsL1, itemsL2 := BiasSensitivities(&o)
	r := rand.New(rand.NewPCG(4, 4))
	worstMean, worstItems := 0.0, 0.0
	for trial := 0; trial < 3000; trial++ {
		nb := *st
		nb.Val = append([]float64(nil), st.Val...)
		e := r.IntN(len(nb.Val))
		switch trial % 3 {
		case 0:
			nb.Val[e] = o.RatingMin - 2
			st.Val[e] = o.RatingMax + 9
		case 1:
			nb.Val[e] = o.RatingMin + r.Float64()*(o.RatingMax-o.RatingMin)
		default:
			nb.Val[e] = 50 * r.NormFloat64()
		}
		t1, c1 := biasTotal(st, &o)
		t2, c2 := biasTotal(&nb, &o)
		if d := math.Abs(t1 - t2); d > meanL1+1e-9 {
			t.Fatalf("trial %d: total moved by %v > %v", trial, d, meanL1)
		} else {
			worstMean = math.Max(worstMean, d)
		}
		for i := range c1 {
			if c1[i] != c2[i] {
				t.Fatalf("counts differ under the value-change relation")
			}
		}
		mu := o.RatingMin + r.Float64()*(o.RatingMax-o.RatingMin)
		s1, s2 := biasResidualSums(st, &o, mu), biasResidualSums(&nb, &o, mu)
		var l1, l2 float64
		for i := range s1 {
			d := math.Abs(s1[i] - s2[i])
			l1 += d
			l2 += d * d
		}
		if l1 > itemsL1+1e-9 || math.Sqrt(l2) > itemsL2+1e-9 {
			t.Fatalf("trial %d: item sums moved by l1 %v, l2 %v > %v, %v", trial, l1, math.Sqrt(l2), itemsL1, itemsL2)
		}
		worstItems = math.Max(worstItems, l1)
	}
	if worstMean < meanL1-1e-9 || worstItems < itemsL1-1e-9 {
		t.Errorf("worst cases %v, %v never reached the declared %v, %v: test too weak", worstMean, worstItems, meanL1, itemsL1)
	}
}

// TestPrivateBiasRelease checks what the bias mode releases: the mean and
// item biases, never user biases or rows (zero in the model), a report
// whose releases compose to the budget, and a refusal of the user unit on
// a store whose contributions are not bounded.
func TestPrivateBiasRelease(t *testing.T) {
	t.Parallel()
	st := privStore([]int{30, 20, 5}, 400, 2)
	for _, mech := range []string{perturb.MechLaplace, perturb.MechGaussian} {
		m := privModel(t, decomposition.CP, st.Dims, 2, true, 1, 1)
		o := baseOpts()
		o.Mechanism = mech
		rep, err := TrainPrivateBias(st, m, &o)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range m.Factors {
			for _, x := range f {
				if x != 0 {
					t.Fatalf("%s: factor entry %v released", mech, x)
				}
			}
		}
		for _, x := range m.Bias[0] {
			if x != 0 {
				t.Fatalf("%s: user bias %v released", mech, x)
			}
		}
		nonzero := 0
		for _, x := range m.Bias[1] {
			if x != 0 {
				nonzero++
			}
		}
		if nonzero == 0 {
			t.Fatalf("%s: no item bias", mech)
		}
		if rep.Mode != "bias" || len(rep.Releases) != 2 || rep.Epsilon > o.Epsilon*(1+1e-9) || len(rep.NotCovered) != 0 {
			t.Fatalf("%s: report %+v", mech, rep)
		}
		var sum float64
		for _, rel := range rep.Releases {
			sum += rel.Epsilon
		}
		if math.Abs(sum-o.Epsilon) > 1e-9 {
			t.Errorf("%s: releases spend epsilon %v, budget %v", mech, sum, o.Epsilon)
		}
		if m.ClampLo != o.RatingMin || m.ClampHi != o.RatingMax {
			t.Errorf("%s: clamp [%v, %v] not the public range", mech, m.ClampLo, m.ClampHi)
		}
	}
	o := baseOpts()
	o.Unit, o.MaxRatingsPerUser = UnitUser, 10
	m := privModel(t, decomposition.CP, st.Dims, 2, true, 1, 1)
	if _, err := TrainPrivateBias(st, m, &o); !errors.Is(err, ErrUserBound) {
		t.Errorf("user unit on an unbounded store: got %v, want ErrUserBound", err)
	}
	o = baseOpts()
	o.Epsilon = 0
	if _, err := TrainPrivateBias(st, m, &o); err == nil {
		t.Error("epsilon 0 accepted")
	}
}

// TestBiasNoiseScalesWithEpsilon: a larger epsilon gives item biases closer
// to the non-private shrunk means (averaged over seeds), so the noise is
// really calibrated to epsilon.
func TestBiasNoiseScalesWithEpsilon(t *testing.T) {
	t.Parallel()
	st := privStore([]int{40, 15, 3}, 500, 3)
	errAt := func(eps float64) float64 {
		var tot float64
		for seed := uint64(0); seed < 20; seed++ {
			lo := baseOpts()
			lo.Epsilon, lo.Noise = eps, perturb.SeededNoise(seed)
			hi := lo
			hi.Epsilon = 600
			a := privModel(t, decomposition.CP, st.Dims, 1, true, 1, 1)
			b := privModel(t, decomposition.CP, st.Dims, 1, true, 1, 1)
			if _, err := TrainPrivateBias(st, a, &lo); err != nil {
				t.Fatal(err)
			}
			if _, err := TrainPrivateBias(st, b, &hi); err != nil {
				t.Fatal(err)
			}
			for i := range a.Bias[1] {
				d := a.Bias[1][i] - b.Bias[1][i]
				tot += d * d
			}
		}
		return tot
	}
	if e1, e10 := errAt(0.2), errAt(20); !(e10 < e1) {
		t.Errorf("item-bias error at epsilon 20 (%v) not below epsilon 0.2 (%v)", e10, e1)
	}
}

// TestFoldInRMSEIgnoresUserRows: the billboard score never reads the
// model's user rows or biases.
func TestFoldInRMSEIgnoresUserRows(t *testing.T) {
	t.Parallel()
	st := privStore([]int{30, 20, 5}, 400, 5)
	test := privStore([]int{30, 20, 5}, 100, 6)
	m := privModel(t, decomposition.CP, st.Dims, 2, true, 1, 0.3)
	a, err := FoldInRMSE(m, st, test, decomposition.FoldPenalties{Row: 10})
	if err != nil {
		t.Fatal(err)
	}
	for i := range m.Bias[0] {
		m.Bias[0][i] = 100
	}
	for i := range m.Factors[0] {
		m.Factors[0][i] = -50
	}
	b, err := FoldInRMSE(m, st, test, decomposition.FoldPenalties{Row: 10})
	if err != nil {
		t.Fatal(err)
	}
	if a != b || math.IsNaN(a) {
		t.Errorf("fold-in RMSE %v changed to %v with the user side", a, b)
	}
}

// TestLaplacePosteriorNoise checks E[L | X + L = y] (X ~ N(0, s2), L ~
// Laplace(b)) against numerical integration of the posterior density on a
// grid (step 1e-3 over [-200, 200]), including far tails.
func TestLaplacePosteriorNoise(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ y, s2, b float64 }{{3, 4, 2}, {-10, 4, 2}, {0.5, 1, 5}, {40, 9, 3}, {0, 2, 1}, {-150, 1, 0.5}} {
		var num, den float64
		for i := -200000; i <= 200000; i++ {
			l := float64(i) * 1e-3
			w := math.Exp(-math.Abs(l)/c.b - (c.y-l)*(c.y-l)/(2*c.s2) + math.Abs(c.y)/c.b)
			num += w * l
			den += w
		}
		if got := laplacePosteriorNoise(c.y, c.s2, c.b); math.Abs(got-num/den) > 1e-4*(1+math.Abs(got)) {
			t.Errorf("%+v: %v, numerically %v", c, got, num/den)
		}
	}
}

// TestBillboardFoldFor: the fold-in penalties a report prescribes.
func TestBillboardFoldFor(t *testing.T) {
	for _, tc := range []struct {
		name string
		rep  *perturb.Report
		want decomposition.FoldPenalties
	}{
		{"no report", nil, decomposition.FoldPenalties{Row: BiasUserPenalty, Bucket: BiasBucketPenalty}},
		{"bias mode", &perturb.Report{}, decomposition.FoldPenalties{Row: BiasUserPenalty, Bucket: BiasBucketPenalty}},
		{"als, residual route", &perturb.Report{FoldPerRating: 0.2}, decomposition.FoldPenalties{Row: ALSPrivateFoldRow, PerRating: 0.2, Bucket: BiasBucketPenalty}},
		{"als, positions stage", &perturb.Report{FoldRow: ALSPositionsFoldRow}, decomposition.FoldPenalties{Row: ALSPositionsFoldRow, Bucket: BiasBucketPenalty}},
	} {
		if got := BillboardFoldFor(tc.rep); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
