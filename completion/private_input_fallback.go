package completion

// INPUT PERTURBATION FALLBACK TO A BIAS-ONLY RELEASE.
//
// Input perturbation adds noise of variance v (2 b^2 for Laplace, sigma^2
// for Gaussian) to every rating; the least noisy statistic anything
// trained on the noisy values can use is their mean, whose noise has
// standard deviation sqrt(v/N) (N public under the entry relation). When
// that exceeds half the public prior spread of a bias, tau/2 with tau =
// sigma_r/5 and sigma_r = (r_max - r_min)/4 (the bias mode's prior), not
// even the global mean, let alone a bias or a factor row, can be learnt
// from the noisy values: on ml-latest-small at epsilon 0.1 (Laplace b =
// 45, sqrt(v/N) = 0.21 against tau/2 = 0.11) the model trained on them
// scored worse than the global mean. The rule uses only public quantities
// (epsilon, delta, the rating range, N) and is decided in Plan before any
// data is read.
//
// With the residual release (private_input_residual.go) v is the noise
// variance of a released residual, 2 (2c/((1 - f) epsilon))^2: at epsilon
// 0.1 on ml-latest-small b = 33.3 and sqrt(v/N) = 0.156 > 0.1125, so it
// falls back (it does up to about epsilon 0.13, against about 0.19 for
// Algorithm 1's variance). The values then carry the released mean and
// item biases, so the reason to fall back is another one: a residual that
// noisy adds nothing the bias release could not give better with the
// whole budget instead of a tenth of it.
//
// The fallback spends the whole budget on the bias mode's release instead
// (TrainPrivateBias: a noisy global sum and noisy per-item sums of clipped
// residuals, Laplace, basic composition) and releases its global mean and
// item biases; user rows, user and time biases are zero (released as
// constants), and a CP model's item rows carry private ALS's free
// columns (freeItemColumns: the item biases over s and the standardised
// log counts, on which each user fits a slope of their own when folding
// in; post-processing) with time rows of ones. The report names the mechanism actually used.

import (
	"context"
	"fmt"
	"math"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
)

// InputFallsBack reports whether input perturbation with noise variance v
// per value on n ratings falls back to the bias-only release: by the rule
// above, or when v is at least s^2, s = (r_max - r_min)/4 the public spread
// of a rating (the bias mode's sigma_r): a value whose noise exceeds the
// spread of the ratings themselves. On the validation parts of
// MovieLens-100K's and ml-latest-small's training logs and of a
// MovieLens-shaped synthetic log (residual release, the default Gibbs
// solver) input scored 1.043 / 0.985 / 0.941 at epsilon 1 (v = 17 s^2)
// against the bias mode's 0.931 / 0.870 / 0.822, and 0.954 / 0.895 / 0.813
// at epsilon 3 (v = 1.9 s^2) against 0.927 / 0.858 / 0.818; at epsilon 10
// (v = 0.19 s^2) 0.899 / 0.851 / 0.603 against 0.926 / 0.856 / 0.817. With
// the residual release the rule falls back below epsilon 4.19 whatever
// the range (2c/((1 - f) epsilon) = s/sqrt(2) there).
func InputFallsBack(o *PrivateOptions, v float64, n int) bool {
	s := o.ratingRange() / biasSpreadDivisor
	tau := s / dpsgdPriorDivisor
	return math.Sqrt(v/float64(n)) > tau/2 || v >= s*s
}

// planFallback runs the bias release on a scratch model and writes the
// report; the release is copied into the trained model by runLoop.
func (p *InputPerturbation) planFallback(train *data.Store, v float64) error {
	wm, rep, err := scratchBiasRelease(train, &p.o, p.o.Epsilon)
	if err != nil {
		return fmt.Errorf("completion: input perturbation (bias-only fallback): %w", err)
	}
	p.fallback = wm
	rep.Mode = "input"
	rep.Composition = "basic (bias-only fallback)"
	s := p.o.ratingRange() / biasSpreadDivisor
	rep.Notes = append(rep.Notes, fmt.Sprintf("input perturbation fell back to the bias-only release: the noise variance of a value, v = %.4g, is at least s^2 = %.4g (s = (r_max - r_min)/4, the public spread of a rating), or the noise of the mean of the noisy values, sqrt(v/N) = %.4g (N = %d), exceeds half the prior spread of a bias, %.4g (completion/private_input_fallback.go); user and time biases and user rows are released as zero; a CP model's item rows are private ALS's free columns (column 1 the released item biases over s, column 2 the standardised log(1 + n_i) of the public counts at the first column's spread, the others zero; post-processing: each user fits a slope of their own on each when folding in) and its time rows ones, a Tucker model's factors and core zero", v, s*s, math.Sqrt(v/float64(train.NNZ())), train.NNZ(), s/dpsgdPriorDivisor/2))
	rep.Covered, rep.NotCovered = nil, nil
	p.report = rep
	return nil
}

func (p *InputPerturbation) ownsLoop() bool { return p.fallback != nil }

// runLoop writes the bias-only release into m (no training).
func (p *InputPerturbation) runLoop(_ context.Context, _, _ *data.Store, m *decomposition.Model, _ *Settings, _ []float64, res *Result, _ func(EpochRecord)) error {
	writeBiasFallback(m, p.fallback, &p.o, p.report.ItemCounts, res)
	return nil
}

// writeBiasFallback writes the bias-only release fb into m, as input's and
// minibatch DP-SGD's fallbacks release it: the mean and item biases, zero
// user and time biases and user rows, and for a CP model the free columns
// and time rows of ones (a Tucker model's factors and core zero).
func writeBiasFallback(m, fb *decomposition.Model, o *PrivateOptions, counts []float64, res *Result) {
	for _, f := range m.Factors {
		clear(f)
	}
	clear(m.Core)
	for _, b := range m.Bias {
		clear(b)
	}
	m.Mean = fb.Mean
	copy(m.Bias[1], fb.Bias[1])
	if m.Kind == decomposition.CP {
		// The free columns, as private ALS releases them when no item
		// step runs (freeItemColumns): the item biases over s and the
		// items' standardised log counts as the first item columns, time
		// rows of ones; users fold in a slope of their own on each.
		// Post-processing of the bias release.
		for _, f := range m.Factors[2:] {
			for i := range f {
				f[i] = 1
			}
		}
		freeItemColumns(m, o, counts)
	}
	res.BestEpoch = 0
}

var _ loopOwner = (*InputPerturbation)(nil)
var _ loopOwner = (*GradientPerturbation)(nil)
