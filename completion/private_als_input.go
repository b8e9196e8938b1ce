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
// Composition: two pure releases, basic: epsilon_b + epsilon_w = epsilon,
// delta 0. Everything released is post-processing of them. As epsilon
// grows the noise vanishes, the ridge tends to DefaultALSReg and the clip
// to the whole range (alsInputClip), so the released item side tends to
// non-private ALS's on the same log.

import (
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
// spends on the bias release.
const ALSInputBiasFraction = 0.1

// alsInputClip is the residual clip c of the residual route: (r_max -
// r_min)/3 (the bias mode's clip) up to epsilon 10, growing as
// log10(epsilon) beyond (2/3 of the range at 100), so that fewer residuals
// are clipped as the noise, whose scale 2c/epsilon_w falls as 1/epsilon
// while c grows only logarithmically, becomes small; it reaches the whole
// range at epsilon 1000.
func alsInputClip(o *PrivateOptions) float64 {
	return BiasResidualClip * o.ratingRange() * math.Min(3, math.Max(1, math.Log10(o.Epsilon)))
}

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
	s := o.ratingRange() / biasSpreadDivisor
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
	s := o.ratingRange() / biasSpreadDivisor
	return DefaultALSReg * (s*s + v) / (s * s)
}

// alsInputPlan returns the residual route's noise variance v, the
// smallest item count the rule with factor g passes and the share of the
// ratings on items that pass (public counts and constants only).
func alsInputPlan(train *data.Store, o *PrivateOptions, p alsPrivateParams, R int, g float64) (v, nmin, share float64) {
	v = alsInputNoiseVar(p.inputClip, (1-p.inputBiasFrac)*o.Epsilon)
	nmin = alsInputMinCount(o, g, R, v)
	counts := make([]float64, train.Dims[1])
	for _, i := range train.Idx[1] {
		counts[i]++
	}
	var pass float64
	for _, n := range counts {
		if n >= nmin {
			pass += n
		}
	}
	return v, nmin, pass / float64(train.NNZ())
}

// trainPrivateALSInput is TrainPrivateALS's residual route (entry unit).
func trainPrivateALSInput(train *data.Store, m *decomposition.Model, o *PrivateOptions, p alsPrivateParams) (*perturb.Report, error) {
	R := m.Ranks[0]
	f := p.inputBiasFrac
	c := p.inputClip
	epsW := (1 - f) * o.Epsilon
	v, nmin, share := alsInputPlan(train, o, p, R, p.inputGate)
	lambda := p.inputReg
	if lambda == 0 {
		lambda = alsInputReg(o, v)
	}
	wm, brep, err := scratchBiasRelease(train, o, f*o.Epsilon)
	if err != nil {
		return nil, fmt.Errorf("completion: private ALS (bias release): %w", err)
	}
	lap, err := perturb.NewLaplace(2*c, epsW)
	if err != nil {
		return nil, fmt.Errorf("completion: private ALS: %w", err)
	}
	vals := append([]float64(nil), train.Val...)
	clippedResiduals(vals, train, o, wm, c)
	if !p.noiseOff {
		lap.AddTo(vals, rand.New(o.source(streamALSInput)))
	}
	o.observe(alsInputWhat, vals, append([]float64{wm.Mean}, wm.Bias[1]...))
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
	// Post-processing: ALS on the noisy residuals as a user x item matrix.
	ns := &data.Store{Dims: train.Dims[:2], Idx: train.Idx[:2], Val: vals}
	mm, err := decomposition.NewModel(decomposition.CP, ns.Dims, []int{R}, true)
	if err != nil {
		return nil, err
	}
	steps := p.inputSweeps
	if steps == 0 {
		steps = DefaultALSSweeps
	}
	rb := DefaultALSRegBias * lambda / DefaultALSReg
	if _, err := Train(ns, nil, mm, &Settings{Solver: SolverALS, Reg: lambda, RegBias: rb, Epochs: steps, Threads: 2}, rand.NewPCG(uint64(streamALSInput), 1), nil); err != nil {
		return nil, fmt.Errorf("completion: private ALS (fit on the noisy residuals): %w", err)
	}
	m.Mean = wm.Mean + mm.Mean
	for i := range m.Bias[1] {
		m.Bias[1][i] = wm.Bias[1][i]
		if !p.inputNoCorr {
			m.Bias[1][i] += mm.Bias[1][i]
		}
	}
	copy(m.Factors[1], mm.Factors[1])
	// The learnability rule (public counts): rows of items below nmin are
	// zero.
	counts := make([]float64, train.Dims[1])
	for _, i := range train.Idx[1] {
		counts[i]++
	}
	zeroed := 0
	for i, n := range counts {
		if n < nmin {
			clear(m.Factors[1][i*R : (i+1)*R])
			zeroed++
		}
	}
	clear(m.Factors[0])
	clear(m.Bias[0])
	if m.Order() == 3 {
		for i := range m.Factors[2] {
			m.Factors[2][i] = 1
		}
		clear(m.Bias[2])
	}
	rep := baseReport(o, "als", &acc, eps, delta, used)
	rep.Composition = fmt.Sprintf("bias release (epsilon %g) then the residual release (epsilon %g), %s", f*o.Epsilon, epsW, used)
	rep.Billboard = true
	rep.ItemCounts = brep.ItemCounts
	rep.FoldPerRating = DefaultALSReg
	publicClamp(o, m, rep)
	rep.Covered = []string{"global mean", "item biases", "B (item rows)", "C (time rows: constant ones, data-independent)"}
	rep.Notes = append(rep.Notes,
		fmt.Sprintf("not released: user rows and user biases (zero in the model); each user solves them at prediction time from the released item side and their own ratings with non-private ALS's per-rating ridge %g plus %g (billboard model)", DefaultALSReg, ALSPrivateFoldRow),
		fmt.Sprintf("learnability rule: item rows are released for items with n_i >= g R v/s^2 = %.4g (g = %g), which carry %.1f%% of the ratings; the other %d rows are zero", nmin, p.inputGate, 100*share, zeroed),
		fmt.Sprintf("residual route (entry unit): the bias mode's release at %g%% of epsilon, then every rating's residual from it, clipped to [-c, c], c = %g, with Laplace noise b = 2c/epsilon_w = %.4g (variance %.4g); the item side is post-processing: ALS of rank %d, %d sweeps, on the noisy residuals with a ridge of %.4g per observation (rule DefaultALSReg (s^2 + v)/s^2, s = (r_max - r_min)/4) and %.4g pseudo-observations on the biases; its user rows are dropped", 100*f, c, 2*c/epsW, v, R, steps, lambda, rb))
	for _, n := range brep.Notes {
		// The bias mode's own notes on its estimate and split; those on
		// the relation, the clamp and the bias-only model's release are
		// stated above for this model.
		if strings.HasPrefix(n, "item bias") || strings.HasPrefix(n, "epsilon split") {
			rep.Notes = append(rep.Notes, "bias release: "+n)
		}
	}
	return rep, nil
}
