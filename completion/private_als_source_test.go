package completion

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/perturb"
)

// TestPrivateALSFromStore: TrainPrivateALSFrom over the in-memory store
// source is TrainPrivateALS at entry level, bit for bit (model and
// report), on the residual route (epsilon 10, 100) and its fallback
// (epsilon 1); PlanALSInput says which.
func TestPrivateALSFromStore(t *testing.T) {
	st := privStore([]int{100, 60}, 4000, 1)
	for _, tc := range []struct {
		eps      float64
		fallback bool
	}{{1, true}, {10, false}, {100, false}} {
		o := &PrivateOptions{Epsilon: tc.eps, Delta: 1e-5, RatingMin: 1, RatingMax: 5, Noise: perturb.SeededNoise(3), ALSPositions: ALSPositionsOff}
		plan, err := PlanALSInput(o, 3, itemCounts(st))
		if err != nil {
			t.Fatal(err)
		}
		if plan.Fallback != tc.fallback {
			t.Fatalf("epsilon %g: fallback %v, want %v (share %v)", tc.eps, plan.Fallback, tc.fallback, plan.FallbackShare)
		}
		// Below epsilon 3.16 the residuals are released at half the clip,
		// a quarter of the noise variance, and the fallback rule is
		// judged at the unhalved clip's.
		ratio := 1.0
		if tc.eps < math.Sqrt(10) {
			ratio = 4
		}
		if math.Abs(plan.FallbackNoiseVar/plan.NoiseVar-ratio) > 1e-9 || plan.Clip != alsInputClip(o) {
			t.Fatalf("epsilon %g: noise variance %v, fallback's %v (want ratio %v), clip %v", tc.eps, plan.NoiseVar, plan.FallbackNoiseVar, ratio, plan.Clip)
		}
		want, err := decomposition.NewModel(decomposition.CP, st.Dims, []int{3}, true)
		if err != nil {
			t.Fatal(err)
		}
		wrep, err := TrainPrivateALS(st, want, o)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decomposition.NewModel(decomposition.CP, st.Dims, []int{3}, true)
		if err != nil {
			t.Fatal(err)
		}
		grep, err := TrainPrivateALSFrom(storeALSSource{storeBiasSource{st}}, got, o)
		if err != nil {
			t.Fatal(err)
		}
		a, _ := json.Marshal(wrep)
		b, _ := json.Marshal(grep)
		if string(a) != string(b) {
			t.Fatalf("epsilon %g: reports differ:\n%s\n%s", tc.eps, a, b)
		}
		if got.Mean != want.Mean || !slices.Equal(got.Bias[1], want.Bias[1]) || !slices.Equal(got.Factors[1], want.Factors[1]) {
			t.Fatalf("epsilon %g: models differ", tc.eps)
		}
	}
	if _, err := TrainPrivateALSFrom(storeALSSource{storeBiasSource{st}}, nil, &PrivateOptions{Epsilon: 1, Delta: 1e-5, RatingMin: 1, RatingMax: 5, Unit: UnitUser, MaxRatingsPerUser: 5}); err == nil {
		t.Fatal("user unit from a source: no error")
	}
}

// TestALSTermsRuleHist: the terms rule from the histogram of the user
// counts is the quantile of the sorted counts.
func TestALSTermsRuleHist(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 200; trial++ {
		n := r.IntN(50)
		var ns []int
		h := map[int]int{}
		for range n {
			c := 1 + r.IntN(60)
			if r.IntN(4) == 0 {
				c = r.IntN(3) * 25
			}
			if c > 0 {
				ns = append(ns, c)
			}
			h[c]++
		}
		want := ALSPrivateMinTerms
		if len(ns) > 0 {
			slices.Sort(ns)
			want = max(ns[min(len(ns)-1, int(ALSPrivateTermsQuantile*float64(len(ns))))], ALSPrivateMinTerms)
		}
		if got := alsTermsRuleHist(h); got != want {
			t.Fatalf("counts %v: rule %d, sorted quantile %d", ns, got, want)
		}
	}
}
