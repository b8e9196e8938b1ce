package models

import (
	"math"
	"testing"
	"time"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
)

// TestEvaluateFold: a fold-in evaluation predicts each test user from the
// row decomposition.FoldInUser solves from that user's own training
// ratings (with their day biases), never from the model's user rows; a
// user with no training ratings is unknown; it needs the training log.
func TestEvaluateFold(t *testing.T) {
	f := testFile(t, decomposition.CP, []int{3, 5, 4}, []int{2}, true, 5)
	f.Model.Pairs = nil
	f.Model.ClampLo, f.Model.ClampHi = -100, 100
	p := NewPredictor(f)
	day := func(k int) int64 { return time.Date(2020, 1, 1+k, 12, 0, 0, 0, time.UTC).Unix() }
	// Training log: user 100 rated i1 (day 0) and i3 (days 0 and 2); user
	// 555, unknown to the model, rated i2 (day 1); "zz" is unknown.
	ud := mustInts(100, 555)
	id, _ := data.DictFromStrings("i", []string{"i1", "i3", "i2", "zz"})
	train := &data.Store{Dims: []int{2, 4}, Idx: [][]int32{{0, 0, 0, 1, 1}, {0, 1, 1, 2, 3}},
		Val: []float64{5, 1, 4, 4.5, 2}, Timestamps: []int64{day(0), day(0), day(2), day(1), day(1)},
		Dicts: []*data.Dict{ud, id}}
	// Test log: 100 and 555 on their training days and another, 106 (known
	// to the model, no training ratings).
	tud := mustInts(555, 100, 106)
	tid, _ := data.DictFromStrings("i", []string{"i0", "i4"})
	test := &data.Store{Dims: []int{3, 2}, Idx: [][]int32{{1, 1, 0, 2}, {0, 1, 1, 0}},
		Val: []float64{4, 5, 4.5, 4}, Timestamps: []int64{day(0), day(3), day(1), day(0)},
		Dicts: []*data.Dict{tud, tid}}
	pen := decomposition.FoldPenalties{Row: 2, Bucket: 3}
	if _, err := Evaluate(p, test, EvalOptions{Fold: &pen}); err == nil {
		t.Fatal("fold-in evaluation without a training log accepted")
	}
	res, err := Evaluate(p, test, EvalOptions{K: 2, Threshold: 4, Train: train, Fold: &pen})
	if err != nil {
		t.Fatal(err)
	}
	m := f.Model
	u100, err := decomposition.FoldInUser(m, []int32{1, 3, 3}, []int32{0, 0, 2}, []float64{5, 1, 4}, pen)
	if err != nil {
		t.Fatal(err)
	}
	u555, err := decomposition.FoldInUser(m, []int32{2}, []int32{1}, []float64{4.5}, pen)
	if err != nil {
		t.Fatal(err)
	}
	w := m.NewWork()
	want := []float64{
		m.PredictFoldedUser(u100, []int32{0, 0, 0}, w),
		m.PredictFoldedUser(u100, []int32{0, 4, 3}, w),
		m.PredictFoldedUser(u555, []int32{0, 4, 1}, w),
		m.Mean + m.Bias[1][0] + m.Bias[2][0], // 106: no training ratings, unknown user
	}
	var se float64
	for e, x := range test.Val {
		se += (x - want[e]) * (x - want[e])
	}
	if got := math.Sqrt(se / 4); math.Abs(res.RMSE-got) > 1e-9 {
		t.Errorf("fold-in RMSE %.12g, want %.12g", res.RMSE, got)
	}
	if res.Fallbacks["unknown-user"] != 1 {
		t.Errorf("fallbacks %v: want one unknown user (106 has no training ratings)", res.Fallbacks)
	}
	// 100 and 555 have relevant items and are folded in; 106 is skipped.
	if res.RankedUsers != 2 || res.SkippedUsers != 1 {
		t.Errorf("ranked %d skipped %d, want 2 and 1", res.RankedUsers, res.SkippedUsers)
	}
	// The model's own user rows are never read: changing them changes nothing.
	for i := range m.Factors[0] {
		m.Factors[0][i] += 7
	}
	for i := range m.Bias[0] {
		m.Bias[0][i] -= 3
	}
	res2, err := Evaluate(NewPredictor(f), test, EvalOptions{K: 2, Threshold: 4, Train: train, Fold: &pen})
	if err != nil || res2.RMSE != res.RMSE || res2.NDCG != res.NDCG {
		t.Errorf("fold-in evaluation read the model's user rows: %v %v vs %v", err, res2, res)
	}
}

// TestTrainSupport: distinct training users per model item; repeated
// (user, item) pairs count once and unknown items (-1) not at all.
func TestTrainSupport(t *testing.T) {
	train := &data.Store{Dims: []int{3, 3}, Idx: [][]int32{{0, 0, 1, 2, 2, 1}, {0, 0, 0, 1, 2, 2}}, Val: make([]float64, 6)}
	got := trainSupport(train, []int32{1, 0, -1}, 2)
	if want := []int{1, 2}; got[0] != want[0] || got[1] != want[1] {
		t.Errorf("support %v, want %v", got, want)
	}
}

// TestEvaluateFoldClamps: a training rating beyond the model's range is
// clamped to it before the fold-in, as predict's fold-in and training do:
// a 50 on a [0.5, 5] model scores as a 5.
func TestEvaluateFoldClamps(t *testing.T) {
	f := testFile(t, decomposition.CP, []int{3, 5, 4}, []int{2}, true, 5)
	f.Model.Pairs = nil
	f.Model.ClampLo, f.Model.ClampHi = 0.5, 5
	p := NewPredictor(f)
	day := time.Date(2020, 1, 1, 12, 0, 0, 0, time.UTC).Unix()
	ud := mustInts(100)
	id, _ := data.DictFromStrings("i", []string{"i1", "i3"})
	test := &data.Store{Dims: []int{1, 1}, Idx: [][]int32{{0}, {0}}, Val: []float64{4}, Timestamps: []int64{day},
		Dicts: []*data.Dict{ud, mustDict(t, "i0")}}
	pen := decomposition.FoldPenalties{Row: 2, Bucket: 3}
	rmse := func(v float64) float64 {
		train := &data.Store{Dims: []int{1, 2}, Idx: [][]int32{{0, 0}, {0, 1}}, Val: []float64{v, 3},
			Timestamps: []int64{day, day}, Dicts: []*data.Dict{ud, id}}
		res, err := Evaluate(p, test, EvalOptions{Train: train, Fold: &pen})
		if err != nil {
			t.Fatal(err)
		}
		return res.RMSE
	}
	if a, b := rmse(50), rmse(5); a != b {
		t.Errorf("fold-in from a training 50: RMSE %v, from a 5: %v", a, b)
	}
}

func mustDict(t *testing.T, s ...string) *data.Dict {
	t.Helper()
	d, err := data.DictFromStrings("i", s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
