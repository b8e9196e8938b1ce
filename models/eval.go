package models

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
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
	// Time is the Unix time the rankings are computed at; nil averages
	// over the trained period, as recommend does without --time, so eval
	// scores the lists users receive.
	Time *int64
	// IncludeSeen keeps the model's stored seen items (its users' training
	// items) in the rankings; by default they are left out, as recommend
	// does.
	IncludeSeen bool
	// Fold, when set, evaluates a billboard model (one that releases no
	// user rows, such as the private bias and als modes): every test user
	// is folded into the frozen model from their own ratings in Train
	// (decomposition.FoldInUser with these penalties), and those rows, not
	// the model's, predict and rank for the user. Train is required; a
	// test user without training ratings of known items is an unknown
	// user.
	Fold *decomposition.FoldPenalties
	// FoldRow, when set with Fold, solves a test user's row instead of
	// decomposition.FoldInUser: from the model items of the user's
	// training events and their values (the implicit objective's fold-in,
	// which the models package cannot call itself).
	FoldRow func(items []int32, values []float64) (Row, error)
	// PopularityCounts, when set, replaces the training support of the
	// most-popular baseline (EvalResult.Popularity): items are ranked by
	// these per-item counts, indexed like the model's items (one per
	// item), ties by index. A private model's released item counts
	// (perturb.Report.ItemCounts) give the private most-popular list.
	PopularityCounts []float64
}

// RankMetrics are the ranking metrics of one list source (definitions in
// the package doc), averaged over the ranked users.
type RankMetrics struct {
	Precision float64 `json:"precision_at_k"`
	Recall    float64 `json:"recall_at_k"`
	NDCG      float64 `json:"ndcg_at_k"`
	MAP       float64 `json:"map_at_k"`
	// Distinct is the number of distinct items in the ranked users' top-k
	// lists; Coverage is Distinct over the model's number of items.
	Distinct int     `json:"distinct_items"`
	Coverage float64 `json:"coverage"`
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
	// Ranking is how the lists were ranked (Predictor.Ranking).
	Ranking Ranking `json:"ranking"`
	// RankedUsers is the number of users the ranking metrics average over:
	// test users known to the model with at least one relevant test item.
	RankedUsers int `json:"ranked_users"`
	// SkippedUsers counts test users with a relevant item whom the model
	// does not know (no ranking is possible for them).
	SkippedUsers int `json:"skipped_users"`
	// The model's ranking metrics.
	RankMetrics
	// Catalogue is the number of items of the model.
	Catalogue int `json:"catalogue"`
	// Popularity are the same metrics for the most-popular baseline: every
	// user gets the items with the most distinct training users (the
	// model's seen items, else the Train log), minus the same excluded
	// items. nil when neither is available.
	Popularity *RankMetrics `json:"popularity,omitempty"`
	// ExcludedTrain is the number of training ratings removed from the
	// rankings (0 without a training log); ExcludedSeen the number of the
	// model's stored seen (user, item) pairs removed.
	ExcludedTrain int `json:"excluded_train"`
	ExcludedSeen  int `json:"excluded_seen"`
}

// Evaluate scores the model on a test log, mapping the test's users and
// items to the model by external id (the test store has its own
// dictionaries) and its times through the model's time bucketing.
func Evaluate(p *Predictor, test *data.Store, opt EvalOptions) (*EvalResult, error) {
	k, err := evalCheck(test, opt)
	if err != nil {
		return nil, err
	}
	if c := opt.PopularityCounts; c != nil && len(c) != p.m.Dims[1] {
		return nil, fmt.Errorf("models: %d popularity counts for a model of %d items", len(c), p.m.Dims[1])
	}
	res := &EvalResult{N: test.NNZ(), K: k, Threshold: opt.Threshold, Ranking: p.Ranking(), Fallbacks: map[string]int{}}
	umap := mapDict(test.Dicts[0], p.users)
	imap := mapDict(test.Dicts[1], p.items)
	var folded []*foldedUser
	if opt.Fold != nil {
		if opt.Train == nil {
			return nil, errors.New("models: a fold-in evaluation needs the training log (each user is folded in from their own ratings)")
		}
		if folded, err = foldUsers(p, test, opt.Train, *opt.Fold, opt.FoldRow); err != nil {
			return nil, err
		}
	}
	evalAccuracy(p, test, umap, imap, folded, res)

	ranked := evalRankedUsers(test, umap, folded, opt.Threshold, res)
	var excl, trainEx *Exclusions
	if seen := p.f.Seen; seen != nil && !opt.IncludeSeen {
		excl = seen
		res.ExcludedSeen = seen.Pairs()
	}
	if opt.Train != nil {
		if trainEx, err = p.NewExclusions(opt.Train); err != nil {
			return nil, err
		}
		res.ExcludedTrain = len(trainEx.items)
		excl = excl.Union(trainEx)
	}
	// Popularity: distinct training users per item.
	var popOrder []int32
	switch {
	case opt.PopularityCounts != nil:
		popOrder = popularityOrder(opt.PopularityCounts)
	case p.f.Seen != nil:
		popOrder = popularityOrder(p.f.Seen.Support(p.m.Dims[1]))
	case folded != nil:
		popOrder = popularityOrder(trainSupport(opt.Train, mapDict(opt.Train.Dicts[1], p.items), p.m.Dims[1]))
	case trainEx != nil:
		popOrder = popularityOrder(trainEx.Support(p.m.Dims[1]))
	}
	J := p.m.Dims[1]
	res.Catalogue = J
	out := evalRank(p, ranked, imap, excl, popOrder, k, opt)
	res.RankedUsers = len(ranked)
	var pop RankMetrics
	seenM, seenB := make([]bool, J), make([]bool, J)
	for _, l := range out {
		res.RankMetrics.add(l.m, l.model, seenM)
		pop.add(l.b, l.pop, seenB)
	}
	res.RankMetrics.finish(len(ranked), J)
	if popOrder != nil {
		pop.finish(len(ranked), J)
		res.Popularity = &pop
	}
	return res, nil
}

// evalCheck validates the arguments of Evaluate and returns the cut-off.
func evalCheck(test *data.Store, opt EvalOptions) (int, error) {
	if test == nil || test.NNZ() == 0 {
		return 0, errors.New("models: empty test set")
	}
	if len(test.Dicts) < 2 || test.Dicts[0] == nil || test.Dicts[1] == nil {
		return 0, errors.New("models: the test store has no user and item dictionaries")
	}
	for _, c := range opt.PopularityCounts {
		if math.IsNaN(c) {
			return 0, errors.New("models: a popularity count is NaN")
		}
	}
	if math.IsNaN(opt.Threshold) || math.IsInf(opt.Threshold, 0) {
		return 0, fmt.Errorf("models: relevance threshold %v is not finite", opt.Threshold)
	}
	k := opt.K
	if k == 0 {
		k = 10
	}
	if k < 0 {
		return 0, fmt.Errorf("models: cut-off k=%d must be positive", k)
	}
	return k, nil
}

// evalAccuracy sets the RMSE, MAE and fallback counts over every test
// rating.
func evalAccuracy(p *Predictor, test *data.Store, umap, imap []int32, folded []*foldedUser, res *EvalResult) {
	timeOf := func(e int) *int64 { return entryTime(test, e) }
	var se, ae float64
	// An item-item model's query is a dense score vector: reuse it while
	// the test entries stay with one user.
	lastU, lastQ := int32(-2), query{}
	for e, x := range test.Val {
		u, j := umap[test.Idx[0][e]], imap[test.Idx[1][e]]
		var q query
		switch {
		case folded == nil && p.f.ItemItem() && u >= 0:
			if u != lastU {
				lastU, lastQ = u, p.userQuery(u, true, nil)
			}
			q = lastQ
		case folded == nil:
			q = p.userQuery(u, u >= 0, timeOf(e))
		case folded[test.Idx[0][e]] != nil:
			q = p.rowQuery(folded[test.Idx[0][e]].row, timeOf(e))
		default:
			q = p.userQuery(-1, false, timeOf(e))
		}
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
}

// evalUser is a test user to rank for.
type evalUser struct {
	u    int32       // model index, -1 unknown
	tu   int32       // test index
	fold *foldedUser // the folded-in user of a fold-in evaluation (else nil)
	rel  []int32     // relevant items (test indices, distinct after sorting)
}

// evalRankedUsers groups the relevant test items by test user and returns
// the users known to the model (folded in, in a fold-in evaluation) with at
// least one, by model index (test index when folded); unknown users are
// counted in res.SkippedUsers.
func evalRankedUsers(test *data.Store, umap []int32, folded []*foldedUser, threshold float64, res *EvalResult) []*evalUser {
	byUser := map[int32]*evalUser{}
	for e, x := range test.Val {
		tu := test.Idx[0][e]
		us := byUser[tu]
		if us == nil {
			us = &evalUser{u: umap[tu], tu: tu}
			if folded != nil {
				us.fold = folded[tu]
			}
			byUser[tu] = us
		}
		if x >= threshold {
			us.rel = append(us.rel, test.Idx[1][e])
		}
	}
	var ranked []*evalUser
	for _, us := range byUser {
		if len(us.rel) == 0 {
			continue
		}
		if (folded == nil && us.u < 0) || (folded != nil && us.fold == nil) {
			res.SkippedUsers++
			continue
		}
		slices.Sort(us.rel)
		us.rel = slices.Compact(us.rel)
		ranked = append(ranked, us)
	}
	if folded != nil {
		slices.SortFunc(ranked, func(a, b *evalUser) int { return int(a.tu) - int(b.tu) })
	} else {
		slices.SortFunc(ranked, func(a, b *evalUser) int { return int(a.u) - int(b.u) })
	}
	return ranked
}

// evalLists are one user's top-k lists (model and popularity) and their
// scores.
type evalLists struct {
	model, pop []int32
	m, b       rankScore
}

// evalRank ranks the catalogue for each user, in parallel, and scores the
// model's and the popularity baseline's top-k lists against the user's
// relevant items.
func evalRank(p *Predictor, ranked []*evalUser, imap []int32, excl *Exclusions, popOrder []int32, k int, opt EvalOptions) []evalLists {
	threads := opt.Threads
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	// A worker beyond the number of users would only allocate its heap:
	// each user's lists are the same whichever worker ranks them.
	threads = min(threads, max(1, len(ranked)))
	J := p.m.Dims[1]
	out := make([]evalLists, len(ranked))
	var wg sync.WaitGroup
	for w := 0; w < threads; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			h := newTopN(min(k, J))
			for i := w; i < len(ranked); i += threads {
				us := ranked[i]
				rel := make(map[int32]bool, len(us.rel))
				for _, tj := range us.rel {
					if j := imap[tj]; j >= 0 {
						rel[j] = true
					}
				}
				var q query
				var ex []int32
				if us.fold != nil {
					q = p.rankRowQuery(us.fold.row, opt.Time)
					ex = us.fold.items
					if !opt.IncludeSeen && us.u >= 0 {
						ex = mergeSorted(ex, excl.Items(us.u))
					}
				} else {
					q = p.userQuery(us.u, true, opt.Time)
					ex = excl.Items(us.u)
				}
				p.scan(&q, &h, ex)
				top := p.sorted(&h)
				l := evalLists{model: make([]int32, len(top))}
				for r, s := range top {
					l.model[r] = s.Item
				}
				l.m = scoreList(l.model, rel, len(us.rel), k)
				if popOrder != nil {
					for _, j := range popOrder {
						if len(l.pop) == k {
							break
						}
						if !excluded(ex, j) {
							l.pop = append(l.pop, j)
						}
					}
					l.b = scoreList(l.pop, rel, len(us.rel), k)
				}
				out[i] = l
			}
		}(w)
	}
	wg.Wait()
	return out
}

// popularityOrder returns the items by decreasing support, ties by index.
func popularityOrder[T int | float64](support []T) []int32 {
	order := make([]int32, len(support))
	for j := range order {
		order[j] = int32(j)
	}
	slices.SortStableFunc(order, func(a, b int32) int { return cmp.Compare(support[b], support[a]) })
	return order
}

// rankScore holds one user's metrics.
type rankScore struct{ prec, rec, ndcg, ap float64 }

// scoreList scores a top-k list against the relevant model items rel;
// nrel counts every distinct relevant test item (known to the model or
// not).
func scoreList(top []int32, rel map[int32]bool, nrel, k int) rankScore {
	var hits, dcg, ap float64
	for r, j := range top {
		if rel[j] {
			hits++
			dcg += 1 / math.Log2(float64(r+2))
			ap += hits / float64(r+1)
		}
	}
	var idcg float64
	for r := 0; r < min(k, nrel); r++ {
		idcg += 1 / math.Log2(float64(r+2))
	}
	return rankScore{hits / float64(k), hits / float64(nrel), dcg / idcg, ap / float64(min(k, nrel))}
}

func (m *RankMetrics) add(s rankScore, list []int32, seen []bool) {
	m.Precision += s.prec
	m.Recall += s.rec
	m.NDCG += s.ndcg
	m.MAP += s.ap
	for _, j := range list {
		if !seen[j] {
			seen[j] = true
			m.Distinct++
		}
	}
}

func (m *RankMetrics) finish(users, items int) {
	if users > 0 {
		n := float64(users)
		m.Precision /= n
		m.Recall /= n
		m.NDCG /= n
		m.MAP /= n
	}
	m.Coverage = float64(m.Distinct) / float64(items)
}

// entryTime is the Unix time of entry e of st: its kept time stamp, else
// the start of its time bucket; nil when st carries no time.
func entryTime(st *data.Store, e int) *int64 {
	switch {
	case st.Timestamps != nil:
		t := st.Timestamps[e]
		return &t
	case st.Time != nil && len(st.Idx) > 2:
		t := st.Time.Start(st.Idx[2][e])
		return &t
	}
	return nil
}
