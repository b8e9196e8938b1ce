package completion

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/perturb"
)

// clusteredClicks is a planted click log: U users in C clusters, each
// cluster clicking mostly its own block of the I items (and popular
// items across blocks); each user has n events, one per item, split into
// training and validation events (one in five to validation).
func clusteredClicks(U, I, C, n int, seed uint64) (tr, va *data.Store) {
	r := rand.New(rand.NewPCG(seed, 5))
	tr = &data.Store{Dims: []int{U, I}, Idx: [][]int32{nil, nil}}
	va = &data.Store{Dims: []int{U, I}, Idx: [][]int32{nil, nil}}
	block := I / C
	for u := 0; u < U; u++ {
		c := u % C
		seen := map[int]bool{}
		for len(seen) < n {
			var j int
			if r.Float64() < 0.8 {
				// Within the block, skewed to its first items.
				j = c*block + int(float64(block)*math.Pow(r.Float64(), 2))
			} else {
				j = int(float64(I) * math.Pow(r.Float64(), 3))
			}
			if seen[j] {
				continue
			}
			seen[j] = true
			dst := tr
			if len(seen)%5 == 0 {
				dst = va
			}
			dst.Idx[0] = append(dst.Idx[0], int32(u))
			dst.Idx[1] = append(dst.Idx[1], int32(j))
			dst.Val = append(dst.Val, 5)
		}
	}
	return tr, va
}

func privateImplicitOpts(eps float64, k int) *PrivateOptions {
	return &PrivateOptions{Epsilon: eps, Delta: 1e-5, Unit: UnitUser, MaxRatingsPerUser: k, Noise: perturb.SeededNoise(3)}
}

// TestPrivateImplicitSensitivity: removing any one user from the log
// moves the released statistic of an item step (before noise) and the
// item counts by at most the l2 sensitivities sqrt(2k) and sqrt(k) the
// noise is calibrated to, for a fixed released Y (the other users' rows
// depend on the data only through it), on a log with exactly k items a
// user and on one whose odd users have 2k items (weighted,
// implicitUserWeights) and even users 8, below k (weight 1).
func TestPrivateImplicitSensitivity(t *testing.T) {
	for _, n := range []int{15, 30} {
		implicitSensitivity(t, n)
	}
}

func implicitSensitivity(t *testing.T, n int) {
	const R, k = 4, 12
	tr, _ := clusteredClicks(60, 40, 3, n, 1) // n = 15: 12 training events a user, exactly k items
	if n > 15 {
		// Mixed activity: even users keep their first 8 events.
		var keep []int
		seen := map[int32]int{}
		for e, u := range tr.Idx[0] {
			if u%2 == 1 || seen[u] < 8 {
				keep = append(keep, e)
				seen[u]++
			}
		}
		tr = tr.Subset(keep)
	}
	cfg := PrivateImplicitSettings(&ImplicitSettings{Threads: 1})
	full, err := newImplicitProblem(tr, &cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(9, 9))
	Y := make([]float64, 40*R)
	for i := range Y {
		Y[i] = r.NormFloat64()
	}
	stats := func(pr *implicitProblem) []float64 {
		X := make([]float64, 60*R)
		s := make([]float64, 40*R+R*(R+1)/2)
		uw := implicitUserWeights(pr, k)
		implicitStepStats(pr, uw, X, Y, R, k, s)
		return append(s, pr.itemCounts(uw)...)
	}
	base := stats(full)
	T := 40*R + R*(R+1)/2
	worst, worstC := 0.0, 0.0
	for u := 0; u < 60; u++ {
		var keep []int
		for e, v := range tr.Idx[0] {
			if int(v) != u {
				keep = append(keep, e)
			}
		}
		pr, err := newImplicitProblem(tr.Subset(keep), &cfg)
		if err != nil {
			t.Fatal(err)
		}
		d, dc := 0.0, 0.0
		for i, v := range stats(pr) {
			if i < T {
				d += (v - base[i]) * (v - base[i])
			} else {
				dc += (v - base[i]) * (v - base[i])
			}
		}
		worst, worstC = math.Max(worst, math.Sqrt(d)), math.Max(worstC, math.Sqrt(dc))
	}
	bound := math.Sqrt(2 * k)
	if worst > bound*(1+1e-12) || worstC > math.Sqrt(k)*(1+1e-12) {
		t.Fatalf("%d events a user: removing one user moved the step statistic by %.4g (sensitivity %.4g) and the counts by %.4g (sensitivity %.4g)", n, worst, bound, worstC, math.Sqrt(k))
	}
	// Unit-norm rows in k sums each (or m_u sums of weight sqrt(k/m_u)):
	// the bounds are nearly attained.
	if worst < 0.6*bound || worstC < math.Sqrt(k)*(1-1e-9) {
		t.Errorf("%d events a user: largest changes %.4g and %.4g are far below the bounds %.4g and %.4g: the statistics are not the ones calibrated", n, worst, worstC, bound, math.Sqrt(k))
	}
}

// TestPrivateImplicitNoise: the released counts and step statistics
// carry Gaussian noise of the reported sigma, centred on the statistic
// computed from the data (a chi-square check of the variance).
func TestPrivateImplicitNoise(t *testing.T) {
	const R, k = 6, 20
	tr, _ := clusteredClicks(400, 120, 4, k+15, 2) // 28 training items a user, above k: weighted
	cfg := PrivateImplicitSettings(&ImplicitSettings{Threads: 1})
	pr, err := newImplicitProblem(tr, &cfg)
	if err != nil {
		t.Fatal(err)
	}
	// eps 8 runs the long run, 3 the short one (its last step at less
	// noise), 0.2 the fallback.
	for _, c := range []struct {
		eps   float64
		steps int // 0: the fallback (the counts twice)
	}{{8, ImplicitPrivateMaxSteps}, {3, ImplicitPrivateSteps}, {0.2, 0}} {
		o := privateImplicitOpts(c.eps, k)
		type call struct {
			what string
			res  []float64
		}
		var calls []call
		o.probe = &releaseProbe{seen: func(what string, noisy, public []float64) {
			exact := make([]float64, len(noisy))
			uw := implicitUserWeights(pr, k)
			if what == implicitCountsWhat || what == implicitCounts2What {
				copy(exact, pr.itemCounts(uw))
			} else {
				X := make([]float64, 400*R)
				implicitStepStats(pr, uw, X, slices.Clone(public), R, k, exact)
			}
			cl := call{what: what}
			for i, v := range noisy {
				cl.res = append(cl.res, v-exact[i])
			}
			calls = append(calls, cl)
		}}
		m, _ := decomposition.NewModel(decomposition.CP, tr.Dims, []int{R}, false)
		rep, err := TrainPrivateImplicit(tr, m, &cfg, o)
		if err != nil {
			t.Fatal(err)
		}
		steps := 0
		for _, rel := range rep.Releases {
			if rel.What == implicitStepsWhat {
				steps += rel.Count
			}
		}
		if steps != c.steps || ImplicitStepsReleased(rep) != c.steps {
			t.Fatalf("eps %g: %d steps (ImplicitStepsReleased %d), want %d", c.eps, steps, ImplicitStepsReleased(rep), c.steps)
		}
		// Each release of the report, in order, against the probe's
		// calls (a release repeated Count times is Count calls).
		next := 0
		for _, rel := range rep.Releases {
			var res []float64
			for range rel.Count {
				if next >= len(calls) || calls[next].what != rel.What {
					t.Fatalf("eps %g: release %q not seen in order", c.eps, rel.What)
				}
				res = append(res, calls[next].res...)
				next++
			}
			var s, s2 float64
			for _, v := range res {
				s += v
				s2 += v * v
			}
			n := float64(len(res))
			mean, vr := s/n, s2/n
			want := rel.Scale * rel.Scale
			// The variance estimate of n normals has relative sd sqrt(2/n).
			if math.Abs(vr/want-1) > 5*math.Sqrt(2/n)+0.01 || math.Abs(mean) > 5*rel.Scale/math.Sqrt(n) {
				t.Errorf("eps %g, %s: %d noise values with mean %.4g and variance %.4g, want 0 and %.4g", c.eps, rel.What, len(res), mean, vr, want)
			}
		}
		if next != len(calls) {
			t.Errorf("eps %g: %d noisy releases, the report lists %d", c.eps, len(calls), next)
		}
		if rep.Epsilon > c.eps*(1+1e-9) || rep.Epsilon < c.eps*0.99 || rep.Delta > 1e-5 {
			t.Errorf("eps %g: report (%g, %g), want the budget (%g, 1e-5)", c.eps, rep.Epsilon, rep.Delta, c.eps)
		}
	}
}

// TestPrivateImplicitLists: on a planted click log the private model's
// lists approach non-private weighted ALS's with little noise, beat
// most-popular at epsilon 10, and at a tiny epsilon fall back to the
// private most-popular list (as the report says).
func TestPrivateImplicitLists(t *testing.T) {
	const R, k = 8, 40
	tr, va := clusteredClicks(3000, 200, 4, 30, 4)
	s := PrivateImplicitSettings(&ImplicitSettings{Threads: 2})
	np, _ := decomposition.NewModel(decomposition.CP, tr.Dims, []int{R}, false)
	ns := s // the non-private reference sweeps to convergence
	ns.Iterations = DefaultImplicitIterations
	if _, err := TrainImplicit(tr, np, &ns, rand.NewPCG(1, 1), nil); err != nil {
		t.Fatal(err)
	}
	pop := make([]float64, 200)
	for _, j := range tr.Idx[1] {
		pop[j]++
	}
	// Relevance: every validation event (values are 5).
	ndNP := implicitListNDCG(np.Factors[1], R, tr, va, &s, 1)
	ndPop := implicitListNDCG(nil, 0, tr, va, &s, 1, pop...)
	got := map[float64]float64{}
	steps := map[int]int{}
	for _, eps := range []float64{0.3, 0.7, 10, 500} {
		m, _ := decomposition.NewModel(decomposition.CP, tr.Dims, []int{R}, false)
		rep, err := TrainPrivateImplicit(tr, m, &s, privateImplicitOpts(eps, k))
		if err != nil {
			t.Fatal(err)
		}
		if slices.ContainsFunc(m.Factors[0], func(v float64) bool { return v != 0 }) {
			t.Fatalf("eps %g: user rows released", eps)
		}
		// Every branch (fallback, 2 or 4 steps) has the planned privacy
		// loss: the report's epsilon is the budget.
		if rep.Epsilon > eps*(1+1e-9) || rep.Epsilon < 0.99*eps {
			t.Errorf("eps %g: report epsilon %g", eps, rep.Epsilon)
		}
		n := 0
		for _, r := range rep.Releases {
			if r.What == implicitStepsWhat {
				n += r.Count
			}
		}
		if n > 0 {
			steps[n]++
		}
		got[eps] = implicitListNDCG(m.Factors[1], R, tr, va, &s, 1)
		fallback := slices.ContainsFunc(rep.Notes, func(n string) bool { return strings.Contains(n, "most-popular list") })
		if fallback != (eps < 0.5) {
			t.Errorf("eps %g: fallback to most-popular %v", eps, fallback)
		}
		t.Logf("eps %g: NDCG@10 %.4f (non-private %.4f, most-popular %.4f)", eps, got[eps], ndNP, ndPop)
	}
	if steps[ImplicitPrivateSteps]+steps[ImplicitPrivateMaxSteps] != 3 || steps[ImplicitPrivateMaxSteps] < 2 {
		t.Errorf("step counts of the learnt runs %v: want learnt rows at epsilon 0.7, 10 and 500, %d steps at 10 and 500", steps, ImplicitPrivateMaxSteps)
	}
	if ndNP < 1.5*ndPop {
		t.Fatalf("planted log: non-private %.4f vs most-popular %.4f: the log does not test learning", ndNP, ndPop)
	}
	if got[500] < 0.9*ndNP {
		t.Errorf("eps 500: %.4f, below 0.9 x non-private %.4f: the private steps do not converge", got[500], ndNP)
	}
	if got[10] < 1.2*ndPop {
		t.Errorf("eps 10: %.4f, not 1.2 x most-popular %.4f", got[10], ndPop)
	}
	if got[0.3] < 0.8*ndPop {
		t.Errorf("eps 0.3: %.4f, the fallback is below 0.8 x most-popular %.4f", got[0.3], ndPop)
	}
}

// TestPrivateImplicitRejects: the entry unit, a zero delta, basic
// accounting and a model with biases are refused; users above k are
// weighted, not refused; the same seeded noise gives the same model.
func TestPrivateImplicitRejects(t *testing.T) {
	tr, _ := clusteredClicks(50, 30, 2, 10, 5)
	s := &ImplicitSettings{Threads: 1}
	newM := func() *decomposition.Model {
		m, _ := decomposition.NewModel(decomposition.CP, tr.Dims, []int{3}, false)
		return m
	}
	o := privateImplicitOpts(1, 10)
	o.Unit = UnitEntry
	if _, err := TrainPrivateImplicit(tr, newM(), s, o); !errors.Is(err, ErrImplicitUnit) {
		t.Errorf("entry unit: %v", err)
	}
	// Users above k are weighted, not refused: the released counts are
	// centred on every item's sum of sqrt(k/m_u) (m_u = 8 training events
	// a user here, k = 5).
	{
		o := privateImplicitOpts(1, 5)
		var got []float64
		o.probe = &releaseProbe{seen: func(what string, noisy, _ []float64) {
			if what == implicitCountsWhat {
				got = slices.Clone(noisy)
			}
		}}
		if _, err := TrainPrivateImplicit(tr, newM(), s, o); err != nil {
			t.Fatalf("users above k: %v", err)
		}
		cfg := PrivateImplicitSettings(s)
		pr, err := newImplicitProblem(tr, &cfg)
		if err != nil {
			t.Fatal(err)
		}
		w := math.Sqrt(5.0 / 8)
		if uw := implicitUserWeights(pr, 5); uw[0] != w || uw[len(uw)-1] != w {
			t.Fatalf("weights %v, want sqrt(5/8) = %v", uw[:3], w)
		}
		if len(got) != tr.Dims[1] {
			t.Fatalf("no count release seen (%d values)", len(got))
		}
	}
	o = privateImplicitOpts(1, 10)
	o.Delta = 0
	if _, err := TrainPrivateImplicit(tr, newM(), s, o); !errors.Is(err, perturb.ErrDelta) {
		t.Errorf("delta 0: %v", err)
	}
	o = privateImplicitOpts(1, 10)
	o.Accounting = perturb.Basic
	if _, err := TrainPrivateImplicit(tr, newM(), s, o); err == nil || !strings.Contains(err.Error(), "exact for the Gaussian mechanism") {
		t.Errorf("basic accounting: %v", err)
	}
	mb, _ := decomposition.NewModel(decomposition.CP, tr.Dims, []int{3}, true)
	if _, err := TrainPrivateImplicit(tr, mb, s, privateImplicitOpts(1, 10)); err == nil {
		t.Error("a model with biases was accepted")
	}
	a, b := newM(), newM()
	for _, m := range []*decomposition.Model{a, b} {
		if _, err := TrainPrivateImplicit(tr, m, s, privateImplicitOpts(50, 10)); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(a.Factors[1], b.Factors[1]) {
		t.Error("the same seeded noise gave different item rows")
	}
}
