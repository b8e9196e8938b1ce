package completion

// RESIDUAL INPUT PERTURBATION (the input mode's release for models with
// biases at entry level, Laplace).
//
// Algorithm 1 of Wei et al. (2021) adds noise of scale Delta_r/epsilon to
// every clamped rating (Delta_r = r_max - r_min). Most of a rating's
// spread is its item's bias and the global mean, which the bias mode
// releases far more cheaply from noisy sums (one rating moves one item
// sum, so an item mean's noise falls as 1/n_i, not 1/sqrt(n_i)). This
// release therefore spends a share f of epsilon on the bias mode's
// statistics and the rest on the residuals:
//
//  1. (mu~, b~) = the bias mode's release at epsilon_b = f epsilon
//     (TrainPrivateBias: a noisy global sum and noisy per-item sums of
//     clipped residuals; private_bias.go);
//  2. w_e = clip(clamp(x_e) - mu~ - b~_j(e), -c, c) for every observed
//     rating e, c = inputResidualClip (InputResidualClip (r_max - r_min)
//     up to epsilon 10, then growing with log10 epsilon), plus Laplace noise
//     of scale 2c/epsilon_w, epsilon_w = (1 - f) epsilon, on every w_e;
//  3. the trainer fits on mu~ + b~_j(e) + w~_e (post-processing of both
//     releases).
//
// Sensitivity of step 2. Positions are public under the entry relation and
// (mu~, b~) is a released value, so conditionally on it w is a function of
// the clamped values alone in which one rating's change moves one
// coordinate, from one point of [-c, c] to another: ||w - w'||_1 =
// ||w - w'||_2 <= 2c (TestInputResidualSensitivity). Composition: the bias
// mode's Laplace releases (pure) and this one (pure), basic: epsilon_b +
// epsilon_w = epsilon, delta 0. Coverage: every released parameter is
// post-processing of the two releases.
//
// Noise per value: variance 2 (2c/epsilon_w)^2 against 2 (Delta_r/epsilon)^2
// for Algorithm 1, a factor (2c/Delta_r)^2/(1 - f)^2 = 0.55 at the
// defaults (c = Delta_r/3, f = 0.1), and the bias part of each value comes
// from the cheaper release. The fallback rule (private_input_fallback.go)
// and the epochs and step caps use this variance.

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/perturb"
)

// InputResidualClip is the clip c of the residuals released by the input
// mode's residual release up to epsilon 10, as a fraction of the rating
// range (the bias mode's BiasResidualClip); inputResidualClip gives the
// rule at every epsilon.
const InputResidualClip = BiasResidualClip

// inputResidualClip is c: InputResidualClip (r_max - r_min) up to epsilon
// 10, growing as log10(epsilon) beyond, to the whole range at 1000: the
// rule of private ALS's residual route above epsilon 10 (alsInputClipAt
// with a floor of 1; below 10^0.5 the residual route now halves its
// clip, ALSInputClipFloor, which was not measured here), so that as the
// noise vanishes fewer residuals are clipped and the released values tend
// to the clamped ratings. With the clip fixed, input perturbation at
// epsilon 100 stayed 2.3% above the non-private model on a planted
// low-rank log (TestInputConverges; 0.5402 against 0.5282).
func inputResidualClip(o *PrivateOptions) float64 {
	return alsInputClipAt(o, 1)
}

// DefaultInputBiasFraction is the share f of epsilon the residual release
// spends on the bias mode's statistics (PrivateOptions.WarmFraction
// overrides it).
const DefaultInputBiasFraction = 0.1

// residualRelease is what planResidual fixes.
type residualRelease struct {
	warm *decomposition.Model // the bias release: mean and item biases
	clip float64              // c
	lap  *perturb.Laplace     // noise of the residuals
	// biasEps is the epsilon of the bias release.
	biasEps float64
}

// inputResidualApplies reports whether the input mode uses the residual
// release: models with biases, entry unit, Laplace noise.
func (p *InputPerturbation) inputResidualApplies(s *Settings) bool {
	return s.hasBias && p.o.Unit == UnitEntry && p.o.Mechanism == perturb.MechLaplace
}

// residualVariance returns the noise variance of one released value under
// the residual release.
func residualVariance(o *PrivateOptions) (v, frac float64) {
	frac = o.WarmFraction
	if frac == 0 {
		frac = DefaultInputBiasFraction
	}
	b := 2 * inputResidualClip(o) / ((1 - frac) * o.Epsilon)
	return 2 * b * b, frac
}

// planResidual runs the bias release, builds the residual mechanism and
// writes the report (or falls back to the bias-only release by the rule of
// private_input_fallback.go).
func (p *InputPerturbation) planResidual(train *data.Store, s *Settings) error {
	v, frac := residualVariance(&p.o)
	if InputFallsBack(&p.o, v, train.NNZ()) {
		p.done = true
		return p.planFallback(train, v)
	}
	biasEps := frac * p.o.Epsilon
	wm, rep, err := scratchBiasRelease(train, &p.o, biasEps)
	if err != nil {
		return fmt.Errorf("completion: input perturbation (bias release): %w", err)
	}
	c := inputResidualClip(&p.o)
	lap, err := perturb.NewLaplace(2*c, (1-frac)*p.o.Epsilon)
	if err != nil {
		return fmt.Errorf("completion: input perturbation: %w", err)
	}
	var acc perturb.Accountant
	if err := addReleases(&acc, rep.Releases); err != nil {
		return err
	}
	rel := lap.Release("residuals of the clamped ratings from the released mean and item biases, clipped to [-c, c]")
	rel.Derivation = fmt.Sprintf("positions public and (mu~, b~) released: one rating changes one clipped residual within [-c, c], c = %g: l1 = l2 = 2c = %g (completion/private_input_residual.go)", c, 2*c)
	if err := acc.Add(rel, 1); err != nil {
		return err
	}
	// Pure releases: basic composition, delta 0 (the tightest method could
	// trade a sliver of epsilon for delta).
	eps, delta, used, err := perturb.Budget{Epsilon: p.o.Epsilon, Delta: p.o.Delta}.Admit(&acc, perturb.Basic)
	if err != nil {
		return fmt.Errorf("completion: input perturbation: %w", err)
	}
	p.res = &residualRelease{warm: wm, clip: c, lap: lap, biasEps: biasEps}
	p.report = baseReport(&p.o, "input", &acc, eps, delta, used)
	p.report.Composition = fmt.Sprintf("bias release (epsilon %g) then the residual release (epsilon %g), %s", biasEps, lap.Epsilon(), used)
	p.capEpochs(s, 4*v)
	return nil
}

// perturbResidual replaces vals by mu~ + b~_j + (clipped residual +
// Laplace noise).
func (p *InputPerturbation) perturbResidual(vals []float64, train *data.Store) {
	rr := p.res
	clippedResiduals(vals, train, &p.o, rr.warm, rr.clip)
	rr.lap.AddTo(vals, rand.New(p.o.source(streamInput)))
	mu, bi, J := rr.warm.Mean, rr.warm.Bias[1], train.Idx[1]
	for e := range vals {
		vals[e] += mu + bi[J[e]]
	}
}

// clippedResiduals replaces vals by clip(clamp(x_e) - mu - b_j(e), -c, c)
// with the mean and item biases of warm: the vector the residual release
// perturbs, whose sensitivity is 2c.
func clippedResiduals(vals []float64, train *data.Store, o *PrivateOptions, warm *decomposition.Model, c float64) {
	mu, bi, J := warm.Mean, warm.Bias[1], train.Idx[1]
	for e, v := range vals {
		vals[e] = math.Max(-c, math.Min(c, clampValue(v, o.RatingMin, o.RatingMax)-mu-bi[J[e]]))
	}
}
