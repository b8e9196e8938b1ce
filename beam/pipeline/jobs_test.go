package pipeline

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/apache/arrow/go/v15/parquet/file"
	"github.com/apache/arrow/go/v15/parquet/pqarrow"

	"github.com/dprec/dprec/completion"
	"github.com/dprec/dprec/models"
)

// trainedSynth trains the synthetic log's model (with seen items).
func trainedSynth(t *testing.T) (model, test string, f *models.File) {
	t.Helper()
	dir := t.TempDir()
	writeSynth(t, dir)
	// Train on one shard, test on the other.
	model = filepath.Join(t.TempDir(), "m.arrow")
	res, err := Train(context.Background(), TrainOptions{Data: filepath.Join(dir, "part-a.tsv"), Rank: 3, Seed: 9, Seen: true,
		Settings: completion.Settings{Epochs: 2}, Out: model})
	if err != nil {
		t.Fatal(err)
	}
	return model, filepath.Join(dir, "part-b.tsv"), res.File
}

func relClose(a, b float64) bool {
	return a == b || math.Abs(a-b) <= 1e-12*max(math.Abs(a), math.Abs(b))
}

// TestEvalAndRecommendMatchModels: eval's combined blocks give
// models.Evaluate's figures on the whole test log (up to summation
// order), and recommend --all-users writes Predictor.RecommendAll's lists.
func TestEvalAndRecommendMatchModels(t *testing.T) {
	model, whole, f := trainedSynth(t)
	ctx := context.Background()
	opt := EvalOptions{Model: model, Data: whole, K: 5, Threshold: 3.5, Shrinkage: models.DefaultShrinkage, Blocks: 3}
	got, err := Eval(ctx, opt)
	if err != nil {
		t.Fatal(err)
	}
	p := models.NewPredictor(f).WithShrinkage(models.DefaultShrinkage)
	want, err := models.Evaluate(p, loadTSV(t, whole), models.EvalOptions{K: 5, Threshold: 3.5})
	if err != nil {
		t.Fatal(err)
	}
	if got.N != want.N || got.RankedUsers != want.RankedUsers {
		t.Fatalf("n %d ranked %d, want %d %d", got.N, got.RankedUsers, want.N, want.RankedUsers)
	}
	for _, c := range []struct {
		name      string
		got, want float64
	}{{"RMSE", got.RMSE, want.RMSE}, {"MAE", got.MAE, want.MAE}, {"NDCG", got.NDCG, want.NDCG},
		{"precision", got.Precision, want.Precision}, {"recall", got.Recall, want.Recall}, {"MAP", got.MAP, want.MAP}} {
		if !relClose(c.got, c.want) {
			t.Errorf("%s %.17g, models.Evaluate %.17g", c.name, c.got, c.want)
		}
	}
	t.Logf("eval: RMSE %.6f NDCG@5 %.6f over %d users", got.RMSE, got.NDCG, got.RankedUsers)
	if got.Ranking != models.RankRelevance || want.Ranking != models.RankRelevance {
		t.Errorf("default ranking %q (models.Evaluate: %q), want relevance", got.Ranking, want.Ranking)
	}
	// --ranking credibility: the pipeline ranks as the library does.
	opt.Ranking = models.RankCredibility
	cred, err := Eval(ctx, opt)
	if err != nil {
		t.Fatal(err)
	}
	wantCred, err := models.Evaluate(models.NewPredictor(f).WithRanking(models.RankCredibility, models.DefaultShrinkage), loadTSV(t, whole), models.EvalOptions{K: 5, Threshold: 3.5})
	if err != nil {
		t.Fatal(err)
	}
	if cred.Ranking != models.RankCredibility || !relClose(cred.NDCG, wantCred.NDCG) || !relClose(cred.MAP, wantCred.MAP) {
		t.Errorf("credibility: ranking %q NDCG %.17g MAP %.17g, models.Evaluate NDCG %.17g MAP %.17g", cred.Ranking, cred.NDCG, cred.MAP, wantCred.NDCG, wantCred.MAP)
	}

	checkRecommendAll(t, model, f, "", p)
	// --ranking prediction: the pipeline's lists follow the library's.
	checkRecommendAll(t, model, f, models.RankPrediction, models.NewPredictor(f).WithRanking(models.RankPrediction, models.DefaultShrinkage))
}

// checkRecommendAll runs RecommendAll with ranking r (and the default
// shrinkage) and checks its lists against p.RecommendAll's.
func checkRecommendAll(t *testing.T, model string, f *models.File, r models.Ranking, p *models.Predictor) {
	t.Helper()
	ctx := context.Background()
	out := t.TempDir()
	if err := RecommendAll(ctx, RecommendOptions{Model: model, Out: out, N: 4, Blocks: 3, Ranking: r, Shrinkage: models.DefaultShrinkage}); err != nil {
		t.Fatal(err)
	}
	type rec struct {
		item  int64
		score float64
	}
	lists := map[string][]rec{}
	files, _ := filepath.Glob(filepath.Join(out, "part-*.parquet"))
	if len(files) != 3 {
		t.Fatalf("%d output files, want 3", len(files))
	}
	for _, name := range files {
		rdr, err := file.OpenParquetFile(name, false)
		if err != nil {
			t.Fatal(err)
		}
		fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
		if err != nil {
			t.Fatal(err)
		}
		tbl, err := fr.ReadTable(ctx)
		if err != nil {
			t.Fatal(err)
		}
		tr := array.NewTableReader(tbl, 1024)
		for tr.Next() {
			r := tr.Record()
			us, rk := r.Column(0).(*array.String), r.Column(1).(*array.Int32)
			it, sc := r.Column(2).(*array.Int64), r.Column(3).(*array.Float64)
			for i := 0; i < int(r.NumRows()); i++ {
				u := us.Value(i)
				if int(rk.Value(i)) != len(lists[u])+1 {
					t.Fatalf("user %s: rank %d after %d rows", u, rk.Value(i), len(lists[u]))
				}
				lists[u] = append(lists[u], rec{it.Value(i), sc.Value(i)})
			}
		}
		tr.Release()
		tbl.Release()
		rdr.Close()
	}
	users := 0
	err := p.RecommendAll(4, nil, 1, f.Seen, func(u int32, recs []models.Scored) error {
		users++
		gotL := lists[p.UserID(u)]
		if len(gotL) != len(recs) {
			t.Fatalf("user %s: %d recommendations, want %d", p.UserID(u), len(gotL), len(recs))
		}
		for i, r := range recs {
			// Recommend scans one user, RecommendAll blocks of users: the
			// scores may differ in the last bits, the lists may not.
			if gotL[i].item != mustInt(t, r.ID) || !relClose(gotL[i].score, r.Rating) {
				t.Fatalf("user %s rank %d: item %d score %v, want %s %v", p.UserID(u), i+1, gotL[i].item, gotL[i].score, r.ID, r.Rating)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if users != len(lists) {
		t.Fatalf("%d users in the output, model has %d", len(lists), users)
	}
}

func mustInt(t *testing.T, s string) int64 {
	var v int64
	for _, c := range s {
		if c < '0' || c > '9' {
			t.Fatalf("item ID %q is not an integer", s)
		}
		v = v*10 + int64(c-'0')
	}
	return v
}

// TestTrainValidation: a validation log is scored after every sweep and
// early stopping keeps the best sweep.
func TestTrainValidation(t *testing.T) {
	dir := t.TempDir()
	writeSynth(t, dir)
	res, err := Train(context.Background(), TrainOptions{Data: filepath.Join(dir, "part-a.tsv"), Validation: filepath.Join(dir, "part-b.tsv"),
		Rank: 3, Seed: 2, Settings: completion.Settings{Epochs: 3, Patience: 1}})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res.History {
		if !(r.ValidRMSE > 0 && r.ValidRMSE < 5) {
			t.Fatalf("sweep %d: validation RMSE %v", r.Epoch, r.ValidRMSE)
		}
	}
	if res.BestEpoch < 1 || res.BestEpoch > len(res.History) {
		t.Fatalf("best epoch %d of %d", res.BestEpoch, len(res.History))
	}
	t.Logf("history %+v, best %d", res.History, res.BestEpoch)
}
