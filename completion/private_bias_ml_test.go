package completion

import (
	"os"
	"testing"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/perturb"
)

// TestMovieLensPrivateBias measures the bias mode on ml-latest-small
// (random 90/10 split, seed 42, day buckets as the CLI's default, as
// movieLensSplit): the model is fitted on the whole 90% and scored on the
// 10% under the billboard model (each test user's bias and day biases
// solved from that user's training ratings, FoldInRMSE with
// BillboardFold). Every setting follows the public rules of
// private_bias.go; the validation figures (fit on 85.5%, score 4.5%) are
// the ones the rules were checked on. Set DPREC_ML_PRIVATE=1 (a few
// seconds):
//
//	DPREC_ML_PRIVATE=1 go test -run TestMovieLensPrivateBias -v ./completion/
//
// It fails if epsilon 1 misses the issue-11 target 0.88 (0.8640 measured
// with the user's day biases, 0.8813 without), if epsilon 10 is not within
// 0.01 of the same estimate without noise (0.8509 against 0.8505), or if
// any epsilon scores worse than the global mean (1.047).
func TestMovieLensPrivateBias(t *testing.T) {
	if os.Getenv("DPREC_ML_PRIVATE") == "" {
		t.Skip("set DPREC_ML_PRIVATE=1 to run")
	}
	train, valid, test := movieLensSplit(t, data.TimeDay)
	all := data.Concat(train, valid)
	np := &PrivateOptions{Epsilon: 1, RatingMin: 0.5, RatingMax: 5}
	exact := noiselessBias(t, all, test, np)
	t.Logf("bias mode without noise (the non-private model with the same settings): test RMSE %.4f (valid %.4f)", exact, noiselessBias(t, train, valid, np))
	// The per-user time split (each user's latest ratings are the test
	// part): test days are mostly days without training ratings, so the
	// users' day biases matter much less there.
	{
		ttr, tva, tte := movieLensTimeSplit(t, data.TimeDay)
		tall := data.Concat(ttr, tva)
		for _, fold := range []decomposition.FoldPenalties{BillboardFold(), {Row: BiasUserPenalty}} {
			var sum float64
			for rep := 0; rep < 5; rep++ {
				o := &PrivateOptions{Epsilon: 1, Delta: 1e-5, RatingMin: 0.5, RatingMax: 5, Noise: perturb.SeededNoise(uint64(rep))}
				m, err := decomposition.NewModel(decomposition.CP, tall.Dims, []int{1}, true)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := TrainPrivateBias(tall, m, o); err != nil {
					t.Fatal(err)
				}
				got, err := FoldInRMSE(m, tall, tte, fold)
				if err != nil {
					t.Fatal(err)
				}
				sum += got / 5
			}
			t.Logf("bias mode laplace epsilon 1, per-user time split, day-bias penalty %g: test RMSE %.4f, mean of 5 noise draws", fold.Bucket, sum)
		}
	}
	for _, mech := range []string{"laplace", "gaussian"} {
		for _, eps := range []float64{0.1, 0.5, 1, 2, 5, 10} {
			var sum, sumV float64
			const reps = 5
			for rep := 0; rep < reps; rep++ {
				o := &PrivateOptions{Epsilon: eps, Delta: 1e-5, RatingMin: 0.5, RatingMax: 5, Mechanism: mech, Noise: perturb.SeededNoise(uint64(rep))}
				got := fitScoreBias(t, all, test, o)
				sum += got
				sumV += fitScoreBias(t, train, valid, o)
				if got > 1.047 {
					t.Errorf("%s epsilon %g draw %d: test RMSE %.4f worse than the global mean", mech, eps, rep, got)
				}
			}
			t.Logf("bias mode %s epsilon %g: test RMSE %.4f (valid %.4f), mean of %d noise draws", mech, eps, sum/reps, sumV/reps, reps)
			if eps == 10 && sum/reps > exact+0.01 {
				t.Errorf("%s epsilon 10: test RMSE %.4f not within 0.01 of the noiseless model's %.4f", mech, sum/reps, exact)
			}
			if mech == "laplace" && eps == 1 && sum/reps > 0.88 {
				t.Errorf("epsilon 1: test RMSE %.4f above the issue-11 target 0.88 (measured 0.8640 when written)", sum/reps)
			}
		}
	}
}

func fitScoreBias(t *testing.T, train, test *data.Store, o *PrivateOptions) float64 {
	t.Helper()
	m, err := decomposition.NewModel(decomposition.CP, train.Dims, []int{1}, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := TrainPrivateBias(train, m, o); err != nil {
		t.Fatal(err)
	}
	got, err := FoldInRMSE(m, train, test, BillboardFold())
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// noiselessBias is the bias mode's estimate without noise (exact mean and
// residual sums, v = 0, the same prior, clipping and fold-in), scored like
// fitScoreBias: the non-private model with the same settings.
func noiselessBias(t *testing.T, train, test *data.Store, o *PrivateOptions) float64 {
	t.Helper()
	m, err := decomposition.NewModel(decomposition.CP, train.Dims, []int{1}, true)
	if err != nil {
		t.Fatal(err)
	}
	total, counts := biasTotal(train, o)
	mu := total / float64(train.NNZ())
	f := &biasFit{o: *o}
	for _, n := range counts {
		f.counts = append(f.counts, float64(n))
	}
	f.setItemBiases(m, mu, biasResidualSums(train, o, mu), 0)
	got, err := FoldInRMSE(m, train, test, BillboardFold())
	if err != nil {
		t.Fatal(err)
	}
	return got
}
