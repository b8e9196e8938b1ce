package completion

import (
	"fmt"
	"math"
	"slices"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/perturb"
)

// UserContributionWeight is the weight of each rating of a user who rated
// m distinct items, in the user unit's item counts and item sums (the bias
// releases, private ALS's second release of them, and the private
// implicit mode's counts and item sums) under the bound k: 1
// when m <= k; above it sqrt(k/m) when the releases are Gaussian
// (mechanism perturb.MechGaussian, calibrated to l2: the user moves m
// coordinates by w each, l2 w sqrt(m) = sqrt(k)), and k/m when they are
// Laplace (calibrated to l1: w m = k, and l2 k/sqrt(m) <= sqrt(k)).
// Either way one user moves the counts and the sums by no more than k
// ratings of weight 1 do, so the sensitivities of the bounded log hold,
// while every rating of a user with more than k is read (package doc,
// "User unit": the weighted counts and sums). Any mechanism other than
// exactly perturb.MechGaussian gets k/m, which is safe under both norms.
// m <= 0 gives 0.
func UserContributionWeight(mechanism string, k, m int) float64 {
	switch {
	case m <= 0:
		return 0
	case m <= k:
		return 1
	case mechanism == perturb.MechGaussian:
		return math.Sqrt(float64(k) / float64(m))
	}
	return float64(k) / float64(m)
}

// userEntryWeights returns every rating's weight in the user unit's
// weighted item counts and sums over st: UserContributionWeight(
// o.Mechanism, k, m_u) for the first rating (in st's order) of each of
// user u's m_u distinct items, 0 for a later rating of the same item (a
// repeated cell or another time bucket). It sorts one index per rating,
// 8 bytes each.
func userEntryWeights(st *data.Store, o *PrivateOptions) []float64 {
	n := st.NNZ()
	perm := make([]int, n)
	for e := range perm {
		perm[e] = e
	}
	us, is := st.Idx[0], st.Idx[1]
	slices.SortFunc(perm, func(a, b int) int {
		if us[a] != us[b] {
			return int(us[a]) - int(us[b])
		}
		if is[a] != is[b] {
			return int(is[a]) - int(is[b])
		}
		return a - b
	})
	w := make([]float64, n)
	for lo := 0; lo < n; {
		u := us[perm[lo]]
		hi, m := lo, 0
		for ; hi < n && us[perm[hi]] == u; hi++ {
			if hi == lo || is[perm[hi]] != is[perm[hi-1]] {
				m++
			}
		}
		wu := UserContributionWeight(o.Mechanism, o.MaxRatingsPerUser, m)
		for j := lo; j < hi; j++ {
			if j == lo || is[perm[j]] != is[perm[j-1]] {
				w[perm[j]] = wu
			}
		}
		lo = hi
	}
	return w
}

// userWeightedCounts returns every item's sum of the weights w (one per
// rating of st).
func userWeightedCounts(st *data.Store, w []float64) []float64 {
	c := make([]float64, st.Dims[1])
	for e, i := range st.Idx[1] {
		c[i] += w[e]
	}
	return c
}

// userWeightedResidualSums returns every item's sum of w_e
// BiasResidual(r_e, mu, ...) over the ratings of st.
func userWeightedResidualSums(st *data.Store, w []float64, o *PrivateOptions, mu float64) []float64 {
	s := make([]float64, st.Dims[1])
	for e, x := range st.Val {
		if w[e] != 0 {
			s[st.Idx[1][e]] += w[e] * BiasResidual(x, mu, o.RatingMin, o.RatingMax)
		}
	}
	return s
}

// weightedSource returns the store the user unit's weighted item counts
// and sums read, and its weights: o.Unbounded (every rating of each user)
// when set, after checking it is on train's item domain, else train (the
// bounded log, where every weight is 1).
func weightedSource(train *data.Store, o *PrivateOptions) (*data.Store, []float64, error) {
	st := train
	if o.Unbounded != nil {
		if err := checkUnbounded(o.Unbounded, train); err != nil {
			return nil, nil, err
		}
		st = o.Unbounded
	}
	return st, userEntryWeights(st, o), nil
}

// weightedScope says, for the report, which ratings the item counts and
// sums read and how they are weighted. It holds whoever computed them: a
// bounded log (dprec's library callers without PrivateOptions.Unbounded)
// has weight 1 throughout.
func weightedScope(o *PrivateOptions) string {
	return fmt.Sprintf("the item counts and sums read each user's ratings, one per item: every rating before the bound when the caller gives that log (dprec train and dprec-beam do), else the bounded log; a user with m_u distinct items weighs each by w_u = %s (UserContributionWeight), so that one user moves them no more than k = %d ratings of weight 1 do; the numbers of users and ratings and the centred sum read the bounded log", weightRule(o), o.MaxRatingsPerUser)
}

// weightRule states UserContributionWeight's rule under o's mechanism.
func weightRule(o *PrivateOptions) string {
	if o.Mechanism == perturb.MechGaussian {
		return "min(1, sqrt(k/m_u)) (Gaussian noise: l2 w_u sqrt(m_u) <= sqrt(k))"
	}
	return "min(1, k/m_u) (Laplace noise: l1 w_u m_u <= k)"
}

// weightedNorm states the sensitivity of a weighted per-item vector whose
// terms have size at most size (suffix: its factor in the bound).
func weightedNorm(o *PrivateOptions, size, suffix string) string {
	if o.Mechanism == perturb.MechGaussian {
		return fmt.Sprintf("l2 w_u %s sqrt(m_u) <= sqrt(k)%s, k = %d", size, suffix, o.MaxRatingsPerUser)
	}
	return fmt.Sprintf("l1 w_u %s m_u <= k%s, k = %d", size, suffix, o.MaxRatingsPerUser)
}

// weightedTermsNote says, at the user unit, what private ALS's item terms
// t_i and counts n_i are.
func weightedTermsNote(o *PrivateOptions) string {
	if o.Unit != UnitUser {
		return ""
	}
	return " (t_i and n_i: the released item counts, weighted as the bias releases', which exceed the bounded log's where users rate more than k items)"
}
