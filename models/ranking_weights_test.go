package models

import (
	"strings"
	"testing"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/perturb"
)

// rankingWeightsFile is a private billboard rating model (zero user rows)
// of 3 users x 5 items with ranking weights: item 0's row points at item
// 3, item 1's at item 4.
func rankingWeightsFile(t *testing.T) *File {
	t.Helper()
	f := testFile(t, decomposition.CP, []int{3, 5}, []int{2}, true, 1)
	clear(f.Model.Factors[0])
	clear(f.Model.Bias[0])
	f.Privacy = &perturb.Report{Mode: "als", Epsilon: 1, Billboard: true}
	f.Header.Data = f.Header.Data.Public()
	w, err := NewItemWeights(5, []int64{0, 1, 2, 2, 2, 2}, []int32{3, 4}, []float64{1, 2})
	if err != nil {
		t.Fatal(err)
	}
	f.Weights = w
	return f
}

// TestRankingWeights: a private rating model with ranking weights saves
// and loads (format version 3, no seen items), predicts from its factors,
// ranks a user given by a history with the weights (RecommendRow and a
// fold-in Evaluate), and ranks with the factors without a history.
func TestRankingWeights(t *testing.T) {
	f := rankingWeightsFile(t)
	g, err := decode(encode(t, f))
	if err != nil {
		t.Fatal(err)
	}
	if !g.RankingWeights() || g.ItemItem() || g.Seen != nil || g.Header.Version != FormatVersion {
		t.Fatalf("round trip: ranking %v item-item %v seen %v version %d", g.RankingWeights(), g.ItemItem(), g.Seen != nil, g.Header.Version)
	}
	p := NewPredictor(g)
	// Predictions: the factor model's (the weights do not touch them).
	row := Row{Factor: []float64{0.5, -1}, Bias: 0.2, Items: []int32{1}}
	want, _ := NewPredictor(testFileNoWeights(t, f)).PredictRow(Row{Factor: row.Factor, Bias: row.Bias}, "i2", nil)
	if got, _ := p.PredictRow(row, "i2", nil); got != want {
		t.Fatalf("prediction %v, the factor model's %v", got, want)
	}
	// Lists of a user with history {1}: item 4 first (weight 2).
	recs, _ := p.RecommendRow(row, nil, 1, []int32{1})
	if len(recs) != 1 || recs[0].ID != "i4" {
		t.Fatalf("history {1}: %v, want i4 first", recs)
	}
	if want, _ := p.PredictRow(row, "i4", nil); recs[0].Score != 2 || recs[0].Rating != want {
		t.Fatalf("history {1}: score %v rating %v, want the weight 2 and the prediction %v", recs[0].Score, recs[0].Rating, want)
	}
	row.Items = []int32{0}
	if recs, _ = p.RecommendRow(row, nil, 1, []int32{0}); len(recs) != 1 || recs[0].ID != "i3" {
		t.Fatalf("history {0}: %v, want i3 first", recs)
	}
	// Similar items by the weights' rows; similar users by the (zero)
	// user rows: an error, never a crash on the missing seen items.
	if nb, err := p.SimilarItems("i0", 1); err != nil || len(nb) != 1 {
		t.Fatalf("similar items: %v %v", nb, err)
	}
	if _, err := p.SimilarUsers("100", 1); err == nil {
		t.Fatal("similar users of a billboard model: want the zero-embedding error")
	}
	// Evaluate with fold-in: user 100 rated item 0 in training and item
	// 3 (relevant) in the test: the weights rank i3 first.
	ud := mustInts(100)
	train := &data.Store{Dims: []int{1, 5}, Idx: [][]int32{{0}, {0}}, Val: []float64{4}, Dicts: []*data.Dict{ud, g.Dicts[1]}}
	test := &data.Store{Dims: []int{1, 5}, Idx: [][]int32{{0}, {3}}, Val: []float64{5}, Dicts: []*data.Dict{ud, g.Dicts[1]}}
	pen := decomposition.FoldPenalties{Row: 1}
	res, err := Evaluate(p, test, EvalOptions{K: 1, Threshold: 4, Train: train, Fold: &pen})
	if err != nil {
		t.Fatal(err)
	}
	if res.RankMetrics.NDCG != 1 {
		t.Fatalf("NDCG@1 %v: the weights should rank i3 first", res.RankMetrics.NDCG)
	}
	// Without weights the same fold-in ranks by the factors.
	h := testFileNoWeights(t, f)
	res2, err := Evaluate(NewPredictor(h), test, EvalOptions{K: 1, Threshold: 4, Train: train, Fold: &pen})
	if err != nil {
		t.Fatal(err)
	}
	if res2.RMSE != res.RMSE {
		t.Fatalf("RMSE %v with weights, %v without: predictions must not change", res.RMSE, res2.RMSE)
	}
}

func testFileNoWeights(t *testing.T, f *File) *File {
	g := *f
	g.Weights = nil
	return &g
}

// TestRankingWeightsRefused: only a private billboard model carries
// ranking weights, never with seen items.
func TestRankingWeightsRefused(t *testing.T) {
	f := rankingWeightsFile(t)
	f.Privacy = nil
	if err := Write(&strings.Builder{}, f); err == nil || !strings.Contains(err.Error(), "billboard") {
		t.Fatalf("non-private model with ranking weights: %v", err)
	}
	f = rankingWeightsFile(t)
	f.Privacy = &perturb.Report{Mode: "gradient", Epsilon: 1}
	if err := Write(&strings.Builder{}, f); err == nil || !strings.Contains(err.Error(), "billboard") {
		t.Fatalf("non-billboard private model with ranking weights: %v", err)
	}
	f = rankingWeightsFile(t)
	f.Weights, _ = NewItemWeights(4, []int64{0, 0, 0, 0, 0}, nil, nil)
	if err := Write(&strings.Builder{}, f); err == nil || !strings.Contains(err.Error(), "items") {
		t.Fatalf("weights over the wrong catalogue: %v", err)
	}
}
