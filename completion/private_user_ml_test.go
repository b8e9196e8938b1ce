package completion

import (
	"encoding/csv"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/perturb"
)

// mlCatalogue reads ml-latest-small's movies.csv (the public catalogue of
// the log: every movie id it lists, rated or not) as an item dictionary.
func mlCatalogue(t testing.TB) *data.Dict {
	t.Helper()
	f, err := os.Open(filepath.Join(filepath.Dir(mlPath), "movies.csv"))
	if err != nil {
		t.Skipf("MovieLens catalogue not available: %v", err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, r := range recs[1:] {
		id, err := strconv.ParseInt(r[0], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	d, err := data.DictFromInts("movieId", ids)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// userLevelFitScore restricts fit and score to the domain, bounds fit's
// users to k ratings (one per item), trains mode ("bias" or "als") under
// the user unit into a model with one placeholder user row, and scores
// score by fold-in from each user's whole (unbounded) part of fit.
func userLevelFitScore(t testing.TB, mode string, fit, score *data.Store, dom UserDomain, o *PrivateOptions, seed uint64) float64 {
	t.Helper()
	fr, _, err := RestrictToDomain(fit, dom)
	if err != nil {
		t.Fatal(err)
	}
	sr, _, err := RestrictToDomain(score, dom)
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := BoundUserContributions(fr, o.MaxRatingsPerUser, rand.NewPCG(seed, 77))
	if err != nil {
		t.Fatal(err)
	}
	dims := append([]int{1}, fr.Dims[1:]...)
	rank := 1
	if mode == "als" {
		rank = alsPrivateTestRank
	}
	m, err := decomposition.NewModel(decomposition.CP, dims, []int{rank}, true)
	if err != nil {
		t.Fatal(err)
	}
	// The log before the bound, as dprec train hands it over: the
	// weighted item counts and sums and private ALS's co-occurrence read it.
	oo := *o
	oo.Unbounded = fr
	var rep *perturb.Report
	if mode == "als" {
		rep, err = TrainPrivateALS(b, m, &oo)
	} else {
		rep, err = TrainPrivateBias(b, m, &oo)
	}
	if err != nil {
		t.Fatal(err)
	}
	got, err := FoldInRMSE(m, fr, sr, BillboardFoldFor(rep))
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestMovieLensPrivateUser measures the add/remove-one-user modes on
// ml-latest-small (random 90/10 split, seed 42; user x movie x day, the
// public time range the data set documents), item domain = movies.csv
// (public catalogue), k = 100, delta
// 1e-5: fit on the 90% and score the 10% by fold-in from each test user's
// own training ratings; validation figures fit on 85.5% and score 4.5%.
// Set DPREC_ML_PRIVATE=1:
//
//	DPREC_ML_PRIVATE=1 go test -run TestMovieLensPrivateUser -v ./completion/
//
// It fails if epsilon 1 (bias mode) scores above the issue-11 target 0.95
// (0.9142 measured with the users' day biases folded in; 0.9373 with no
// time mode) or any run scores worse than the global mean (1.047).
func TestMovieLensPrivateUser(t *testing.T) {
	if os.Getenv("DPREC_ML_PRIVATE") == "" {
		t.Skip("set DPREC_ML_PRIVATE=1 to run")
	}
	train, valid, test := movieLensSplit(t, data.TimeDay)
	all := data.Concat(train, valid)
	dom := UserDomain{Items: mlCatalogue(t)}
	// The public time range: the collection period the data set's README
	// documents (1996-03-29 to 2018-09-24), as `dprec train --time-from
	// 1996-03-29 --time-to 2018-09-25` would give it.
	tr, err := TimeRange(data.TimeDay, 827971200, 1537833600)
	if err != nil {
		t.Fatal(err)
	}
	dom.Time = tr
	for _, mode := range []string{"bias", "als"} {
		for _, eps := range []float64{0.1, 1, 10} {
			var sum, sumV float64
			const reps = 3
			for rep := 0; rep < reps; rep++ {
				o := &PrivateOptions{Epsilon: eps, Delta: 1e-5, RatingMin: 0.5, RatingMax: 5, Unit: UnitUser, MaxRatingsPerUser: 100, Noise: perturb.SeededNoise(uint64(rep))}
				got := userLevelFitScore(t, mode, all, test, dom, o, uint64(rep))
				sum += got
				sumV += userLevelFitScore(t, mode, train, valid, dom, o, uint64(rep))
				if got > 1.047 {
					t.Errorf("%s epsilon %g draw %d: test RMSE %.4f worse than the global mean", mode, eps, rep, got)
				}
			}
			t.Logf("user level k=100 %s epsilon %g: test RMSE %.4f (valid %.4f), mean of %d draws", mode, eps, sum/reps, sumV/reps, reps)
			if mode == "bias" && eps == 1 && sum/reps > 0.95 {
				t.Errorf("epsilon 1: test RMSE %.4f above the target 0.95", sum/reps)
			}
		}
	}
	// Laplace instead of the default Gaussian (l1 sensitivities k times,
	// not sqrt(k) times, the per-rating ones).
	var lap float64
	for rep := 0; rep < 3; rep++ {
		o := &PrivateOptions{Epsilon: 1, Delta: 1e-5, RatingMin: 0.5, RatingMax: 5, Unit: UnitUser, MaxRatingsPerUser: 100, Mechanism: perturb.MechLaplace, Noise: perturb.SeededNoise(uint64(rep))}
		lap += userLevelFitScore(t, "bias", train, valid, dom, o, uint64(rep)) / 3
	}
	t.Logf("user level k=100 bias epsilon 1 laplace: valid %.4f, mean of 3 draws", lap)
	// No catalogue: the items are selected privately (epsilon 0.1 and
	// delta 5e-6 of the total, as `dprec train` does by default), the bias
	// mode gets the rest. The RMSE covers only the test ratings of kept
	// items (the others are unknown items to the model), so it is not
	// comparable with the catalogue figures above.
	for _, eps := range []float64{1, 10, 30} {
		o := &PrivateOptions{Epsilon: eps * (1 - 0.1), Delta: 5e-6, RatingMin: 0.5, RatingMax: 5, Unit: UnitUser, MaxRatingsPerUser: 100, Noise: perturb.SeededNoise(1), SelectedItems: true}
		fr, _, err := RestrictToDomain(all, UserDomain{Items: all.Dicts[1], Time: tr})
		if err != nil {
			t.Fatal(err)
		}
		b, err := BoundForUnit(fr, o)
		if err != nil {
			t.Fatal(err)
		}
		sel, err := SelectItems(b, 100, perturb.Budget{Epsilon: 0.1 * eps, Delta: 5e-6}, o.Noise)
		if errors.Is(err, ErrDomain) {
			// 610 users are too few: no item's weight clears the
			// threshold (the CLI then asks for --items).
			t.Logf("user level k=100 bias epsilon %g with private item selection: %v", eps, err)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		o.Scalars = b // the scalars over the bounded log before the selection (dprec train passes its own bounded log)
		got := userLevelFitScore(t, "bias", all, test, UserDomain{Items: sel.Items, Time: tr}, o, 1)
		covered, _, _ := RestrictToDomain(test, UserDomain{Items: sel.Items, Time: tr})
		t.Logf("user level k=100 bias epsilon %g with private item selection: %d items kept (threshold %.1f), test RMSE %.4f on the %d test ratings (of %d) of kept items", eps, sel.Items.Len(), sel.Threshold, got, covered.NNZ(), test.NNZ())
		if got > 1.047 {
			t.Errorf("selection epsilon %g: test RMSE %.4f worse than the global mean", eps, got)
		}
	}
}
