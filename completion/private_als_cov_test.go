package completion

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/perturb"
)

// denseStore returns a dense planted log (every user rates between
// minPer and maxPer of the items, chosen at random): ratings 3 + b_i +
// x_u . y_i + noise on [1, 5] in half stars, x_u of rank r with unit
// variance, y_i of scale 0.5; dups ratings repeat a rated cell.
func denseStore(users, items, minPer, maxPer, r, dups int, seed uint64) *data.Store {
	rng := rand.New(rand.NewPCG(seed, 21))
	y := make([]float64, items*r)
	b := make([]float64, items)
	for i := range y {
		y[i] = 0.5 * rng.NormFloat64()
	}
	for i := range b {
		b[i] = 0.4 * rng.NormFloat64()
	}
	st := &data.Store{Dims: []int{users, items}, Idx: make([][]int32, 2)}
	x := make([]float64, r)
	for u := 0; u < users; u++ {
		for k := range x {
			x[k] = rng.NormFloat64()
		}
		n := minPer + rng.IntN(maxPer-minPer+1)
		for _, i := range rng.Perm(items)[:n] {
			v := 3 + b[i] + dot(x, y[i*r:i*r+r]) + 0.5*rng.NormFloat64()
			st.Idx[0] = append(st.Idx[0], int32(u))
			st.Idx[1] = append(st.Idx[1], int32(i))
			st.Val = append(st.Val, math.Round(clampValue(v, 1, 5)*2)/2)
		}
	}
	for d := 0; d < dups; d++ {
		e := rng.IntN(len(st.Val))
		st.Idx[0] = append(st.Idx[0], st.Idx[0][e])
		st.Idx[1] = append(st.Idx[1], st.Idx[1][e])
		st.Val = append(st.Val, 1+4*rng.Float64())
	}
	return st
}

// TestCovMomentsSensitivity: changing one rating's value (to anything,
// in or out of the range; also a rating of a cell the user rated twice)
// moves the covariance release M by at most c^2 in l2 over its upper
// triangle, and by nearly c^2 for a user whose residuals all sit at the
// clip (the bound is reached); the weights W do not move.
func TestCovMomentsSensitivity(t *testing.T) {
	t.Parallel()
	st := denseStore(120, 25, 5, 25, 2, 40, 3)
	// User 0 rates every item at the bottom of the range: every residual
	// sits at -c, and moving one to +c moves M by a sqrt(4 c^4 (d - 1)).
	for e := range st.Val {
		if st.Idx[0][e] == 0 {
			st.Val[e] = 1
		}
	}
	o := baseOpts()
	c := alsPositionsClip(&o)
	wm := privModel(t, decomposition.CP, st.Dims, 1, true, 1, 1)
	wm.Mean = 3
	r := rand.New(rand.NewPCG(4, 4))
	for i := range wm.Bias[1] {
		wm.Bias[1][i] = 0.3 * r.NormFloat64()
	}
	by := alsUsers(st)
	cp := planCovariance(st, by)
	moments := func(s *data.Store) ([]float64, []float64) {
		z := slices.Clone(s.Val)
		clippedResiduals(z, s, &o, wm, c)
		return covMoments(s, by, cp, z, covWeightEntry)
	}
	M, W := moments(st)
	worst, worst0 := 0.0, 0.0
	for trial := 0; trial < 300; trial++ {
		nb := &data.Store{Dims: st.Dims, Idx: st.Idx, Val: slices.Clone(st.Val)}
		e := r.IntN(len(nb.Val))
		if trial%10 == 0 {
			// A rating of user 0's.
			for nb.Idx[0][e] != 0 {
				e = r.IntN(len(nb.Val))
			}
		}
		switch trial % 3 {
		case 0:
			nb.Val[e] = o.RatingMax + 5
		case 1:
			nb.Val[e] = o.RatingMin - 5
		default:
			nb.Val[e] = 30 * r.NormFloat64()
		}
		M2, W2 := moments(nb)
		if !slices.Equal(W, W2) {
			t.Fatal("the weights moved with a value")
		}
		d := 0.0
		for k := range M {
			d += (M[k] - M2[k]) * (M[k] - M2[k])
		}
		d = math.Sqrt(d)
		if d > c*c*(1+1e-9) {
			t.Fatalf("trial %d: M moved by %v > c^2 = %v", trial, d, c*c)
		}
		worst = math.Max(worst, d/(c*c))
		if nb.Idx[0][e] == 0 {
			worst0 = math.Max(worst0, d/(c*c))
		}
	}
	// User 0 rated 5-25 items: the move is sqrt(4(d-1)/(4(d-1)+1)) c^2.
	if worst0 < 0.9 {
		t.Errorf("worst move of user 0 %.3f c^2: the bound is never approached", worst0)
	}
	t.Logf("worst move %.3f c^2 (user 0: %.3f)", worst, worst0)

	// Fixed cases, each at its worst: (a) a user who rated one item twice
	// and 9 others once, every residual at -c, one of the doubled ratings
	// flipped to +c (a summed cell would move by a sqrt(4 (d - 1) + 16)
	// c^2 > c^2; the average moves by half as much); (b) a user of one
	// item whose residual moves from 0 to c (only the diagonal moves:
	// a_u c^2 = c^2, the bound reached).
	mean3 := privModel(t, decomposition.CP, []int{1, 10}, 1, true, 1, 1)
	mean3.Mean = 3
	clear(mean3.Bias[1])
	one := func(items []int32, vals []float64) []float64 {
		st := &data.Store{Dims: []int{1, 10}, Idx: [][]int32{make([]int32, len(items)), items}, Val: vals}
		z := slices.Clone(vals)
		clippedResiduals(z, st, &o, mean3, c)
		M, _ := covMoments(st, alsUsers(st), planCovariance(st, alsUsers(st)), z, covWeightEntry)
		return M
	}
	move := func(a, b []float64) float64 {
		d := 0.0
		for k := range a {
			d += (a[k] - b[k]) * (a[k] - b[k])
		}
		return math.Sqrt(d)
	}
	items := []int32{0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
	low := slices.Repeat([]float64{1}, len(items))
	high := slices.Clone(low)
	high[0] = 5
	// The cell's mean moves from -c to 0: Dz = c against the 9 other
	// residuals at -c, and its diagonal entry by c^2; a = 1/sqrt(37).
	want := c * c * math.Sqrt(10.0/37)
	if got := move(one(items, low), one(items, high)); got > c*c*(1+1e-9) || math.Abs(got-want) > 1e-9*want {
		t.Errorf("doubled cell: M moved by %v, want %v (<= c^2 = %v)", got, want, c*c)
	}
	if got := move(one([]int32{3}, []float64{3}), one([]int32{3}, []float64{5})); math.Abs(got-c*c) > 1e-9*c*c {
		t.Errorf("one item, residual 0 to c: M moved by %v, want c^2 = %v", got, c*c)
	}
}

// TestCovarianceNoiseGate: the noise gate passes where the noise leaves an
// entry of the mean weight at least ALSCovNoiseGate of itself and fails
// below with a note; covShrink is w^2 / (w^2 + sigma^2/tau^2).
func TestCovarianceNoiseGate(t *testing.T) {
	t.Parallel()
	if got, want := covShrink(3, 8, 2), 9.0/(9+16); math.Abs(got-want) > 1e-12 {
		t.Errorf("covShrink(3, 8, 2) = %v, want %v", got, want)
	}
	st := denseStore(2000, 40, 20, 40, 3, 0, 5)
	cp := planCovariance(st, alsUsers(st))
	o := baseOpts()
	p := newALSPrivateParams(&o)
	share := func(eps float64) float64 {
		oo := o
		oo.Epsilon = eps
		g, _, err := covMechanism(&oo, alsPositionsClip(&oo), (1-ALSCovBiasFraction)*eps)
		if err != nil {
			t.Fatal(err)
		}
		return covShrink(cp.wbar, g.Sigma(), covPrior(&oo, p))
	}
	for _, eps := range []float64{0.01, 0.1, 1, 10} {
		oo := o
		oo.Epsilon = eps
		ok, why := covAdmit(&oo, p, cp)
		f := share(eps)
		if ok != (f >= ALSCovNoiseGate) {
			t.Errorf("epsilon %g: share %.3g, admitted %v", eps, f, ok)
		}
		if !ok && !strings.Contains(why, "noise gate") {
			t.Errorf("epsilon %g: note %q", eps, why)
		}
		t.Logf("epsilon %g: share %.3g, admitted %v", eps, f, ok)
	}
	if share(0.01) >= ALSCovNoiseGate || share(10) < ALSCovNoiseGate {
		t.Errorf("the log's shares %.3g at epsilon 0.01 and %.3g at 10 do not straddle the gate", share(0.01), share(10))
	}
}

// TestCovarianceGate: the gate passes on a dense log and fails on a
// MovieLens-shaped one (few users a pair of items) and on one with more
// items than ALSCovMaxItems; pairs is the mean co-rating count.
func TestCovarianceGate(t *testing.T) {
	t.Parallel()
	st := &data.Store{Dims: []int{3, 4}, Idx: [][]int32{{0, 0, 0, 1, 1, 2, 2}, {0, 1, 2, 0, 1, 3, 3}}, Val: make([]float64, 7)}
	cp := planCovariance(st, alsUsers(st))
	// Users rate 3, 2 and 1 distinct items: 3 + 1 + 0 pairs over 6.
	if cp.m != 4 || math.Abs(cp.pairs-4.0/6) > 1e-12 {
		t.Fatalf("m %d, pairs %v; want 4, 0.667", cp.m, cp.pairs)
	}
	dense := denseStore(2000, 40, 20, 40, 3, 0, 5)
	if cp := planCovariance(dense, alsUsers(dense)); !cp.pass(ALSCovGate) {
		t.Errorf("dense log: %.1f users a pair, gate failed", cp.pairs)
	}
	ml := groupStore(1500, 600, 5, 40, 4)
	if cp := planCovariance(ml, alsUsers(ml)); cp.pass(ALSCovGate) {
		t.Errorf("MovieLens-shaped log: %.1f users a pair, gate passed", cp.pairs)
	}
	wide := &data.Store{Dims: []int{1, ALSCovMaxItems + 1}, Idx: make([][]int32, 2)}
	for i := 0; i <= ALSCovMaxItems; i++ {
		wide.Idx[0] = append(wide.Idx[0], 0)
		wide.Idx[1] = append(wide.Idx[1], int32(i))
		wide.Val = append(wide.Val, 3)
	}
	if cp := planCovariance(wide, alsUsers(wide)); cp.pass(0) {
		t.Errorf("%d items: gate passed", cp.m)
	}
}

// TestALSCovarianceRelease: on a dense log private ALS takes the
// covariance stage: the report has the bias releases and the Gaussian
// release of M (l2 sensitivity c^2), each with a derivation,
// recomposing within the budget; user rows are zero, the columns after
// the stage's K are the free columns; users fold in with a ridge of
// ALSCovFoldRow s^2; ALSPositionsOff gives the residual route. The noise
// of M matches the report (variance over seeds).
func TestALSCovarianceRelease(t *testing.T) {
	if raceEnabled {
		t.Skip("seconds under the race detector; .ci/run runs it without (the accuracy-target step)")
	}
	t.Parallel()
	st := denseStore(1500, 30, 15, 30, 3, 20, 6)
	o := baseOpts()
	const R = 10
	m := privModel(t, decomposition.CP, st.Dims, R, true, 1, 1)
	rep, err := TrainPrivateALS(st, m, &o)
	if err != nil {
		t.Fatal(err)
	}
	s := o.rulesRange() / biasSpreadDivisor
	if !strings.Contains(strings.Join(rep.Notes, "\n"), "covariance stage (entry unit") || rep.FoldPerRating != 0 || rep.FoldRow != ALSCovFoldRow*s*s {
		t.Fatalf("report notes %q, fold per rating %v, fold row %v", rep.Notes, rep.FoldPerRating, rep.FoldRow)
	}
	c := alsPositionsClip(&o)
	checkStageRelease(t, st, m, o, rep, R, alsCovWhat, c*c, R-ALSFreeColumns)
	// The noise of M, over seeds: the truth is M at the same bias release
	// (deterministic for a seed).
	nt := newNoiseTally()
	by := alsUsers(st)
	cp := planCovariance(st, by)
	for seed := uint64(0); seed < 20; seed++ {
		oo := o
		oo.Noise = perturb.SeededNoise(seed)
		got := map[string][][]float64{}
		oo.probe = probeInto(got)
		m := privModel(t, decomposition.CP, st.Dims, R, true, 1, 1)
		r, err := TrainPrivateALS(st, m, &oo)
		if err != nil {
			t.Fatal(err)
		}
		rr, err := resolveALS(st, m, &oo)
		if err != nil {
			t.Fatal(err)
		}
		eps := alsRouteEpsilon(oo.Epsilon)
		wm, _, err := scratchBiasReleaseFrom(storeBiasSource{st}, st.Dims[:2], &rr, ALSCovBiasFraction*eps)
		if err != nil {
			t.Fatal(err)
		}
		z := slices.Clone(st.Val)
		clippedResiduals(z, st, &rr, wm, alsPositionsClip(&rr))
		truth, _ := covMoments(st, by, cp, z, covWeightEntry)
		if len(got[alsCovWhat]) != 1 {
			t.Fatalf("seed %d: %d releases of M", seed, len(got[alsCovWhat]))
		}
		nt.add(t, alsCovWhat, got[alsCovWhat][0], truth)
		rep = r
	}
	nt.check(t, "als covariance", rep, alsCovWhat)
}

// TestPrivateALSCovarianceConverges: on a dense planted log, private ALS
// (entry level, the covariance stage) at epsilon 100 scores within 2% of
// non-private ALS of the same rank on a held-out part, and at epsilon 1
// well below the private bias model.
func TestPrivateALSCovarianceConverges(t *testing.T) {
	t.Parallel()
	st := denseStore(3000, 40, 20, 40, 3, 0, 8)
	perm := rand.New(rand.NewPCG(9, 9)).Perm(st.NNZ())
	nva := st.NNZ() / 10
	tr, va := st.Subset(perm[nva:]), st.Subset(perm[:nva])
	const R = 5
	ref := nonPrivateALSRMSE(t, tr, va, R, 1, 5)
	score := func(mode string, eps float64) float64 {
		got, rep := privateFoldScore(t, tr, va, mode, R, &PrivateOptions{Epsilon: eps, Delta: 1e-5, RatingMin: 1, RatingMax: 5, Noise: perturb.SeededNoise(2)}, nil)
		if mode == "als" && !strings.Contains(strings.Join(rep.Notes, "\n"), "covariance stage (entry unit") {
			t.Fatalf("epsilon %g: the covariance stage did not run: %q", eps, rep.Notes)
		}
		return got
	}
	als100, als1, bias1 := score("als", 100), score("als", 1), score("bias", 1)
	t.Logf("non-private ALS %.4f; private ALS %.4f at epsilon 100, %.4f at 1; bias %.4f at 1", ref, als100, als1, bias1)
	// The planted rank is 3: at epsilon 100 the edge keeps 3 columns or
	// more, and the third keeps a share of the taste (an edge too high
	// would drop it).
	m, err := decomposition.NewModel(decomposition.CP, tr.Dims, []int{R}, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := TrainPrivateALS(tr, m, &PrivateOptions{Epsilon: 100, Delta: 1e-5, RatingMin: 1, RatingMax: 5, Noise: perturb.SeededNoise(2)}); err != nil {
		t.Fatal(err)
	}
	checkCovConverges(t, m, R, 3, ref, als100, 1, als1, bias1)
}

// checkCovConverges checks a covariance stage's convergence on a planted
// log of rank planted: m (trained at epsilon 100) keeps a nonzero
// column for each planted one (an edge too high would drop them);
// private ALS at epsilon 100 (als100) is within 2% of non-private ALS
// (ref); at the lower epsilon lo it (alsLo) closes at least half the gap
// from the bias model (biasLo) to ref.
func checkCovConverges(t *testing.T, m *decomposition.Model, R, planted int, ref, als100, lo, alsLo, biasLo float64) {
	t.Helper()
	for k := 0; k < planted; k++ {
		nz := 0
		for i := 0; i < m.Dims[1]; i++ {
			if m.Factors[1][i*R+k] != 0 {
				nz++
			}
		}
		if nz == 0 {
			t.Errorf("epsilon 100: column %d of the planted rank %d dropped", k+1, planted)
		}
	}
	if als100 > 1.02*ref {
		t.Errorf("epsilon 100: private ALS %.4f, more than 2%% above non-private ALS %.4f", als100, ref)
	}
	if alsLo > biasLo-0.5*(biasLo-ref) {
		t.Errorf("epsilon %g: private ALS %.4f closes less than half the gap from the bias model %.4f to non-private ALS %.4f", lo, alsLo, biasLo, ref)
	}
}

// TestALSCovarianceNoTaste: on a dense log whose ratings carry no taste
// (item biases plus noise), the parallel-analysis edge keeps the
// covariance stage near the bias model's level: it drops the columns
// that noise and sampling alone give, which without the edge (covNoCut)
// the users fit and lose by. The free columns are off here: this log's
// users have no slope or popularity taste either, and those columns'
// cost on such logs is the positions stage's (ALSFreeColumns). (A
// too-high edge, which would drop real columns, is what
// TestPrivateALSCovarianceConverges's columns check catches.)
func TestALSCovarianceNoTaste(t *testing.T) {
	t.Parallel()
	st := denseStore(3000, 40, 20, 40, 0, 0, 10)
	perm := rand.New(rand.NewPCG(9, 9)).Perm(st.NNZ())
	nva := st.NNZ() / 10
	tr, va := st.Subset(perm[nva:]), st.Subset(perm[:nva])
	o := &PrivateOptions{Epsilon: 10, Delta: 1e-5, RatingMin: 1, RatingMax: 5, Noise: perturb.SeededNoise(3)}
	bias, _ := privateFoldScore(t, tr, va, "bias", 1, o, nil)
	cut, rep := privateFoldScore(t, tr, va, "als", 10, o, func(p *alsPrivateParams) { p.covNoFree = true })
	if !strings.Contains(strings.Join(rep.Notes, "\n"), "covariance stage (entry unit") {
		t.Fatalf("the covariance stage did not run: %q", rep.Notes)
	}
	noCut, _ := privateFoldScore(t, tr, va, "als", 10, o, func(p *alsPrivateParams) { p.covNoFree, p.covNoCut = true, true })
	t.Logf("bias %.4f; covariance stage %.4f, without the edge %.4f", bias, cut, noCut)
	// Over 4 stores x 3 noise seeds: cut / bias 1.008-1.012 (the rest is
	// the fold-in's lighter ridge on a user bias this log does not have),
	// (noCut - cut) / (cut - bias) 0.64-1.45.
	if cut > 1.02*bias {
		t.Errorf("covariance stage %.4f, more than 2%% above the bias model %.4f on a log without taste", cut, bias)
	}
	if noCut < cut+0.3*(cut-bias) || noCut <= cut {
		t.Errorf("without the edge %.4f, not clearly above the stage with it %.4f (bias %.4f): the test cannot tell", noCut, cut, bias)
	}
}

// TestALSCovarianceSmall: the stage (its density gate lowered) runs on
// tiny dense logs at ranks 1 to 12 without error and with finite item
// rows; a log of one item is refused by the gate with a note.
func TestALSCovarianceSmall(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name         string
		users, items int
		rank         int
		run          bool
	}{
		{"two items, rank 1", 300, 2, 1, true},
		{"two items, rank 12", 300, 2, 12, true},
		{"five items, rank 10", 300, 5, 10, true},
		{"one item", 300, 1, 10, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := denseStore(tc.users, tc.items, 1, tc.items, 1, 10, 4)
			o := baseOpts()
			o.Epsilon = 50
			m := privModel(t, decomposition.CP, st.Dims, tc.rank, true, 1, 1)
			rep, err := trainPrivateALS(st, m, &o, func(p *alsPrivateParams) { p.covGate = 1e-9 })
			if err != nil {
				t.Fatal(err)
			}
			notes := strings.Join(rep.Notes, "\n")
			if ran := strings.Contains(notes, "covariance stage (entry unit"); ran != tc.run {
				t.Fatalf("stage ran %v, want %v: %q", ran, tc.run, rep.Notes)
			}
			if !tc.run && !strings.Contains(notes, "covariance stage: not run (1 item(s) with ratings; it needs 2)") {
				t.Errorf("no note saying why: %q", rep.Notes)
			}
			for _, x := range m.Factors[1] {
				if math.IsNaN(x) || math.IsInf(x, 0) {
					t.Fatal("non-finite item row")
				}
			}
		})
	}
}

// TestCovNullEdge: on residuals without covariance (independent
// Gaussians, mildly clipped, on a dense log's positions, with the
// release's noise), the largest eigenvalue of C sits at the
// parallel-analysis edge computed from the released diagonal alone:
// within 20% over several draws (one draw of the null; the top
// eigenvalue of a noise matrix varies), so an edge off by a factor of
// 1.5 either way fails. (Under heavy clipping the edge sits lower, by
// design: covEdge.)
func TestCovNullEdge(t *testing.T) {
	t.Parallel()
	st := denseStore(1500, 30, 10, 30, 0, 0, 12)
	by := alsUsers(st)
	cp := planCovariance(st, by)
	const c = 3.0
	for _, tc := range []struct{ sd, sigma, ridge float64 }{{1, 0, 0}, {1, 3, 0.5}, {1.2, 10, 2}} {
		for seed := uint64(1); seed <= 3; seed++ {
			r := rand.New(rand.NewPCG(seed, 40))
			z := make([]float64, st.NNZ())
			for e := range z {
				z[e] = math.Max(-c, math.Min(c, tc.sd*r.NormFloat64()))
			}
			M, W := covMoments(st, by, cp, z, covWeightEntry)
			for k := range M {
				M[k] += tc.sigma * r.NormFloat64()
			}
			var es mat.EigenSym
			if !es.Factorize(covEstimate(M, W, cp.m, tc.ridge), false) {
				t.Fatal("eigendecomposition failed")
			}
			vals := es.Values(nil)
			top := vals[len(vals)-1]
			edge := covEdge(st, by, cp, M, W, c, tc.sigma, tc.ridge)
			t.Logf("sd %v, sigma %v, seed %d: top %.4g, edge %.4g", tc.sd, tc.sigma, seed, top, edge)
			if math.Abs(top/edge-1) > 0.2 {
				t.Errorf("sd %v, sigma %v, seed %d: C's top eigenvalue %.4g, edge %.4g", tc.sd, tc.sigma, seed, top, edge)
			}
		}
	}
}
