package completion

import (
	"math"
	"strings"
	"testing"

	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/perturb"
)

// TestALSUserFallback: under the user unit, when the learnability rule
// fails on the noisy counts, the item steps' share of the budget goes to a
// second release of the item counts and sums (alsUserFallback): the
// released vector moves by at most its declared l2 sensitivity when any
// one user is removed (and a user with k ratings at the clip comes close
// to it), the whole budget is spent (the report's epsilon is the one
// asked for, not the bias releases' share), the release is in the report
// and its noise has the variance the report states; the report's
// item_counts_sd is the pooled counts' noise.
func TestALSUserFallback(t *testing.T) {
	t.Parallel()
	const k, R = 5, 3
	o := userOpts(k)
	o.Epsilon = 3
	raw := userStore([]int{40, 60}, 400, 12)
	for e := range raw.Val {
		raw.Val[e] = []float64{o.RatingMin, o.RatingMax}[e%2]
	}
	st, err := BoundForUnit(raw, &o)
	if err != nil {
		t.Fatal(err)
	}
	// Sensitivity on neighbouring logs, at several released means.
	_, l2 := alsFallbackWeight(&o)
	worst := 0.0
	for _, mu := range []float64{o.RatingMin, 3, o.RatingMax} {
		a := mustFallbackStats(t, st, &o, mu)
		for u := int32(0); u < int32(st.Dims[0]); u++ {
			b := mustFallbackStats(t, withoutUser(st, u), &o, mu)
			var d float64
			for i := range a {
				d += (a[i] - b[i]) * (a[i] - b[i])
			}
			if d = math.Sqrt(d); d > l2+1e-9 {
				t.Fatalf("mu %g, user %d: the release moved by %v > %v", mu, u, d, l2)
			}
			worst = math.Max(worst, d)
		}
	}
	if worst < 0.8*l2 {
		t.Errorf("worst change %v, far below the bound %v: the bound is loose or the statistic wrong", worst, l2)
	}
	nt := newNoiseTally()
	var rep *perturb.Report
	for seed := uint64(0); seed < 40; seed++ {
		oo := o
		oo.Noise = perturb.SeededNoise(seed)
		got := map[string][][]float64{}
		oo.probe = probeInto(got)
		m := privModel(t, decomposition.CP, []int{1, st.Dims[1]}, R, true, 1, 1)
		r, err := TrainPrivateALS(st, m, &oo)
		if err != nil {
			t.Fatal(err)
		}
		if len(got[alsFallbackWhat]) != 1 {
			t.Fatalf("seed %d: %d fallback releases; notes %q", seed, len(got[alsFallbackWhat]), r.Notes)
		}
		noisy := got[alsFallbackWhat][0]
		if !strings.Contains(strings.Join(r.Notes, "\n"), "second release of the item counts and sums") {
			t.Fatalf("seed %d: the report does not say the steps' share was spent on the fallback: %q", seed, r.Notes)
		}
		if r.Epsilon > oo.Epsilon*(1+1e-9) || r.Epsilon < 0.98*oo.Epsilon {
			t.Fatalf("seed %d: epsilon spent %v, budget %v: the steps' share is not spent", seed, r.Epsilon, oo.Epsilon)
		}
		// No learnt factor: the item rows are the free columns and the curve columns.
		checkFreeColumns(t, m, &oo, r.ItemCounts, 0, true)
		// The counts' noise in the report: the two releases pooled, so
		// below the first release's.
		var first float64
		for _, rel := range r.Releases {
			if rel.What == "per-item rating counts" {
				first = rel.Scale
			}
		}
		if !(r.ItemCountsSD > 0 && r.ItemCountsSD < first) {
			t.Fatalf("seed %d: item_counts_sd %v, the first release's count noise %v", seed, r.ItemCountsSD, first)
		}
		nt.add(t, alsFallbackWhat, noisy, mustFallbackStats(t, st, &oo, m.Mean))
		rep = r
	}
	nt.check(t, "als user fallback", rep, alsFallbackWhat)
}

// TestItemCountsSD: the bias mode's report states the noise of the item
// counts it carries: the counts release's sigma at the user unit, 0 at the
// entry unit (public counts).
func TestItemCountsSD(t *testing.T) {
	t.Parallel()
	o := userOpts(5)
	st, err := BoundForUnit(userStore([]int{30, 20}, 300, 13), &o)
	if err != nil {
		t.Fatal(err)
	}
	m := privModel(t, decomposition.CP, []int{1, st.Dims[1]}, 1, true, 1, 1)
	rep, err := TrainPrivateBias(st, m, &o)
	if err != nil {
		t.Fatal(err)
	}
	var want float64
	for _, rel := range rep.Releases {
		if rel.What == "per-item rating counts" {
			want = rel.Scale
		}
	}
	if want == 0 || math.Abs(rep.ItemCountsSD-want) > 1e-12*want {
		t.Fatalf("user unit: item_counts_sd %v, the counts release's sigma %v", rep.ItemCountsSD, want)
	}
	e := baseOpts()
	es := privStore([]int{30, 20}, 300, 13)
	em := privModel(t, decomposition.CP, es.Dims, 1, true, 1, 1)
	erep, err := TrainPrivateBias(es, em, &e)
	if err != nil {
		t.Fatal(err)
	}
	if erep.ItemCountsSD != 0 || len(erep.ItemCounts) == 0 {
		t.Fatalf("entry unit: item_counts_sd %v with %d counts", erep.ItemCountsSD, len(erep.ItemCounts))
	}
}
