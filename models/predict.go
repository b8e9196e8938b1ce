package models

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
)

// Fallback says how a prediction departed from the plain model evaluation.
// It is a bit set; String joins the names with "+".
type Fallback uint8

// Fallbacks. An unknown user (item) contributes neither factor row nor bias:
// the prediction is the global mean plus the biases of the known modes (a
// model without biases falls back to the training mean). A time outside the
// trained range uses the nearest bucket (TimeClamped); no time at all, for
// an order-3 model, averages the time factor rows and biases over the
// trained buckets (TimeAveraged), which by multilinearity is the average
// prediction over the trained period.
const (
	FallbackNone Fallback = 0
	UnknownUser  Fallback = 1 << (iota - 1)
	UnknownItem
	TimeClamped
	TimeAveraged
)

var fallbackNames = []string{"unknown-user", "unknown-item", "time-clamped", "time-averaged"}

// String returns "none" or the "+"-joined names of the set bits.
func (f Fallback) String() string {
	if f == 0 {
		return "none"
	}
	var parts []string
	for i, n := range fallbackNames {
		if f&(1<<i) != 0 {
			parts = append(parts, n)
		}
	}
	return strings.Join(parts, "+")
}

// Predictor answers predictions and recommendations from a loaded model by
// external id. It only reads the File and its own precomputed values, so
// one Predictor is safe for any number of concurrent Predict, Recommend and
// RecommendAll calls.
type Predictor struct {
	f     *File
	m     *decomposition.Model
	users *data.Dict
	items *data.Dict
	tb    *data.TimeBucketing

	// meanTime is the average time factor row and meanTimeBias the average
	// time bias (order 3), used when no time is given.
	meanTime     []float64
	meanTimeBias float64
	// userPairMean and itemPairMean are the pair biases of each user and
	// item averaged over the time buckets (nil without pair biases), so a
	// time-averaged prediction is the average of the predictions.
	userPairMean, itemPairMean []float64
	// fallbackMean is the last-resort prediction: the global mean of a
	// model with biases, else the training mean from the header, else (a
	// private model without biases) the middle of the clamp range.
	fallbackMean float64

	// rankWeight[j] = n_j / (n_j + kappa) is the credibility of item j in
	// rankings under RankCredibility (nil otherwise); see WithRanking.
	rankWeight []float64
	shrinkage  float64
	// relevance is the RankRelevance score (nil under another ranking);
	// see WithRanking.
	relevance *relevanceScore
	// ranking is the Ranking in use ("": RankPrediction, or RankModelScore
	// for a model that ranks by its own scores).
	ranking Ranking
	// itemPrior is the fraction of users who saw each item (implicit
	// models with seen items): the score of an unknown user.
	itemPrior []float64
}

// DefaultShrinkage is the credibility constant kappa of RankCredibility
// (and of RankRelevance's fallback for a model without a rating range;
// see WithRanking). It was chosen on a validation split
// carved from the training part of ml-latest-small only (the training
// part of `data split --method user --fraction 0.2 --seed 1`, split again
// the same way with seed 2), as the smallest kappa within 2% of the best
// validation NDCG@10. Default rating model (Gibbs CP rank 10 with biases):
// kappa 0, 25, 50, 100, 200, 500, 1000, 10000 gave 0.060, 0.100, 0.107,
// 0.111, 0.115, 0.117, 0.118, 0.118 (most-popular 0.111); distinct items
// in the validation users' lists fall from 459 to 163 at 500. The SGD
// model: 0.038, 0.099, 0.109, 0.113, 0.115, 0.116, 0.116, 0.117. Larger
// values approach a popularity ranking weighted by the model.
const DefaultShrinkage = 500

// Ranking is how a Predictor orders the top-N lists (Recommend,
// RecommendAll, Evaluate) of a rating model: WithRanking.
type Ranking string

const (
	// RankRelevance (the default of eval and recommend) ranks by the
	// log-probability that the user rates the item and likes it:
	//
	//	s(u,j) = log(n_j + 1 + sd) + log Phi((r(u,j) - t)/s),
	//
	// r(u,j) the prediction, n_j the item's support (its number of
	// distinct training users from the model's seen items; for a private
	// model the item counts its report carries, negative released ones set
	// to 0) and sd the counts' noise standard deviation (0 for exact or
	// public counts), t = r_max - (r_max - r_min)/4 and s = (r_max -
	// r_min)/4 from the model's rating range (its clamp range: the data's
	// range, or the declared public scale of a private model). The first
	// term is the popularity: the chance that u rates j grows with j's
	// count, and sd acts as a pseudo-count, so counts below their noise
	// barely order the list. The second is P(r >= t) for a rating spread s
	// about the prediction: the chance that u likes j, in the top quarter
	// of the scale. A model without a rating range (trained with --clamp
	// none) falls back to RankCredibility, and one without item supports
	// (no seen items, no item counts in its report) to RankPrediction.
	RankRelevance Ranking = "relevance"
	// RankCredibility ranks by the credibility-weighted score
	//
	//	s(u,j) = base(u) + z_j (b_j + <w_u, b_j>),  z_j = n_j / (n_j + kappa),
	//
	// base(u) = mu + b_u (+ b_t): Buhlmann credibility, the item's
	// estimated departure from the user's baseline trusted in proportion
	// to its support n_j, so an item rated 5 by its only 5 raters no
	// longer outranks items with thousands of ratings. It orders items by
	// z_j (r(u,j) - base(u)) alone, with no term for the chance that the
	// user rates the item at all. kappa 0 is RankPrediction.
	RankCredibility Ranking = "credibility"
	// RankPrediction ranks by the prediction.
	RankPrediction Ranking = "prediction"
	// RankModelScore is what Ranking reports for the models that rank by
	// their own scores whatever ranking is asked for: implicit-objective
	// models (preferences), item-item models (sums of item-item weights)
	// and private rating models that carry ranking weights
	// (File.RankingWeights). It is not a ranking one can ask for.
	RankModelScore Ranking = "model-score"
)

// ParseRanking parses the name of a Ranking one can ask for (relevance,
// credibility or prediction).
func ParseRanking(s string) (Ranking, error) {
	switch r := Ranking(s); r {
	case RankRelevance, RankCredibility, RankPrediction:
		return r, nil
	}
	return "", fmt.Errorf("ranking %q: want relevance, credibility or prediction", s)
}

// WithShrinkage is WithRanking(RankRelevance, kappa) for kappa > 0 and
// WithRanking(RankPrediction, 0) otherwise: the rankings of eval and
// recommend at their defaults (kappa DefaultShrinkage), and of
// --shrinkage 0.
func (p *Predictor) WithShrinkage(kappa float64) *Predictor {
	if !(kappa > 0) {
		return p.WithRanking(RankPrediction, 0)
	}
	return p.WithRanking(RankRelevance, kappa)
}

// WithRanking returns a Predictor whose rankings (Recommend,
// RecommendAll, Evaluate) use r (see Ranking; the zero value "" is
// RankRelevance, and a name ParseRanking rejects ranks by the
// prediction), kappa being the credibility constant of RankCredibility
// and of RankRelevance's fallback (a finite kappa > 0; otherwise those
// rank by the prediction); the lists carry the ranking score and, as
// Rating, the clamped prediction (under RankCredibility the clamped
// weighted score: the shrunk estimate of the rating). Predict is
// unaffected, and so are the models that rank by their own scores
// (RankModelScore). p itself is not modified.
//
// RankRelevance replaced the credibility score as the default for
// non-private models after a validation comparison (validation parts
// carved from training parts, default flags, NDCG@10 of eval --train;
// docs/top-n.md, "Rankings of rating models"): relevance against
// credibility 0.1242 / 0.1092 on MovieLens-100K, 0.5348 / 0.4352 on the
// Jester5k joke log (most-popular 0.4674), 0.0707 / 0.0572 and 0.2882 /
// 0.1987 on a MovieLens-shaped and a joke-shaped data synth log, 0.0833
// / 0.0844 on ml-latest-small (the one loss); non-private ALS and SGD
// gained on all three real logs. The private models had used it since
// their lists fell below most-popular with the credibility score: on the
// validation parts of MovieLens-100K, ml-latest-small and a
// MovieLens-shaped synthetic log (docs/privacy.md, "Private lists"),
// NDCG@10 rose in each of 12 (log, mode) pairs at epsilon 10, entry unit
// (for example als 0.103 -> 0.119 on MovieLens-100K, against
// most-popular's 0.107), and at the user unit from 0.092 to 0.105 (bias,
// k = 100), against 0.104 for a most-popular list of the same noisy
// counts.
func (p *Predictor) WithRanking(r Ranking, kappa float64) *Predictor {
	q := *p
	q.rankWeight, q.shrinkage, q.relevance, q.ranking = nil, 0, nil, RankPrediction
	if p.f.Header.Objective == ObjectiveImplicit || p.f.Weights != nil {
		q.ranking = RankModelScore
		return &q
	}
	if r == "" {
		r = RankRelevance
	}
	credible := kappa > 0 && !math.IsInf(kappa, 0) // a usable credibility constant
	if !credible {
		kappa = 0
	}
	if r != RankRelevance && (r != RankCredibility || !credible) {
		return &q
	}
	var sup []float64
	sd := 0.0
	switch {
	case p.f.Seen != nil:
		for _, n := range p.f.Seen.Support(p.m.Dims[1]) {
			sup = append(sup, float64(n))
		}
	case p.f.Privacy != nil && len(p.f.Privacy.ItemCounts) == p.m.Dims[1]:
		// A private model keeps no seen items; its report carries the
		// item counts it may use (public, or released with noise).
		sup, sd = p.f.Privacy.ItemCounts, p.f.Privacy.ItemCountsSD
	default:
		return &q
	}
	if r == RankRelevance && sd >= 0 && !math.IsInf(sd, 0) && p.m.Clamps() {
		q.relevance = newRelevanceScore(sup, sd, p.m.ClampLo, p.m.ClampHi)
		q.shrinkage, q.ranking = kappa, RankRelevance
		return &q
	}
	if !credible {
		return &q
	}
	q.rankWeight = make([]float64, len(sup))
	for j, n := range sup {
		n = math.Max(n, 0)
		q.rankWeight[j] = n / (n + kappa)
	}
	q.shrinkage, q.ranking = kappa, RankCredibility
	return &q
}

// Ranking returns the ranking in use: the one asked for, RankPrediction
// when the model supports no other (or none was asked for), or
// RankModelScore for the models that rank by their own scores.
func (p *Predictor) Ranking() Ranking {
	if p.ranking == "" {
		return RankPrediction
	}
	return p.ranking
}

// Shrinkage returns the credibility constant given with the ranking in
// use (0 under RankPrediction and RankModelScore, or when none usable was
// given).
func (p *Predictor) Shrinkage() float64 { return p.shrinkage }

// NewPredictor prepares a Predictor for f.
func NewPredictor(f *File) *Predictor {
	m := f.Model
	p := &Predictor{f: f, m: m, users: f.Dicts[0], items: f.Dicts[1], tb: f.Time}
	if (f.Header.Objective == ObjectiveImplicit || f.Weights != nil) && f.Seen != nil && f.Seen.Users() > 0 {
		sup := f.Seen.Support(m.Dims[1])
		p.itemPrior = make([]float64, len(sup))
		for j, n := range sup {
			p.itemPrior[j] = float64(n) / float64(f.Seen.Users())
		}
	}
	switch {
	case m.HasBias:
		p.fallbackMean = m.Mean
	case f.Header.Data.HasStats():
		p.fallbackMean = f.Header.Data.Mean
	case m.Clamps():
		// Statistics withheld (private model): the middle of the scale.
		p.fallbackMean = (m.ClampLo + m.ClampHi) / 2
	}
	if m.Order() == 3 {
		K, T := m.Dims[2], m.Ranks[2]
		p.meanTime = make([]float64, T)
		for k := 0; k < K; k++ {
			for t, v := range m.Row(2, k) {
				p.meanTime[t] += v
			}
			if m.HasBias {
				p.meanTimeBias += m.Bias[2][k]
			}
		}
		for t := range p.meanTime {
			p.meanTime[t] /= float64(K)
		}
		p.meanTimeBias /= float64(K)
		for i := range m.Pairs {
			pb := &m.Pairs[i]
			dst := &p.userPairMean
			if pb.A == 1 {
				dst = &p.itemPairMean
			}
			if *dst == nil {
				*dst = make([]float64, m.Dims[pb.A])
			}
			for e, key := range pb.Keys {
				// Period b covers buckets b*Div .. min((b+1)*Div, K)-1.
				b := int(uint32(key))
				n := min((b+1)*pb.Div, K) - b*pb.Div
				(*dst)[key>>32] += pb.Vals[e] * float64(n) / float64(K)
			}
		}
	}
	return p
}

// File returns the model file the predictor reads.
func (p *Predictor) File() *File { return p.f }

// NumItems returns the number of items of the model.
func (p *Predictor) NumItems() int { return p.m.Dims[1] }

// NumUsers returns the number of users of the model.
func (p *Predictor) NumUsers() int { return p.m.Dims[0] }

// UserIndex returns the dense index of an external user id.
func (p *Predictor) UserIndex(user string) (int32, bool) { return p.users.LookupString(user) }

// ItemIndex returns the dense index of an external item id.
func (p *Predictor) ItemIndex(item string) (int32, bool) { return p.items.LookupString(item) }

// UserID and ItemID return the external id of a dense index.
func (p *Predictor) UserID(u int32) string { return p.users.String(u) }

// ItemID returns the external id of item index j.
func (p *Predictor) ItemID(j int32) string { return p.items.String(j) }

// TimeBucket maps a Unix time to the model's time mode: the bucket index
// (or -1 for "average over time" when t is nil) and the fallback flags. For
// an order-2 model it returns -1 and no flag.
func (p *Predictor) TimeBucket(t *int64) (int32, Fallback) {
	if p.tb == nil {
		return -1, FallbackNone
	}
	if t == nil {
		return -1, TimeAveraged
	}
	k, clamped := p.tb.Bucket(*t)
	if clamped {
		return k, TimeClamped
	}
	return k, FallbackNone
}

// query is a user at a time, reduced to what scoring an item needs:
// score(j) = base + itemBias[j] + <w, b_j> (Wei et al. 2021, eq. 2-3 contracted
// over the user and time modes).
type query struct {
	w      []float64 // nil: no multilinear term (unknown user)
	base   float64
	noBias bool // model without biases and unknown user: score is fallbackMean
	fb     Fallback
	k      int32 // time bucket, -1 when averaged over time (or order 2)
	// dense, for an item-item model and a known user, holds every item's
	// score (ItemWeights.Scores of the user's seen items).
	dense []float64
}

// newQuery contracts the model with a user row a (nil: unknown user) with
// user bias ub, and time bucket k (-1: time average).
func (p *Predictor) newQuery(a []float64, ub float64, k int32, fb Fallback) query {
	m := p.m
	q := query{fb: fb, k: k}
	if m.Order() == 2 {
		q.k = -1
	}
	var c []float64
	var tbias float64
	if m.Order() == 3 {
		if k < 0 {
			c, tbias = p.meanTime, p.meanTimeBias
		} else {
			c = m.Row(2, int(k))
			if m.HasBias {
				tbias = m.Bias[2][k]
			}
		}
	}
	if m.HasBias {
		q.base = m.Mean + ub + tbias
	}
	if a == nil {
		if !m.HasBias {
			q.noBias = true
			q.base = p.fallbackMean
		}
		return q
	}
	Q := m.Ranks[1]
	q.w = make([]float64, Q)
	switch {
	case m.Kind == decomposition.CP && c == nil:
		copy(q.w, a)
	case m.Kind == decomposition.CP:
		for r := range q.w {
			q.w[r] = a[r] * c[r]
		}
	case c == nil: // Tucker order 2: w_q = sum_p G[p,q] a_p
		for pp, ap := range a {
			g := m.Core[pp*Q : pp*Q+Q]
			for qq := range q.w {
				q.w[qq] += ap * g[qq]
			}
		}
	default: // Tucker order 3: w_q = sum_{p,t} G[p,q,t] a_p c_t
		T := m.Ranks[2]
		for pp, ap := range a {
			for qq := 0; qq < Q; qq++ {
				g := m.Core[(pp*Q+qq)*T : (pp*Q+qq)*T+T]
				s := 0.0
				for t, ct := range c {
					s += g[t] * ct
				}
				q.w[qq] += ap * s
			}
		}
	}
	return q
}

// userQuery builds the query of a user id (unknown users fall back).
func (p *Predictor) userQuery(u int32, known bool, t *int64) query {
	k, fb := p.TimeBucket(t)
	if !known {
		return p.newQuery(nil, 0, k, fb|UnknownUser)
	}
	if p.f.ItemItem() {
		return p.historyQuery(p.f.Seen.Items(u), fb)
	}
	var ub float64
	if p.m.HasBias {
		ub = p.m.Bias[0][u]
	}
	q := p.newQuery(p.m.Row(0, int(u)), ub, k, fb)
	q.base += p.userPairs(u, q.k)
	return q
}

// userPairs is the sum of the user x time pair biases of user u at bucket k
// (k < 0: averaged over the buckets).
func (p *Predictor) userPairs(u, k int32) float64 {
	if k < 0 {
		if p.userPairMean == nil {
			return 0
		}
		return p.userPairMean[u]
	}
	s := 0.0
	idx := [3]int32{u, 0, k}
	for i := range p.m.Pairs {
		if pb := &p.m.Pairs[i]; pb.A == 0 {
			s += pb.Value(idx[:])
		}
	}
	return s
}

// itemPairs is the sum of the item x period pair biases of item j at bucket k
// (k < 0: averaged over the buckets).
func (p *Predictor) itemPairs(j, k int32) float64 {
	if k < 0 {
		if p.itemPairMean == nil {
			return 0
		}
		return p.itemPairMean[j]
	}
	s := 0.0
	idx := [3]int32{0, j, k}
	for i := range p.m.Pairs {
		if pb := &p.m.Pairs[i]; pb.A == 1 {
			s += pb.Value(idx[:])
		}
	}
	return s
}

// itemBiasAt returns the item biases at bucket k, including the item x
// period pair biases (the model's item biases themselves when there are
// none or k < 0).
func (p *Predictor) itemBiasAt(k int32) []float64 {
	m := p.m
	if !m.HasBias {
		return nil
	}
	ib := m.Bias[1]
	if len(m.Pairs) == 0 || (k < 0 && p.itemPairMean == nil) {
		return ib
	}
	out := append([]float64(nil), ib...)
	for j := range out {
		out[j] += p.itemPairs(int32(j), k)
	}
	return out
}

// historyQuery is the query of an item-item model for a user with the
// given history (sorted item indices).
func (p *Predictor) historyQuery(hist []int32, fb Fallback) query {
	q := query{fb: fb, k: -1, dense: make([]float64, p.m.Dims[1])}
	p.f.Weights.Scores(hist, q.dense)
	return q
}

// raw is the unclamped score of item j for q.
func (p *Predictor) raw(q *query, j int32) float64 {
	if q.dense != nil {
		return q.dense[j]
	}
	if q.noBias {
		if p.itemPrior != nil {
			return p.itemPrior[j]
		}
		return q.base
	}
	s := q.base
	if p.m.HasBias {
		s += p.m.Bias[1][j] + p.itemPairs(j, q.k)
	}
	if q.w != nil {
		Q := len(q.w)
		b := p.m.Factors[1][int(j)*Q : int(j)*Q+Q]
		for r, x := range q.w {
			s += x * b[r]
		}
	}
	return s
}

// itemless is the score of an unknown item for q: the base without any item
// term (the training mean for a model without biases).
func (p *Predictor) itemless(q *query) float64 {
	if !p.m.HasBias {
		return p.fallbackMean
	}
	return q.base
}

// Predict returns the predicted rating of item by user at Unix time t (nil:
// no time), clamped to the rating scale, and the fallback used. It never
// fails: unknown ids and times fall back as documented on Fallback.
func (p *Predictor) Predict(user, item string, t *int64) (float64, Fallback) {
	u, uok := p.users.LookupString(user)
	q := p.userQuery(u, uok, t)
	return p.predictQuery(&q, item)
}

func (p *Predictor) predictQuery(q *query, item string) (float64, Fallback) {
	j, ok := p.items.LookupString(item)
	if !ok {
		return p.m.Clamp(p.itemless(q)), q.fb | UnknownItem
	}
	return p.m.Clamp(p.raw(q, j)), q.fb
}

// Row is a user given by a factor row and bias instead of an id, for
// example a new user folded in against the frozen model
// (decomposition.FoldInUser).
type Row struct {
	Factor []float64
	Bias   float64
	// Buckets (sorted) and BucketBias are the user's own biases on time
	// buckets (a user-by-day bias under day buckets), added to Bias when a
	// query falls in one of them; empty for none.
	Buckets    []int32
	BucketBias []float64
	// Items, for an item-item model, is the user's history (dense item
	// indices): the scores sum W's rows of these items, and Factor, Bias
	// and the buckets are unused. For a model with ranking weights
	// (File.RankingWeights) the factors predict and Items ranks.
	Items []int32
}

// bias returns the row's bias at time bucket k (-1: none).
func (r *Row) bias(k int32) float64 {
	if k >= 0 {
		if i, ok := slices.BinarySearch(r.Buckets, k); ok && i < len(r.BucketBias) {
			return r.Bias + r.BucketBias[i]
		}
	}
	return r.Bias
}

// PredictRow is Predict for a user given by a Row.
func (p *Predictor) PredictRow(r Row, item string, t *int64) (float64, Fallback) {
	q := p.rowQuery(r, t)
	return p.predictQuery(&q, item)
}

func (p *Predictor) rowQuery(r Row, t *int64) query {
	if p.f.ItemItem() {
		return p.historyQuery(r.Items, FallbackNone)
	}
	if len(r.Factor) != p.m.Ranks[0] {
		panic("models: Row has the wrong rank")
	}
	k, fb := p.TimeBucket(t)
	b := r.Bias
	if p.m.Order() == 3 {
		b = r.bias(k)
	}
	return p.newQuery(r.Factor, b, k, fb)
}

// rankRowQuery is the query that ranks items for the user r: a model with
// ranking weights (File.RankingWeights) scores by the weights over the
// user's history r.Items when it has one; else rowQuery.
func (p *Predictor) rankRowQuery(r Row, t *int64) query {
	if p.f.RankingWeights() && len(r.Items) > 0 {
		return p.historyQuery(r.Items, FallbackNone)
	}
	return p.rowQuery(r, t)
}

// ErrUnknownID is returned by PredictStrict for an unknown user or item.
var ErrUnknownID = errors.New("unknown id")

// PredictStrict is Predict that fails with ErrUnknownID instead of falling
// back on an unknown user or item (time fallbacks are still allowed and
// reported).
func (p *Predictor) PredictStrict(user, item string, t *int64) (float64, Fallback, error) {
	v, fb := p.Predict(user, item, t)
	switch {
	case fb&UnknownUser != 0:
		return 0, fb, fmt.Errorf("models: user %q: %w", user, ErrUnknownID)
	case fb&UnknownItem != 0:
		return 0, fb, fmt.Errorf("models: item %q: %w", item, ErrUnknownID)
	}
	return v, fb, nil
}
