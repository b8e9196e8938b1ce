package completion

// PRIVATE ALS, ENTRY UNIT: THE RESIDUAL ROUTE.
//
// Under the entry relation one rating changes. The item-statistics route
// (private_als.go) releases sums over users of z_ui x_u, where x_u is
// solved from all of the user's ratings: one rating moves x_u, and with it
// every one of the user's t terms, so the l2 sensitivity of a step is
// about c (2 Gamma_u + c)/sqrt(lambda) whatever the counts (24 at the
// 0.5-5 scale), and on MovieLens-shaped logs the noise buries every item
// row even at epsilon 100 (completion doc, "Private ALS: the binding
// constraint"). The residual route releases instead what one rating
// really changes, one number:
//
//  1. (mu~, b~) = the bias mode's release at epsilon_b = f epsilon
//     (TrainPrivateBias; Laplace, pure);
//  2. w_e = clip(clamp(r_e) - mu~ - b~_i(e), -c, c) plus Laplace noise of
//     scale 2c/epsilon_w, epsilon_w = (1 - f) epsilon, for every rating e
//     (the input mode's residual release, private_input_residual.go: one
//     rating moves one coordinate within [-c, c], l1 = l2 = 2c);
//  3. non-private ALS (SolverALS, rank R, biases) on the noisy residuals
//     w~ as a user x item matrix, with a ridge per observation that grows
//     with the public noise variance (alsInputReg); the released item
//     rows are its item rows, the released item biases b~_i plus its item
//     biases, the released mean mu~ plus its mean. Its user rows are
//     dropped; each user folds in from the released item side and their
//     own ratings (billboard model).
//
// Every rule below that reads r_max - r_min, or s = (r_max - r_min)/4,
// reads the rules' width: the range's, unless the rating spread released
// before the route narrows it (private_als_spread.go; the clamp stays the
// range). The route then spends what that release leaves of epsilon.
//
// Composition: two pure releases, basic: epsilon_b + epsilon_w = the
// epsilon the spread release leaves, delta 0. Everything released is post-processing of them. As epsilon
// grows the noise vanishes, the ridge tends to DefaultALSReg and the clip
// to the whole range (alsInputClip), so the released item side tends to
// non-private ALS's on the same log.

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/perturb"
)

const streamALSInput = 8

// alsInputWhat names the residual release in the report.
const alsInputWhat = "residuals of the clamped ratings from the released mean and item biases, clipped to [-c, c] (private ALS, residual route)"

// ALSInputBiasFraction is f, the share of epsilon the residual route
// spends on the bias release. The route runs on logs with many ratings an
// item (its regimes, ALSResidualRichRatio and ALSResidualQuietRatio) or
// whose positions fail the spectral gate, where the item biases need
// little of the budget and the residuals' noise falls with (1 - f)^2.
// Validation parts (the sweep, 3 noise seeds, mean RMSE at f = 0.02 /
// 0.05 / 0.1 / 0.2): Jester5k at epsilon 3 4.1266 / 4.1312 / 4.1407 /
// 4.1657, at 10 4.0869 / 4.0874 / 4.0885 / 4.0910; the joke-shaped logs
// with exposure-biased positions at 3 4.0936 / 4.0970 / 4.1044 / 4.1255
// and 4.0690 / 4.0713 / 4.0766 / 4.0909; the MovieLens-shaped synth at 10
// 0.6799 / 0.6795 / 0.6808 / 0.6864; "wide" at 10 - / 0.6751 / 0.6764 /
// -; MovieLens-100K at 30 and 100, where the quiet regime's first version
// (3 R, before 25 R) took the route, - / 0.9143 / 0.9139 / - and - /
// 0.9129 / 0.9128 / - (level). 0.1 until session 21.
const ALSInputBiasFraction = 0.05

// alsInputClip is the residual clip c of the residual route: (r_max -
// r_min)/3 (the bias mode's clip) up to epsilon 10, growing as
// log10(epsilon) beyond (2/3 of the range at 100), so that fewer residuals
// are clipped as the noise, whose scale 2c/epsilon_w falls as 1/epsilon
// while c grows only logarithmically, becomes small; it reaches the whole
// range at epsilon 1000.
func alsInputClip(o *PrivateOptions) float64 {
	return alsInputClipAt(o, ALSInputClipFloor)
}

// alsPositionsClip is the positions stage's residual clip: (r_max -
// r_min)/3 up to epsilon 10, times log10(epsilon) beyond, at most the
// range (the residual route's rule with a floor of 1: at epsilon 1 on
// Jester5k's validation part the stage scored 4.2607 with half the clip
// against 4.2218).
func alsPositionsClip(o *PrivateOptions) float64 {
	return alsInputClipAt(o, 1)
}

// alsInputClipAt is the residual clip with floor f of its epsilon factor:
// BiasResidualClip (r_max - r_min) min(3, max(f, log10 epsilon)).
func alsInputClipAt(o *PrivateOptions, f float64) float64 {
	return BiasResidualClip * o.rulesRange() * math.Min(3, math.Max(f, math.Log10(o.Epsilon)))
}

// ALSInputClipFloor is the floor of the residual route's clip factor:
// below epsilon 10^0.5 = 3.16 the clip is half the bias mode's, (r_max -
// r_min)/6, which quarters the noise variance of a released residual
// (the floor was 1 before, the clip then (r_max - r_min)/3 up to epsilon
// 10). Validation parts (TestPrivateALSSweep), with ALSResidualRichNoise
// lowered to 1 with it, epsilon 1 / 2 / 3 / 5 / 10, floor 1 then 0.5:
// Jester5k 4.2218 / 4.2210 / 4.1915 / 4.1155 / 4.0841 then 4.2218 /
// 4.2210 / 4.1334 / 4.0940 / 4.0841; the planted joke-shaped log 1.6017 /
// 1.6071 / 1.5611 / 1.5355 / 1.5308 then 1.6017 / 1.5781 / 1.5601 /
// 1.5399 / 1.5308; jokeexp 4.1276 / 4.1291 / 4.1761 / 4.0811 / 4.0547
// then 4.1276 / 4.1291 / 4.1030 / 4.0775 / 4.0547 (monotone now);
// jokeexp3 4.4708 / 4.4711 / 4.0957 / 4.0505 / 4.0180 then 4.4708 /
// 4.4711 / 4.0713 / 4.0424 / 4.0180; the MovieLens-shaped synth 0.8247 /
// 0.8211 / 0.8203 / 0.7558 / 0.6811 then 0.8247 / 0.8211 / 0.8203 /
// 0.7402 / 0.6811 (the route's fallback rule is judged at the unhalved
// clip: ALSInputPlan.FallbackNoiseVar). A floor of 0.7 scored worse at epsilon 2 on Jester5k
// (4.2566) and jokeexp (4.2257). Above epsilon 10 nothing changes: there
// a smaller clip helped Jester5k but cost the planted logs (docs/privacy.md,
// "A real joke log").
const ALSInputClipFloor = 0.5

// ALSInputGate is g of the residual route's learnability rule: item i's
// row is released only when n_i >= g R v/s^2 (v the noise variance of a
// released residual, s = (r_max - r_min)/4, R the rank): the noise of an
// item row fitted from n_i noisy residuals, about R v/n_i, stays below
// s^2/g; other rows are zero. ALSInputFallbackGate is the same rule's
// factor for the whole route: when the items with n_i >=
// ALSInputFallbackGate R v/s^2 carry under ALSPrivateGateShare of the
// ratings, no residual is released and the bias mode takes the whole
// budget (on the validation logs this happens at epsilon 1 everywhere and
// at 3 on the MovieLens-shaped ones, where the route scored worse than the
// bias model).
const (
	ALSInputGate         = 4
	ALSInputFallbackGate = 16
)

// alsInputMinCount is the smallest item count the residual route's
// learnability rule passes.
func alsInputMinCount(o *PrivateOptions, g float64, R int, v float64) float64 {
	s := o.rulesRange() / biasSpreadDivisor
	return g * float64(R) * v / (s * s)
}

// alsInputNoiseVar is the noise variance of one released residual:
// 2 (2c/epsilon_w)^2 (Laplace).
func alsInputNoiseVar(c, epsW float64) float64 {
	b := 2 * c / epsW
	return 2 * b * b
}

// alsInputReg is the per-observation ridge of the ALS fit on the noisy
// residuals: DefaultALSReg (s^2 + v)/s^2, s = (r_max - r_min)/4 the public
// spread of a rating (the bias mode's sigma_r) and v the noise variance of
// a released residual: the non-private default plus the ridge the noise
// calls for (a noise variance v in every target raises the optimal
// penalty in proportion), tending to DefaultALSReg as epsilon grows.
func alsInputReg(o *PrivateOptions, v float64) float64 {
	s := o.rulesRange() / biasSpreadDivisor
	return DefaultALSReg * (s*s + v) / (s * s)
}

// ALSInputPlan is the residual route's public plan: every constant and
// rule of the route evaluated on what the entry relation makes public
// (epsilon, delta, the rating range, the rank and the item counts).
// PlanALSInput returns it; TrainPrivateALS and TrainPrivateALSFrom follow
// it, and an ALSSource reads from it what it needs to release and fit the
// residuals.
type ALSInputPlan struct {
	// Rank is the rank of the fit on the noisy residuals: the model's
	// rank R, less ALSFreeColumns from rank ALSPositionsMaxRank up (the
	// model's last columns are then the free columns: alsInputFree). The
	// learnability rules below use R.
	Rank int
	// BiasFraction is f (ALSInputBiasFraction); BiasEpsilon = f epsilon is
	// spent on the bias release, ResidualEpsilon = (1 - f) epsilon on the
	// residual release.
	BiasFraction, BiasEpsilon, ResidualEpsilon float64
	// Clip is the residual clip c (a released residual is
	// ALSResidual(r, mu~, b~_i, c, r_min, r_max) plus Laplace noise of
	// scale 2c/ResidualEpsilon; Laplace returns the mechanism).
	Clip float64
	// NoiseVar is v, the noise variance of one released residual.
	NoiseVar float64
	// Reg and RegBias are the per-observation ridge of the fit on the
	// noisy residuals (rule DefaultALSReg (s^2 + v)/s^2) and its bias
	// penalty; Sweeps its number of ALS sweeps.
	Reg, RegBias float64
	Sweeps       int
	// Gate is the learnability rule's factor g; MinCount = g R v/s^2 the
	// smallest item count whose item row is released (the others are
	// zero); Share the share of the ratings on items that pass.
	Gate, MinCount, Share float64
	// FallbackGate, FallbackMinCount and FallbackShare are the same rule
	// for the whole route (ALSInputFallbackGate), judged at
	// FallbackNoiseVar, the noise variance of a residual at the clip
	// W/3, W the rules' width (the clip's floor of 1: below epsilon
	// 3.16 the route releases at half of it, ALSInputClipFloor, but the
	// choice to run stays where it was measured; at the smaller variance
	// the route ran at epsilon 1 on the planted joke-shaped log and scored
	// 1.6068 against the bias model's 1.6009); Fallback is set when
	// FallbackShare < ALSPrivateGateShare: no residual is released and the
	// bias mode takes the whole budget.
	FallbackGate, FallbackMinCount, FallbackShare float64
	FallbackNoiseVar                              float64
	Fallback                                      bool
	// NoiseStream is the stream id of the residual noise: one machine
	// draws it in storage order from o.Noise.Source(NoiseStream); a
	// distributed source draws each rating's from o.Noise.KeyedSource(
	// NoiseStream, key) (secure noise: any secure source).
	NoiseStream uint64

	// noiseOff (measurement only, completion's tests: NOT private) skips
	// the residual noise of the store source.
	noiseOff bool
}

// PlanALSInput returns the residual route's plan for options opts (entry
// unit), rank R and the public item counts (one per item), at the range's
// width and opts.Epsilon: TrainPrivateALS and TrainPrivateALSFrom first
// release the rating spread (private_als_spread.go) and plan the route at
// the width it gives and the epsilon it leaves.
func PlanALSInput(opts *PrivateOptions, R int, itemCounts []int) (*ALSInputPlan, error) {
	o, err := resolveALSOptions(opts)
	if err != nil {
		return nil, err
	}
	if o.Unit != UnitEntry {
		return nil, errors.New("completion: private ALS: the residual route is entry level only")
	}
	if R < 1 {
		return nil, &ShapeError{Reason: fmt.Sprintf("private ALS: rank %d", R)}
	}
	return planALSInput(&o, newALSPrivateParams(&o), R, itemCounts), nil
}

// planALSInput evaluates the residual route's rules (public counts and
// constants only).
func planALSInput(o *PrivateOptions, p alsPrivateParams, R int, counts []int) *ALSInputPlan {
	f := p.inputBiasFrac
	pl := &ALSInputPlan{Rank: R - alsInputFree(R, p), BiasFraction: f, BiasEpsilon: f * o.Epsilon, ResidualEpsilon: (1 - f) * o.Epsilon,
		Clip: p.inputClip, Gate: p.inputGate, FallbackGate: p.inputFallback, NoiseStream: streamALSInput, noiseOff: p.noiseOff}
	pl.NoiseVar = alsInputNoiseVar(pl.Clip, pl.ResidualEpsilon)
	pl.MinCount, pl.Share = alsInputShare(o, counts, R, pl.NoiseVar, p.inputGate)
	pl.FallbackNoiseVar = alsInputNoiseVar(max(pl.Clip, alsInputClipAt(o, 1)), pl.ResidualEpsilon)
	pl.FallbackMinCount, pl.FallbackShare = alsInputShare(o, counts, R, pl.FallbackNoiseVar, p.inputFallback)
	pl.Fallback = pl.FallbackShare < ALSPrivateGateShare
	pl.Reg = p.inputReg
	if pl.Reg == 0 {
		pl.Reg = alsInputReg(o, pl.NoiseVar)
	}
	pl.RegBias = DefaultALSRegBias * pl.Reg / DefaultALSReg
	pl.Sweeps = p.inputSweeps
	if pl.Sweeps == 0 {
		pl.Sweeps = DefaultALSSweeps
	}
	return pl
}

// alsInputShare returns the smallest item count the rule with factor g
// passes and the share of the ratings on items that pass.
func alsInputShare(o *PrivateOptions, counts []int, R int, v, g float64) (nmin, share float64) {
	nmin = alsInputMinCount(o, g, R, v)
	var pass, all float64
	for _, n := range counts {
		all += float64(n)
		if float64(n) >= nmin {
			pass += float64(n)
		}
	}
	return nmin, pass / all
}

// Laplace returns the residual release's mechanism: l1 sensitivity 2c at
// ResidualEpsilon.
func (pl *ALSInputPlan) Laplace() (*perturb.Laplace, error) {
	return perturb.NewLaplace(2*pl.Clip, pl.ResidualEpsilon)
}

// Settings are the settings of the (non-private) ALS fit on the noisy
// residuals: SolverALS, Reg, RegBias, Sweeps epochs, no validation.
func (pl *ALSInputPlan) Settings() *Settings {
	return &Settings{Solver: SolverALS, Reg: pl.Reg, RegBias: pl.RegBias, Epochs: pl.Sweeps, Threads: 2}
}

// InitSource is the source of the fit's initial factors
// (InitModel(fit, mean of the noisy residuals, Settings(), InitSource())):
// data-independent.
func (pl *ALSInputPlan) InitSource() rand.Source { return rand.NewPCG(uint64(streamALSInput), 1) }

// ALSResidual is one rating's residual of the residual route: v clamped
// to [lo, hi], minus the released mean mu and item bias bi, clipped to
// [-c, c] (one rating moves it by at most 2c).
func ALSResidual(v, mu, bi, c, lo, hi float64) float64 {
	return math.Max(-c, math.Min(c, clampValue(v, lo, hi)-mu-bi))
}

// ALSSource supplies the data-dependent steps of private ALS's residual
// route (entry unit) over ratings that live elsewhere (the Beam pipelines
// of the nested module beam/): TrainPrivateALSFrom plans, calibrates,
// accounts and builds the model and the report as TrainPrivateALS does;
// the source computes the statistics of the bias release (BiasSource),
// the public counts, and the released residuals with the fit on them.
type ALSSource interface {
	BiasSource
	SquareSource
	// Counts returns every item's number of ratings (one per item of the
	// model, in its order) and, for every number of ratings a user has,
	// how many users have it: both public under the entry relation.
	Counts(o *PrivateOptions) (items []int, users map[int]int, err error)
	// FitResiduals releases every rating's residual
	// ALSResidual(r, bias.Mean, bias.Bias[1][i], plan.Clip, o.RatingMin,
	// o.RatingMax) plus the noise of plan.Laplace() (AddTo, from o.Noise:
	// each rating's noise independent, from the secure source unless o's
	// noise is seeded), and returns the user x item model of rank
	// plan.Rank with biases (items in the model's order) fitted on the
	// released residuals by non-private ALS: plan.Settings(), initialised
	// by InitModel with their mean and plan.InitSource(). Only its mean,
	// item biases and item rows are used.
	FitResiduals(o *PrivateOptions, plan *ALSInputPlan, bias *decomposition.Model) (*decomposition.Model, error)
}

// TrainPrivateALSFrom is TrainPrivateALS at entry level (opts.Unit
// UnitEntry, the residual route and its fallback) with the data-dependent
// steps from src. It never runs the positions stage
// (private_als_positions.go): with opts.ALSPositions = ALSPositionsOff
// its result is TrainPrivateALS's on the same ratings. m is a user x item CP model with biases whose items are
// a public catalogue (the set of released rows must not depend on the
// data); its user mode is never released (any size). It returns the
// privacy report, the same as TrainPrivateALS's on the same ratings.
func TrainPrivateALSFrom(src ALSSource, m *decomposition.Model, opts *PrivateOptions) (*perturb.Report, error) {
	o, err := resolveALSOptions(opts)
	if err != nil {
		return nil, err
	}
	if o.Unit != UnitEntry {
		return nil, errors.New("completion: private ALS from a source: user level is not supported (entry level only)")
	}
	if m == nil || m.Kind != decomposition.CP || !m.HasBias || m.Order() != 2 {
		return nil, &ShapeError{Reason: "private ALS from a source needs a user x item CP model with biases"}
	}
	items, users, err := src.Counts(&o)
	if err != nil {
		return nil, err
	}
	if len(items) != m.Dims[1] {
		return nil, &ShapeError{Reason: fmt.Sprintf("private ALS: %d item counts for a model of %d items", len(items), m.Dims[1])}
	}
	n := 0
	for _, c := range items {
		n += c
	}
	if n == 0 {
		return nil, errors.New("completion: private ALS: no rating")
	}
	spread, err := releaseALSSpread(src, &o)
	if err != nil {
		return nil, err
	}
	spread.apply(&o)
	p := newALSPrivateParams(&o)
	p.terms = alsTermsRuleHist(users)
	rep, err := trainALSInputRoute(src, items, m, &o, p)
	if err == nil {
		note := "positions stage: off (ALSPositionsOff)"
		if o.ALSPositions != ALSPositionsOff {
			note = "positions stage: not run (a source supplies no pass over the positions; TrainPrivateALS on a store runs it when its spectral gate passes)"
		}
		rep.Notes = append(rep.Notes, note)
		spread.report(rep, &o)
	}
	return rep, err
}

// trainALSInputRoute is the entry unit's residual route, or its fallback
// to the bias mode when too few ratings lie on learnable items.
func trainALSInputRoute(src ALSSource, counts []int, m *decomposition.Model, o *PrivateOptions, p alsPrivateParams) (*perturb.Report, error) {
	R := m.Ranks[0]
	plan := planALSInput(o, p, R, counts)
	if !plan.Fallback {
		return trainPrivateALSInput(src, counts, m, o, p, plan)
	}
	// Too few ratings on learnable items: the bias mode takes the whole
	// budget, with no item step.
	inputNote := fmt.Sprintf("learnability rule (residual route): items with n_i >= g R v/s^2 = %.4g (g = %g, v = %.4g the noise variance of a residual at the clip W/3 x max(1, log10 epsilon), W the rules' width) carry %.1f%% of the ratings (below %g%%): no residual is released, the item rows are the free columns and the curve columns (below) and the biases take the whole budget", plan.FallbackMinCount, p.inputFallback, plan.FallbackNoiseVar, 100*plan.FallbackShare, 100*ALSPrivateGateShare)
	p.steps, p.biasFrac, p.gate = 0, 1, 0
	bo := alsBiasOptions(o, p)
	bias, err := fitPrivateBiasFrom(src, m, &bo)
	if err != nil {
		return nil, fmt.Errorf("completion: private ALS: %w", err)
	}
	return alsRelease(o, p, &bo, m, bias, nil, 0, 0, nil, "", inputNote)
}

// trainPrivateALSInput is TrainPrivateALS's residual route (entry unit).
func trainPrivateALSInput(src ALSSource, counts []int, m *decomposition.Model, o *PrivateOptions, p alsPrivateParams, plan *ALSInputPlan) (*perturb.Report, error) {
	R := plan.Rank
	f, c, epsW, v, nmin, lambda, rb := plan.BiasFraction, plan.Clip, plan.ResidualEpsilon, plan.NoiseVar, plan.MinCount, plan.Reg, plan.RegBias
	wm, brep, err := scratchBiasReleaseFrom(src, m.Dims[:2], o, plan.BiasEpsilon)
	if err != nil {
		return nil, fmt.Errorf("completion: private ALS (bias release): %w", err)
	}
	lap, err := plan.Laplace()
	if err != nil {
		return nil, fmt.Errorf("completion: private ALS: %w", err)
	}
	var acc perturb.Accountant
	if err := addReleases(&acc, brep.Releases); err != nil {
		return nil, err
	}
	rel := lap.Release(alsInputWhat)
	rel.Derivation = fmt.Sprintf("positions public and (mu~, b~) released: one rating changes one clipped residual within [-c, c], c = %g: l1 = l2 = 2c = %g (completion/private_als_input.go)", c, 2*c)
	if err := acc.Add(rel, 1); err != nil {
		return nil, err
	}
	eps, delta, used, err := perturb.Budget{Epsilon: o.Epsilon, Delta: o.Delta}.Admit(&acc, perturb.Basic)
	if err != nil {
		return nil, fmt.Errorf("completion: private ALS: %w", err)
	}
	// The residual release, then post-processing: ALS on the noisy
	// residuals as a user x item matrix.
	mm, err := src.FitResiduals(o, plan, wm)
	if err != nil {
		return nil, fmt.Errorf("completion: private ALS (fit on the noisy residuals): %w", err)
	}
	if mm == nil || mm.Order() != 2 || !mm.HasBias || mm.Dims[1] != m.Dims[1] || mm.Ranks[0] != R {
		return nil, &ShapeError{Reason: "private ALS: the fit on the noisy residuals does not match the model's items and rank"}
	}
	m.Mean = wm.Mean + mm.Mean
	for i := range m.Bias[1] {
		m.Bias[1][i] = wm.Bias[1][i]
		if !p.inputNoCorr {
			m.Bias[1][i] += mm.Bias[1][i]
		}
	}
	MR := m.Ranks[0]
	if MR != R+alsInputFree(MR, p) {
		return nil, &ShapeError{Reason: fmt.Sprintf("private ALS: the plan's fit rank %d does not match the model's rank %d", R, MR)}
	}
	for i := 0; i < m.Dims[1]; i++ {
		copy(m.Factors[1][i*MR:i*MR+R], mm.Factors[1][i*R:(i+1)*R])
	}
	// The learnability rule (public counts): rows of items below nmin are
	// zero.
	zeroed := 0
	for i, n := range counts {
		if float64(n) < nmin {
			clear(m.Factors[1][i*MR : i*MR+R])
			zeroed++
		}
	}
	if MR > R {
		fc := make([]float64, len(counts))
		for i, n := range counts {
			fc[i] = float64(n)
		}
		freeItemColumnsAt(m, o, fc, R)
	}
	rep := entryALSReport(o, m, &acc, eps, delta, used, brep)
	rep.Composition = fmt.Sprintf("bias release (epsilon %g) then the residual release (epsilon %g), %s", f*o.Epsilon, epsW, used)
	rep.FoldPerRating = DefaultALSReg
	rep.Notes = append(rep.Notes,
		fmt.Sprintf("not released: user rows and user biases (zero in the model); each user solves them at prediction time from the released item side and their own ratings with non-private ALS's per-rating ridge %g plus %g (billboard model)", DefaultALSReg, ALSPrivateFoldRow),
		fmt.Sprintf("learnability rule: item rows are released for items with n_i >= g R v/s^2 = %.4g (g = %g), which carry %.1f%% of the ratings; the other %d rows are zero", nmin, p.inputGate, 100*plan.Share, zeroed),
		fmt.Sprintf("residual route (entry unit): the bias mode's release at %g%% of epsilon, then every rating's residual from it, clipped to [-c, c], c = %g, with Laplace noise b = 2c/epsilon_w = %.4g (variance %.4g); the item side is post-processing: ALS of rank %d, %d sweeps, on the noisy residuals with a ridge of %.4g per observation (rule DefaultALSReg (s^2 + v)/s^2, s = %g the rules' spread) and %.4g pseudo-observations on the biases; its user rows are dropped", 100*f, c, 2*c/epsW, v, R, plan.Sweeps, lambda, o.rulesRange()/biasSpreadDivisor, rb))
	if MR > R {
		rep.Notes = append(rep.Notes, fmt.Sprintf("item rows: the fit's %d columns, then %d free columns (the released item biases over s = %g, then the standardised log(1 + n_i) of the public counts at the first's spread; post-processing: each user fits a slope of their own on each when folding in)", R, MR-R, o.rulesRange()/biasSpreadDivisor))
	}
	appendBiasReleaseNotes(rep, brep)
	return rep, nil
}

// entryALSReport zeroes the user side of an entry-level private ALS model
// m (user rows and biases; time rows of ones, time biases zero: all
// data-independent) and starts its report: the billboard model, the
// public item counts of the bias release brep, the public clamp and the
// covered parameters.
func entryALSReport(o *PrivateOptions, m *decomposition.Model, acc *perturb.Accountant, eps, delta float64, used perturb.Composition, brep *perturb.Report) *perturb.Report {
	clear(m.Factors[0])
	clear(m.Bias[0])
	if m.Order() == 3 {
		for i := range m.Factors[2] {
			m.Factors[2][i] = 1
		}
		clear(m.Bias[2])
	}
	rep := baseReport(o, "als", acc, eps, delta, used)
	rep.Billboard = true
	rep.ItemCounts = brep.ItemCounts
	publicClamp(o, m, rep)
	rep.Covered = []string{"global mean", "item biases", "B (item rows)", "C (time rows: constant ones, data-independent)"}
	return rep
}

// appendBiasReleaseNotes adds the bias release's own notes on its estimate
// and split to rep; those on the relation, the clamp and the bias-only
// model's release are stated in rep for its model.
func appendBiasReleaseNotes(rep, brep *perturb.Report) {
	for _, n := range brep.Notes {
		if strings.HasPrefix(n, "item bias") || strings.HasPrefix(n, "epsilon split") {
			rep.Notes = append(rep.Notes, "bias release: "+n)
		}
	}
}

// storeALSSource is the residual route over an in-memory store (noise in
// storage order from one stream).
type storeALSSource struct{ storeBiasSource }

func (s storeALSSource) Counts(*PrivateOptions) ([]int, map[int]int, error) {
	return itemCounts(s.st), userCountHist(s.st), nil
}

func (s storeALSSource) FitResiduals(o *PrivateOptions, plan *ALSInputPlan, bias *decomposition.Model) (*decomposition.Model, error) {
	train := s.st
	lap, err := plan.Laplace()
	if err != nil {
		return nil, err
	}
	vals := append([]float64(nil), train.Val...)
	clippedResiduals(vals, train, o, bias, plan.Clip)
	if !plan.noiseOff {
		lap.AddTo(vals, rand.New(o.source(plan.NoiseStream)))
	}
	o.observe(alsInputWhat, vals, append([]float64{bias.Mean}, bias.Bias[1]...))
	ns := &data.Store{Dims: train.Dims[:2], Idx: train.Idx[:2], Val: vals}
	mm, err := decomposition.NewModel(decomposition.CP, ns.Dims, []int{plan.Rank}, true)
	if err != nil {
		return nil, err
	}
	if _, err := Train(ns, nil, mm, plan.Settings(), plan.InitSource(), nil); err != nil {
		return nil, err
	}
	return mm, nil
}

// itemCounts returns every item's number of ratings in train.
func itemCounts(train *data.Store) []int {
	counts := make([]int, train.Dims[1])
	for _, i := range train.Idx[1] {
		counts[i]++
	}
	return counts
}

// userCountHist returns, for every number of ratings a user of train has,
// how many users have it.
func userCountHist(train *data.Store) map[int]int {
	n := make([]int, train.Dims[0])
	for _, u := range train.Idx[0] {
		n[u]++
	}
	h := map[int]int{}
	for _, c := range n {
		if c > 0 {
			h[c]++
		}
	}
	return h
}

var _ ALSSource = storeALSSource{}

// alsInputFree is the number of the residual route's free columns at
// model rank R: ALSFreeColumns from rank ALSPositionsMaxRank up (0 with
// the measurement hook inputNoFree). The fit on the noisy residuals then
// has rank R - 2 and the model's last two columns are the free columns
// (freeItemColumnsAt: the slope and popularity columns, from the bias
// release and the public counts). Validation parts, rank 10, epsilon 1 /
// 3 / 10 / 30 / 100, with against without: the joke-shaped logs with
// exposure-biased positions 4.1761 / 4.0547 / 4.0513 / 4.0468 against
// 4.2252 / 4.1016 / 4.0995 / 4.0989 ("jokeexp", epsilon 3 to 100; its
// clamped ratings and exposure give both columns something to fit) and
// 4.0957 / 4.0180 / 4.0115 / 4.0092 against 4.1659 / 4.0702 / 4.0630 /
// 4.0614 ("jokeexp3"); MovieLens-100K and ml-latest-small with the route
// forced (their positions take the positions stage) 0.9019 / 0.8936 /
// 0.8928 against 0.9127 / 0.9020 / 0.8997 and 0.8500 / 0.8432 / 0.8450
// against 0.8597 / 0.8504 / 0.8487 at epsilon 10 / 30 / 100; the planted
// logs without either structure lost up to 0.0025 (MovieLens-shaped) and
// moved by 0.002 either way (joke-shaped).
func alsInputFree(R int, p alsPrivateParams) int {
	if R >= ALSPositionsMaxRank && !p.inputNoFree {
		return ALSFreeColumns
	}
	return 0
}
