package completion

// PRIVATE BIASES FROM NOISY SUMS AND COUNTS (the "bias" mode; billboard
// model). The derivation is in the package doc, section "Sensitivities",
// item "Bias mode"; this file implements it.
//
// Released: the global mean mu~ and one bias per item beta_i. Not released:
// user biases and user rows (the model carries zeros there); each user's
// bias is solved at prediction time from the released item side and that
// user's own ratings (FoldInRMSE, `dprec predict --ratings`), which is
// post-processing on the user's side and costs no budget.

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/perturb"
)

// Public prior of the bias mode, fixed from the rating range only (never
// from the data): the spread of a rating around its prediction is sigma_r =
// (r_max - r_min)/4, and the ridge penalties are the baseline predictor's of
// Koren (2008, "Factorization meets the neighborhood", section 2.1):
// lambda_item = 25 and lambda_user = 10 (sigma_r^2/tau^2 with tau the spread
// of the biases). The item prior spread is therefore tau_item^2 =
// sigma_r^2/25.
const (
	// BiasItemPenalty is lambda_item (Koren 2008's lambda_2).
	BiasItemPenalty = 25.0
	// BiasUserPenalty is lambda_user, the penalty of the user's own bias
	// solved at prediction time (Koren 2008's lambda_3); `dprec predict
	// --ratings` uses it for bias models.
	BiasUserPenalty = 10.0
	// DefaultBiasMeanFraction is the share of epsilon spent on the global
	// mean in the bias mode (the rest goes to the item sums).
	DefaultBiasMeanFraction = DefaultMeanFraction
)

// Stream ids of the bias mode's noise.
const (
	streamBiasMean  = 4
	streamBiasItems = 5
)

// BiasResidualClip is the clipping bound of the residuals summed per item,
// as a fraction of the rating range: each item sum adds
// clip(r - mu~, -c, c) with c = BiasResidualClip (r_max - r_min), so one
// rating moves it by at most 2c instead of r_max - r_min. A third of the
// range (c = 1.5 on the 0.5-5 scale) keeps every rating within one and a
// half stars of the mean unchanged; it was chosen on the validation part of
// ml-latest-small's training log (0.8707 against 0.8767 unclipped at
// epsilon 1), never on its test part.
const BiasResidualClip = 1.0 / 3

// BiasSensitivities returns the sensitivities of the two releases of the
// bias mode under the entry-level relation (derivation in the package doc,
// Sensitivities): the sum of the clamped ratings moves by at most Delta_r =
// r_max - r_min when one value changes (l1 = Delta_r), and the vector of
// per-item sums of clipped residuals clip(r - mu~, -c, c) changes in one
// coordinate by at most 2c (l1 = l2 = 2c). The counts are public under the
// relation (positions are public) and mu~ is itself a released value.
func BiasSensitivities(o *PrivateOptions) (meanL1, itemsL1, itemsL2 float64) {
	d := o.ratingRange()
	c := BiasResidualClip * d
	return d, 2 * c, 2 * c
}

// biasTotal returns the sum of the clamped ratings and the per-item counts.
func biasTotal(train *data.Store, o *PrivateOptions) (total float64, counts []int) {
	counts = make([]int, train.Dims[1])
	for e, v := range train.Val {
		total += clampValue(v, o.RatingMin, o.RatingMax)
		counts[train.Idx[1][e]]++
	}
	return total, counts
}

// biasResidualSums returns the per-item sums of the clipped residuals
// clip(clamp(r) - mu, -c, c), c = BiasResidualClip (r_max - r_min), for a
// released mean mu.
func biasResidualSums(train *data.Store, o *PrivateOptions, mu float64) []float64 {
	c := BiasResidualClip * o.ratingRange()
	sums := make([]float64, train.Dims[1])
	for e, x := range train.Val {
		sums[train.Idx[1][e]] += clampValue(clampValue(x, o.RatingMin, o.RatingMax)-mu, -c, c)
	}
	return sums
}

// TrainPrivateBias fits the private bias-only model into m (which must have
// biases; its factors, core, user and time biases are set to zero and are
// not released) from the noisy global sum and the noisy per-item sums of
// the clamped training ratings:
//
//	mu~    = (sum_e r_e + noise_mu) / n
//	beta_i = (S_i + noise_i - n_i mu~) / (n_i + lambda_item + v/(n_i tau^2))
//
// with v the variance of noise_i, tau^2 = sigma_r^2/lambda_item and
// sigma_r = (r_max - r_min)/4 (the linear minimum-mean-square-error
// estimate of beta_i under that public prior; beta_i = 0 for an item
// without ratings). opts.Mechanism selects "laplace" (default, pure
// epsilon-DP, basic composition) or "gaussian" (needs delta > 0);
// opts.MeanFraction is the share of epsilon spent on the mean (default
// DefaultBiasMeanFraction). Only the entry unit is supported. It returns
// the privacy report.
func TrainPrivateBias(train *data.Store, m *decomposition.Model, opts *PrivateOptions) (*perturb.Report, error) {
	if opts == nil {
		return nil, errors.New("completion: bias mode: nil options")
	}
	oo := *opts
	frac := oo.MeanFraction
	oo.MeanFraction = 0
	o, err := oo.resolve("bias")
	if err != nil {
		return nil, err
	}
	if frac == 0 {
		frac = DefaultBiasMeanFraction
	}
	if !(frac > 0 && frac < 1) {
		return nil, fmt.Errorf("completion: bias mode: mean fraction %v must be in (0, 1)", frac)
	}
	if o.Unit != UnitEntry {
		return nil, fmt.Errorf("completion: bias mode: %w: only the entry unit is supported (the user unit would release user-specific counts)", perturb.ErrSensitivity)
	}
	if train == nil || train.Order() < 2 || train.NNZ() == 0 {
		return nil, errors.New("completion: bias mode: empty or malformed training store")
	}
	if m == nil || !m.HasBias || len(m.Dims) != train.Order() || m.Dims[1] != train.Dims[1] {
		return nil, &ShapeError{Reason: "bias mode needs a model with biases whose modes match the training store"}
	}
	switch o.Mechanism {
	case "", perturb.MechLaplace:
		o.Mechanism = perturb.MechLaplace
	case perturb.MechGaussian:
		if err := perturb.CheckPositiveDelta(o.Delta); err != nil {
			return nil, fmt.Errorf("completion: bias mode (gaussian): %w", err)
		}
	default:
		return nil, fmt.Errorf("completion: bias mode: unknown mechanism %q (want laplace or gaussian)", o.Mechanism)
	}
	meanL1, itemsL1, itemsL2 := BiasSensitivities(&o)
	epsMu, epsItems := frac*o.Epsilon, (1-frac)*o.Epsilon
	lapMu, err := perturb.NewLaplace(meanL1, epsMu)
	if err != nil {
		return nil, fmt.Errorf("completion: bias mode: %w", err)
	}
	relMu := lapMu.Release("sum of the clamped ratings (global mean = noisy sum / public count)")
	relMu.Derivation = fmt.Sprintf("one rating changes the sum by at most r_max - r_min = %g (completion doc, Sensitivities)", meanL1)
	var lapI *perturb.Laplace
	var gI *perturb.Gaussian
	var relI perturb.Release
	var v float64 // noise variance of one item sum
	if o.Mechanism == perturb.MechGaussian {
		if gI, err = perturb.NewGaussian(itemsL2, epsItems, o.Delta, o.Calibration); err != nil {
			return nil, fmt.Errorf("completion: bias mode: %w", err)
		}
		relI = gI.Release("per-item sums of the clipped residuals r - mu~")
		v = gI.Sigma() * gI.Sigma()
	} else {
		if lapI, err = perturb.NewLaplace(itemsL1, epsItems); err != nil {
			return nil, fmt.Errorf("completion: bias mode: %w", err)
		}
		relI = lapI.Release("per-item sums of the clipped residuals r - mu~")
		v = 2 * lapI.Scale() * lapI.Scale()
	}
	relI.Derivation = fmt.Sprintf("one rating changes one item's sum of residuals clipped to [-c, c], c = (r_max - r_min)/3, by at most 2c = %g; the counts are public (completion doc, Sensitivities)", itemsL1)
	var acc perturb.Accountant
	if err := acc.Add(relMu, 1); err != nil {
		return nil, err
	}
	if err := acc.Add(relI, 1); err != nil {
		return nil, err
	}
	eps, delta, used, err := admit(&o, &acc)
	if err != nil {
		return nil, fmt.Errorf("completion: bias mode: %w", err)
	}

	total, counts := biasTotal(train, &o)
	tot := []float64{total}
	lapMu.AddTo(tot, rand.New(o.source(streamBiasMean)))
	mu := clampValue(tot[0]/float64(train.NNZ()), o.RatingMin, o.RatingMax)
	sums := biasResidualSums(train, &o, mu)
	r := rand.New(o.source(streamBiasItems))
	if gI != nil {
		gI.AddTo(sums, r)
	} else {
		lapI.AddTo(sums, r)
	}
	for i, n := range counts {
		sums[i] += float64(n) * mu // S~_i - n_i mu~ below is the noisy residual sum
	}
	sr := o.ratingRange() / biasSpreadDivisor
	tau2 := itemPriorVariance(sums, counts, mu, sr*sr, v)
	lambdaItem := sr * sr / tau2

	for _, f := range m.Factors {
		clear(f)
	}
	clear(m.Core)
	for _, b := range m.Bias {
		clear(b)
	}
	m.Pairs = nil
	m.Mean = mu
	for i, n := range counts {
		if n == 0 {
			continue
		}
		nf := float64(n)
		m.Bias[1][i] = (sums[i] - nf*mu) / (nf + lambdaItem + v/(nf*tau2))
	}
	rep := baseReport(&o, "bias", &acc, eps, delta, used)
	publicClamp(&o, m, rep)
	rep.Covered = []string{"global mean", "item biases"}
	rep.Notes = append(rep.Notes,
		"not released: user biases and user factor rows (zero in the model); each user's bias is solved at prediction time from the released item biases and that user's own ratings (billboard model; `dprec predict --ratings`)",
		"factors, core and time biases are zero (bias-only model)",
		fmt.Sprintf("item bias = (noisy sum - n_i mu)/(n_i + sigma_r^2/tau^2 + v/(n_i tau^2)), sigma_r = (r_max-r_min)/4, v = %.4g the noise variance of a sum, tau^2 = %.4g estimated from the released noisy sums and public counts (post-processing; completion/private_bias.go)", v, tau2),
		fmt.Sprintf("epsilon split: %g%% global mean, %g%% item sums (basic composition)", 100*frac, 100*(1-frac)))
	return rep, nil
}

// FoldInRMSE scores a released model under the billboard model: for every
// user in test it solves that user's row and bias from the user's own
// ratings in train against the frozen model (decomposition.FoldIn with
// penalty lambda) and predicts the user's test entries from them; a user
// without training ratings gets a zero row and bias. The model's own user
// rows and biases are never read.
func FoldInRMSE(m *decomposition.Model, train, test *data.Store, lambda float64) (float64, error) {
	if test == nil || test.NNZ() == 0 {
		return math.NaN(), nil
	}
	byUser := map[int32][]int{}
	for e, u := range train.Idx[0] {
		byUser[u] = append(byUser[u], e)
	}
	rows := map[int32][]float64{}
	order := m.Order()
	w := m.NewWork()
	idx := make([]int32, order)
	var sse float64
	for e := range test.Val {
		u := test.Idx[0][e]
		row, ok := rows[u]
		if !ok {
			es := byUser[u]
			if len(es) == 0 {
				n := m.Ranks[0]
				if m.HasBias {
					n++
				}
				row = make([]float64, n)
			} else {
				items := make([]int32, len(es))
				ratings := make([]float64, len(es))
				var times []int32
				if order == 3 {
					times = make([]int32, len(es))
				}
				for j, t := range es {
					items[j] = train.Idx[1][t]
					ratings[j] = train.Val[t]
					if order == 3 {
						times[j] = train.Idx[2][t]
					}
				}
				var err error
				if row, err = decomposition.FoldIn(m, items, times, ratings, lambda); err != nil {
					return 0, fmt.Errorf("completion: fold-in of user %d: %w", u, err)
				}
			}
			rows[u] = row
		}
		for k := range idx {
			idx[k] = test.Idx[k][e]
		}
		d := m.PredictFolded(row, idx, w) - test.Val[e]
		sse += d * d
	}
	return math.Sqrt(sse / float64(test.NNZ())), nil
}

// itemPriorVariance estimates the spread tau^2 of the item biases from the
// released noisy sums and the public counts only (post-processing, no
// budget), by the method of moments: with Y_i = S~_i - n_i mu~,
// E[Y_i^2] = n_i^2 tau^2 + n_i sigma_r^2 + v, so
//
//	tau^2 = sum_i (Y_i^2 - n_i sigma_r^2 - v) / sum_i n_i^2,
//
// kept within [sigma_r^2/BiasItemPenalty, sigma_r^2] (from the baseline
// predictor's penalty of Koren 2008 up to one rating spread), and
// sigma_r^2/BiasItemPenalty when no item has ratings. (A prior mean rising
// with ln n_i, also estimable from the released sums, scored worse on the
// validation part of ml-latest-small: 0.8818 against 0.8781 at epsilon 1.)
func itemPriorVariance(sums []float64, counts []int, mu, sr2, v float64) float64 {
	lo := sr2 / BiasItemPenalty
	var num, den float64
	for i, n := range counts {
		if n == 0 {
			continue
		}
		nf := float64(n)
		y := sums[i] - nf*mu
		num += y*y - nf*sr2 - v
		den += nf * nf
	}
	if den == 0 {
		return lo
	}
	return math.Min(sr2, math.Max(lo, num/den))
}

// biasSpreadDivisor sets sigma_r = (r_max - r_min)/biasSpreadDivisor.
const biasSpreadDivisor = 4.0
