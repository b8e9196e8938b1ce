package models

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"

	"github.com/dprec/dprec/data"
)

// EvalOptions configure Evaluate.
type EvalOptions struct {
	// K is the cut-off of the ranking metrics; zero means 10.
	K int
	// Threshold is the relevance threshold: a test item is relevant to its
	// user when its test rating is >= Threshold.
	Threshold float64
	// Train, when set, is the training log: the items a user rated there
	// are removed from that user's ranking (they cannot be recommended).
	Train *data.Store
	// Threads bounds parallelism of the ranking; zero means GOMAXPROCS.
	Threads int
}

// EvalResult holds the accuracy and ranking metrics of a model on a test
// log (definitions in the package doc).
type EvalResult struct {
	// N is the number of test ratings; RMSE and MAE are over all of them,
	// fallbacks included.
	N    int     `json:"n"`
	RMSE float64 `json:"rmse"`
	MAE  float64 `json:"mae"`
	// Fallbacks counts the test ratings by fallback (Fallback.String()).
	Fallbacks map[string]int `json:"fallbacks"`
	// K and Threshold are the ranking settings used.
	K         int     `json:"k"`
	Threshold float64 `json:"threshold"`
	// RankedUsers is the number of users the ranking metrics average over:
	// test users known to the model with at least one relevant test item.
	RankedUsers int `json:"ranked_users"`
	// SkippedUsers counts test users with a relevant item whom the model
	// does not know (no ranking is possible for them).
	SkippedUsers int     `json:"skipped_users"`
	Precision    float64 `json:"precision_at_k"`
	Recall       float64 `json:"recall_at_k"`
	NDCG         float64 `json:"ndcg_at_k"`
	// ExcludedTrain is the number of training ratings removed from the
	// rankings (0 without a training log).
	ExcludedTrain int `json:"excluded_train"`
}

// Evaluate scores the model on a test log, mapping the test's users and
// items to the model by external id (the test store has its own
// dictionaries) and its times through the model's time bucketing.
func Evaluate(p *Predictor, test *data.Store, opt EvalOptions) (*EvalResult, error) {
	if test == nil || test.NNZ() == 0 {
		return nil, errors.New("models: empty test set")
	}
	if len(test.Dicts) < 2 || test.Dicts[0] == nil || test.Dicts[1] == nil {
		return nil, errors.New("models: the test store has no user and item dictionaries")
	}
	if math.IsNaN(opt.Threshold) || math.IsInf(opt.Threshold, 0) {
		return nil, fmt.Errorf("models: relevance threshold %v is not finite", opt.Threshold)
	}
	k := opt.K
	if k == 0 {
		k = 10
	}
	if k < 0 {
		return nil, fmt.Errorf("models: cut-off k=%d must be positive", k)
	}
	res := &EvalResult{N: test.NNZ(), K: k, Threshold: opt.Threshold, Fallbacks: map[string]int{}}
	umap := mapDict(test.Dicts[0], p.users)
	imap := mapDict(test.Dicts[1], p.items)
	timeOf := func(e int) *int64 {
		switch {
		case test.Timestamps != nil:
			t := test.Timestamps[e]
			return &t
		case test.Time != nil && len(test.Idx) > 2:
			t := test.Time.Start(test.Idx[2][e])
			return &t
		}
		return nil
	}
	// Accuracy over every test rating.
	var se, ae float64
	for e, x := range test.Val {
		u, j := umap[test.Idx[0][e]], imap[test.Idx[1][e]]
		q := p.userQuery(u, u >= 0, timeOf(e))
		var y float64
		fb := q.fb
		if j < 0 {
			y = p.m.Clamp(p.itemless(&q))
			fb |= UnknownItem
		} else {
			y = p.m.Clamp(p.raw(&q, j))
		}
		res.Fallbacks[fb.String()]++
		d := x - y
		se += d * d
		ae += math.Abs(d)
	}
	res.RMSE = math.Sqrt(se / float64(res.N))
	res.MAE = ae / float64(res.N)

	// Ranking: group the relevant test items by test user.
	type user struct {
		u        int32   // model index, -1 unknown
		rel      []int32 // relevant items (test indices, distinct after sorting)
		lastTime *int64
	}
	byUser := map[int32]*user{}
	for e, x := range test.Val {
		tu := test.Idx[0][e]
		us := byUser[tu]
		if us == nil {
			us = &user{u: umap[tu]}
			byUser[tu] = us
		}
		if t := timeOf(e); t != nil && (us.lastTime == nil || *t > *us.lastTime) {
			us.lastTime = t
		}
		if x >= opt.Threshold {
			us.rel = append(us.rel, test.Idx[1][e])
		}
	}
	var ranked []*user
	for _, us := range byUser {
		if len(us.rel) == 0 {
			continue
		}
		if us.u < 0 {
			res.SkippedUsers++
			continue
		}
		slices.Sort(us.rel)
		us.rel = slices.Compact(us.rel)
		ranked = append(ranked, us)
	}
	slices.SortFunc(ranked, func(a, b *user) int { return int(a.u) - int(b.u) })
	var excl *Exclusions
	if opt.Train != nil {
		var err error
		if excl, err = p.NewExclusions(opt.Train); err != nil {
			return nil, err
		}
		res.ExcludedTrain = len(excl.items)
	}
	threads := opt.Threads
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	type metrics struct{ prec, rec, ndcg float64 }
	out := make([]metrics, len(ranked))
	var wg sync.WaitGroup
	for w := 0; w < threads; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			h := newTopN(min(k, p.m.Dims[1]))
			for i := w; i < len(ranked); i += threads {
				us := ranked[i]
				q := p.userQuery(us.u, true, us.lastTime)
				p.scan(&q, &h, excl.Items(us.u))
				top := p.sorted(&h)
				rel := make(map[int32]bool, len(us.rel))
				for _, tj := range us.rel {
					if j := imap[tj]; j >= 0 {
						rel[j] = true
					}
				}
				var hits, dcg float64
				for r, s := range top {
					if rel[s.Item] {
						hits++
						dcg += 1 / math.Log2(float64(r+2))
					}
				}
				var idcg float64
				for r := 0; r < min(k, len(us.rel)); r++ {
					idcg += 1 / math.Log2(float64(r+2))
				}
				out[i] = metrics{hits / float64(k), hits / float64(len(us.rel)), dcg / idcg}
			}
		}(w)
	}
	wg.Wait()
	res.RankedUsers = len(ranked)
	for _, m := range out {
		res.Precision += m.prec
		res.Recall += m.rec
		res.NDCG += m.ndcg
	}
	if n := float64(len(ranked)); n > 0 {
		res.Precision /= n
		res.Recall /= n
		res.NDCG /= n
	}
	return res, nil
}
