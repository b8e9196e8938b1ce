package completion

// PRIVATE BIASES FROM NOISY SUMS AND COUNTS (the "bias" mode; billboard
// model). The derivation is in the package doc, section "Sensitivities",
// item "Bias mode"; this file implements it.
//
// Released: the global mean mu~ and one bias per item beta_i. Not released:
// user biases and user rows (the model carries zeros there); each user's
// bias, and the user's biases on the time buckets of their ratings, are
// solved at prediction time from the released item side and that user's
// own ratings (BillboardFold, FoldInRMSE, `dprec predict --ratings`), which
// is post-processing on the user's side and costs no budget.

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

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
	// BiasBucketPenalty is lambda_t, the penalty of each of a user's
	// time-bucket biases (user-by-day biases under day buckets, as
	// timeSVD++'s b_{u,t}; Koren 2009) solved at prediction time with the
	// user's bias (decomposition.FoldInUser): the same public penalty as
	// the user's own bias. On the validation part of ml-latest-small's
	// training log (bias mode, entry level, day buckets, 4 noise draws) it
	// scored 0.8540 at epsilon 1 against 0.8699 without bucket biases
	// (0.8549, 0.8538, 0.8551, 0.8569 at lambda_t = 2, 5, 20, 40; 0.8842
	// against 0.9038 at epsilon 0.1, 0.8415 against 0.8566 at 10), never on
	// its test part.
	BiasBucketPenalty = BiasUserPenalty
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
		total += BiasClamp(v, o.RatingMin, o.RatingMax)
		counts[train.Idx[1][e]]++
	}
	return total, counts
}

// biasResidualSums returns the per-item sums of the clipped residuals
// clip(clamp(r) - mu, -c, c), c = BiasResidualClip (r_max - r_min), for a
// released mean mu.
func biasResidualSums(train *data.Store, o *PrivateOptions, mu float64) []float64 {
	sums := make([]float64, train.Dims[1])
	for e, x := range train.Val {
		sums[train.Idx[1][e]] += BiasResidual(x, mu, o.RatingMin, o.RatingMax)
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
// without ratings). opts.Mechanism selects "laplace" (the entry unit's
// default, pure epsilon-DP, basic composition) or "gaussian" (needs delta
// > 0; the user unit's default); opts.MeanFraction is the share of epsilon
// spent on the mean (default DefaultBiasMeanFraction).
//
// Under the user unit (add or remove one user) the counts are private too:
// train must be re-indexed onto a public domain (RestrictToDomain or
// SelectItems) and bounded (BoundUserContributions), m's item and time
// modes must match it, its user mode is never released (any size: the
// CLI saves one all-zero placeholder row), and the number of users, the
// number of ratings, their sum, the item counts and the item sums are all
// released with noise (trainBiasUser); with a private item selection the
// first three may come from the bounded log before the selection
// (PrivateOptions.Scalars). The item counts and sums weigh each user's
// ratings by UserContributionWeight, over PrivateOptions.Unbounded (every
// rating of each user, on train's items) when it is set, else over train
// (weight 1 throughout). It returns the privacy report.
func TrainPrivateBias(train *data.Store, m *decomposition.Model, opts *PrivateOptions) (*perturb.Report, error) {
	fit, err := fitPrivateBias(train, m, opts)
	if err != nil {
		return nil, err
	}
	return fit.report(m), nil
}

// biasFit is what the bias releases leave behind: their accountant and
// guarantee, the item counts the estimate used (public under the entry
// unit, noisy under the user unit) and the report's notes.
type biasFit struct {
	o            PrivateOptions
	acc          perturb.Accountant
	eps, delta   float64
	used         perturb.Composition
	counts       []float64
	notes        []string
	itemsVar     float64 // noise variance of one item sum
	lapScale     float64 // Laplace scale of the item sums (0: Gaussian)
	frac         float64
	noisyUsers   float64 // user unit: the released number of users
	noisyRatings float64 // user unit: the released number of ratings
	// User unit: the released mean, noisy item sums (before the item
	// bias estimate) and the noise variance of a count, kept so that a
	// second release of the sums can be pooled with them (private ALS's
	// fallback, alsUserFallback).
	mu        float64
	sums      []float64
	rawCounts []float64 // the noisy counts before negative ones are set to 0
	countVar  float64
}

// fitPrivateBias validates its inputs and runs the bias releases of the
// options' unit into m.
func fitPrivateBias(train *data.Store, m *decomposition.Model, opts *PrivateOptions) (*biasFit, error) {
	o, frac, err := resolveBias(opts)
	if err != nil {
		return nil, err
	}
	if err := checkBiasInputs(train, m, &o); err != nil {
		return nil, err
	}
	zeroModel(m)
	if o.Unit == UnitUser {
		src, err := newStoreUserBiasSource(train, &o)
		if err != nil {
			return nil, err
		}
		return trainBiasUser(src, m, &o)
	}
	return trainBiasEntry(storeBiasSource{train}, m, &o, frac)
}

// resolveBias validates the bias mode's options and fills the defaults
// (mean fraction, mechanism).
func resolveBias(opts *PrivateOptions) (PrivateOptions, float64, error) {
	if opts == nil {
		return PrivateOptions{}, 0, errors.New("completion: bias mode: nil options")
	}
	oo := *opts
	frac := oo.MeanFraction
	oo.MeanFraction = 0
	o, err := oo.resolve("bias")
	if err != nil {
		return o, 0, err
	}
	if frac == 0 {
		frac = DefaultBiasMeanFraction
	}
	if !(frac > 0 && frac < 1) {
		return o, 0, fmt.Errorf("completion: bias mode: mean fraction %v must be in (0, 1)", frac)
	}
	if o.Mechanism == "" && o.Unit == UnitUser {
		o.Mechanism = perturb.MechGaussian
	}
	switch o.Mechanism {
	case "", perturb.MechLaplace:
		o.Mechanism = perturb.MechLaplace
	case perturb.MechGaussian:
		if err := perturb.CheckPositiveDelta(o.Delta); err != nil {
			return o, 0, fmt.Errorf("completion: bias mode (gaussian): %w", err)
		}
	default:
		return o, 0, fmt.Errorf("completion: bias mode: unknown mechanism %q (want laplace or gaussian)", o.Mechanism)
	}
	return o, frac, nil
}

// zeroModel zeroes every parameter of m (a bias-only release sets the
// mean and item biases afterwards).
func zeroModel(m *decomposition.Model) {
	for _, f := range m.Factors {
		clear(f)
	}
	clear(m.Core)
	for _, b := range m.Bias {
		clear(b)
	}
	m.Pairs = nil
}

// checkBiasInputs checks the store and the model's shape.
func checkBiasInputs(train *data.Store, m *decomposition.Model, o *PrivateOptions) error {
	if train == nil || train.Order() < 2 || train.NNZ() == 0 {
		return errors.New("completion: bias mode: empty or malformed training store")
	}
	if m == nil || !m.HasBias || len(m.Dims) != train.Order() || m.Dims[1] != train.Dims[1] {
		return &ShapeError{Reason: "bias mode needs a model with biases whose modes match the training store"}
	}
	if o.Unit == UnitUser {
		if train.Order() == 3 && m.Dims[2] != train.Dims[2] {
			return &ShapeError{Reason: "bias mode needs a model whose time mode matches the public time range"}
		}
		if err := checkUserContributions(train, o.MaxRatingsPerUser); err != nil {
			return fmt.Errorf("completion: bias mode: %w", err)
		}
	}
	return nil
}

// trainBiasEntry runs the entry-level releases (package doc,
// Sensitivities, "Bias mode").
func trainBiasEntry(src BiasSource, m *decomposition.Model, o *PrivateOptions, frac float64) (*biasFit, error) {
	meanL1, itemsL1, itemsL2 := BiasSensitivities(o)
	epsMu, epsItems := frac*o.Epsilon, (1-frac)*o.Epsilon
	lapMu, err := perturb.NewLaplace(meanL1, epsMu)
	if err != nil {
		return nil, fmt.Errorf("completion: bias mode: %w", err)
	}
	relMu := lapMu.Release("sum of the clamped ratings (global mean = noisy sum / public count)")
	relMu.Derivation = fmt.Sprintf("one rating changes the sum by at most r_max - r_min = %g (completion doc, Sensitivities)", meanL1)
	items, err := newSumNoise(o, itemsL1, itemsL2, epsItems, o.Delta)
	if err != nil {
		return nil, fmt.Errorf("completion: bias mode: %w", err)
	}
	relI := items.release("per-item sums of the clipped residuals r - mu~")
	relI.Derivation = fmt.Sprintf("one rating changes one item's sum of residuals clipped to [-c, c], c = (r_max - r_min)/3, by at most 2c = %g; the counts are public (completion doc, Sensitivities)", itemsL1)
	fit := &biasFit{o: *o, frac: frac, itemsVar: items.variance()}
	if items.lap != nil {
		fit.lapScale = items.lap.Scale()
	}
	for _, r := range []perturb.Release{relMu, relI} {
		if err := fit.acc.Add(r, 1); err != nil {
			return nil, err
		}
	}
	if fit.eps, fit.delta, fit.used, err = admit(o, &fit.acc); err != nil {
		return nil, fmt.Errorf("completion: bias mode: %w", err)
	}
	n, total, counts, err := src.Totals(o)
	if err != nil {
		return nil, err
	}
	if n <= 0 || len(counts) != m.Dims[1] {
		return nil, &ShapeError{Reason: fmt.Sprintf("bias mode: %d ratings and %d item counts for a model of %d items", n, len(counts), m.Dims[1])}
	}
	tot := []float64{total}
	lapMu.AddTo(tot, rand.New(o.source(streamBiasMean)))
	o.observe(relMu.What, tot, nil)
	observeSource(src, relMu.What, tot)
	mu := clampValue(tot[0]/float64(n), o.RatingMin, o.RatingMax)
	sums, err := src.ResidualSums(o, mu)
	if err != nil {
		return nil, err
	}
	if len(sums) != m.Dims[1] {
		return nil, &ShapeError{Reason: fmt.Sprintf("bias mode: %d item sums for a model of %d items", len(sums), m.Dims[1])}
	}
	items.addTo(sums, rand.New(o.source(streamBiasItems)))
	o.observe(relI.What, sums, nil)
	observeSource(src, relI.What, sums)
	fit.counts = make([]float64, len(counts))
	for i, n := range counts {
		fit.counts[i] = float64(n)
	}
	fit.setItemBiases(m, mu, sums, 0)
	fit.notes = append(fit.notes, fmt.Sprintf("epsilon split: %g%% global mean, %g%% item sums (basic composition)", 100*frac, 100*(1-frac)))
	return fit, nil
}

// sumNoise is the Laplace or Gaussian noise of one vector release.
type sumNoise struct {
	lap *perturb.Laplace
	g   *perturb.Gaussian
}

// newSumNoise calibrates o.Mechanism's noise to (eps, delta) at the l1
// (Laplace) or l2 (Gaussian) sensitivity.
func newSumNoise(o *PrivateOptions, l1, l2, eps, delta float64) (sumNoise, error) {
	if o.Mechanism == perturb.MechGaussian {
		g, err := perturb.NewGaussian(l2, eps, delta, o.Calibration)
		return sumNoise{g: g}, err
	}
	l, err := perturb.NewLaplace(l1, eps)
	return sumNoise{lap: l}, err
}

func (s sumNoise) release(what string) perturb.Release {
	if s.g != nil {
		return s.g.Release(what)
	}
	return s.lap.Release(what)
}

func (s sumNoise) variance() float64 {
	if s.g != nil {
		return s.g.Sigma() * s.g.Sigma()
	}
	return 2 * s.lap.Scale() * s.lap.Scale()
}

func (s sumNoise) addTo(x []float64, r *rand.Rand) {
	if s.g != nil {
		s.g.AddTo(x, r)
	} else {
		s.lap.AddTo(x, r)
	}
}

// setItemBiases sets m's mean to mu and its item biases from the noisy
// residual sums (Y_i = S~_i - n_i mu~, relative to mu) and f.counts, whose
// noise variance is countVar (0 when public), under the prior beta_i ~
// N(0, tau^2) with tau^2 estimated from the released values
// (itemPriorVariance; post-processing). With Gaussian noise the posterior
// mean is linear, n_i tau^2 Y_i/(n_i^2 tau^2 + n_i sigma_r^2 + v). With
// Laplace noise L of scale b, Y_i = X_i + L with X_i = n_i beta_i + (rating
// noise) ~ N(0, s_i^2), s_i^2 = n_i^2 tau^2 + n_i sigma_r^2, and the exact
// posterior mean is n_i tau^2/s_i^2 (Y_i - E[L | Y_i])
// (laplacePosteriorNoise): a large |Y_i| is more likely heavy-tailed noise
// than signal, which the linear estimate ignores. Validation part of
// ml-latest-small, entry level, mean of 8 noise draws: 0.8806 against
// 0.8814 linear at epsilon 0.5, 0.8700 against 0.8704 at 1, 0.8625
// against 0.8626 at 2. (Not adopted: a prior fitted nonparametrically to
// the released sums by EM on 61 points, 0.8695 at epsilon 1 but 0.9083
// against 0.9028 at 0.1; a prior spread per count stratum, no gain;
// dividing by the clipping attenuation of a N(0, sigma_r^2) residual,
// 0.8754; a clip per item from its public count maximising a Gaussian
// signal-to-noise ratio, 0.8739.)
func (f *biasFit) setItemBiases(m *decomposition.Model, mu float64, resid []float64, countVar float64) {
	sr := f.o.ratingRange() / biasSpreadDivisor
	v := f.itemsVar
	tau2 := itemPriorVariance(resid, f.counts, sr*sr, v, countVar)
	m.Mean = mu
	for i, n := range f.counts {
		if n <= 0 {
			continue
		}
		if f.lapScale > 0 {
			s2 := n*n*tau2 + n*sr*sr
			m.Bias[1][i] = n * tau2 / s2 * (resid[i] - laplacePosteriorNoise(resid[i], s2, f.lapScale))
			continue
		}
		m.Bias[1][i] = n * tau2 * resid[i] / (n*n*tau2 + n*sr*sr + v)
	}
	est := "n_i tau^2 Y_i/(n_i^2 tau^2 + n_i sigma_r^2 + v) (linear MMSE)"
	if f.lapScale > 0 {
		est = "n_i tau^2/s_i^2 (Y_i - E[L | Y_i]), s_i^2 = n_i^2 tau^2 + n_i sigma_r^2 (the posterior mean under the Gaussian prior and the exact Laplace noise L)"
	}
	f.notes = append(f.notes, fmt.Sprintf(itemBiasNote+"%s with Y_i the noisy sum of residuals, sigma_r = (r_max-r_min)/4, v = %.4g the noise variance of a sum, tau^2 = %.4g estimated from the released noisy sums and counts (post-processing; completion/private_bias.go)", est, v, tau2))
}

// itemBiasNote begins the report's note on the item bias estimate.
const itemBiasNote = "item bias = "

// report builds the privacy report of a bias-mode run.
func (f *biasFit) report(m *decomposition.Model) *perturb.Report {
	rep := baseReport(&f.o, "bias", &f.acc, f.eps, f.delta, f.used)
	rep.Billboard = true
	publicClamp(&f.o, m, rep)
	rep.Covered = []string{"global mean", "item biases"}
	if f.o.Unit == UnitUser {
		rep.Covered = append(rep.Covered, "number of users", "number of ratings", "item counts (noisy; used by the estimate and saved as the report's item_counts for rankings)")
	}
	rep.ItemCounts, rep.ItemCountsSD = f.releasedCounts(), f.countsSD()
	rep.Notes = append(rep.Notes,
		"not released: user biases and user factor rows (zero in the model); each user's bias and the user's biases on the time buckets of their own ratings are solved at prediction time from the released item biases and that user's own ratings (billboard model; `dprec predict --ratings`)",
		"factors, core and time biases are zero (bias-only model)")
	rep.Notes = append(rep.Notes, f.notes...)
	return rep
}

// releasedCounts returns the item counts the estimate used, for the
// report: public under the entry unit, the released noisy counts (negative
// ones set to 0) under the user unit.
func (f *biasFit) releasedCounts() []float64 {
	out := make([]float64, len(f.counts))
	for i, n := range f.counts {
		out[i] = math.Max(n, 0)
	}
	return out
}

// countsSD is the noise standard deviation of the released counts (0 when
// public: entry unit).
func (f *biasFit) countsSD() float64 {
	if f.o.Unit != UnitUser {
		return 0
	}
	return math.Sqrt(f.countVar)
}

// BillboardFold returns the bias mode's fold-in penalties: lambda =
// BiasUserPenalty for the user's row and bias and lambda_t =
// BiasBucketPenalty for each of the user's time-bucket biases (a model's
// own are BillboardFoldFor its report).
// Every number is a public constant, so the fold-in is post-processing of
// the release and of the user's own ratings.
func BillboardFold() decomposition.FoldPenalties {
	return decomposition.FoldPenalties{Row: BiasUserPenalty, Bucket: BiasBucketPenalty}
}

// BillboardFoldFor returns the fold-in penalties of a billboard model with
// privacy report rep: BillboardFold for the bias mode and input's
// fallback; for private ALS's positions stage and the user unit's
// fallback (rep.FoldRow > 0) the bias mode's penalties with the fixed
// ridge rep.FoldRow (ALSPositionsFoldRow, ALSUserFallbackFoldRow) in place
// of BiasUserPenalty; and for private ALS's other routes
// (rep.FoldPerRating > 0) the training's user solve, ALSPrivateFoldRow
// plus rep.FoldPerRating per rating, with the bias mode's time-bucket
// penalty. Public constants only.
func BillboardFoldFor(rep *perturb.Report) decomposition.FoldPenalties {
	pen := BillboardFold()
	if rep == nil {
		return pen
	}
	if rep.FoldPerRating > 0 {
		pen.Row, pen.PerRating = ALSPrivateFoldRow, rep.FoldPerRating
	}
	if rep.FoldRow > 0 {
		pen.Row = rep.FoldRow
	}
	return pen
}

// FoldInRMSE scores a released model under the billboard model: for every
// user in test it solves that user's row, bias and (pen.Bucket > 0, order
// 3) time-bucket biases from the user's own ratings in train against the
// frozen model (decomposition.FoldInUser with penalties pen) and predicts
// the user's test entries from them; a user without training ratings gets
// a zero row and bias. The model's own user rows and biases are never read.
func FoldInRMSE(m *decomposition.Model, train, test *data.Store, pen decomposition.FoldPenalties) (float64, error) {
	if test == nil || test.NNZ() == 0 {
		return math.NaN(), nil
	}
	byUser := map[int32][]int{}
	for e, u := range train.Idx[0] {
		byUser[u] = append(byUser[u], e)
	}
	rows := map[int32]*decomposition.Folded{}
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
				row = &decomposition.Folded{Row: make([]float64, n)}
			} else {
				items, times, ratings := foldInputs(train, es, order)
				var err error
				if row, err = decomposition.FoldInUser(m, items, times, ratings, pen); err != nil {
					return 0, fmt.Errorf("completion: fold-in of user %d: %w", u, err)
				}
			}
			rows[u] = row
		}
		for k := range idx {
			idx[k] = test.Idx[k][e]
		}
		d := m.PredictFoldedUser(row, idx, w) - test.Val[e]
		sse += d * d
	}
	return math.Sqrt(sse / float64(test.NNZ())), nil
}

// foldInputs returns the items, time buckets (for a model of order 3;
// nil otherwise) and ratings of train's entries es, as
// decomposition.FoldInUser takes them.
func foldInputs(train *data.Store, es []int, order int) (items, times []int32, ratings []float64) {
	items = make([]int32, len(es))
	ratings = make([]float64, len(es))
	if order == 3 {
		times = make([]int32, len(es))
	}
	for j, e := range es {
		items[j], ratings[j] = train.Idx[1][e], train.Val[e]
		if times != nil {
			times[j] = train.Idx[2][e]
		}
	}
	return items, times, ratings
}

// itemPriorVariance estimates the spread tau^2 of the item biases from the
// released noisy residual sums Y_i and the counts n_i only
// (post-processing, no budget), by the method of moments: E[Y_i^2] =
// n_i^2 tau^2 + n_i sigma_r^2 + v, so
//
//	tau^2 = sum_i (Y_i^2 - n_i sigma_r^2 - v) / sum_i (n_i^2 - countVar),
//
// over the items with n_i > 0 (countVar is the noise variance of a noisy
// count, 0 for public counts: E[n~^2] = n^2 + countVar), kept within
// [sigma_r^2/BiasItemPenalty, sigma_r^2] (from the baseline predictor's
// penalty of Koren 2008 up to one rating spread), and
// sigma_r^2/BiasItemPenalty when no item has ratings. (A prior mean rising
// with ln n_i, also estimable from the released sums, scored worse on the
// validation part of ml-latest-small: 0.8818 against 0.8781 at epsilon 1.)
func itemPriorVariance(resid, counts []float64, sr2, v, countVar float64) float64 {
	lo := sr2 / BiasItemPenalty
	var num, den float64
	for i, n := range counts {
		if n <= 0 {
			continue
		}
		y := resid[i]
		num += y*y - n*sr2 - v
		den += n*n - countVar
	}
	if !(den > 0) {
		return lo
	}
	return math.Min(sr2, math.Max(lo, num/den))
}

// biasSpreadDivisor sets sigma_r = (r_max - r_min)/biasSpreadDivisor.
const biasSpreadDivisor = 4.0

// User-unit shares of the bias mode's budget (of mu^2 = sum (Delta_j /
// sigma_j)^2 for Gaussian noise, whose composition is exact in GDP; of
// epsilon for Laplace). Fixed public constants: a tenth for the global
// statistics (mean and the numbers of users and ratings), the rest split
// between the item counts and the item sums, 0.15/0.75. The sums carry
// the item biases; the counts scale their shrinkage and, in private ALS,
// are the popularity column, the learnability rule's and the covariance
// stage's gates, and the lists' evidence. The split was 0.05/0.85,
// chosen when the counts only scaled the shrinkage (validation part of
// ml-latest-small's training log, bias mode, k = 100, epsilon 1, 6 noise
// draws: 0.05/0.85 scored 0.9136, 0.10/0.80 0.9141, 0.15/0.75 0.9151,
// 0.30/0.60 0.9174, 0.45/0.45 0.9221). Measured again in session 24
// (TestPrivateALSSweep, k = 100, noise seeds 1 and 2, epsilon 1 / 3 / 10
// / 30 / 100, private ALS, counts share 0.05 -> 0.15): ml-latest-small
// 0.9193 / 0.9080 / 0.8894 / 0.8725 / 0.8598 -> 0.9187 / 0.9058 / 0.8860
// / 0.8691 / 0.8577, MovieLens-100K's training part 1.0208 / 0.9871 /
// 0.9581 / 0.9414 / 0.9216 -> 1.0168 / 0.9821 / 0.9529 / 0.9396 /
// 0.9207, the planted and heavy-tailed synthetic logs within 0.002
// (better or equal), Jester5k and the joke-shaped logs within 0.002
// either way but for one draw of jokeexp3 at epsilon 3 (+0.010): there
// the covariance stage's parallel-analysis edge, drawn on synthetic
// positions from the noisy counts, fell below one more eigenvalue (7
// columns against 6); the bias mode
// itself moved by -0.005 to +0.0006. 0.10 and 0.20 scored between the
// two or within 0.0008 of 0.15. Never on a test part.
const (
	userShareUsers   = 0.01
	userShareRatings = 0.04
	userShareSum     = 0.05
	userShareCounts  = 0.15
	userShareSums    = 0.75
)

// userRelease is one release of the user-unit bias mode.
type userRelease struct {
	what, deriv string
	l1, l2      float64 // sensitivities under add/remove of one user
	share       float64
	noise       sumNoise
}

// userBiasReleases lists the user-unit releases and their sensitivities
// for add/remove of one user with at most k ratings, at most one per item,
// each clamped to [r_min, r_max] (package doc, Sensitivities, "User
// unit"): the number of users (1), the number of ratings (k), the sum of
// the centred ratings r - (r_min + r_max)/2 (k Delta_r/2), the item counts
// (l1 k, l2 sqrt(k): at most k items move, each by one) and the item sums
// of residuals clipped to [-c, c] (l1 k c, l2 sqrt(k) c). The item counts
// and sums are weighted (UserContributionWeight): a user's m_u items move
// by w_u each, l2 w_u sqrt(m_u) <= sqrt(k) under the Gaussian rule and l1
// w_u m_u <= k under Laplace's, so l2 (Gaussian) and l1 (Laplace) are the
// ones above; the l1 of Gaussian-weighted counts is not bounded by k, and
// only l2 calibrates Gaussian noise (planUserReleases).
func userBiasReleases(o *PrivateOptions) []userRelease {
	k := float64(o.MaxRatingsPerUser)
	d := o.ratingRange()
	c := BiasResidualClip * d
	return []userRelease{
		{what: "number of users", deriv: "one user adds or removes 1", l1: 1, l2: 1, share: userShareUsers},
		{what: "number of ratings", deriv: fmt.Sprintf("one user adds or removes at most k = %g ratings", k), l1: k, l2: k, share: userShareRatings},
		{what: "sum of the centred clamped ratings r - (r_min+r_max)/2", deriv: fmt.Sprintf("at most k = %g terms of size <= (r_max - r_min)/2", k), l1: k * d / 2, l2: k * d / 2, share: userShareSum},
		{what: "per-item rating counts", deriv: fmt.Sprintf("the user's m_u items, one rating each weighted by w_u = %s: %s", weightRule(o), weightedNorm(o, "1", "")), l1: k, l2: math.Sqrt(k), share: userShareCounts},
		{what: "per-item sums of the clipped residuals r - mu~", deriv: fmt.Sprintf("the user's m_u items, one term in [-c, c] each weighted by w_u, c = (r_max - r_min)/3: %s", weightedNorm(o, "c", " c")), l1: k * c, l2: math.Sqrt(k) * c, share: userShareSums},
	}
}

// planUserReleases calibrates the noise of rels to o's budget: Laplace
// with epsilon_j = share_j epsilon (basic composition), or Gaussian with
// sigma_j = Delta_j/(s sqrt(share_j)), s the largest for which the releases
// compose within (epsilon, delta) by o's accounting.
func planUserReleases(o *PrivateOptions, rels []userRelease) (*perturb.Accountant, error) {
	build := func(s float64) (*perturb.Accountant, error) {
		var acc perturb.Accountant
		for j := range rels {
			r := &rels[j]
			var err error
			if o.Mechanism == perturb.MechGaussian {
				var g *perturb.Gaussian
				g, err = perturb.NewGaussianSigma(r.l2, r.l2/(s*math.Sqrt(r.share)))
				r.noise = sumNoise{g: g}
			} else {
				r.noise, err = newSumNoise(o, r.l1, r.l2, r.share*o.Epsilon, 0)
			}
			if err != nil {
				return nil, err
			}
			rel := r.noise.release(r.what)
			rel.Derivation = r.deriv + " (completion doc, Sensitivities, User unit)"
			if err := acc.Add(rel, 1); err != nil {
				return nil, err
			}
		}
		return &acc, nil
	}
	if o.Mechanism != perturb.MechGaussian {
		return build(1)
	}
	b := perturb.Budget{Epsilon: o.Epsilon, Delta: o.Delta}
	fits := func(s float64) bool {
		acc, err := build(s)
		return err == nil && b.Fits(acc, o.Accounting)
	}
	lo, hi := 0.0, 1.0
	for fits(hi) {
		lo, hi = hi, 2*hi
	}
	for hi-lo > 1e-10*hi {
		if mid := (lo + hi) / 2; fits(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	if !(lo > 0) {
		return nil, fmt.Errorf("completion: bias mode: %w: no noise fits epsilon %v, delta %v", perturb.ErrBudget, o.Epsilon, o.Delta)
	}
	return build(lo)
}

// trainBiasUser runs the user-unit releases: noisy numbers of users and
// ratings, a noisy sum giving mu~, then noisy (weighted) item counts and item sums of
// residuals about mu~ (adaptive composition: mu~ is public when the sums
// are computed), with the statistics from src (the scalars of the bounded
// log, the item counts and sums weighted: UserBiasSource).
func trainBiasUser(src UserBiasSource, m *decomposition.Model, o *PrivateOptions) (*biasFit, error) {
	rels := userBiasReleases(o)
	acc, err := planUserReleases(o, rels)
	if err != nil {
		return nil, err
	}
	return drawBiasUser(src, m, o, rels, acc)
}

// drawBiasUser draws the user-unit releases planned in rels and acc (a
// function of the public options only) on the statistics of src and fits
// m from them. It is the one implementation of the user unit's bias
// release: the in-memory store (storeUserBiasSource) and the Beam
// pipelines (TrainPrivateBiasUserFrom) both run it.
func drawBiasUser(src UserBiasSource, m *decomposition.Model, o *PrivateOptions, rels []userRelease, acc *perturb.Accountant) (*biasFit, error) {
	var err error
	fit := &biasFit{o: *o, acc: *acc, itemsVar: rels[4].noise.variance()}
	if fit.eps, fit.delta, fit.used, err = admit(o, &fit.acc); err != nil {
		return nil, fmt.Errorf("completion: bias mode: %w", err)
	}
	r := rand.New(o.source(streamUserStats))
	mid := (o.RatingMin + o.RatingMax) / 2
	users, n, total, counts, err := src.UserTotals(o)
	if err != nil {
		return nil, err
	}
	if len(counts) != m.Dims[1] {
		return nil, &ShapeError{Reason: fmt.Sprintf("bias mode: %d item counts for a model of %d items", len(counts), m.Dims[1])}
	}
	cnt := slices.Clone(counts)
	scal := []float64{float64(users), float64(n), total}
	for j := range scal {
		rels[j].noise.addTo(scal[j:j+1], r)
		o.observe(rels[j].what, scal[j:j+1], nil)
		observeSource(src, rels[j].what, scal[j:j+1])
	}
	fit.noisyUsers, fit.noisyRatings = scal[0], scal[1]
	mu := clampValue(mid+scal[2]/math.Max(scal[1], 1), o.RatingMin, o.RatingMax)
	rels[3].noise.addTo(cnt, r)
	o.observe(rels[3].what, cnt, nil)
	observeSource(src, rels[3].what, cnt)
	fit.rawCounts = slices.Clone(cnt)
	for i := range cnt {
		cnt[i] = math.Max(cnt[i], 0) // post-processing
	}
	sums, err := src.ResidualSums(o, mu)
	if err != nil {
		return nil, err
	}
	if len(sums) != m.Dims[1] {
		return nil, &ShapeError{Reason: fmt.Sprintf("bias mode: %d item sums for a model of %d items", len(sums), m.Dims[1])}
	}
	rels[4].noise.addTo(sums, r)
	o.observe(rels[4].what, sums, nil)
	observeSource(src, rels[4].what, sums)
	fit.counts = cnt
	fit.mu, fit.sums, fit.countVar = mu, slices.Clone(sums), rels[3].noise.variance()
	fit.setItemBiases(m, mu, sums, fit.countVar)
	fit.notes = append(fit.notes,
		fmt.Sprintf("released with noise: number of users %.1f, number of ratings %.1f (after bounding each user to %d ratings, one per item%s); global mean %.4g = (r_min+r_max)/2 + noisy centred sum / noisy count", scal[0], scal[1], o.MaxRatingsPerUser, scalarsScope(o), mu),
		weightedScope(o),
		fmt.Sprintf("budget shares (%s): users %g, ratings %g, sum %g, item counts %g, item sums %g", o.Mechanism, userShareUsers, userShareRatings, userShareSum, userShareCounts, userShareSums))
	return fit, nil
}

// scratchBiasRelease runs the entry-level bias release at epsilon eps of
// o's budget (Laplace, the default mean share; two pure releases, so basic
// composition whatever o.Accounting says: the caller composes the total)
// into a new bias-only model: the warm start of minibatch DP-SGD, the
// first release of input mode's residual release and its bias-only
// fallback.
func scratchBiasRelease(train *data.Store, o *PrivateOptions, eps float64) (*decomposition.Model, *perturb.Report, error) {
	wo := *o
	wo.Epsilon = eps
	wo.Mechanism, wo.MeanFraction, wo.Accounting = "", 0, perturb.Basic
	wm, err := decomposition.NewModel(decomposition.CP, train.Dims, []int{1}, true)
	if err != nil {
		return nil, nil, err
	}
	rep, err := TrainPrivateBias(train, wm, &wo)
	if err != nil {
		return nil, nil, err
	}
	return wm, rep, nil
}

// addReleases records each release in acc (a release with Count 0 once).
func addReleases(acc *perturb.Accountant, rels []perturb.Release) error {
	for _, r := range rels {
		if err := acc.Add(r, max(r.Count, 1)); err != nil {
			return err
		}
	}
	return nil
}

// scalarsScope says which ratings the scalar releases count.
func scalarsScope(o *PrivateOptions) string {
	if o.Scalars != nil {
		return ", over every item of the bounded log before the private item selection (PrivateOptions.Scalars)"
	}
	return ""
}

// checkScalarsStore refuses a malformed Scalars store (a shape error of
// the caller) instead of failing on it.
func checkScalarsStore(s *data.Store) error {
	if s.Order() < 2 || len(s.Idx[0]) != len(s.Val) || len(s.Idx[1]) != len(s.Val) {
		return fmt.Errorf("completion: bias mode: %w: Scalars store has order %d, %d values", ErrDomain, s.Order(), len(s.Val))
	}
	for e, u := range s.Idx[0] {
		if u < 0 || int(u) >= s.Dims[0] || s.Idx[1][e] < 0 || int(s.Idx[1][e]) >= s.Dims[1] {
			return fmt.Errorf("completion: bias mode: %w: Scalars store entry %d outside its dimensions", ErrDomain, e)
		}
	}
	return nil
}

// laplacePosteriorNoise returns E[L | Y = y] for Y = X + L with X ~ N(0,
// s2) and L ~ Laplace(b) independent: the posterior of L is a two-piece
// truncated Gaussian (l >= 0: N(y - s2/b, s2) weighted exp(-y/b +
// s2/(2b^2)); l < 0: N(y + s2/b, s2) weighted exp(y/b + s2/(2b^2))).
func laplacePosteriorNoise(y, s2, b float64) float64 {
	s := math.Sqrt(s2)
	mp, mm := y-s2/b, y+s2/b
	// log weights (the common s2/(2b^2) cancels).
	lp := -y/b + logPhi(mp/s)
	lm := y/b + logPhi(-mm/s)
	ep := mp + s*millsRatio(mp/s)  // E[l | l >= 0 piece]
	em := mm - s*millsRatio(-mm/s) // E[l | l < 0 piece]
	mx := math.Max(lp, lm)
	wp, wm := math.Exp(lp-mx), math.Exp(lm-mx)
	return (wp*ep + wm*em) / (wp + wm)
}

// logPhi is log of the standard normal CDF, stable far in the lower tail.
func logPhi(z float64) float64 {
	if z > -30 {
		return math.Log(0.5 * math.Erfc(-z/math.Sqrt2))
	}
	// Phi(z) ~ phi(z)/|z| (1 - 1/z^2 + 3/z^4)
	z2 := z * z
	return -z2/2 - math.Log(-z*math.Sqrt(2*math.Pi)) + math.Log1p(-1/z2+3/(z2*z2))
}

// millsRatio is phi(z)/Phi(z).
func millsRatio(z float64) float64 {
	if z > -30 {
		return math.Exp(-z*z/2-0.5*math.Log(2*math.Pi)) / (0.5 * math.Erfc(-z/math.Sqrt2))
	}
	z2 := z * z
	return -z / (1 - 1/z2 + 3/(z2*z2))
}
