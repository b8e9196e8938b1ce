package dprec

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/dprec/dprec/completion"
	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/models"
	"github.com/dprec/dprec/perturb"
)

// TestTrainDeltaWarning: an entry-level delta not below 1/n is warned
// about; a small one, a pure run, a user-level run and a non-private one
// are not.
func TestTrainDeltaWarning(t *testing.T) {
	for _, tc := range []struct {
		r    *perturb.Report
		n    int
		warn bool
	}{
		{&perturb.Report{Mode: "als", Unit: "entry", Delta: 0.5}, 100, true},
		{&perturb.Report{Mode: "als", Unit: "entry", Delta: 0.01}, 100, true},
		{&perturb.Report{Mode: "als", Unit: "entry", Delta: 0.009}, 100, false},
		{&perturb.Report{Mode: "bias", Unit: "entry"}, 100, false},
		{&perturb.Report{Mode: "bias", Unit: "user", Delta: 0.5}, 100, false},
		{&perturb.Report{Mode: "none"}, 100, false},
		{nil, 100, false},
	} {
		if got := deltaWarning(tc.r, tc.n) != ""; got != tc.warn {
			t.Errorf("%+v, n %d: warned %v, want %v", tc.r, tc.n, got, tc.warn)
		}
	}
}

// TestTuneRankingRanksAsEval: a ranking tune of a rating model scores the
// lists dprec eval gives by default (relevance), not the raw prediction's:
// its one point's score is the NDCG@10 of that ranking on the same
// hold-out, which differs from the prediction's on this log.
func TestTuneRankingRanksAsEval(t *testing.T) {
	st, _, err := data.Synth(data.SynthOptions{Users: 60, Items: 40, Ratings: 1500, Rank: 2, Bias: true, Noise: 0.5, Scale: "1-5", Skew: 0.8}, rand.NewPCG(4, 4))
	if err != nil {
		t.Fatal(err)
	}
	metric, err := ParseMetric("ndcg@10")
	if err != nil {
		t.Fatal(err)
	}
	grid, err := ParseGrid("rank=3", ObjectiveRating)
	if err != nil {
		t.Fatal(err)
	}
	o := &TuneOptions{Base: Options{Objective: ObjectiveRating, Seed: 5, Seeded: true,
		Settings: completion.Settings{Solver: completion.SolverALS, Epochs: 3, Threads: 1}}, Grid: grid, Metric: metric, Threshold: 3.5}
	pts, err := TuneRanking(context.Background(), st, o)
	if err != nil || len(pts) != 1 || pts[0].Err != "" {
		t.Fatalf("tune: %v %+v", err, pts)
	}
	// The same hold-out and run as TuneRanking's.
	rng := rand.New(rand.NewPCG(o.Base.Seed, pcgStream))
	gridPoints(o.Grid, o.Random, rng)
	tr, va, err := perUserHoldOut(st, 0.1, rng)
	if err != nil {
		t.Fatal(err)
	}
	opts, err := o.Options(pts[0].Values)
	if err != nil {
		t.Fatal(err)
	}
	opts.Validation, opts.Privacy, opts.Events = -1, nil, Events{}
	opts.Seed, opts.Seeded = rng.Uint64(), true
	res, err := Train(context.Background(), tr, "validation training part", &opts)
	if err != nil {
		t.Fatal(err)
	}
	eo := models.EvalOptions{K: 10, Threshold: 3.5, Train: tr, Threads: 1}
	rel, err := models.Evaluate(models.NewPredictor(res.File()).WithRanking(models.RankRelevance, models.DefaultShrinkage), va, eo)
	if err != nil {
		t.Fatal(err)
	}
	pred, err := models.Evaluate(models.NewPredictor(res.File()), va, eo)
	if err != nil {
		t.Fatal(err)
	}
	if pts[0].Score != rel.NDCG {
		t.Errorf("tune score %v, want the relevance ranking's NDCG@10 %v (prediction's: %v)", pts[0].Score, rel.NDCG, pred.NDCG)
	}
	if rel.NDCG == pred.NDCG {
		t.Errorf("relevance and prediction rankings score alike (%v): the test cannot tell them apart", rel.NDCG)
	}
}

// TestPrepareUserLevelUnbounded: a user-level als run hands private ALS
// the log before the contribution bound (completion.PrivateOptions
// .Unbounded) on the training store's item domain, the catalogue's or the
// private selection's, with every rating of each user in it, for the bias
// mode (its weighted item counts and sums) as for private ALS.
func TestPrepareUserLevelUnbounded(t *testing.T) {
	const users, items, per, k = 300, 40, 20, 5
	r := rand.New(rand.NewPCG(5, 6))
	st := &data.Store{Dims: []int{users, items}, Idx: make([][]int32, 2), Dicts: make([]*data.Dict, 2)}
	st.Dicts[0], st.Dicts[1] = data.NewIntDict("user"), data.NewIntDict("item")
	for u := 0; u < users; u++ {
		st.Dicts[0].InternInt(int64(u + 1))
	}
	for i := 0; i < items; i++ {
		st.Dicts[1].InternInt(int64(i + 1))
	}
	for u := 0; u < users; u++ {
		// The first 30 items are popular; the last 10 have one rating
		// each, which the private selection drops.
		rated := r.Perm(30)[:per]
		if u < 10 {
			rated = append(rated, 30+u)
		}
		for _, i := range rated {
			st.Idx[0] = append(st.Idx[0], int32(u))
			st.Idx[1] = append(st.Idx[1], int32(i))
			st.Val = append(st.Val, float64(1+r.IntN(5)))
		}
	}
	catalogue := st.Dicts[1]
	for _, tc := range []struct {
		name  string
		mode  PrivacyMode
		items *data.Dict
	}{
		{"als, catalogue", PrivacyALS, catalogue},
		{"als, private selection", PrivacyALS, nil},
		{"bias, catalogue", PrivacyBias, catalogue},
		{"bias, private selection", PrivacyBias, nil},
	} {
		po := completion.PrivateOptions{Epsilon: 20, Delta: 1e-5, RatingMin: 1, RatingMax: 5, Unit: completion.UnitUser, MaxRatingsPerUser: k, Noise: perturb.SeededNoise(1)}
		o := &Options{Privacy: &Privacy{Mode: tc.mode, Items: tc.items, PrivateOptions: po}}
		ul, err := prepareUserLevel(st, o, &po)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		u := po.Unbounded
		if u == nil {
			t.Fatalf("%s: no unbounded store", tc.name)
		}
		if u.Dims[1] != ul.store.Dims[1] || !u.Dicts[1].Equal(ul.store.Dicts[1]) {
			t.Fatalf("%s: unbounded store over %d items, training store over %d (same dictionary: %v)", tc.name, u.Dims[1], ul.store.Dims[1], u.Dicts[1].Equal(ul.store.Dicts[1]))
		}
		if tc.items == nil && ul.store.Dims[1] == items {
			t.Fatalf("%s: the selection kept every item: the test does not reach the restriction", tc.name)
		}
		// Every user's ratings on the domain's items, where the bound
		// keeps k.
		n := map[int32]int{}
		for _, v := range u.Idx[0] {
			n[v]++
		}
		above := false
		for _, c := range n {
			above = above || c > k
		}
		if !above || u.NNZ() <= ul.store.NNZ() {
			t.Fatalf("%s: no user has more than k = %d ratings in the unbounded store (%d ratings, the training store %d)", tc.name, k, u.NNZ(), ul.store.NNZ())
		}
	}
}
