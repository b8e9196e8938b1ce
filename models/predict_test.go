package models

import (
	"errors"
	"math"
	"slices"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
)

func ptr(t int64) *int64 { return &t }

// dayTime returns a Unix time inside dense bucket k of testFile's bucketing.
func dayTime(k int) int64 {
	return time.Date(2020, 1, 1, 12, 0, 0, 0, time.UTC).Unix() + int64(k)*86400
}

func TestPredictKnownMatchesModel(t *testing.T) {
	t.Parallel()
	for _, kind := range []decomposition.Kind{decomposition.CP, decomposition.Tucker} {
		for _, bias := range []bool{true, false} {
			ranks := []int{3}
			if kind == decomposition.Tucker {
				ranks = []int{3, 2, 4}
			}
			f := testFile(t, kind, []int{5, 6, 4}, ranks, bias, 11)
			f.Model.ClampLo, f.Model.ClampHi = -100, 100
			p := NewPredictor(f)
			for u := 0; u < 5; u++ {
				for j := 0; j < 6; j++ {
					for k := 0; k < 4; k++ {
						got, fb := p.Predict(strconv.Itoa(100+3*u), "i"+strconv.Itoa(j), ptr(dayTime(k)))
						want := f.Model.Predict([]int32{int32(u), int32(j), int32(k)})
						if fb != FallbackNone || math.Abs(got-want) > 1e-12 {
							t.Fatalf("%s bias=%v (%d,%d,%d): got %v (%v), want %v", kind, bias, u, j, k, got, fb, want)
						}
					}
				}
			}
		}
	}
}

func TestPredictFallbacks(t *testing.T) {
	f := testFile(t, decomposition.CP, []int{3, 4, 3}, []int{2}, true, 12)
	f.Model.ClampLo, f.Model.ClampHi = -100, 100
	m := f.Model
	p := NewPredictor(f)
	k1 := ptr(dayTime(1))
	// Unknown user: mean + item bias + time bias, no multilinear term.
	got, fb := p.Predict("999", "i2", k1)
	if want := m.Mean + m.Bias[1][2] + m.Bias[2][1]; fb != UnknownUser || math.Abs(got-want) > 1e-12 {
		t.Errorf("unknown user: %v %v, want %v", got, fb, want)
	}
	got, fb = p.Predict("103", "nope", k1)
	if want := m.Mean + m.Bias[0][1] + m.Bias[2][1] + m.Pairs[0].Value([]int32{1, 0, 1}); fb != UnknownItem || math.Abs(got-want) > 1e-12 {
		t.Errorf("unknown item: %v %v, want %v", got, fb, want)
	}
	got, fb = p.Predict("x", "y", k1)
	if want := m.Mean + m.Bias[2][1]; fb != UnknownUser|UnknownItem || math.Abs(got-want) > 1e-12 || fb.String() != "unknown-user+unknown-item" {
		t.Errorf("unknown both: %v %v, want %v", got, fb, want)
	}
	if _, _, err := p.PredictStrict("999", "i2", k1); !errors.Is(err, ErrUnknownID) {
		t.Errorf("strict unknown user: %v", err)
	}
	if _, _, err := p.PredictStrict("103", "zz", k1); !errors.Is(err, ErrUnknownID) {
		t.Errorf("strict unknown item: %v", err)
	}
	if v, _, err := p.PredictStrict("103", "i2", k1); err != nil || math.Abs(v-m.Predict([]int32{1, 2, 1})) > 1e-12 {
		t.Errorf("strict known: %v %v", v, err)
	}
	// Far future: last bucket, flagged.
	got, fb = p.Predict("103", "i2", ptr(dayTime(500)))
	if want := m.Predict([]int32{1, 2, 2}); fb != TimeClamped || math.Abs(got-want) > 1e-12 {
		t.Errorf("future: %v %v, want %v", got, fb, want)
	}
	// No time: the average over buckets of the predictions.
	got, fb = p.Predict("103", "i2", nil)
	want := 0.0
	for k := 0; k < 3; k++ {
		want += m.Predict([]int32{1, 2, int32(k)}) / 3
	}
	if fb != TimeAveraged || math.Abs(got-want) > 1e-12 {
		t.Errorf("no time: %v %v, want %v", got, fb, want)
	}
	// Clamp.
	m.ClampLo, m.ClampHi = 1, 1.5
	for _, u := range []string{"100", "103", "zz"} {
		if v, _ := p.Predict(u, "i1", k1); v < 1 || v > 1.5 {
			t.Errorf("prediction %v outside the clamp range", v)
		}
	}
	// Model without biases: unknown ids give the training mean, not 0.
	g := testFile(t, decomposition.CP, []int{3, 4}, []int{2}, false, 13)
	if v, fb := NewPredictor(g).Predict("nobody", "i1", nil); v != 3.25 || fb != UnknownUser {
		t.Errorf("no-bias fallback %v %v, want training mean 3.25", v, fb)
	}
}

// brute ranks all items of user u at bucket k by the model's raw value.
func brute(f *File, u, k int, n int, ex []int32) []int32 {
	m := f.Model
	type sc struct {
		j int32
		s float64
	}
	var all []sc
	for j := 0; j < m.Dims[1]; j++ {
		if slices.Contains(ex, int32(j)) {
			continue
		}
		idx := []int32{int32(u), int32(j)}
		if m.Order() == 3 {
			idx = append(idx, int32(k))
		}
		all = append(all, sc{int32(j), m.Raw(idx)})
	}
	sort.SliceStable(all, func(a, b int) bool { return all[a].s > all[b].s })
	var out []int32
	for _, x := range all[:min(n, len(all))] {
		out = append(out, x.j)
	}
	return out
}

func items(rs []Scored) []int32 {
	var out []int32
	for _, r := range rs {
		out = append(out, r.Item)
	}
	return out
}

func TestRecommendMatchesBruteForce(t *testing.T) {
	t.Parallel()
	for _, kind := range []decomposition.Kind{decomposition.CP, decomposition.Tucker} {
		ranks := []int{3}
		if kind == decomposition.Tucker {
			ranks = []int{2, 3, 2}
		}
		f := testFile(t, kind, []int{130, 40, 3}, ranks, true, 14)
		p := NewPredictor(f)
		ex := []int32{1, 5, 7}
		for u := 0; u < 130; u += 7 {
			got, fb := p.Recommend(strconv.Itoa(100+3*u), ptr(dayTime(2)), 5, ex)
			if fb != FallbackNone || !slices.Equal(items(got), brute(f, u, 2, 5, ex)) {
				t.Fatalf("%s user %d: %v, want %v", kind, u, items(got), brute(f, u, 2, 5, ex))
			}
			for i, r := range got {
				if r.ID != "i"+strconv.Itoa(int(r.Item)) || r.Rating != f.Model.Clamp(r.Score) || (i > 0 && r.Score > got[i-1].Score) {
					t.Fatalf("bad entry %+v", r)
				}
			}
		}
		// RecommendAll agrees with Recommend for every user, for any thread count.
		ref := map[int32][]int32{}
		for _, th := range []int{1, 3} {
			next := int32(0)
			err := p.RecommendAll(4, ptr(dayTime(0)), th, nil, func(u int32, recs []Scored) error {
				if u != next {
					t.Fatalf("user %d emitted out of order (want %d)", u, next)
				}
				next++
				want := brute(f, int(u), 0, 4, nil)
				if !slices.Equal(items(recs), want) {
					t.Fatalf("threads %d user %d: %v, want %v", th, u, items(recs), want)
				}
				if th == 1 {
					ref[u] = items(recs)
				}
				return nil
			})
			if err != nil || next != 130 {
				t.Fatalf("RecommendAll: %v after %d users", err, next)
			}
		}
	}
}

func TestRecommendUnknownUserAndExclusions(t *testing.T) {
	f := testFile(t, decomposition.CP, []int{4, 6}, []int{2}, true, 15)
	p := NewPredictor(f)
	recs, fb := p.Recommend("stranger", nil, 3, nil)
	if fb != UnknownUser || len(recs) != 3 {
		t.Fatalf("%v %v", recs, fb)
	}
	// Popularity by item bias.
	b := f.Model.Bias[1]
	for i := 1; i < len(recs); i++ {
		if b[recs[i].Item] > b[recs[i-1].Item] {
			t.Errorf("unknown-user list not ordered by item bias: %v", items(recs))
		}
	}
	// Exclusions built from a store with its own dictionaries.
	ud, _ := data.DictFromInts("u", []int64{103, 5555})
	id, _ := data.DictFromStrings("i", []string{"i4", "i0", "zz"})
	s := &data.Store{Dims: []int{2, 3}, Idx: [][]int32{{0, 0, 1, 0}, {0, 1, 0, 2}}, Val: []float64{1, 2, 3, 4}, Dicts: []*data.Dict{ud, id}}
	e, err := p.NewExclusions(s)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(e.Items(1), []int32{0, 4}) || len(e.Items(0)) != 0 || e.Unmatched != 2 {
		t.Fatalf("exclusions %v %v unmatched %d", e.Items(1), e.Items(0), e.Unmatched)
	}
	recs, _ = p.Recommend("103", nil, 6, e.Items(1))
	if len(recs) != 4 || slices.Contains(items(recs), 0) || slices.Contains(items(recs), 4) {
		t.Errorf("excluded items recommended: %v", items(recs))
	}
	if r, _ := p.Recommend("103", nil, 0, nil); r != nil {
		t.Error("n=0 returned items")
	}
}

// TestConcurrentUse runs predictions and recommendations from many
// goroutines on one Predictor (go test -race checks there is no race).
func TestConcurrentUse(t *testing.T) {
	f := testFile(t, decomposition.Tucker, []int{20, 30, 3}, []int{2, 2, 2}, true, 16)
	p := NewPredictor(f)
	want, _ := p.Recommend("103", nil, 5, nil)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				p.Predict("100", "i3", ptr(dayTime(i%3)))
				got, _ := p.Recommend("103", nil, 5, nil)
				if !slices.Equal(items(got), items(want)) {
					t.Error("concurrent Recommend differs")
					return
				}
			}
		}()
	}
	p.RecommendAll(3, nil, 2, nil, func(int32, []Scored) error { return nil })
	wg.Wait()
}

func TestEvaluate(t *testing.T) {
	f := testFile(t, decomposition.CP, []int{3, 5}, []int{2}, true, 17)
	f.Model.ClampLo, f.Model.ClampHi = -100, 100
	p := NewPredictor(f)
	// Test log with its own dictionaries: users 100 (model 0), 106 (model 2)
	// and 777 (unknown); items i0..i4 in a different order and "new".
	ud, _ := data.DictFromInts("u", []int64{106, 100, 777})
	id, _ := data.DictFromStrings("i", []string{"i3", "i1", "new", "i0"})
	test := &data.Store{Dims: []int{3, 4},
		Idx:   [][]int32{{0, 0, 1, 1, 2}, {0, 2, 1, 3, 0}},
		Val:   []float64{5, 4, 2, 4.5, 5},
		Dicts: []*data.Dict{ud, id}}
	res, err := Evaluate(p, test, EvalOptions{K: 2, Threshold: 4})
	if err != nil {
		t.Fatal(err)
	}
	// Independent accuracy computation through Predict.
	var se, ae float64
	fbs := map[string]int{}
	for e, x := range test.Val {
		y, fb := p.Predict(ud.String(test.Idx[0][e]), id.String(test.Idx[1][e]), nil)
		se += (x - y) * (x - y)
		ae += math.Abs(x - y)
		fbs[fb.String()]++
	}
	if math.Abs(res.RMSE-math.Sqrt(se/5)) > 1e-12 || math.Abs(res.MAE-ae/5) > 1e-12 || res.N != 5 {
		t.Errorf("accuracy %+v, want rmse %v mae %v", res, math.Sqrt(se/5), ae/5)
	}
	for k, v := range fbs {
		if res.Fallbacks[k] != v {
			t.Errorf("fallbacks %v, want %v", res.Fallbacks, fbs)
		}
	}
	// Ranking: user 106 (model 2) has relevant {i3, new}; user 100 (model
	// 0) has relevant {i0}; user 777 is skipped.
	if res.RankedUsers != 2 || res.SkippedUsers != 1 {
		t.Fatalf("ranked %d skipped %d", res.RankedUsers, res.SkippedUsers)
	}
	var prec, rec, ndcg float64
	for _, c := range []struct {
		u   int
		rel []int32
		nr  int
	}{{2, []int32{3}, 2}, {0, []int32{0}, 1}} {
		top := brute(f, c.u, 0, 2, nil)
		hits, dcg := 0.0, 0.0
		for r, j := range top {
			if slices.Contains(c.rel, j) {
				hits++
				dcg += 1 / math.Log2(float64(r+2))
			}
		}
		idcg := 0.0
		for r := 0; r < min(2, c.nr); r++ {
			idcg += 1 / math.Log2(float64(r+2))
		}
		prec += hits / 2 / 2
		rec += hits / float64(c.nr) / 2
		ndcg += dcg / idcg / 2
	}
	if math.Abs(res.Precision-prec) > 1e-12 || math.Abs(res.Recall-rec) > 1e-12 || math.Abs(res.NDCG-ndcg) > 1e-12 {
		t.Errorf("ranking %v %v %v, want %v %v %v", res.Precision, res.Recall, res.NDCG, prec, rec, ndcg)
	}
	// Excluding training items changes the ranking pool.
	train := &data.Store{Dims: []int{1, 1}, Idx: [][]int32{{0}, {0}}, Val: []float64{3},
		Dicts: []*data.Dict{mustInts(100), mustStrs(items2(brute(f, 0, 0, 1, nil))[0])}}
	res2, err := Evaluate(p, test, EvalOptions{K: 2, Threshold: 4, Train: train})
	if err != nil || res2.ExcludedTrain != 1 {
		t.Fatalf("%v %+v", err, res2)
	}
}

func mustInts(ids ...int64) *data.Dict  { d, _ := data.DictFromInts("u", ids); return d }
func mustStrs(ids ...string) *data.Dict { d, _ := data.DictFromStrings("i", ids); return d }
func items2(js []int32) (out []string) {
	for _, j := range js {
		out = append(out, "i"+strconv.Itoa(int(j)))
	}
	return out
}
