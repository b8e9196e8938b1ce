package models

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/dprec/dprec/data"
)

// Scored is one recommended item: its dense index, its external id, the
// ranking score (the unclamped prediction under RankPrediction; the
// weighted score under RankCredibility; a log-probability under
// RankRelevance; the model's own score under RankModelScore) and the
// predicted rating (the prediction clamped to the rating scale; under
// RankCredibility the weighted score clamped). Lists are sorted by Score,
// highest first, ties by lower item index.
type Scored struct {
	Item   int32
	ID     string
	Score  float64
	Rating float64
}

// topN is a bounded min-heap of the n best (score, item) pairs seen so far:
// O(n) memory however many items stream through it.
type topN struct {
	n     int
	score []float64
	item  []int32
}

func newTopN(n int) topN {
	return topN{n: n, score: make([]float64, 0, n), item: make([]int32, 0, n)}
}

// worse reports whether (s1, i1) ranks below (s2, i2).
func worse(s1 float64, i1 int32, s2 float64, i2 int32) bool {
	return s1 < s2 || (s1 == s2 && i1 > i2)
}

// admits reports whether (s, j) would enter the heap.
func (h *topN) admits(s float64, j int32) bool {
	return len(h.score) < h.n || worse(h.score[0], h.item[0], s, j)
}

// push inserts (s, j), evicting the worst when full. Call only when admits.
func (h *topN) push(s float64, j int32) {
	if len(h.score) < h.n {
		h.score = append(h.score, s)
		h.item = append(h.item, j)
		// sift up
		i := len(h.score) - 1
		for i > 0 {
			par := (i - 1) / 2
			if !worse(h.score[i], h.item[i], h.score[par], h.item[par]) {
				break
			}
			h.swap(i, par)
			i = par
		}
		return
	}
	h.score[0], h.item[0] = s, j
	i, n := 0, len(h.score)
	for {
		l, small := 2*i+1, i
		if l < n && worse(h.score[l], h.item[l], h.score[small], h.item[small]) {
			small = l
		}
		if r := l + 1; r < n && worse(h.score[r], h.item[r], h.score[small], h.item[small]) {
			small = r
		}
		if small == i {
			return
		}
		h.swap(i, small)
		i = small
	}
}

func (h *topN) swap(a, b int) {
	h.score[a], h.score[b] = h.score[b], h.score[a]
	h.item[a], h.item[b] = h.item[b], h.item[a]
}

func (h *topN) reset() {
	h.score = h.score[:0]
	h.item = h.item[:0]
}

// sorted returns the heap's content best first and empties the heap.
func (p *Predictor) sorted(h *topN) []Scored {
	out := make([]Scored, len(h.score))
	for i := range out {
		out[i] = Scored{Item: h.item[i], Score: h.score[i]}
	}
	slices.SortFunc(out, func(a, b Scored) int {
		if worse(a.Score, a.Item, b.Score, b.Item) {
			return 1
		}
		return -1
	})
	for i := range out {
		out[i].ID = p.items.String(out[i].Item)
		if p.relevance != nil {
			out[i].Rating = p.m.Clamp(p.relevance.prediction(out[i].Item, out[i].Score))
		} else {
			out[i].Rating = p.m.Clamp(out[i].Score)
		}
	}
	h.reset()
	return out
}

// excluded reports whether item j is in the sorted list ex.
func excluded(ex []int32, j int32) bool {
	_, ok := slices.BinarySearch(ex, j)
	return ok
}

// allowed reports whether item j passes the candidate filter of e.
func (e *Exclusions) allowed(j int32) bool {
	return e == nil || e.Allowed == nil || (int(j) < len(e.Allowed) && e.Allowed[j])
}

// rank is the ranking score of item j for q: the raw score, or under
// RankRelevance the relevance score, or under RankCredibility base + z_j
// (raw - base) (see WithRanking). An unknown user of a model without
// biases (q.noBias) scores fallbackMean for every item: relevance then
// orders the items by popularity.
func (p *Predictor) rank(q *query, j int32) float64 {
	s := p.raw(q, j)
	switch {
	case p.relevance != nil:
		s = p.relevance.score(j, s)
	case q.noBias:
	case p.rankWeight != nil:
		s = q.base + p.rankWeight[j]*(s-q.base)
	}
	return s
}

// relevanceScore is the RankRelevance score (Predictor.WithRanking):
// log(n~_j + 1 + sd) + log Phi((r - t)/s). An
// Erfc and a Log per (user, item) pair made a full scan 16 times slower
// than the credibility score's; the scan by popularity (scanOne) visits a
// few hundred items a user instead: BenchmarkRecommendAllML25MUsers4096
// Relevance against Credibility, same run, one thread, Zipf counts:
// 187,615 against 2,358 users per CPU-second (207 before the pruning).
type relevanceScore struct {
	logN []float64
	// order lists the items by logN, highest first (ties by index): an
	// item's score is at most its logN (log Phi <= 0), so a scan in this
	// order stops at the first item whose logN is below the heap's
	// minimum (scanOne).
	order []int32
	t, s  float64
}

func newRelevanceScore(counts []float64, sd, lo, hi float64) *relevanceScore {
	r := &relevanceScore{logN: make([]float64, len(counts)), order: make([]int32, len(counts)), t: hi - (hi-lo)/4, s: (hi - lo) / 4}
	for j, n := range counts {
		r.logN[j] = math.Log(math.Max(n, 0) + 1 + sd)
		r.order[j] = int32(j)
	}
	slices.SortStableFunc(r.order, func(a, b int32) int { return cmp.Compare(r.logN[b], r.logN[a]) })
	return r
}

// score is item j's ranking score for the prediction r.
func (r *relevanceScore) score(j int32, pred float64) float64 {
	return r.logN[j] + logPhi((pred-r.t)/r.s)
}

// prediction inverts score: the prediction that gives item j the score
// sc (-Inf when the probability underflows).
func (r *relevanceScore) prediction(j int32, sc float64) float64 {
	return r.t + r.s*invLogPhi(sc-r.logN[j])
}

// logPhi is log Phi(x) for the standard normal CDF, accurate in the lower
// tail (the asymptotic series below -30, where Phi underflows).
func logPhi(x float64) float64 {
	if x < -30 {
		// Phi(x) ~ phi(x)/(-x) (1 - 1/x^2 + 3/x^4)
		x2 := x * x
		return -x2/2 - math.Log(-x) - 0.5*math.Log(2*math.Pi) + math.Log1p(-1/x2+3/(x2*x2))
	}
	return math.Log(0.5 * math.Erfc(-x/math.Sqrt2))
}

// invLogPhi returns x with log Phi(x) = l (l <= 0): Phi^-1(exp(l)) where
// exp(l) is not small, else Newton steps on logPhi from the tail's
// leading term (math.Erfcinv loses its precision below about 1e-16).
func invLogPhi(l float64) float64 {
	if l >= 0 {
		return math.Inf(1)
	}
	if l > -30 {
		return -math.Sqrt2 * math.Erfcinv(2*math.Exp(l))
	}
	x := -math.Sqrt(-2 * l) // log Phi(x) ~ -x^2/2
	for range 100 {
		// d/dx log Phi(x) = phi(x)/Phi(x)
		d := (logPhi(x) - l) / math.Exp(-x*x/2-0.5*math.Log(2*math.Pi)-logPhi(x))
		x -= d
		if math.Abs(d) < 1e-13*math.Abs(x) {
			break
		}
	}
	return x
}

// scan streams every item through the heap of q, skipping items in the
// sorted list ex.
func (p *Predictor) scan(q *query, h *topN, ex []int32) {
	p.scanOne(q, h, ex, nil)
}

// scanOne is scan that also skips the items excl does not allow. With the
// relevance score it visits the items by popularity and stops once the
// popularity term, an upper bound of every later item's score, is below
// the heap's minimum: the heap's content is the same as a full scan's
// (its order is total, score then index), at a fraction of the cost.
func (p *Predictor) scanOne(q *query, h *topN, ex []int32, excl *Exclusions) {
	if rel := p.relevance; rel != nil && q.dense == nil {
		for _, j := range rel.order {
			if len(h.score) == h.n && rel.logN[j] < h.score[0] {
				return
			}
			if excluded(ex, j) || !excl.allowed(j) {
				continue
			}
			if s := rel.score(j, p.raw(q, j)); h.admits(s, j) {
				h.push(s, j)
			}
		}
		return
	}
	J := int32(p.m.Dims[1])
	for j := int32(0); j < J; j++ {
		s := p.rank(q, j)
		if h.admits(s, j) && !excluded(ex, j) && excl.allowed(j) {
			h.push(s, j)
		}
	}
}

// Recommend returns the n best items for user at Unix time t (nil: time
// average), skipping the items in exclude (sorted dense item indices, for
// example from Exclusions.Items). An unknown user gets the items ranked by
// the model without a user term (item bias: a popularity ranking) and the
// UnknownUser flag. Memory beyond the result is O(n + rank).
func (p *Predictor) Recommend(user string, t *int64, n int, exclude []int32) ([]Scored, Fallback) {
	u, ok := p.users.LookupString(user)
	q := p.userQuery(u, ok, t)
	return p.recommend(&q, n, exclude), q.fb
}

// RecommendRow is Recommend for a user given by a Row (fold-in).
//
// A private rating model with ranking weights (File.RankingWeights) ranks
// by the weights over r.Items when r has items: Score is then the sum of
// weights and Rating the factor model's prediction for the item.
func (p *Predictor) RecommendRow(r Row, t *int64, n int, exclude []int32) ([]Scored, Fallback) {
	q := p.rankRowQuery(r, t)
	out := p.recommend(&q, n, exclude)
	if q.dense != nil && !p.f.ItemItem() {
		pq := p.rowQuery(r, t)
		for i := range out {
			out[i].Rating = p.m.Clamp(p.raw(&pq, out[i].Item))
		}
		q.fb = pq.fb
	}
	return out, q.fb
}

func (p *Predictor) recommend(q *query, n int, exclude []int32) []Scored {
	if n <= 0 {
		return nil
	}
	h := newTopN(min(n, p.m.Dims[1]))
	p.scan(q, &h, exclude)
	return p.sorted(&h)
}

// Exclusions holds, for every user of a model, the sorted items to leave
// out of their recommendations (usually the items they already rated), in
// compressed sparse row form.
type Exclusions struct {
	ptr   []int64
	items []int32
	// Unmatched counts observations whose user or item the model does not
	// know (they cannot be excluded and are ignored).
	Unmatched int
	// Allowed, when non-nil, is a candidate filter over the model's items:
	// only items j with Allowed[j] are recommended to anyone.
	Allowed []bool
}

// Items returns the sorted excluded items of model user u.
func (e *Exclusions) Items(u int32) []int32 {
	if e == nil || int(u)+1 >= len(e.ptr) {
		return nil
	}
	return e.items[e.ptr[u]:e.ptr[u+1]]
}

// NewExclusions maps the (user, item) pairs of s to the model by external
// id (s has its own dictionaries) and groups them by user.
func (p *Predictor) NewExclusions(s *data.Store) (*Exclusions, error) {
	if len(s.Dicts) < 2 || s.Dicts[0] == nil || s.Dicts[1] == nil {
		return nil, errors.New("models: the exclusion store has no user and item dictionaries")
	}
	umap := mapDict(s.Dicts[0], p.users)
	imap := mapDict(s.Dicts[1], p.items)
	U := p.m.Dims[0]
	e := &Exclusions{ptr: make([]int64, U+1)}
	for k := range s.Val {
		u, j := umap[s.Idx[0][k]], imap[s.Idx[1][k]]
		if u < 0 || j < 0 {
			e.Unmatched++
			continue
		}
		e.ptr[u+1]++
	}
	for u := 0; u < U; u++ {
		e.ptr[u+1] += e.ptr[u]
	}
	e.items = make([]int32, e.ptr[U])
	fill := slices.Clone(e.ptr[:U])
	for k := range s.Val {
		u, j := umap[s.Idx[0][k]], imap[s.Idx[1][k]]
		if u < 0 || j < 0 {
			continue
		}
		e.items[fill[u]] = j
		fill[u]++
	}
	for u := 0; u < U; u++ {
		seg := e.items[e.ptr[u]:e.ptr[u+1]]
		slices.Sort(seg)
	}
	return e, nil
}

// mapDict maps every index of dictionary from to the index of the same
// external id in to, or -1.
func mapDict(from, to *data.Dict) []int32 {
	out := make([]int32, from.Len())
	for i := range out {
		j, ok := to.LookupString(from.String(int32(i)))
		if !ok {
			j = -1
		}
		out[i] = j
	}
	return out
}

// userBlock is how many users one worker scores together: each item row is
// loaded once per block and dotted with every user's query, so the item
// matrix streams from memory U/userBlock times instead of U times; 64
// queries of rank <= 64 (32 KiB) stay in L1/L2 cache.
const userBlock = 64

// RecommendAll computes the n best items of every user at Unix time t
// (nil: time average), skipping excl's items (excl may be nil), on threads
// workers (0: GOMAXPROCS), and calls emit for every user in user-index order
// from the calling goroutine. It never holds more than O(threads * 64 * n)
// scores: the users x items matrix is never materialised. emit may keep the
// slice. An error from emit stops the run and is returned.
func (p *Predictor) RecommendAll(n int, t *int64, threads int, excl *Exclusions, emit func(user int32, recs []Scored) error) error {
	if n <= 0 {
		return fmt.Errorf("models: top-N size %d must be positive", n)
	}
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	U := p.m.Dims[0]
	k, _ := p.TimeBucket(t)
	users := func(lo, hi int) []query {
		qs := make([]query, hi-lo)
		if p.f.ItemItem() {
			for u := lo; u < hi; u++ {
				qs[u-lo] = p.historyQuery(p.f.Seen.Items(int32(u)), FallbackNone)
			}
			return qs
		}
		for u := lo; u < hi; u++ {
			var ub float64
			if p.m.HasBias {
				ub = p.m.Bias[0][u]
			}
			qs[u-lo] = p.newQuery(p.m.Row(0, u), ub, k, FallbackNone)
			qs[u-lo].base += p.userPairs(int32(u), qs[u-lo].k)
		}
		return qs
	}
	nb := (U + userBlock - 1) / userBlock
	// A worker beyond the number of user blocks would only allocate its
	// heaps (64 of up to n items): each block's lists are the same
	// whichever worker computes them, and they are emitted in user order.
	threads = min(threads, max(1, nb))
	// Rounds of `threads * 4` blocks are computed in parallel, then emitted
	// in order, so the memory held is bounded by the round.
	round := threads * 4
	for b0 := 0; b0 < nb; b0 += round {
		b1 := min(nb, b0+round)
		res := make([][][]Scored, b1-b0)
		var next atomic.Int64
		next.Store(int64(b0))
		var wg sync.WaitGroup
		for w := 0; w < threads; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				heaps := make([]topN, userBlock)
				for i := range heaps {
					heaps[i] = newTopN(min(n, p.m.Dims[1]))
				}
				for {
					b := int(next.Add(1) - 1)
					if b >= b1 {
						return
					}
					lo, hi := b*userBlock, min(U, (b+1)*userBlock)
					qs := users(lo, hi)
					exs := make([][]int32, len(qs))
					for i := range qs {
						exs[i] = excl.Items(int32(lo + i))
					}
					if p.relevance != nil {
						for i := range qs {
							p.scanOne(&qs[i], &heaps[i], exs[i], excl)
						}
					} else {
						p.scanBlock(qs, heaps[:len(qs)], exs, excl)
					}
					out := make([][]Scored, len(qs))
					for i := range qs {
						out[i] = p.sorted(&heaps[i])
					}
					res[b-b0] = out
				}
			}()
		}
		wg.Wait()
		for bi, out := range res {
			for i, recs := range out {
				if err := emit(int32((b0+bi)*userBlock+i), recs); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// scanBlock streams the items once through the heaps of a block of users.
// thr[i] caches the score a candidate must reach (>=, ties resolved by
// admits) to enter heap i: -Inf until the heap is full, then its minimum.
func (p *Predictor) scanBlock(qs []query, hs []topN, exs [][]int32, excl *Exclusions) {
	m := p.m
	J := m.Dims[1]
	Q := m.Ranks[1]
	F := m.Factors[1]
	var ib []float64
	if m.HasBias && len(qs) > 0 {
		ib = p.itemBiasAt(qs[0].k) // one bucket for the whole call
	}
	z := p.rankWeight // the relevance score ranks user by user (scanOne)
	thr := make([]float64, len(qs))
	for i := range thr {
		thr[i] = math.Inf(-1)
	}
	nq := len(qs)
	if nq > 0 && qs[0].dense != nil {
		// Item-item model: the scores are already dense.
		for i := range qs {
			for j, s := range qs[i].dense {
				if s >= thr[i] {
					p.offer(&hs[i], &thr[i], exs[i], excl, s, int32(j))
				}
			}
		}
		return
	}
	for j := 0; j < J; j++ {
		b := F[j*Q : j*Q+Q : j*Q+Q]
		var bj float64
		if ib != nil {
			bj = ib[j]
		}
		// Four users per pass share the loads of the item row.
		i := 0
		for ; i+3 < nq; i += 4 {
			w0 := qs[i].w[:len(b)]
			w1 := qs[i+1].w[:len(b)]
			w2 := qs[i+2].w[:len(b)]
			w3 := qs[i+3].w[:len(b)]
			s0, s1, s2, s3 := bj, bj, bj, bj
			if z == nil {
				s0, s1, s2, s3 = qs[i].base+bj, qs[i+1].base+bj, qs[i+2].base+bj, qs[i+3].base+bj
			}
			for r, x := range b {
				s0 += w0[r] * x
				s1 += w1[r] * x
				s2 += w2[r] * x
				s3 += w3[r] * x
			}
			if z != nil {
				s0, s1, s2, s3 = qs[i].base+z[j]*s0, qs[i+1].base+z[j]*s1, qs[i+2].base+z[j]*s2, qs[i+3].base+z[j]*s3
			}
			for d, s := range [4]float64{s0, s1, s2, s3} {
				if s >= thr[i+d] {
					p.offer(&hs[i+d], &thr[i+d], exs[i+d], excl, s, int32(j))
				}
			}
		}
		for ; i < nq; i++ {
			w := qs[i].w[:len(b)]
			s := bj
			if z == nil {
				s = qs[i].base + bj
			}
			for r, x := range b {
				s += w[r] * x
			}
			if z != nil {
				s = qs[i].base + z[j]*s
			}
			if s >= thr[i] {
				p.offer(&hs[i], &thr[i], exs[i], excl, s, int32(j))
			}
		}
	}
}

// offer pushes (s, j) into h unless it ranks below h's minimum or j is
// excluded, and updates the cached threshold.
func (p *Predictor) offer(h *topN, thr *float64, ex []int32, excl *Exclusions, s float64, j int32) {
	if h.admits(s, j) && !excluded(ex, j) && excl.allowed(j) {
		h.push(s, j)
		if len(h.score) == h.n {
			*thr = h.score[0]
		}
	}
}
