package completion

// GRADIENT PERTURBATION (Wei et al. 2021, Algorithm 2), two variants.
//
// The trainer computes, for each observed entry e = (i, j, k) with value x,
// the data gradient of (x - xhat)^2: g = -2 (x - xhat) d xhat/d theta over
// the parameters the entry touches, and hands it to the transform before
// adding the (data-independent) regulariser gradient and stepping. Each
// entry is visited once per epoch, so over E epochs it influences E steps.
//
// --protect C (faithful to the seed). Only the gradient of the protected
// mode's row (c_k of the time mode by default) is clipped to l2 norm m,
// g_C <- g_C / max(1, ||g_C||/m), and perturbed with noise n of density
// proportional to exp(-epsilon' ||n||/Delta_G) (perturb.L2Noise, pure
// epsilon'-DP). Sensitivity: between neighbours (same positions, one value
// changed), with the same current parameters, only the step of the changed
// entry differs, and its clipped gradients both lie in the ball of radius m,
// so they differ by at most Delta_G = 2m in l2. Each step of that entry is
// epsilon'-DP; over E epochs (k E steps for a user with k ratings) the
// composition is E epsilon' (basic), DRV advanced, or RDP, whichever the
// accounting option selects, and epsilon' is solved so the total fits the
// budget (perturb.PerStepEpsilon). CAVEAT, stated in the report: this is
// the seed's per-step guarantee for the noisy gradients of C, conditional
// on the current values of the other parameters. A, B, the core and the
// biases are updated with un-noised gradients of the same ratings and feed
// into later gradients of C, so no released parameter (not even C) carries
// an end-to-end guarantee; the report lists every parameter as not covered.
//
// --protect all (covers the whole model). The joint per-entry gradient of
// everything the entry touches (a_i, b_j, c_k, the core G, the biases) is
// clipped to l2 norm m as one vector and N(0, sigma^2 I) noise is added to
// every coordinate (perturb.Gaussian.AddToFast, on the grid). Sensitivity:
// as above, only the changed entry's steps differ, by at most 2m, and all
// other steps are the same function of the (released) state, so by
// adaptive composition the run is the composition of E (entry unit) or k E
// (user unit) Gaussian mechanisms with Delta = 2m; every parameter,
// including rows the entry does not touch (updated only by the
// data-independent regulariser), is post-processing. RDP accounting
// (alpha (2m)^2/(2 sigma^2) per step) by default; sigma is the smallest that
// fits the budget (bisection over the accountant), unless the caller fixes
// it (then a plan over budget is refused). With basic or advanced
// accounting each step is instead calibrated to a per-step (epsilon_i,
// delta_i) by the chosen Gaussian calibration.
//
// The global mean (models with biases). The trainer sets mu to the mean of
// the (clamped) training values before training, and every residual x -
// xhat uses it, so an un-noised mu would make every step depend on every
// rating. Under --protect all this mode releases mu~ = mu + Laplace(k
// Delta_r/(n epsilon_mu)) (n public; the mean of n clamped values moves by
// at most k Delta_r/n), spending epsilon_mu = MeanFraction * epsilon, and
// the transform corrects every residual to use mu~: the data gradient is
// -2 e d xhat/d theta with e = -g_bias/2, so multiplying all of it by (e +
// mu - mu~)/e gives exactly the gradient at residual e' = x - (xhat - mu +
// mu~) (if e is exactly 0 the direction is lost and the gradient is set to
// 0, still a function of that entry alone). PerturbOutput writes mu~ into
// the released model. Early stopping is disabled (Patience = -1) because
// it would compare snapshots that hold the un-noised mu. The per-epoch
// training loss in Result.History is computed from the raw ratings by the
// trainer and is NOT covered: do not publish it.

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/perturb"
)

// GradientPerturbation is the gradient-perturbation plug-in (Algorithm 2).
// One value serves one training run; GradientTransform values are per
// worker.
type GradientPerturbation struct {
	o       PrivateOptions
	pm      int // protected mode (ProtectC)
	steps   int // steps per privacy unit
	l2      *perturb.L2Noise
	gauss   *perturb.Gaussian
	mean    *perturb.Laplace
	mu, muT float64 // true and noised mean
	meanSet bool
	// meanInModel: the trainer took mu~ as the model's mean (ReleasedMean),
	// so no residual needs correcting.
	meanInModel bool
	report      *perturb.Report
	planned     bool
	mb          *minibatchPlan // minibatch DP-SGD (nil for the other variants)
}

var _ Privacy = (*GradientPerturbation)(nil)

// NewGradientPerturbation returns the gradient-perturbation mode;
// opts.Protect selects ProtectAll (default) or ProtectC.
func NewGradientPerturbation(opts *PrivateOptions) (*GradientPerturbation, error) {
	o, err := opts.resolve("gradient")
	if err != nil {
		return nil, err
	}
	if o.Clip == 0 && (o.Protect != ProtectAll || o.DPSGD == DPSGDPerEntry) {
		o.Clip = DefaultClip // minibatch DP-SGD sets its own (DPSGDClip)
	}
	return &GradientPerturbation{o: o}, nil
}

// GradientSensitivity returns Delta_G = 2m, the l2 sensitivity of one
// clipped per-entry gradient.
func GradientSensitivity(clip float64) float64 { return 2 * clip }

// Plan fixes the per-step noise to fit the budget, or refuses.
func (p *GradientPerturbation) Plan(train *data.Store, s *Settings) error {
	if p.planned {
		return fmt.Errorf("completion: gradient perturbation: %w: this plug-in already planned a training run (make a new one)", perturb.ErrBudget)
	}
	if s == nil || s.Epochs < 1 {
		return fmt.Errorf("completion: gradient perturbation: settings with a positive number of epochs required")
	}
	if p.o.Unit == UnitUser {
		if err := checkUserBound(train, p.o.MaxRatingsPerUser); err != nil {
			return err
		}
	}
	if p.o.Protect == ProtectAll && p.o.DPSGD == DPSGDMinibatch {
		return p.planMinibatch(train, s, s.hasBias)
	}
	order := train.Order()
	p.pm = order - 1
	if p.o.ProtectMode > 0 {
		p.pm = p.o.ProtectMode - 1
	}
	if p.pm >= order {
		return fmt.Errorf("completion: gradient perturbation: protected mode %d does not exist in an order-%d store", p.pm+1, order)
	}
	p.steps = p.o.unitCount() * s.Epochs
	dG := GradientSensitivity(p.o.Clip)
	deriv := fmt.Sprintf("clipped per-entry gradient (norm <= m = %g): neighbours differ by <= 2m; %d steps per %s (%d epochs x %d ratings) (completion/private_gradient.go)", p.o.Clip, p.steps, p.o.Unit, s.Epochs, p.o.unitCount())
	var acc perturb.Accountant
	var err error
	if p.o.Protect == ProtectC {
		err = p.planC(&acc, dG, deriv)
	} else {
		err = p.planAll(&acc, train, dG, deriv)
		// Early stopping would compare snapshots holding the un-noised mean.
		s.Patience = -1
	}
	if err != nil {
		return err
	}
	eps, delta, used, err := admit(&p.o, &acc)
	if err != nil {
		return fmt.Errorf("completion: gradient perturbation: %w", err)
	}
	p.report = baseReport(&p.o, "gradient", &acc, eps, delta, used)
	var s2 float64
	if p.o.Protect == ProtectC {
		// l2-norm noise of scale S in d dimensions has per-coordinate
		// variance (d+1) S^2; the rank d is unknown here, so d = 1 (the
		// loosest cap).
		s2 = 2 * p.l2.Scale() * p.l2.Scale()
	} else {
		s2 = p.gauss.Sigma() * p.gauss.Sigma()
	}
	if note := capStep(&p.o, s, s2); note != "" {
		p.report.Notes = append(p.report.Notes, note)
	}
	p.planned = true
	return nil
}

func (p *GradientPerturbation) planC(acc *perturb.Accountant, dG float64, deriv string) error {
	e := p.o.StepEpsilon
	if e == 0 {
		method := p.o.Accounting
		if method == "" {
			method = "best"
		}
		var err error
		if e, _, err = perturb.PerStepEpsilon(p.o.Epsilon, p.o.Delta, p.steps, method); err != nil {
			return fmt.Errorf("completion: gradient perturbation: %w", err)
		}
	}
	// The dimension is the protected row's rank, unknown until the
	// transform sees a gradient; the mechanism is rebuilt per dimension
	// there. Accounting does not depend on the dimension.
	l2, err := perturb.NewL2Noise(dG, e, 1)
	if err != nil {
		return fmt.Errorf("completion: gradient perturbation: %w", err)
	}
	p.l2 = l2
	rel := l2.Release(fmt.Sprintf("clipped gradient of the mode-%d factor row", p.pm+1))
	rel.Derivation = deriv
	return acc.Add(rel, p.steps)
}

func (p *GradientPerturbation) planAll(acc *perturb.Accountant, train *data.Store, dG float64, deriv string) error {
	n := train.NNZ()
	if n == 0 {
		return ErrEmpty
	}
	epsMu := p.o.MeanFraction * p.o.Epsilon
	meanSens := float64(p.o.unitCount()) * p.o.ratingRange() / float64(n)
	mean, err := perturb.NewLaplace(meanSens, epsMu)
	if err != nil {
		return fmt.Errorf("completion: gradient perturbation (mean): %w", err)
	}
	p.mean = mean
	meanRel := mean.Release("global mean of the clamped ratings")
	meanRel.Derivation = fmt.Sprintf("mean of n = %d clamped values: one %s moves it by <= %d (r_max - r_min)/n", n, p.o.Unit, p.o.unitCount())
	what := "clipped joint per-entry gradient (factor rows, core, biases)"
	rest := p.o.Epsilon - epsMu
	build := func(g *perturb.Gaussian) (*perturb.Accountant, error) {
		var a perturb.Accountant
		if err := a.Add(meanRel, 1); err != nil {
			return nil, err
		}
		rel := g.Release(what)
		rel.Derivation = deriv
		if err := a.Add(rel, p.steps); err != nil {
			return nil, err
		}
		return &a, nil
	}
	var g *perturb.Gaussian
	switch {
	case p.o.Sigma > 0:
		g, err = perturb.NewGaussianSigma(dG, p.o.Sigma)
	case p.o.Accounting == perturb.Basic || p.o.Accounting == perturb.Advanced:
		g, err = p.solveStepEpsilon(dG, rest, build)
	default:
		g, err = p.solveSigma(dG, build)
	}
	if err != nil {
		return fmt.Errorf("completion: gradient perturbation: %w", err)
	}
	p.gauss = g
	a, err := build(g)
	if err != nil {
		return err
	}
	*acc = *a
	return nil
}

// solveStepEpsilon calibrates each Gaussian step to a per-step (epsilon_i,
// delta_i) with the chosen calibration, for basic or advanced accounting:
// delta_i = delta/steps (basic) or delta/(2 steps) (advanced, the other
// half being the DRV slack), and epsilon_i the largest (bisection) whose
// composition with the mean release fits the budget.
func (p *GradientPerturbation) solveStepEpsilon(dG, rest float64, build func(*perturb.Gaussian) (*perturb.Accountant, error)) (*perturb.Gaussian, error) {
	if err := perturb.CheckPositiveDelta(p.o.Delta); err != nil {
		return nil, err
	}
	di := p.o.Delta / float64(p.steps)
	if p.o.Accounting == perturb.Advanced {
		di /= 2
	}
	mk := func(ei float64) (*perturb.Gaussian, bool) {
		g, err := perturb.NewGaussian(dG, ei, di, p.o.Calibration)
		if err != nil {
			return nil, false
		}
		a, err := build(g)
		if err != nil {
			return nil, false
		}
		return g, perturb.Budget{Epsilon: p.o.Epsilon, Delta: p.o.Delta}.Fits(a, p.o.Accounting)
	}
	lo, hi := 0.0, rest
	if g, ok := mk(hi); ok {
		return g, nil
	}
	for i := 0; i < 100 && hi-lo > 1e-9*hi; i++ {
		mid := lo + (hi-lo)/2
		if _, ok := mk(mid); ok {
			lo = mid
		} else {
			hi = mid
		}
	}
	g, ok := mk(lo)
	if !ok {
		return nil, fmt.Errorf("%w: no per-step epsilon fits epsilon %v, delta %v over %d steps with %s accounting", perturb.ErrBudget, p.o.Epsilon, p.o.Delta, p.steps, p.o.Accounting)
	}
	return g, nil
}

// solveSigma bisects for the smallest sigma whose accountant (mean release
// plus the Gaussian steps) fits the budget.
func (p *GradientPerturbation) solveSigma(dG float64, build func(*perturb.Gaussian) (*perturb.Accountant, error)) (*perturb.Gaussian, error) {
	if err := perturb.CheckPositiveDelta(p.o.Delta); err != nil {
		return nil, err
	}
	fits := func(sigma float64) bool {
		g, err := perturb.NewGaussianSigma(dG, sigma)
		if err != nil {
			return false
		}
		a, err := build(g)
		if err != nil {
			return false
		}
		return perturb.Budget{Epsilon: p.o.Epsilon, Delta: p.o.Delta}.Fits(a, p.o.Accounting)
	}
	hi := dG
	for !fits(hi) {
		hi *= 2
		if hi > dG*1e12 {
			return nil, fmt.Errorf("%w: no noise level fits epsilon %v, delta %v over %d steps", perturb.ErrBudget, p.o.Epsilon, p.o.Delta, p.steps)
		}
	}
	lo := 0.0
	for i := 0; i < 100 && hi-lo > 1e-9*hi; i++ {
		mid := lo + (hi-lo)/2
		if fits(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return perturb.NewGaussianSigma(dG, hi)
}

// PerturbInput clamps the training values to the public range and, under
// --protect all, draws the noisy mean mu~ of the clamped values.
func (p *GradientPerturbation) PerturbInput(vals []float64, train *data.Store) error {
	if !p.planned {
		return fmt.Errorf("completion: gradient perturbation: PerturbInput before Plan")
	}
	s := 0.0
	for i, v := range vals {
		vals[i] = clampValue(v, p.o.RatingMin, p.o.RatingMax)
		s += vals[i]
	}
	if p.mean != nil && !p.meanSet && len(vals) > 0 {
		p.mu = s / float64(len(vals)) // the trainer's own computation of the mean
		x := []float64{p.mu}
		p.mean.AddTo(x, rand.New(p.o.source(streamMean)))
		p.muT = x[0]
		p.meanSet = true
	}
	return nil
}

// GradientTransform returns worker w's transform, with its own noise
// stream: a fast source (perturb.Noise.FastSource: a ChaCha8 keyed from
// crypto/rand, or the seeded stream), owned by that worker alone, so the
// per-entry noise pays no lock and no system call per draw.
func (p *GradientPerturbation) GradientTransform(w int) GradientTransform {
	src := p.o.Noise.FastSource(streamWorker + uint64(w))
	if p.o.Protect == ProtectC {
		return &clipNoiseC{mode: p.pm, clip: p.o.Clip, eps: p.l2.Epsilon(), sens: p.l2.Sensitivity(), r: rand.New(src)}
	}
	return &clipNoiseAll{clip: p.o.Clip, g: p.gauss, src: src, shift: p.mu - p.muT, fix: p.meanSet && !p.meanInModel}
}

// ReleasedMean returns the noisy mean mu~ once PerturbInput has drawn it
// (--protect all with biases). Train then uses mu~ as the model's mean
// from the start, so every residual, every training loss and every
// validation RMSE is computed with the released mean, never the raw one,
// and the transform's residual correction is switched off.
func (p *GradientPerturbation) ReleasedMean() (float64, bool) {
	if !p.meanSet {
		return 0, false
	}
	p.meanInModel = true
	return p.muT, true
}

// PerturbOutput writes the noisy mean into the model (--protect all) and
// fills the coverage of the report.
func (p *GradientPerturbation) PerturbOutput(m *decomposition.Model, train *data.Store) error {
	if p.report == nil {
		return nil
	}
	all := paramNames(m.Order(), m.Kind == decomposition.Tucker, m.HasBias)
	publicClamp(&p.o, m, p.report)
	if p.mb != nil && p.mb.fallback != nil {
		p.report.Covered = []string{"global mean", "item biases"}
		if m.Kind == decomposition.CP {
			p.report.Covered = append(p.report.Covered, "B (item rows: the free columns, post-processing)")
			if m.Order() == 3 {
				p.report.Covered = append(p.report.Covered, "C (time rows: constant ones, data-independent)")
			}
		}
		return nil
	}
	if p.mb != nil {
		if m.HasBias && p.meanSet {
			m.Mean = p.muT
		}
		p.report.Covered = all
		if p.mb.billboard {
			dpsgdBillboard(m, p.report, fmt.Sprintf("at a noise multiplier %.4g >= %g (DPSGDBillboardNoise, a rule of public quantities)", p.mb.noiseMult, float64(DPSGDBillboardNoise)))
		}
		if p.mb.held != nil {
			return p.selectModel(m, train)
		}
		return nil
	}
	if p.o.Protect == ProtectAll {
		if m.HasBias && p.meanSet {
			m.Mean = p.muT
		}
		p.report.Covered = all
		p.report.Notes = append(p.report.Notes,
			fmt.Sprintf("gradient perturbation --protect all: joint per-entry gradient clipped to m = %g, Gaussian noise sigma = %g on every touched parameter; %d steps per %s", p.o.Clip, p.gauss.Sigma(), p.steps, p.o.Unit),
			fastNoiseNote("per-entry gradient"),
			"the global mean is released with Laplace noise and used in every residual; early stopping disabled",
			"the per-epoch training losses are computed from raw ratings: dprec train withholds them from the model file (only epochs, step sizes and timings are saved); do not publish the losses printed during training")
		return nil
	}
	p.report.NotCovered = all
	p.report.Notes = append(p.report.Notes,
		fmt.Sprintf("gradient perturbation --protect C (Wei et al. 2021 Algorithm 2): the gradient of mode-%d rows is clipped to m = %g and perturbed with l2-norm noise (epsilon' = %g per step, %d steps per %s)", p.pm+1, p.o.Clip, p.l2.Epsilon(), p.steps, p.o.Unit),
		perturb.L2NoiseNote,
		"the guarantee is per step and conditional on the other parameters, which are trained on the same ratings without noise and feed into the protected gradients: no released parameter has an end-to-end guarantee; use --protect all for one")
	return nil
}

// dpsgdBillboard withholds minibatch DP-SGD's user rows and user biases
// (DPSGDBillboardNoise, or the selection's choice: why): zero in m, the
// report a billboard model's.
func dpsgdBillboard(m *decomposition.Model, rep *perturb.Report, why string) {
	clear(m.Factors[0])
	if m.HasBias {
		clear(m.Bias[0])
	}
	var cov []string
	for _, c := range rep.Covered {
		switch c {
		case "A (users)":
		case "biases":
			if m.Order() == 3 {
				cov = append(cov, "item and time biases")
			} else {
				cov = append(cov, "item biases")
			}
		default:
			cov = append(cov, c)
		}
	}
	rep.Covered = cov
	rep.Billboard = true
	rep.Notes = append(rep.Notes, fmt.Sprintf("not released: user rows and user biases (zero in the model; the steps trained them): %s; each user solves them at prediction time from the released item side and their own ratings with the bias mode's penalties (billboard model; post-processing)", why))
}

// Report returns the privacy report (nil before Plan).
func (p *GradientPerturbation) Report() *perturb.Report { return p.report }

// Protect returns the protection target (ProtectAll unless ProtectC was
// asked for).
func (p *GradientPerturbation) Protect() Protect { return p.o.Protect }

// clipRow scales v to l2 norm at most c and returns the norm before.
func clipVec(v []float64, c float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x * x
	}
	n := math.Sqrt(s)
	if n > c {
		k := c / n
		for i := range v {
			v[i] *= k
		}
	}
	return n
}

// clipNoiseC is the --protect C transform of one worker.
type clipNoiseC struct {
	mode      int
	clip      float64
	eps, sens float64
	noise     *perturb.L2Noise
	r         *rand.Rand
}

// Transform clips the protected row's gradient to m and adds l2-norm noise.
func (t *clipNoiseC) Transform(g *EntryGrad) {
	v := t.preNoise(g)
	if t.noise == nil || t.noise.Dim() != len(v) {
		// Parameters were validated in Plan; the dimension is a rank >= 1.
		t.noise, _ = perturb.NewL2Noise(t.sens, t.eps, len(v))
	}
	t.noise.AddTo(v, t.r)
}

// preNoise clips the protected row's gradient in place and returns it: the
// quantity whose sensitivity is Delta_G.
func (t *clipNoiseC) preNoise(g *EntryGrad) []float64 {
	v := g.Factor[t.mode]
	clipVec(v, t.clip)
	return v
}

// clipNoiseAll is the --protect all transform of one worker.
type clipNoiseAll struct {
	clip  float64
	g     *perturb.Gaussian
	src   rand.Source
	shift float64 // mu - mu~
	fix   bool
	buf   []float64
}

// Transform corrects the residual to the noisy mean, clips the joint
// gradient to m and adds Gaussian noise to every coordinate.
func (t *clipNoiseAll) Transform(g *EntryGrad) {
	b := t.preNoise(g)
	t.g.AddToFast(b, t.src) // perturb/fastnoise.go: grid-rounded ziggurat normals
	off := 0
	for _, f := range g.Factor {
		off += copy(f, b[off:])
	}
	off += copy(g.Core, b[off:])
	copy(g.Bias, b[off:])
}

// preNoise applies the mean correction and returns the clipped joint
// gradient (factor rows, then core, then biases) in the worker's buffer:
// the quantity whose sensitivity is Delta_G.
func (t *clipNoiseAll) preNoise(g *EntryGrad) []float64 {
	if t.fix && len(g.Bias) > 0 {
		e := -g.Bias[0] / 2
		k := 0.0
		if e != 0 {
			k = (e + t.shift) / e
		}
		scaleEntryGrad(g, k)
	}
	n := len(g.Core) + len(g.Bias)
	for _, f := range g.Factor {
		n += len(f)
	}
	if cap(t.buf) < n {
		t.buf = make([]float64, n)
	}
	b := t.buf[:0]
	for _, f := range g.Factor {
		b = append(b, f...)
	}
	b = append(b, g.Core...)
	b = append(b, g.Bias...)
	clipVec(b, t.clip)
	return b
}

func scaleEntryGrad(g *EntryGrad, k float64) {
	for _, f := range g.Factor {
		for i := range f {
			f[i] *= k
		}
	}
	for i := range g.Core {
		g.Core[i] *= k
	}
	for i := range g.Bias {
		g.Bias[i] *= k
	}
}
