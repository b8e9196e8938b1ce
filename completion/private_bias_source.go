package completion

import (
	"errors"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/perturb"
)

// The bias mode's entry-level releases over ratings that live elsewhere
// (the Beam pipelines of the nested module beam/): the driver runs
// TrainPrivateBiasFrom, which calibrates, accounts, draws the noise from
// the options' source and builds the report as TrainPrivateBias does,
// while a BiasSource computes the two data-dependent statistics with the
// per-rating kernels BiasClamp and BiasResidual.

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

func observeSource(src BiasSource, what string, noisy []float64) {
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
		return nil, errors.New("completion: bias mode from a source: user level is not supported (entry level only)")
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

func (s storeBiasSource) ResidualSums(o *PrivateOptions, mu float64) ([]float64, error) {
	return biasResidualSums(s.st, o, mu), nil
}
