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

// TestALSHeldOut: whether a user is held out for the ridge selection
// depends on their own ratings only (removing other users, or numbering
// the users differently, changes no one's), and about ALSRidgeHoldout of
// the users are.
func TestALSHeldOut(t *testing.T) {
	t.Parallel()
	o := userOpts(8)
	st, err := BoundForUnit(userStore([]int{400, 60}, 4000, 31), &o)
	if err != nil {
		t.Fatal(err)
	}
	by := alsUsers(st)
	held := alsHeldOut(st, by)
	n, h := 0, 0
	for u, es := range by {
		if len(es) > 0 {
			n++
			if held[u] {
				h++
			}
		}
	}
	if f := float64(h) / float64(n); math.Abs(f-ALSRidgeHoldout) > 0.05 {
		t.Fatalf("%d of %d users held out (%.3f), want about %g", h, n, f, ALSRidgeHoldout)
	}
	// Without user 0: the others keep their status.
	st2 := withoutUser(st, 0)
	held2 := alsHeldOut(st2, alsUsers(st2))
	for u := 1; u < len(held); u++ {
		if held[u] != held2[u] {
			t.Fatalf("user %d: held out %v, %v once user 0 is removed", u, held[u], held2[u])
		}
	}
	// The rows in another order and the users numbered backwards: the
	// same status for every user.
	perm := rand.New(rand.NewPCG(2, 2)).Perm(st.NNZ())
	st3 := st.Subset(perm)
	n3 := st3.Dims[0]
	for e, u := range st3.Idx[0] {
		st3.Idx[0][e] = int32(n3-1) - u
	}
	held3 := alsHeldOut(st3, alsUsers(st3))
	for u := range held {
		if held[u] != held3[n3-1-u] {
			t.Fatalf("user %d: held out %v, %v when renumbered", u, held[u], held3[n3-1-u])
		}
	}
}

// TestALSRidgeSelection: under the user unit with item steps, the last
// step's ridge is chosen on held-out users: the selection's statistic
// moves by at most its declared sensitivity when a held-out user is
// removed (and not at all for another user), it is released once, its
// noise takes ALSRidgeShare of the steps' and its mu^2, the whole budget is spent
// with it in the composition and the report checks, and on a planted log
// whose factors explain much (where a smaller ridge is better) the chosen
// ridge beats the fixed default.
func TestALSRidgeSelection(t *testing.T) {
	t.Parallel()
	const k, R = 50, 5
	// Many users with long histories and little rating noise, where the
	// factors explain much: a smaller last ridge is better (the wide
	// log of the validation sweep, smaller).
	full, _, err := data.Synth(data.SynthOptions{Users: 4000, Items: 200, Ratings: 200000, Rank: 5, Bias: true, Noise: 0.5, Scale: "0.5-5", Skew: 0.5}, rand.NewPCG(10, 10))
	if err != nil {
		t.Fatal(err)
	}
	perm := rand.New(rand.NewPCG(42, 0)).Perm(full.NNZ())
	test := full.Subset(perm[:full.NNZ()/10])
	train := full.Subset(perm[full.NNZ()/10:])
	o := userOpts(k)
	o.RatingMin, o.RatingMax, o.Epsilon = 0.5, 5, 30
	st, err := BoundForUnit(train, &o)
	if err != nil {
		t.Fatal(err)
	}
	run := func(oo *PrivateOptions, tweak func(*alsPrivateParams)) (*decomposition.Model, *perturb.Report) {
		t.Helper()
		return trainUserALS(t, st, R, oo, tweak)
	}
	oo := o
	oo.Noise = perturb.SeededNoise(1)
	got := map[string][][]float64{}
	oo.probe = probeInto(got)
	m, rep := run(&oo, nil)
	if len(got[alsRidgeWhat]) != 1 {
		t.Fatalf("%d ridge selections released; notes %q", len(got[alsRidgeWhat]), rep.Notes)
	}
	// Sensitivity, on fixed candidate rows (they are post-processing of
	// the steps' releases, so the selection is analysed given them).
	c := BiasResidualClip * o.ratingRange()
	by := alsUsers(st)
	held := alsHeldOut(st, by)
	for u := 1500; u < len(by); u++ {
		by[u] = nil // a part of the log keeps the check short
	}
	cands := ALSRidgeCandidates()
	rows := make([][]float64, len(cands))
	for j := range rows {
		rows[j] = slices.Clone(m.Factors[1])
		for i := range rows[j] {
			rows[j][i] *= 1 + 0.3*float64(j) // distinct candidates
		}
	}
	pen := decomposition.FoldPenalties{Row: ALSPrivateFoldRow, PerRating: ALSPrivateReg, Bucket: BiasBucketPenalty}
	D := ALSRidgeClip * c * c
	base, users, err := heldOutLossDiffs(st, by, held, m, rows, &o, pen, D)
	if err != nil {
		t.Fatal(err)
	}
	if users < 50 {
		t.Fatalf("%d held-out users scored", users)
	}
	// The statistic is a sum of per-user vectors: removing a user
	// removes theirs. Each held-out user's is within the bound, and every
	// other user's is zero.
	bound := alsRidgeSensitivity(len(cands), c)
	worst := 0.0
	sum := make([]float64, len(base))
	for u := range by {
		if len(by[u]) == 0 {
			continue
		}
		one := make([][]int, len(by))
		one[u] = by[u]
		vec, _, err := heldOutLossDiffs(st, one, held, m, rows, &o, pen, D)
		if err != nil {
			t.Fatal(err)
		}
		var d float64
		for j, v := range vec {
			d += v * v
			sum[j] += v
		}
		d = math.Sqrt(d)
		if !held[u] && d != 0 {
			t.Fatalf("user %d is not held out but moves the statistic by %v", u, d)
		}
		if d > bound*(1+1e-12) {
			t.Fatalf("held-out user %d moves the statistic by %v > %v", u, d, bound)
		}
		worst = math.Max(worst, d)
	}
	if worst == 0 {
		t.Fatal("no held-out user moves the statistic")
	}
	for j := range base {
		if math.Abs(sum[j]-base[j]) > 1e-9*(1+math.Abs(base[j])) {
			t.Fatalf("the per-user vectors sum to %v, the statistic is %v", sum, base)
		}
	}
	var rel *perturb.Release
	var steps perturb.Release
	for i, r := range rep.Releases {
		switch r.What {
		case alsRidgeWhat:
			rel = &rep.Releases[i]
		case alsStatsWhat:
			steps = r
		}
	}
	if rel == nil {
		t.Fatalf("the report lists no ridge selection: %+v", rep.Releases)
	}
	// Its noise follows the steps': ALSRidgeShare of the two's mu^2.
	muSel2 := math.Pow(rel.Sensitivity/rel.Scale, 2)
	muSteps2 := float64(steps.Count) * math.Pow(steps.Sensitivity/steps.Scale, 2)
	if got := muSel2 / (muSel2 + muSteps2); math.Abs(got-ALSRidgeShare) > 1e-9 {
		t.Fatalf("the selection has %v of the steps' and its mu^2, want %v", got, ALSRidgeShare)
	}
	if rep.Epsilon > o.Epsilon*(1+1e-9) || rep.Epsilon < 0.98*o.Epsilon {
		t.Fatalf("epsilon spent %v, budget %v", rep.Epsilon, o.Epsilon)
	}
	if bad := rep.Check(); len(bad) > 0 {
		t.Fatalf("the report does not check: %q", bad)
	}
	notes := strings.Join(rep.Notes, "\n")
	if !strings.Contains(notes, "item ridge (user unit): chosen on held-out users") {
		t.Fatalf("the report does not state the selection: %q", rep.Notes)
	}
	// The gain: on this log the chosen ridge beats the fixed default's
	// model.
	with, err := FoldInRMSE(m, train, test, BillboardFoldFor(rep))
	if err != nil {
		t.Fatal(err)
	}
	o0 := o
	o0.Noise = perturb.SeededNoise(1)
	m0, rep0 := run(&o0, func(p *alsPrivateParams) { p.ridgeOff = true })
	without, err := FoldInRMSE(m0, train, test, BillboardFoldFor(rep0))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("fold-in RMSE with the ridge chosen %.4f, the fixed ridge %.4f", with, without)
	if with > without-0.01 {
		t.Fatalf("the chosen ridge scores %.4f against the fixed ridge's %.4f: no gain", with, without)
	}
}

// TestChooseRidgeNoise: the selection's release has the variance its
// Gaussian plans, and the choice is the smallest noisy sum (the first
// candidate, 0, when every difference is positive).
func TestChooseRidgeNoise(t *testing.T) {
	t.Parallel()
	o := userOpts(5)
	cands := ALSRidgeCandidates()
	const c, sigma = 1.5, 0.7
	nt := newNoiseTally()
	zero := make([]float64, len(cands)-1)
	var note string
	for seed := uint64(0); seed < 500; seed++ {
		oo := o
		oo.Noise = perturb.SeededNoise(seed)
		got := map[string][][]float64{}
		oo.probe = probeInto(got)
		_, n, err := chooseRidge(zero, cands, sigma, &oo, c)
		if err != nil {
			t.Fatal(err)
		}
		note = n
		nt.add(t, alsRidgeWhat, got[alsRidgeWhat][0], zero)
	}
	rep := &perturb.Report{Releases: []perturb.Release{alsRidgeRelease(len(cands), c, sigma)}}
	nt.check(t, "ridge selection", rep, alsRidgeWhat)
	if !strings.Contains(note, "chosen") {
		t.Fatalf("note %q", note)
	}
	// Clear differences: the candidate with the smallest sum wins.
	for want := 0; want < len(cands); want++ {
		stat := make([]float64, len(cands)-1)
		for j := range stat {
			stat[j] = 50
		}
		if want > 0 {
			stat[want-1] = -50
		}
		best, _, err := chooseRidge(stat, cands, 0.01, &o, c)
		if err != nil {
			t.Fatal(err)
		}
		if best != want {
			t.Fatalf("sums %v: chose %d, want %d", stat, best, want)
		}
	}
}
