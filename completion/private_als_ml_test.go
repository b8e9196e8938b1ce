package completion

import (
	"os"
	"testing"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/perturb"
)

// TestMovieLensPrivateALS measures private ALS (entry level, delta 1e-5)
// on ml-latest-small like TestMovieLensPrivateBias (fit on the 90%, score
// the 10% by fold-in; validation figures from the 85.5/4.5 split). Set
// DPREC_ML_PRIVATE=1:
//
//	DPREC_ML_PRIVATE=1 go test -run TestMovieLensPrivateALS -v ./completion/
//
// It fails if any run scores worse than the global mean (1.047).
func TestMovieLensPrivateALS(t *testing.T) {
	if os.Getenv("DPREC_ML_PRIVATE") == "" {
		t.Skip("set DPREC_ML_PRIVATE=1 to run")
	}
	train, valid, test := movieLensSplit(t, data.TimeDay)
	all := data.Concat(train, valid)
	for _, eps := range []float64{0.1, 0.5, 1, 2, 5, 10} {
		var sum, sumV float64
		const reps = 2
		for rep := 0; rep < reps; rep++ {
			o := &PrivateOptions{Epsilon: eps, Delta: 1e-5, RatingMin: 0.5, RatingMax: 5, Noise: perturb.SeededNoise(uint64(rep))}
			got := fitScoreALS(t, all, test, o)
			sum += got
			sumV += fitScoreALS(t, train, valid, o)
			if got > 1.047 {
				t.Errorf("epsilon %g draw %d: test RMSE %.4f worse than the global mean", eps, rep, got)
			}
		}
		t.Logf("private ALS epsilon %g: test RMSE %.4f (valid %.4f), mean of %d noise draws", eps, sum/reps, sumV/reps, reps)
	}
}

func fitScoreALS(t *testing.T, train, test *data.Store, o *PrivateOptions) float64 {
	t.Helper()
	m, err := decomposition.NewModel(decomposition.CP, train.Dims, []int{alsPrivateTestRank}, true)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := TrainPrivateALS(train, m, o)
	if err != nil {
		t.Fatal(err)
	}
	got, err := FoldInRMSE(m, train, test, BillboardFoldFor(rep))
	if err != nil {
		t.Fatal(err)
	}
	return got
}

const alsPrivateTestRank = 5
