package completion

import (
	"errors"
	"fmt"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/perturb"
)

// The bias mode's releases over ratings that live elsewhere (the Beam
// pipelines of the nested module beam/): the driver runs
// TrainPrivateBiasFrom (entry level) or TrainPrivateBiasUserFrom (user
// unit), which calibrate, account, draw the noise from the options'
// source and build the report with TrainPrivateBias's own code, while a
// BiasSource or UserBiasSource computes the data-dependent statistics with
// the per-rating kernels BiasClamp, BiasCentred and BiasResidual (at the
// user unit over the log bounded by ChooseUserRatings).

// BiasSource supplies the statistics of the bias mode's entry-level
// releases. TrainPrivateBiasFrom calls Totals, then ResidualSums once with
// the released mean; o is the resolved options.
type BiasSource interface {
	// Totals returns the number of ratings, the sum of their clamped
	// values (BiasClamp) and every item's number of ratings (one per item
	// of the model, in its order).
	Totals(o *PrivateOptions) (n int, sum float64, counts []int, err error)
	// ResidualSums returns every item's sum of BiasResidual(r, mu, ...)
	// over its ratings r.
	ResidualSums(o *PrivateOptions, mu float64) ([]float64, error)
}

// ReleaseObserver may be implemented by a BiasSource (or an ALSSource)
// that wants to see the noisy vectors released from its statistics, for
// statistical tests of the noise through a distributed source: Released
// is called right after the noise is added, before any post-processing,
// with the Release.What of the report. It must not keep or modify noisy.
// The values are released ones (DP outputs), so seeing them costs no
// budget.
type ReleaseObserver interface {
	Released(what string, noisy []float64)
}

func observeSource(src any, what string, noisy []float64) {
	if ob, ok := src.(ReleaseObserver); ok {
		ob.Released(what, noisy)
	}
}

// BiasClamp is a rating clamped to the public range [lo, hi].
func BiasClamp(v, lo, hi float64) float64 { return clampValue(v, lo, hi) }

// BiasResidual is a rating's clipped residual against the released mean
// mu: clip(clamp(v) - mu, -c, c) with c = BiasResidualClip (hi - lo).
func BiasResidual(v, mu, lo, hi float64) float64 {
	c := BiasResidualClip * (hi - lo)
	return clampValue(clampValue(v, lo, hi)-mu, -c, c)
}

// BiasCentred is a rating clamped to the public range [lo, hi] minus the
// range's midpoint (lo + hi)/2: one term of the user unit's released sum.
func BiasCentred(v, lo, hi float64) float64 { return clampValue(v, lo, hi) - (lo+hi)/2 }

// UserBiasSource supplies the statistics of the bias mode's user-level
// releases (TrainPrivateBiasUserFrom). The scalars are over the BOUNDED
// log: every user keeps at most o.MaxRatingsPerUser ratings, at most one
// per item (ChooseUserRatings). The item counts and sums are over every
// rating of each user, one per item, weighted by
// UserContributionWeight(o.Mechanism, k, m_u), m_u the user's number of
// distinct catalogue items (a source that reads the bounded log instead
// weighs every rating 1, the same rule on it). Only ratings of the
// model's public item catalogue count. The source is trusted to have
// bounded and weighted the log: the sensitivities hold only then.
// TrainPrivateBiasUserFrom calls UserTotals, then ResidualSums once with
// the released mean; o is the resolved options.
type UserBiasSource interface {
	// UserTotals returns the number of users with at least one rating,
	// the number of ratings and the sum of their BiasCentred values (of
	// the bounded log), and every item's weighted number of ratings (one
	// per item of the model, in its order).
	UserTotals(o *PrivateOptions) (users, n int, centred float64, counts []float64, err error)
	// ResidualSums returns every item's weighted sum of BiasResidual(r,
	// mu, ...) over its ratings r.
	ResidualSums(o *PrivateOptions, mu float64) ([]float64, error)
}

// TrainPrivateBiasUserFrom is TrainPrivateBias at the user unit
// (opts.Unit UnitUser, opts.MaxRatingsPerUser = k) with the statistics
// from src: the same plan, noise draws (from o.Noise, in the same order),
// estimate and report as TrainPrivateBias on the bounded log src
// describes, with the log before the bound as PrivateOptions.Unbounded
// when src's weighted counts and sums read it (UserBiasSource). m is a user x item model with biases whose items are a public
// catalogue; its user mode is never released (any size: one placeholder
// row). A private item selection (SelectedItems, Scalars) is not offered
// from a source.
func TrainPrivateBiasUserFrom(src UserBiasSource, m *decomposition.Model, opts *PrivateOptions) (*perturb.Report, error) {
	if m == nil || !m.HasBias || m.Order() != 2 {
		return nil, &ShapeError{Reason: "bias mode needs a user x item model with biases"}
	}
	o, _, err := resolveBias(opts)
	if err != nil {
		return nil, err
	}
	if o.Unit != UnitUser {
		return nil, errors.New("completion: TrainPrivateBiasUserFrom is the user unit's (use TrainPrivateBiasFrom at entry level)")
	}
	if o.SelectedItems || o.Scalars != nil {
		return nil, fmt.Errorf("%w: a source's items must be a public catalogue (no private item selection from a source)", ErrDomain)
	}
	zeroModel(m)
	fit, err := trainBiasUser(src, m, &o)
	if err != nil {
		return nil, err
	}
	return fit.report(m), nil
}

// storeUserBiasSource computes the user-level statistics from an
// in-memory bounded store (and o.Scalars for the three scalars when a
// private item selection left it), the weighted item counts and sums from
// ws (o.Unbounded, or the bounded store) with the weights w.
type storeUserBiasSource struct {
	st, ws *data.Store
	w      []float64
}

// newStoreUserBiasSource is the source of the bounded store st under o.
func newStoreUserBiasSource(st *data.Store, o *PrivateOptions) (storeUserBiasSource, error) {
	ws, w, err := weightedSource(st, o)
	if err != nil {
		return storeUserBiasSource{}, err
	}
	return storeUserBiasSource{st: st, ws: ws, w: w}, nil
}

func (s storeUserBiasSource) UserTotals(o *PrivateOptions) (int, int, float64, []float64, error) {
	sc := s.st // the store of the scalar releases (PrivateOptions.Scalars)
	if o.Scalars != nil {
		if err := checkScalarsStore(o.Scalars); err != nil {
			return 0, 0, 0, nil, err
		}
		if err := checkUserContributions(o.Scalars, o.MaxRatingsPerUser); err != nil {
			return 0, 0, 0, nil, fmt.Errorf("completion: bias mode (scalars): %w", err)
		}
		sc = o.Scalars
	}
	var total float64
	for _, v := range sc.Val {
		total += BiasCentred(v, o.RatingMin, o.RatingMax)
	}
	return usersWithRows(sc.Idx[0], sc.Dims[0]), sc.NNZ(), total, userWeightedCounts(s.ws, s.w), nil
}

func (s storeUserBiasSource) ResidualSums(o *PrivateOptions, mu float64) ([]float64, error) {
	return userWeightedResidualSums(s.ws, s.w, o, mu), nil
}

// TrainPrivateBiasFrom is TrainPrivateBias at entry level (opts.Unit
// UnitEntry) with the statistics from src: the item counts are public
// under the relation, so m's items must be a public catalogue (the set of
// released rows must not depend on the data).
func TrainPrivateBiasFrom(src BiasSource, m *decomposition.Model, opts *PrivateOptions) (*perturb.Report, error) {
	if m == nil || !m.HasBias || m.Order() != 2 {
		return nil, &ShapeError{Reason: "bias mode needs a user x item model with biases"}
	}
	fit, err := fitPrivateBiasFrom(src, m, opts)
	if err != nil {
		return nil, err
	}
	return fit.report(m), nil
}

// fitPrivateBiasFrom validates the options and runs the entry-level bias
// releases from src into m (whose mode sizes the caller has checked).
func fitPrivateBiasFrom(src BiasSource, m *decomposition.Model, opts *PrivateOptions) (*biasFit, error) {
	o, frac, err := resolveBias(opts)
	if err != nil {
		return nil, err
	}
	if o.Unit == UnitUser {
		return nil, errors.New("completion: bias mode from a source: TrainPrivateBiasFrom is entry level (the user unit's is TrainPrivateBiasUserFrom)")
	}
	zeroModel(m)
	return trainBiasEntry(src, m, &o, frac)
}

// scratchBiasReleaseFrom is scratchBiasRelease with the statistics from
// src, into a new user x item bias-only model of dims.
func scratchBiasReleaseFrom(src BiasSource, dims []int, o *PrivateOptions, eps float64) (*decomposition.Model, *perturb.Report, error) {
	wo := *o
	wo.Epsilon = eps
	wo.Mechanism, wo.MeanFraction, wo.Accounting = "", 0, perturb.Basic
	wm, err := decomposition.NewModel(decomposition.CP, []int{dims[0], dims[1]}, []int{1}, true)
	if err != nil {
		return nil, nil, err
	}
	rep, err := TrainPrivateBiasFrom(src, wm, &wo)
	if err != nil {
		return nil, nil, err
	}
	return wm, rep, nil
}

// storeBiasSource computes the statistics from an in-memory store.
type storeBiasSource struct{ st *data.Store }

func (s storeBiasSource) Totals(o *PrivateOptions) (int, float64, []int, error) {
	total, counts := biasTotal(s.st, o)
	return s.st.NNZ(), total, counts, nil
}

func (s storeBiasSource) SquareSum(o *PrivateOptions) (float64, error) {
	mid := (o.RatingMin + o.RatingMax) / 2
	q := 0.0
	for _, v := range s.st.Val {
		d := BiasClamp(v, o.RatingMin, o.RatingMax) - mid
		q += d * d
	}
	return q, nil
}

func (s storeBiasSource) ResidualSums(o *PrivateOptions, mu float64) ([]float64, error) {
	return biasResidualSums(s.st, o, mu), nil
}
