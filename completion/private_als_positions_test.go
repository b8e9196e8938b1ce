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

// groupStore returns a user x item log whose positions carry the users'
// taste: user u belongs to group u mod g, item i to group i mod g; a user
// rates perUser items, each from their own group's items with
// probability 0.7 (otherwise any item), and rates an item of their group
// 4, any other 2, plus noise of sd 0.5, rounded to half stars on [1, 5].
func groupStore(users, items, g, perUser int, seed uint64) *data.Store {
	rng := rand.New(rand.NewPCG(seed, 5))
	st := &data.Store{Dims: []int{users, items}, Idx: make([][]int32, 2)}
	for u := 0; u < users; u++ {
		seen := map[int]bool{}
		for len(seen) < perUser {
			i := rng.IntN(items)
			if rng.Float64() < 0.7 {
				i = (rng.IntN(items/g))*g + u%g
			}
			if seen[i] {
				continue
			}
			seen[i] = true
			v := 2.0
			if i%g == u%g {
				v = 4
			}
			v += 0.5 * rng.NormFloat64()
			st.Idx[0] = append(st.Idx[0], int32(u))
			st.Idx[1] = append(st.Idx[1], int32(i))
			st.Val = append(st.Val, math.Round(clampValue(v, 1, 5)*2)/2)
		}
	}
	return st
}

// TestPositionsGate: the spectral gate passes where the positions carry
// the users' groups and fails where they are random (privStore) or
// shuffled; the embedding is a function of the positions only, with rows
// of norm at most 1.
func TestPositionsGate(t *testing.T) {
	t.Parallel()
	grp := groupStore(600, 120, 4, 30, 1)
	pe := planPositions(grp, 5)
	if !pe.pass() {
		t.Fatalf("group log: gate fails (top %.4f, floor %.4f)", pe.Top, pe.Floor)
	}
	for _, rows := range [][]float64{pe.P, pe.Q} {
		mx := 0.0
		for r := 0; r < len(rows); r += 5 {
			mx = math.Max(mx, math.Sqrt(dot(rows[r:r+5], rows[r:r+5])))
		}
		if mx > 1+1e-12 || mx < 1-1e-12 {
			t.Fatalf("largest row norm %v, want 1", mx)
		}
	}
	shuf := &data.Store{Dims: grp.Dims, Idx: [][]int32{grp.Idx[0], slices.Clone(grp.Idx[1])}, Val: grp.Val}
	rand.New(rand.NewPCG(8, 8)).Shuffle(len(shuf.Val), func(a, b int) {
		shuf.Idx[1][a], shuf.Idx[1][b] = shuf.Idx[1][b], shuf.Idx[1][a]
	})
	if pe := planPositions(shuf, 5); pe.pass() {
		t.Errorf("shuffled positions: gate passes (top %.4f, floor %.4f)", pe.Top, pe.Floor)
	}
	if pe := planPositions(privStore([]int{300, 60}, 4000, 2), 5); pe.pass() {
		t.Errorf("random positions: gate passes (top %.4f, floor %.4f)", pe.Top, pe.Floor)
	}
	// Values do not enter the embedding.
	nb := &data.Store{Dims: grp.Dims, Idx: grp.Idx, Val: slices.Clone(grp.Val)}
	for e := range nb.Val {
		nb.Val[e] = 6 - nb.Val[e]
	}
	pn := planPositions(nb, 5)
	if !slices.Equal(pn.P, pe.P) || !slices.Equal(pn.Q, pe.Q) || pn.Top != pe.Top || pn.Floor != pe.Floor {
		t.Fatal("the embedding depends on the values")
	}
}

// TestALSPositionsSensitivity: changing one rating's value (to anything,
// in or out of the range) moves the positions statistic S by at most
// 2c in Frobenius norm, and by 2c |p_u| |q_i| at the extremes (the bound
// is reached); the Gram matrix G does not move.
func TestALSPositionsSensitivity(t *testing.T) {
	t.Parallel()
	st := groupStore(300, 60, 3, 20, 2)
	o := baseOpts()
	o.RatingMin, o.RatingMax = 1, 5
	p := newALSPrivateParams(&o)
	c := p.inputClip
	pe := planPositions(st, 4)
	K := pe.K
	r := rand.New(rand.NewPCG(4, 4))
	wm := privModel(t, decomposition.CP, st.Dims, 1, true, 1, 1)
	wm.Mean = 3
	for i := range wm.Bias[1] {
		wm.Bias[1][i] = 0.5 * r.NormFloat64()
	}
	S, G := positionsS(st, &o, wm, pe, c), positionsGram(st, alsUsers(st), pe)
	worst := 0.0
	for trial := 0; trial < 200; trial++ {
		nb := &data.Store{Dims: st.Dims, Idx: st.Idx, Val: slices.Clone(st.Val)}
		e := r.IntN(len(nb.Val))
		switch trial % 3 {
		case 0:
			nb.Val[e] = o.RatingMin - 5
		case 1:
			nb.Val[e] = o.RatingMax + 5
		default:
			nb.Val[e] = 30 * r.NormFloat64()
		}
		S2, G2 := positionsS(nb, &o, wm, pe, c), positionsGram(nb, alsUsers(nb), pe)
		if !slices.Equal(G, G2) {
			t.Fatal("the Gram matrix moved with a value")
		}
		d := 0.0
		for k := range S {
			d += (S[k] - S2[k]) * (S[k] - S2[k])
		}
		d = math.Sqrt(d)
		if d > 2*c*(1+1e-9) {
			t.Fatalf("S moved by %v > 2c = %v", d, 2*c)
		}
		u, i := int(st.Idx[0][e]), int(st.Idx[1][e])
		pq := math.Sqrt(dot(pe.P[u*K:u*K+K], pe.P[u*K:u*K+K]) * dot(pe.Q[i*K:i*K+K], pe.Q[i*K:i*K+K]))
		if pq > 0 && trial%3 != 2 {
			worst = math.Max(worst, d/(2*c*pq))
		}
	}
	if worst < 0.99 {
		t.Errorf("worst move %.3f of 2c |p_u| |q_i|: the bound is never reached", worst)
	}
}

// TestALSPositionsRelease: on a log whose positions pass the gate, private
// ALS takes the positions stage: the report has the bias releases and the
// Gaussian release of S, each with a derivation, recomposing within the
// budget; user rows are zero, the two columns after the positions' K are
// the free columns and the rest zero, users fold in with
// the bias mode's penalties; ALSPositionsOff gives the residual route.
// The noise of S matches the report (variance over seeds).
func TestALSPositionsRelease(t *testing.T) {
	if raceEnabled {
		t.Skip("tens of seconds under the race detector; .ci/run runs it without (the accuracy-target step)")
	}
	t.Parallel()
	st := groupStore(600, 120, 4, 30, 3)
	o := baseOpts()
	o.RatingMin, o.RatingMax = 1, 5
	const R = 12
	m := privModel(t, decomposition.CP, st.Dims, R, true, 1, 1)
	rep, err := TrainPrivateALS(st, m, &o)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(rep.Notes, "\n"), "positions stage (entry unit") || rep.FoldPerRating != 0 || rep.FoldRow != ALSPositionsFoldRow {
		t.Fatalf("report notes %q, fold per rating %v, fold row %v", rep.Notes, rep.FoldPerRating, rep.FoldRow)
	}
	K := min(R-ALSFreeColumns, ALSPositionsMaxRank)
	if K != positionsRank(R, alsPrivateParams{}) {
		t.Fatalf("K = %d, positionsRank %d", K, positionsRank(R, alsPrivateParams{}))
	}
	checkStageRelease(t, st, m, o, rep, R, alsPositionsWhat, 2*alsPositionsClip(&o), K)
	// At a tiny epsilon the ridge the noise calls for would shrink W to
	// about zero: the shrinkage gate sends the run to the residual route
	// (here its fallback, the bias mode) without releasing S.
	tiny := o
	tiny.Epsilon = 0.01
	rep3, err := TrainPrivateALS(st, privModel(t, decomposition.CP, st.Dims, R, true, 1, 1), &tiny)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep3.Releases {
		if r.What == alsPositionsWhat {
			t.Fatal("epsilon 0.01: S released past the shrinkage gate")
		}
	}
	if !strings.Contains(strings.Join(rep3.Notes, "\n"), "shrinkage gate") {
		t.Fatalf("epsilon 0.01: notes %q", rep3.Notes)
	}
	// The noise of S, over seeds: the truth is S at the same bias release
	// (deterministic for a seed).
	nt := newNoiseTally()
	pe := planPositions(st, K)
	for seed := uint64(0); seed < 60; seed++ {
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
		wm, _, err := scratchBiasReleaseFrom(storeBiasSource{st}, st.Dims[:2], &rr, ALSPositionsBiasFraction(alsRouteEpsilon(oo.Epsilon))*alsRouteEpsilon(oo.Epsilon))
		if err != nil {
			t.Fatal(err)
		}
		truth := positionsS(st, &rr, wm, pe, alsPositionsClip(&rr))
		if len(got[alsPositionsWhat]) != 1 {
			t.Fatalf("seed %d: %d releases of S", seed, len(got[alsPositionsWhat]))
		}
		nt.add(t, alsPositionsWhat, got[alsPositionsWhat][0], truth)
		rep = r
	}
	nt.check(t, "als positions", rep, alsPositionsWhat)
}

// TestPrivateALSPositionsConverges: on a log whose positions carry the
// users' groups, private ALS (entry level, the positions stage) at
// epsilon 100 scores within 2% of non-private ALS of the same rank on a
// held-out part, and at epsilon 1 below the private bias model.
func TestPrivateALSPositionsConverges(t *testing.T) {
	t.Parallel()
	st := groupStore(1500, 600, 5, 40, 4) // 100 ratings an item (90 after the split): in neither of the residual route's regimes
	perm := rand.New(rand.NewPCG(9, 9)).Perm(st.NNZ())
	nva := st.NNZ() / 10
	tr, va := st.Subset(perm[nva:]), st.Subset(perm[:nva])
	const R = 5
	ref := nonPrivateALSRMSE(t, tr, va, R, 1, 5)
	score := func(mode string, eps float64) float64 {
		got, rep := privateFoldScore(t, tr, va, mode, R, &PrivateOptions{Epsilon: eps, Delta: 1e-5, RatingMin: 1, RatingMax: 5, Noise: perturb.SeededNoise(2)}, nil)
		if mode == "als" && !strings.Contains(strings.Join(rep.Notes, "\n"), "positions stage (entry unit") {
			t.Fatalf("epsilon %g: the positions stage did not run: %q", eps, rep.Notes)
		}
		return got
	}
	als100, als1, bias1 := score("als", 100), score("als", 1), score("bias", 1)
	t.Logf("non-private ALS %.4f; private ALS %.4f at epsilon 100, %.4f at 1; bias %.4f at 1", ref, als100, als1, bias1)
	if als100 > 1.02*ref {
		t.Errorf("epsilon 100: private ALS %.4f, more than 2%% above non-private ALS %.4f", als100, ref)
	}
	if als1 >= bias1 {
		t.Errorf("epsilon 1: private ALS %.4f, not below the bias model %.4f", als1, bias1)
	}
}

// TestPrivateALSPositionsWideScale: on a joke-shaped log whose positions
// carry taste (jokeExposureLog: ratings on [-10, 10], exposure by the
// users' clusters), private ALS by the positions stage beats the private
// bias model at epsilon 1 (at 3 and above, 2,700 ratings an item put
// the log in the residual route's regime). Its item rows are released in units of the
// public spread s = (r_max - r_min)/4, so that the fold-in's ridge on a
// user's row scales with s^2 as the data term does; with the item rows in
// rating units (posNoScale) the fold-in overfits and the stage scored
// 4.200 against the bias model's 4.141 on the sweep's validation part.
// The log is dense enough for the covariance stage, which the default
// takes there (private_als_cov.go); it is off here.
func TestPrivateALSPositionsWideScale(t *testing.T) {
	if raceEnabled {
		t.Skip("tens of seconds under the race detector; .ci/run runs it without (the accuracy-target step)")
	}
	if testing.Short() {
		t.Skip("short mode")
	}
	t.Parallel()
	tr, va, lo, hi := sweepData(t, "jokeexp")
	score := func(mode string, noScale bool) float64 {
		o := &PrivateOptions{Epsilon: 1, Delta: 1e-5, RatingMin: lo, RatingMax: hi, Noise: perturb.SeededNoise(5)}
		got, rep := privateFoldScore(t, tr, va, mode, 10, o, func(p *alsPrivateParams) { p.posNoScale, p.noCov = noScale, true })
		if mode == "als" && !strings.Contains(strings.Join(rep.Notes, "\n"), "positions stage (entry unit") {
			t.Fatalf("the positions stage did not run: %q", rep.Notes)
		}
		return got
	}
	als, bias := score("als", false), score("bias", false)
	t.Logf("private ALS %.4f, bias %.4f (rating units: %.4f)", als, bias, score("als", true))
	if als >= bias {
		t.Errorf("private ALS %.4f, not below the bias model %.4f", als, bias)
	}
}

// TestALSResidualRegime: the residual route's regime needs both many
// ratings an item (>= ALSResidualRichRatio R) and a small residual noise
// (v <= ALSResidualRichNoise s^2), and its quiet regime fewer ratings an
// item (>= ALSResidualQuietRatio R) and a smaller noise (v <=
// ALSResidualQuietNoise s^2), on public counts and the plan only.
func TestALSResidualRegime(t *testing.T) {
	t.Parallel()
	many := slices.Repeat([]int{2700}, 100)
	mid := slices.Repeat([]int{300}, 300)   // 30 R
	heavy := slices.Repeat([]int{405}, 200) // 40.5 R: the heavy-tailed synth's
	top := slices.Repeat([]int{174}, 200)   // 17.4 R: MovieLens-100K's 200 most rated items
	few := slices.Repeat([]int{48}, 1000)
	for _, tc := range []struct {
		counts []int
		eps    float64
		want   bool
		quiet  bool
	}{
		{many, 10, true, false}, {many, 3, true, false}, {many, 1, false, false},
		{mid, 10, false, false}, {mid, 20, false, false}, {mid, 30, true, true}, {mid, 100, true, true},
		{heavy, 30, true, true}, {top, 30, false, false}, {top, 100, false, false},
		{few, 10, false, false}, {few, 100, false, false}, {few, 500, false, false},
	} {
		o := &PrivateOptions{Epsilon: tc.eps, Delta: 1e-5, RatingMin: -10, RatingMax: 10}
		r, err := resolveALSOptions(o)
		if err != nil {
			t.Fatal(err)
		}
		got, why := alsResidualRegime(&r, newALSPrivateParams(&r), 10, tc.counts)
		if got != tc.want || got != (why != "") || strings.Contains(why, "quiet") != tc.quiet {
			t.Errorf("%d items of %d ratings, epsilon %g: regime %v (%q), want %v", len(tc.counts), tc.counts[0], tc.eps, got, why, tc.want)
		}
	}
}

// TestPositionsEdgeCases: a component apart from the rest (one user who
// alone rated one item has a singular value of exactly 1) neither passes
// the gate on random positions nor changes the embedding of structured
// ones; K is clamped to the positions' rank; a classic calibration (input
// mode's setting) does not stop the positions stage; an unknown
// ALSPositions value is refused.
func TestPositionsEdgeCases(t *testing.T) {
	t.Parallel()
	addPair := func(st *data.Store) *data.Store {
		out := &data.Store{Dims: []int{st.Dims[0] + 1, st.Dims[1] + 1}, Idx: [][]int32{
			append(slices.Clone(st.Idx[0]), int32(st.Dims[0])), append(slices.Clone(st.Idx[1]), int32(st.Dims[1]))},
			Val: append(slices.Clone(st.Val), 3)}
		return out
	}
	rnd := privStore([]int{300, 60}, 4000, 2)
	if pe := planPositions(addPair(rnd), 5); pe.pass() {
		t.Errorf("random positions with an isolated pair: gate passes (top %.4f, floor %.4f)", pe.Top, pe.Floor)
	}
	grp := groupStore(600, 120, 4, 30, 1)
	a, b := planPositions(grp, 5), planPositions(addPair(grp), 5)
	if !b.pass() || math.Abs(a.Top-b.Top) > 1e-9 {
		t.Errorf("group log with an isolated pair: top %.4f (%.4f without), pass %v", b.Top, a.Top, b.pass())
	}
	for i := 0; i < 120*5; i++ {
		if math.Abs(a.Q[i]-b.Q[i]) > 1e-9 {
			t.Fatalf("group log with an isolated pair: Q[%d] %v, %v without", i, b.Q[i], a.Q[i])
		}
	}
	tiny := &data.Store{Dims: []int{4, 3}, Idx: [][]int32{{0, 0, 1, 2, 3}, {0, 1, 1, 2, 2}}, Val: []float64{1, 2, 3, 4, 5}}
	if pe := planPositions(tiny, 6); pe.K > 3 || len(pe.Q) != 3*pe.K || len(pe.P) != 4*pe.K {
		t.Errorf("3 items, K 6: K %d, |P| %d, |Q| %d", pe.K, len(pe.P), len(pe.Q))
	}
	st := groupStore(600, 120, 4, 30, 3)
	o := baseOpts()
	o.RatingMin, o.RatingMax, o.Epsilon, o.Calibration = 1, 5, 3, perturb.Classic
	rep, err := TrainPrivateALS(st, privModel(t, decomposition.CP, st.Dims, 5, true, 1, 1), &o)
	if err != nil || !strings.Contains(strings.Join(rep.Notes, "\n"), "positions stage (entry unit") {
		t.Fatalf("classic calibration: %v", err)
	}
	o.ALSPositions = "on"
	if _, err := TrainPrivateALS(st, privModel(t, decomposition.CP, st.Dims, 5, true, 1, 1), &o); err == nil {
		t.Error("ALSPositions \"on\" accepted")
	}
}

// TestPrivateALSQuietRegime: on a heavy-tailed synthetic log (165 ratings
// an item after the split, 183 before: 33 R at rank 5) whose
// positions pass the spectral gate without carrying taste (data.Synth's
// positions are drawn apart from the factors), the positions stage stays
// near the bias model at epsilon 100, and the default (the residual
// route's quiet regime) comes within 2% of non-private ALS.
func TestPrivateALSQuietRegime(t *testing.T) {
	t.Parallel()
	st, _, err := data.Synth(data.SynthOptions{Users: 1500, Items: 600, Ratings: 110000, Rank: 5, Bias: true, Noise: 0.5, Scale: "0.5-5", Skew: 1}, rand.NewPCG(12, 12))
	if err != nil {
		t.Fatal(err)
	}
	perm := rand.New(rand.NewPCG(9, 9)).Perm(st.NNZ())
	nva := st.NNZ() / 10
	tr, va := st.Subset(perm[nva:]), st.Subset(perm[:nva])
	if pe := planPositions(tr, 5); !pe.pass() {
		t.Fatalf("the spectral gate fails (%.4g against %.4g): the log does not test the regime", pe.Top, pe.Floor)
	}
	const R = 5
	ref := nonPrivateALSRMSE(t, tr, va, R, 0.5, 5)
	o := &PrivateOptions{Epsilon: 100, Delta: 1e-5, RatingMin: 0.5, RatingMax: 5, Noise: perturb.SeededNoise(2)}
	route, rep := privateFoldScore(t, tr, va, "als", R, o, nil)
	if !strings.Contains(strings.Join(rep.Notes, "\n"), "quiet regime") {
		t.Fatalf("the quiet regime did not run: %q", rep.Notes)
	}
	stage, rep2 := privateFoldScore(t, tr, va, "als", R, o, func(p *alsPrivateParams) { p.quietRatio = math.Inf(1) })
	if !strings.Contains(strings.Join(rep2.Notes, "\n"), "positions stage (entry unit") {
		t.Fatalf("the positions stage did not run: %q", rep2.Notes)
	}
	bias, _ := privateFoldScore(t, tr, va, "bias", R, o, nil)
	t.Logf("non-private ALS %.4f; epsilon 100: the route %.4f, the positions stage %.4f, bias %.4f", ref, route, stage, bias)
	if route > 1.02*ref {
		t.Errorf("the quiet regime's route %.4f, more than 2%% above non-private ALS %.4f", route, ref)
	}
	if stage < route {
		t.Errorf("the positions stage %.4f below the route %.4f: the log does not show the regime's case", stage, route)
	}
}

// checkStageRelease checks an entry-unit stage's report and model (rep
// and m from TrainPrivateALS on st with o at rank R): the stage's
// release what is Gaussian at l2 sensitivity sens; every release has a
// derivation and they recompose within the budget; user rows are zero;
// the first K item columns are not all zero, the free columns follow
// them; ALSPositionsOff makes no such release.
func checkStageRelease(t *testing.T, st *data.Store, m *decomposition.Model, o PrivateOptions, rep *perturb.Report, R int, what string, sens float64, K int) {
	t.Helper()
	var rel *perturb.Release
	for k := range rep.Releases {
		if rep.Releases[k].What == what {
			rel = &rep.Releases[k]
		}
	}
	if rel == nil || rel.Mechanism != perturb.MechGaussian || rel.Sensitivity != sens {
		t.Fatalf("release %q: %+v", what, rel)
	}
	checkDerivations(t, "als", rep)
	if _, _, _, err := admit(&o, accountantOf(rep)); err != nil || rep.Delta > o.Delta {
		t.Errorf("the report's releases do not fit the budget (epsilon %v, delta %v): %v", o.Epsilon, o.Delta, err)
	}
	for _, x := range m.Factors[0] {
		if x != 0 {
			t.Fatal("user rows released")
		}
	}
	nonzero := 0
	for i := 0; i < m.Dims[1]; i++ {
		for _, x := range m.Row(1, i)[:K] {
			if x != 0 {
				nonzero++
			}
		}
	}
	if nonzero == 0 {
		t.Fatal("every item row is zero in the stage's columns")
	}
	// After the stage's K columns, the free columns, then zeros.
	checkFreeColumns(t, m, &o, rep.ItemCounts, K, false)
	off := o
	off.ALSPositions = ALSPositionsOff
	rep2, err := TrainPrivateALS(st, privModel(t, decomposition.CP, st.Dims, R, true, 1, 1), &off)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep2.Releases {
		if r.What == what {
			t.Fatalf("ALSPositionsOff released %q", what)
		}
	}
}
