package completion

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/perturb"
)

// boundedDense is denseStore bounded for the user unit at k.
func boundedDense(t *testing.T, st *data.Store, k int) (*data.Store, PrivateOptions) {
	t.Helper()
	o := userOpts(k)
	b, err := BoundForUnit(st, &o)
	if err != nil {
		t.Fatal(err)
	}
	return b, o
}

// covUserVector is the user unit's covariance release before its noise,
// (M/c^2, W) over all of st's items, at the residuals about wm.
func covUserVector(st *data.Store, o *PrivateOptions, wm *decomposition.Model, c float64) []float64 {
	I := st.Dims[1]
	cp := &covPlan{items: make([]int, I), m: I}
	for i := range cp.items {
		cp.items[i] = i
	}
	z := slices.Clone(st.Val)
	clippedResiduals(z, st, o, wm, c)
	M, W := covMoments(st, alsUsers(st), cp, z, covWeightUser)
	out := make([]float64, 0, 2*len(M))
	for _, x := range M {
		out = append(out, x/(c*c))
	}
	return append(out, W...)
}

// TestCovUserSensitivity removes each user of a bounded log in turn: the
// user unit's covariance release (M/c^2, W) moves by exactly the user's
// own term, sqrt(((sum z^2)^2 + sum z^4)/(d (d + 1) c^4) + 1) with a_u =
// sqrt(2/(d (d + 1))), never above the declared sqrt(2), and a user whose
// residuals sit at the clip reaches sqrt(2) (a bound that grew with d, or
// a larger weight, would fail).
func TestCovUserSensitivity(t *testing.T) {
	t.Parallel()
	raw := denseStore(150, 20, 2, 20, 2, 0, 31)
	// User 0 rates one item at the bottom of the range: with the clip at
	// 0.5 its residual sits at -c.
	raw = withoutUser(raw, 0)
	raw.Idx[0] = append(raw.Idx[0], 0)
	raw.Idx[1] = append(raw.Idx[1], 4)
	raw.Val = append(raw.Val, 1)
	st, o := boundedDense(t, raw, 12)
	wm := privModel(t, decomposition.CP, st.Dims, 1, true, 1, 1)
	wm.Mean = 3
	r := rand.New(rand.NewPCG(5, 5))
	for i := range wm.Bias[1] {
		wm.Bias[1][i] = 0.3 * r.NormFloat64()
	}
	const c = 0.5
	full := covUserVector(st, &o, wm, c)
	by := alsUsers(st)
	worst := 0.0
	for u, es := range by {
		if len(es) == 0 {
			continue
		}
		v := covUserVector(withoutUser(st, int32(u)), &o, wm, c)
		var d float64
		for k := range v {
			d += (full[k] - v[k]) * (full[k] - v[k])
		}
		d = math.Sqrt(d)
		var s2, s4 float64
		for _, e := range es {
			z := math.Max(-c, math.Min(c, clampValue(st.Val[e], o.RatingMin, o.RatingMax)-wm.Mean-wm.Bias[1][st.Idx[1][e]]))
			s2 += z * z
			s4 += z * z * z * z
		}
		n := float64(len(es))
		want := math.Sqrt((s2*s2+s4)/(n*(n+1)*c*c*c*c) + 1)
		if math.Abs(d-want) > 1e-9 || d > math.Sqrt2+1e-12 {
			t.Fatalf("user %d with %d items: the release moved by %v, want %v <= sqrt(2)", u, len(es), d, want)
		}
		worst = math.Max(worst, d)
	}
	if worst < math.Sqrt2-1e-12 {
		t.Fatalf("worst move %v: the one-item user at the clip should reach sqrt(2)", worst)
	}
}

// TestCovUserGates: the user unit's gates read released counts and users
// and public values only, and each says why it fails.
func TestCovUserGates(t *testing.T) {
	t.Parallel()
	fit := func(I int, n, users float64) *biasFit {
		f := &biasFit{sums: make([]float64, I), counts: make([]float64, I), noisyUsers: users, noisyRatings: float64(I) * n}
		for i := range f.counts {
			f.counts[i] = n
		}
		return f
	}
	o := userOpts(100)
	p := newALSPrivateParams(&o)
	for _, tc := range []struct {
		name string
		bias *biasFit
		want string // "" : passes
	}{
		{"dense", fit(100, 3600, 5000), ""},
		{"sparse", fit(800, 40, 5000), "density gate"},
		{"items", fit(ALSCovMaxItems+1, 4000, 5000), "ALSCovMaxItems"},
		{"users", fit(100, 5e6, 5e6), "ALSCovMaxPairs"},
		{"null", fit(1000, 5, 6e4), "ALSCovUserMaxNull"},
		{"one item", fit(1, 3600, 5000), "needs 2"},
		{"selected items", fit(100, 3600, 5000), "selected privately"},
	} {
		o := o
		if tc.name == "selected items" {
			o.Scalars = &data.Store{}
		}
		dens, wbar, _, why := covUserGates(&o, p, tc.bias)
		if (why == "") != (tc.want == "") || !strings.Contains(why, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, why, tc.want)
		}
		if tc.name == "dense" {
			// 100 items of 3,600 each over 5,000 users: sum_{i<j} n_i n_j / N
			// over the pairs is 3600^2/5000; 72 items a user, each with
			// off-diagonal weight a_72 72 71/2 over the pairs.
			d := 72.0
			if math.Abs(dens-3600*3600/5000.0) > 1e-9 || math.Abs(wbar-5000*math.Sqrt(2/(d*(d+1)))*d*(d-1)/2/4950) > 1e-9 {
				t.Errorf("dense: density %v, mean weight %v", dens, wbar)
			}
		}
	}
	// The noise gate: the same dense log at a small epsilon does not run
	// the stage, and the report says why.
	st, oo := boundedDense(t, denseStore(400, 30, 10, 30, 2, 0, 32), 30)
	oo.Epsilon = 0.3
	_, rep := trainUserALS(t, st, 10, &oo, nil)
	if notes := strings.Join(rep.Notes, "\n"); !strings.Contains(notes, "covariance stage: not run (noise gate") {
		t.Fatalf("epsilon 0.3: %q", notes)
	}
}

// TestALSCovarianceUserRelease: on a dense bounded log, private ALS at the
// user unit runs the covariance stage: its release is Gaussian at l2
// sensitivity sqrt(2) with a derivation, the releases recompose within
// the budget, the item rows hold the stage's columns and then the free
// ones, users fold in with its ridge, ALSPositionsOff (and the
// measurement hook) run the item steps instead, and the release's noise
// over seeds has the variance the report states.
func TestALSCovarianceUserRelease(t *testing.T) {
	if raceEnabled {
		t.Skip("seconds under the race detector; .ci/run runs it without (the accuracy-target step)")
	}
	t.Parallel()
	st, o := boundedDense(t, denseStore(1500, 30, 15, 30, 3, 0, 6), 30)
	o.Epsilon = 5
	const R = 10
	m, rep := trainUserALS(t, st, R, &o, nil)
	notes := strings.Join(rep.Notes, "\n")
	s := o.ratingRange() / biasSpreadDivisor
	if !strings.Contains(notes, "covariance stage (user unit") || rep.FoldPerRating != 0 || rep.FoldRow != ALSCovFoldRow*s*s {
		t.Fatalf("notes %q, fold per rating %v, fold row %v", rep.Notes, rep.FoldPerRating, rep.FoldRow)
	}
	for _, r := range rep.Releases {
		if r.What == alsStatsWhat {
			t.Fatal("item steps released beside the covariance stage")
		}
	}
	checkStageRelease(t, st, m, o, rep, R, alsCovUserWhat, math.Sqrt2, R-ALSFreeColumns)
	for _, tw := range []struct {
		name string
		o    func(*PrivateOptions)
		p    func(*alsPrivateParams)
	}{
		{"ALSPositionsOff", func(o *PrivateOptions) { o.ALSPositions = ALSPositionsOff }, nil},
		{"noCov", nil, func(p *alsPrivateParams) { p.noCov = true }},
	} {
		oo := o
		if tw.o != nil {
			tw.o(&oo)
		}
		_, r2 := trainUserALS(t, st, R, &oo, tw.p)
		for _, r := range r2.Releases {
			if r.What == alsCovUserWhat {
				t.Fatalf("%s released the covariance", tw.name)
			}
		}
	}
	// The noise of (M/c^2, W), over seeds: the truth is the vector at the
	// released biases (the model's, which the stage leaves as the bias
	// releases set them).
	nt := newNoiseTally()
	c := covUserClip(&o)
	for seed := uint64(0); seed < 20; seed++ {
		oo := o
		oo.Noise = perturb.SeededNoise(seed)
		got := map[string][][]float64{}
		oo.probe = probeInto(got)
		m, r := trainUserALS(t, st, R, &oo, nil)
		if len(got[alsCovUserWhat]) != 1 {
			t.Fatalf("seed %d: %d releases of the covariance", seed, len(got[alsCovUserWhat]))
		}
		if len(got[alsCovUserSpreadWhat]) != 1 {
			t.Fatalf("seed %d: %d releases of the spread", seed, len(got[alsCovUserSpreadWhat]))
		}
		// The clip here: the ratings fill the range, so the stage's c is
		// the range's.
		nt.add(t, alsCovUserWhat, got[alsCovUserWhat][0], covUserVector(st, &oo, m, c))
		// The stage's spread release is the report's: the same release,
		// drawn from the same seeded stream, gives the same value (the
		// noise's scale is then checked below, over many draws).
		for _, sr := range r.Releases {
			if sr.What != alsCovUserSpreadWhat {
				continue
			}
			o2 := o
			o2.Noise = perturb.SeededNoise(seed)
			again := map[string][][]float64{}
			o2.probe = probeInto(again)
			if _, err := releaseCovUserSpread(st, alsUsers(st), m, &o2, &biasFit{noisyUsers: 1}, sr, false); err != nil {
				t.Fatal(err)
			}
			if a, b := again[alsCovUserSpreadWhat][0][0], got[alsCovUserSpreadWhat][0][0]; a != b {
				t.Fatalf("seed %d: the stage's spread release drew %v, the report's release %v", seed, b, a)
			}
		}
		rep = r
	}
	nt.check(t, "als covariance, user unit", rep, alsCovUserWhat)
	// The spread release's noise, over more seeds (one value a run): the
	// release alone, at the stage's multiplier.
	var srel *perturb.Release
	for k := range rep.Releases {
		if rep.Releases[k].What == alsCovUserSpreadWhat {
			srel = &rep.Releases[k]
		}
	}
	c0 := o.ratingRange() / 2
	if srel == nil || srel.Mechanism != perturb.MechGaussian || srel.Sensitivity != c0*c0 {
		t.Fatalf("spread release: %+v", srel)
	}
	bias := &biasFit{noisyUsers: float64(st.Dims[0])}
	z := slices.Clone(st.Val)
	clippedResiduals(z, st, &o, m, c0)
	truth := covUserSquares(st, alsUsers(st), z)
	ns := newNoiseTally()
	for seed := uint64(0); seed < 1500; seed++ {
		oo := o
		oo.Noise = perturb.SeededNoise(seed)
		got := map[string][][]float64{}
		oo.probe = probeInto(got)
		if _, err := releaseCovUserSpread(st, alsUsers(st), m, &oo, bias, *srel, false); err != nil {
			t.Fatal(err)
		}
		ns.add(t, alsCovUserSpreadWhat, got[alsCovUserSpreadWhat][0], []float64{truth})
	}
	ns.check(t, "als covariance spread, user unit", rep, alsCovUserSpreadWhat)
}

// TestCovUserSpreadSensitivity removes each user of a bounded log in
// turn: the spread release Q moves by exactly the user's mean squared
// clipped residual (a repeated cell counted once, at its mean), never
// above the declared c0^2, and a user whose residuals all sit at the clip
// reaches it.
func TestCovUserSpreadSensitivity(t *testing.T) {
	t.Parallel()
	raw := denseStore(120, 20, 2, 20, 2, 30, 34)
	for e := range raw.Val {
		if raw.Idx[0][e] == 3 {
			raw.Val[e] = 5
		}
	}
	o := userOpts(15)
	st, err := BoundForUnit(raw, &o)
	if err != nil {
		t.Fatal(err)
	}
	wm := privModel(t, decomposition.CP, st.Dims, 1, true, 1, 1)
	wm.Mean = 3
	clear(wm.Bias[1])
	const c0 = 1.0
	q := func(s *data.Store) float64 {
		z := slices.Clone(s.Val)
		clippedResiduals(z, s, &o, wm, c0)
		return covUserSquares(s, alsUsers(s), z)
	}
	full := q(st)
	worst := 0.0
	for u, es := range alsUsers(st) {
		if len(es) == 0 {
			continue
		}
		d := full - q(withoutUser(st, int32(u)))
		sum := map[int32]float64{}
		n := map[int32]float64{}
		for _, e := range es {
			i := st.Idx[1][e]
			sum[i] += math.Max(-c0, math.Min(c0, clampValue(st.Val[e], o.RatingMin, o.RatingMax)-wm.Mean))
			n[i]++
		}
		want := 0.0
		for i := range sum {
			want += (sum[i] / n[i]) * (sum[i] / n[i])
		}
		want /= float64(len(sum))
		if math.Abs(d-want) > 1e-9 || d > c0*c0+1e-12 || d < -1e-12 {
			t.Fatalf("user %d: Q moved by %v, want %v in [0, c0^2]", u, d, want)
		}
		worst = math.Max(worst, d)
	}
	if worst < c0*c0-1e-12 {
		t.Fatalf("worst move %v: the user at the clip should reach c0^2 = %v", worst, c0*c0)
	}
}

// TestCovUserSpreadWidth: declared on a range far wider than its
// ratings, a dense log's covariance stage at the user unit narrows its
// rules to the released residual spread (a smaller clip and fold-in
// ridge, stated in the note), and scores far better than at the range's
// width would allow; on its own range the width is the range's.
func TestCovUserSpreadWidth(t *testing.T) {
	if raceEnabled {
		t.Skip("seconds under the race detector; .ci/run runs it without (the accuracy-target step)")
	}
	t.Parallel()
	st := denseStore(3000, 40, 20, 40, 3, 0, 35)
	perm := rand.New(rand.NewPCG(9, 9)).Perm(st.NNZ())
	nva := st.NNZ() / 10
	tr, va := st.Subset(perm[nva:]), st.Subset(perm[:nva])
	tr, o := boundedDense(t, tr, 40)
	o.Epsilon, o.Noise = 30, perturb.SeededNoise(4)
	run := func(lo, hi float64) (float64, *perturb.Report) {
		oo := o
		oo.RatingMin, oo.RatingMax = lo, hi
		m, rep := trainUserALS(t, tr, 5, &oo, nil)
		got, err := FoldInRMSE(m, tr, va, BillboardFoldFor(rep))
		if err != nil {
			t.Fatal(err)
		}
		return got, rep
	}
	own, repOwn := run(1, 5)
	wide, repWide := run(-10, 16)
	t.Logf("fold-in RMSE %.4f on [1, 5], %.4f on [-10, 16]; fold ridge %.4g, %.4g", own, wide, repOwn.FoldRow, repWide.FoldRow)
	if n := strings.Join(repOwn.Notes, "\n"); !strings.Contains(n, "the range's, unchanged") {
		t.Errorf("[1, 5]: the width changed: %q", n)
	}
	if n := strings.Join(repWide.Notes, "\n"); !strings.Contains(n, "in place of the range 26") {
		t.Errorf("[-10, 16]: the width did not narrow: %q", n)
	}
	// At the range's width the ridge would be ALSCovFoldRow (26/4)^2 = 34;
	// at the residuals' spread (about 0.9 here) it is a few units.
	if repWide.FoldRow > 5 {
		t.Errorf("[-10, 16]: fold-in ridge %v, not narrowed", repWide.FoldRow)
	}
	if wide > own+0.05 {
		t.Errorf("[-10, 16]: fold-in RMSE %.4f, more than 0.05 above the own range's %.4f", wide, own)
	}
}

// accountantOf recomposes a report's releases.
func accountantOf(rep *perturb.Report) *perturb.Accountant {
	var acc perturb.Accountant
	for _, r := range rep.Releases {
		_ = acc.Add(r, r.Count)
	}
	return &acc
}

// TestPrivateALSUserCovarianceConverges: on a dense planted log, private
// ALS at the user unit (the covariance stage) at epsilon 100 scores
// within 2% of non-private ALS of the same rank on a held-out part and
// within 1% of the stage without its noise, and keeps the planted rank's
// columns; at epsilon 3 it closes at least half
// the gap from the private bias model to non-private ALS.
func TestPrivateALSUserCovarianceConverges(t *testing.T) {
	if raceEnabled {
		t.Skip("seconds under the race detector; .ci/run runs it without (the accuracy-target step)")
	}
	t.Parallel()
	st := denseStore(3000, 40, 20, 40, 3, 0, 8)
	perm := rand.New(rand.NewPCG(9, 9)).Perm(st.NNZ())
	nva := st.NNZ() / 10
	tr, va := st.Subset(perm[nva:]), st.Subset(perm[:nva])
	tr, o := boundedDense(t, tr, 40)
	const R = 5
	ref := nonPrivateALSRMSE(t, tr, va, R, 1, 5)
	score := func(mode string, eps float64, tweak func(*alsPrivateParams)) (float64, *decomposition.Model) {
		oo := o
		oo.Epsilon, oo.Noise = eps, perturb.SeededNoise(2)
		rank := R
		if mode == "bias" {
			rank = 1
		}
		m := privModel(t, decomposition.CP, tr.Dims, rank, true, 1, 1)
		var rep *perturb.Report
		var err error
		if mode == "als" {
			rep, err = trainPrivateALS(tr, m, &oo, tweak)
		} else {
			rep, err = TrainPrivateBias(tr, m, &oo)
		}
		if err != nil {
			t.Fatal(err)
		}
		if mode == "als" && !strings.Contains(strings.Join(rep.Notes, "\n"), "covariance stage (user unit") {
			t.Fatalf("epsilon %g: the covariance stage did not run: %q", eps, rep.Notes)
		}
		got, err := FoldInRMSE(m, tr, va, BillboardFoldFor(rep))
		if err != nil {
			t.Fatal(err)
		}
		return got, m
	}
	als100, m := score("als", 100, nil)
	als3, _ := score("als", 3, nil)
	bias3, _ := score("bias", 3, nil)
	// The stage with no noise on its releases (measurement, not private):
	// what the private one must approach. (Non-private ALS of rank 5 with
	// its own user rows overfits this log: the reference alone is weak.)
	quiet, _ := score("als", 100, func(p *alsPrivateParams) { p.noiseOff = true })
	t.Logf("non-private ALS %.4f; private ALS (user unit) %.4f at epsilon 100 (%.4f without the stage's noise), %.4f at 3; bias %.4f at 3", ref, als100, quiet, als3, bias3)
	if als100 > 1.01*quiet {
		t.Errorf("epsilon 100: private ALS %.4f, more than 1%% above the stage without its noise, %.4f", als100, quiet)
	}
	checkCovConverges(t, m, R, 3, ref, als100, 3, als3, bias3)
}

// TestCovUserNullEdge: on residuals without covariance, the user unit's
// edge (synthetic positions from the released counts and users) comes
// within 20% of the edge drawn on the log's own positions, at two noise
// levels: the synthetic positions stand in for the private ones.
func TestCovUserNullEdge(t *testing.T) {
	t.Parallel()
	st, _ := boundedDense(t, denseStore(2000, 40, 10, 40, 0, 0, 33), 40)
	I := st.Dims[1]
	counts := make([]float64, I)
	for _, i := range st.Idx[1] {
		counts[i]++
	}
	// Released values, noiseless here: the counts and the users.
	bias := &biasFit{counts: counts, noisyUsers: float64(st.Dims[0]), noisyRatings: float64(st.NNZ())}
	cp := &covPlan{items: make([]int, I), m: I}
	for i := range cp.items {
		cp.items[i] = i
	}
	syn := covNullPositions(bias, I, 40)
	if syn.Dims[0] != st.Dims[0] || syn.Dims[1] != I {
		t.Fatalf("synthetic positions %v, want %d users x %d items", syn.Dims, st.Dims[0], I)
	}
	const v, c = 0.8, 1.5
	for _, sigma := range []float64{5, 50} {
		sw := sigma / (c * c)
		ridge := sigma * sigma / (0.25 * 0.25)
		own := covNullEdgeWith(st, alsUsers(st), cp, v, c, sigma, sw, ridge, covWeightUser, rand.New(rand.NewPCG(1, 1)))
		got := covNullEdgeWith(syn, alsUsers(syn), cp, v, c, sigma, sw, ridge, covWeightUser, rand.New(rand.NewPCG(1, 1)))
		t.Logf("sigma %g: edge %.4g on the log's positions, %.4g on synthetic ones", sigma, own, got)
		if math.Abs(got-own) > 0.2*own {
			t.Errorf("sigma %g: synthetic edge %.4g, the log's own %.4g", sigma, got, own)
		}
	}
}
