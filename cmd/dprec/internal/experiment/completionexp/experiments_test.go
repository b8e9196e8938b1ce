package completionexp

import (
	"math/rand/v2"
	"testing"

	"github.com/dprec/dprec/decomposition"
)

// TestCompletionSynthetic: with most cells observed the fitted model
// recovers the noiseless tensor far better than the trivial zero estimate
// (recovery error 1), and the held-out RMSE approaches the noise level
// sigma; with few cells it does worse.
func TestCompletionSynthetic(t *testing.T) {
	for _, k := range []decomposition.Kind{decomposition.CP, decomposition.Tucker} {
		rows, err := CompletionSynthetic(SyntheticConfig{Kind: k, Fractions: []float64{0.05, 0.8}, Seeds: 2}, rand.NewPCG(1, 1), nil)
		if err != nil {
			t.Fatal(err)
		}
		sum := SummarizeSynthetic(rows)
		if len(rows) != 4 || len(sum) != 2 || sum[1].Runs != 2 {
			t.Fatalf("%d rows, %d summaries", len(rows), len(sum))
		}
		hi := sum[1]
		if hi.Recovery > 0.5 || hi.TestRMSE > 1.3*hi.Sigma {
			t.Errorf("%s at 80%%: recovery %.3f, test RMSE %.3f (sigma %.3f)", k, hi.Recovery, hi.TestRMSE, hi.Sigma)
		}
		if !(sum[0].Recovery > hi.Recovery) {
			t.Errorf("%s: recovery %.3f at 5%% not worse than %.3f at 80%%", k, sum[0].Recovery, hi.Recovery)
		}
	}
	if _, err := CompletionSynthetic(SyntheticConfig{Fractions: []float64{1.5}}, rand.NewPCG(1, 1), nil); err == nil {
		t.Error("fraction 1.5 accepted")
	}
}

// TestCompletionSpeed: one row per thread count, with positive timings.
func TestCompletionSpeed(t *testing.T) {
	rows, err := CompletionSpeed(SpeedConfig{Sizes: []SpeedSize{{Name: "tiny", Dims: []int{50, 40, 30}, NNZ: 3000}}, Threads: []int{1, 2}, Epochs: 2}, rand.NewPCG(1, 1), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[1].Threads != 2 || !(rows[0].SecondsPerEpoch > 0) || rows[0].EntriesPerSecond <= 0 {
		t.Errorf("speed rows %+v", rows)
	}
}
