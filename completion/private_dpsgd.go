package completion

// MINIBATCH DP-SGD WITH AMPLIFICATION BY SUBSAMPLING (the default variant
// of --privacy gradient --protect all; the per-entry variant of
// private_gradient.go stays behind DPSGDPerEntry / --dp-sgd per-entry).
//
// Relation. Zero-out neighbours at entry level (Kairouz, McMahan, Song,
// Thakkar, Thakurta and Xu 2021, "Practical and private (deep) learning
// without sampling or shuffling", Section 2): two logs have the same
// observed positions and one rating of one of them is replaced by a null
// that contributes nothing to any gradient (and counts as r_min in the
// warm start's sums, below; its position and every count
// stay). Positions, counts, dictionaries and the time range are public;
// what is protected is whether and what one rating tells. For the
// gradient steps this is exactly the add/remove relation of Mironov,
// Talwar and Zhang (2019) with the counts kept public. The headline
// (epsilon, delta) is for this relation; every other entry-level mode
// protects a change of one rating's value, which is two zero-out steps,
// and the report states that guarantee too, as numbers (Relation and
// notes): RDP group privacy at group size 2 (package doc, Sensitivities;
// perturb.GroupTwoEpsilon). The default plan (60 epochs, q = 0.5, warm
// share 0.1, delta 1e-5; public quantities only) at zero-out epsilon
// 0.1 / 0.5 / 1 / 2 / 5 / 10 is, for a value change, epsilon 0.205 /
// 1.02 / 2.05 / 4.18 / 11.1 / 24.2 at the same delta. Sigma is calibrated
// to zero-out, not to the value change, so that the measured defaults
// below keep their meaning; for value-change epsilon e, ask for about
// e/2 and read the figure in the notes.
//
// Mechanism (Abadi et al. 2016, with Poisson sampling as analysed by
// Mironov, Talwar and Zhang 2019). Each step t = 1..T:
//
//  1. draws a batch by Poisson sampling: every rating independently with
//     probability q (bit-sliced comparisons of uniform words for q >=
//     1/16, geometric gaps below; from the noise source, so the sampling
//     is as secure as the noise);
//  2. for every sampled rating computes the gradient of its squared error
//     (x - xhat)^2 with respect to every trained parameter it touches
//     (its factor row in each mode, its bias in each mode, the Tucker
//     core), as one vector, and clips that vector to l2 norm C;
//  3. sums the clipped vectors and adds N(0, sigma^2 C^2) to EVERY trained
//     coordinate of the sum, touched by the batch or not (dense noise:
//     which rows a batch touches depends on the data);
//  4. steps each trained row r (public count n_r) by
//     theta_r <- theta_r - eta (G_r + 2 q n_r lambda theta_r) / (2 (q n_r
//     + kappa)): a diagonal preconditioner built from public counts (the
//     Newton step of a bias whose q n_r expected ratings each have
//     curvature 2, damped by eta and by the prior kappa), with lambda the
//     settings' per-entry penalty (Reg for rows, RegBias for biases). Every
//     update is post-processing of the noisy sums, the public counts and
//     the released previous state.
//
// Sensitivity. The summed clipped gradient of a batch with and without
// the zeroed rating differs by that rating's clipped vector, of norm <= C
// (TestDPSGDSensitivityNeighbours); all other summands are the same
// function of the released state. Trained coordinates: rows whose
// preconditioned weight is too small to move (rule below) are frozen at
// their public initial values, a projection fixed before training from
// public counts, so the clipped vector is projected first and the noise is
// added to every remaining coordinate.
//
// Accounting. Each step is the Poisson-subsampled Gaussian mechanism with
// noise multiplier sigma (perturb.SampledGaussianRDP, integer and
// fractional orders), T steps compose additively in RDP, together with the
// Laplace releases of the bias warm start (below), and the total is
// converted to (epsilon, delta) by Canonne, Kamath and Steinke (2020,
// Proposition 12). sigma is the smallest that fits the budget (bisection,
// perturb.SampledGaussianNoiseMultiplier).
//
// Warm start and global mean (models with biases). A share WarmFraction of
// epsilon buys the bias mode's release (private_bias.go: a noisy global
// sum and noisy per-item sums of clipped residuals, Laplace): its global
// mean is the model's mean (never trained further, never the raw mean)
// and its item biases start the item biases. Its sensitivities were
// derived for one value changing within the public range. The mechanism
// is defined on logs with a null as follows: the null contributes no
// gradient to any step, and in the warm start's sums it counts as the
// public value r_min (its residual clipped like any other). A null against
// a rating is then one in-range value against another in those sums, so
// their value-change sensitivities bound the zero-out change (without that
// definition, a null counted as 0 would move the sum of clamped ratings by
// up to r_max, not r_max - r_min).
//
// Defaults from public quantities (epsilon, delta, the rating range
// [r_min, r_max], N = the number of ratings and the counts, public under
// this relation; the model's shape):
//
//	quantity          rule                                          ml-latest-small (N = 90,753, day buckets), eps 1
//	sampling rate q   DefaultDPSGDRate = 0.5 (2 steps per epoch)    0.5, expected batch 45,376
//	steps T           ceil(Epochs/q), Epochs = Settings.Epochs      120 (60 epochs)
//	clip C            DPSGDClipFactor sigma_r sqrt(order) boost,    0.974
//	                  sigma_r = (r_max - r_min)/4, factor 0.5,
//	                  boost = clamp(10/sigma, 1, 3)
//	noise sigma       smallest multiplier that fits (bisection)     23.6 (sd 23.0 per coordinate)
//	damping eta       DPSGDDamping = 0.5                            0.5
//	prior kappa       eta sigma C sqrt(T)/(2 tau), tau = sigma_r/5  280
//	                  (noise alone moves a row <= tau over T steps)
//	trained rows      eta T q n_r/(q n_r + kappa) >= 1              43,527 of 204,039 coordinates
//	warm start share  DefaultWarmFraction = 0.1 of epsilon          0.1
//	learning rates,   Settings.Reg and RegBias (per-entry penalties, as the non-private trainer)
//	penalties
//
// The constants were chosen on the validation part of ml-latest-small's
// training log (85.5% fit, 4.5% scored; never the test part), CP rank 10
// with biases, week buckets, validation RMSE at zero-out epsilon 0.1 / 1 / 10
// (TestMovieLensDPSGDSweep; the clip and warm-share rows measured at
// q = 0.25, the clip rows at warm share 0.5, before the sampler and
// bisection reached their final form, so a rerun moves them by about
// 0.002): q at the final defaults, mean of noise seeds 1-3, q = 0.25 /
// 0.5 / 1: 0.952/0.888/0.862, 0.946/0.888/0.860, 0.951/0.887/0.860 (q = 0.5
// is as good as or better than 0.25 at each epsilon and halves the steps,
// hence the dense noise, the sampling and the row updates of an epoch,
// while keeping amplification by subsampling); clip factor 0.25 / 0.5 / 1:
// 0.953/0.898, 0.954/0.895, 0.968/0.892; warm share 0.02 / 0.1 / 0.25 /
// 0.5 / 0.75: 0.989/0.885/0.863, 0.941/0.889/0.862, 0.950/0.893/0.862,
// 0.953/0.895/0.861, 0.963/0.900/0.864. The warm start helps at small
// epsilon (its global mean; without it user biases absorb the mean's
// noise at epsilon >= 1 only). The boost of the clip with small noise, at
// q = 0.5, mean of seeds 1-3, week buckets, clip factor 0.5 / 0.75 / 1 /
// 1.5 at epsilon 0.1: 0.946/0.952/0.958/0.971, 0.5: 0.903/0.903/0.903/0.909,
// 1: 0.888/0.890/0.889/0.893, 2: 0.875/0.877/0.876/0.880, 5:
// 0.865/0.862/0.863/0.865, 10: 0.860/0.858/0.857/0.856 (sigma 195, 44.5,
// 23.6, 12.6, 5.67, 3.21): the best factor grows once sigma falls below
// about 10, and the rule clamp(10/sigma, 1, 3) follows it; on day buckets
// it takes epsilon 10 from 0.8551 to 0.8517 and epsilon 5 from 0.8592 to
// 0.8587.
//
// Threads. The sampling and the noise come from one stream in a fixed
// order (the batch, then the noise of the step) whatever Settings.Threads
// is. With Threads = p > 1 the batch is cut into p contiguous chunks whose
// clipped gradients p workers sum into their own buffers, the buffers are
// added in worker order (each worker adding one range of coordinates),
// and the rows are stepped in p disjoint ranges: a seeded run is
// reproducible for a given p, and runs with different p differ only by
// the rounding of the sums (the released quantity, its sensitivity and
// its noise are the same). Early stopping is off (no validation data in a
// private run).
//
// The training losses in Result.History are computed from the sampled
// ratings' raw residuals and are NOT covered (as in the per-entry
// variant): they are for the operator, not for publication.

import (
	"context"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/perturb"
)

// DPSGDVariant selects the algorithm of gradient perturbation with
// --protect all. The zero value is the default, DPSGDMinibatch.
type DPSGDVariant uint8

// Variants of gradient perturbation --protect all.
const (
	// DPSGDMinibatch is minibatch DP-SGD with Poisson sampling and RDP
	// amplification by subsampling (private_dpsgd.go).
	DPSGDMinibatch DPSGDVariant = iota
	// DPSGDPerEntry is the per-entry variant: every entry's clipped
	// gradient gets its own noise, steps composed without subsampling
	// (private_gradient.go).
	DPSGDPerEntry
)

// String returns the CLI name ("minibatch" or "per-entry").
func (v DPSGDVariant) String() string {
	switch v {
	case DPSGDMinibatch:
		return "minibatch"
	case DPSGDPerEntry:
		return "per-entry"
	}
	return fmt.Sprintf("DPSGDVariant(%d)", uint8(v))
}

// ParseDPSGDVariant maps "minibatch" (or "") and "per-entry" to a variant.
func ParseDPSGDVariant(s string) (DPSGDVariant, error) {
	switch s {
	case "", "minibatch":
		return DPSGDMinibatch, nil
	case "per-entry":
		return DPSGDPerEntry, nil
	}
	return 0, fmt.Errorf("completion: unknown DP-SGD variant %q (want minibatch or per-entry)", s)
}

// Defaults of minibatch DP-SGD (table in the comment above).
const (
	// DefaultDPSGDRate is the Poisson sampling rate q: 2 steps per epoch,
	// so the dense noise (one draw per trained coordinate per step) costs
	// 2 draws per coordinate and epoch.
	DefaultDPSGDRate = 0.5
	// DPSGDClipFactor scales the clip C = DPSGDClipFactor sigma_r
	// sqrt(order): the gradient of one rating with residual e has norm
	// about 2|e| sqrt(order) from the biases alone, and sigma_r = (r_max -
	// r_min)/4 is the public spread of a residual.
	DPSGDClipFactor = 0.5
	// DPSGDClipNoise and DPSGDClipMaxBoost scale the clip with the noise
	// multiplier sigma (DPSGDClip): by DPSGDClipNoise/sigma, between 1 and
	// DPSGDClipMaxBoost (1 down to epsilon 2 at the defaults, 1.76 at 5, 3
	// at 10).
	DPSGDClipNoise    = 10
	DPSGDClipMaxBoost = 3
	// DPSGDDamping is eta, the fraction of the preconditioned (Newton)
	// step taken per step.
	DPSGDDamping = 0.5
	// DefaultWarmFraction is the share of epsilon spent on the bias-mode
	// warm start (global mean and item biases) when the model has biases.
	DefaultWarmFraction = 0.1
	// dpsgdPriorDivisor sets tau = sigma_r/dpsgdPriorDivisor, the prior
	// spread of a bias (BiasItemPenalty = 25 = 5^2 in the bias mode).
	dpsgdPriorDivisor = 5
)

// Noise stream of minibatch DP-SGD (sampling and noise share one stream,
// drawn in a fixed order).
const streamDPSGD = 1<<16 + 1

// minibatchPlan is what Plan fixes for minibatch DP-SGD.
type minibatchPlan struct {
	q, noiseMult, clip, eta, kappa float64
	steps                          int
	gauss                          *perturb.Gaussian
	warm                           *decomposition.Model // bias warm start (nil without biases)
	warmEps                        float64
	counts                         [][]int // public counts per mode and row
	// vcEps is the epsilon (at the report's delta) for a change of one
	// rating's value, group size 2 (the headline is for zero-out).
	vcEps, vcOrder float64
}

// loopOwner is implemented by a plug-in that runs its own training loop
// instead of the trainer's per-entry SGD (minibatch DP-SGD).
type loopOwner interface {
	ownsLoop() bool
	runLoop(ctx context.Context, train, valid *data.Store, m *decomposition.Model, cfg *Settings, vals []float64, res *Result, progress func(EpochRecord)) error
}

func (p *GradientPerturbation) ownsLoop() bool { return p.mb != nil }

// DPSGDClip returns the default clip C of minibatch DP-SGD for the
// options' rating range, a model of the given order and the noise
// multiplier sigma: DPSGDClipFactor sigma_r sqrt(order) times
// clamp(DPSGDClipNoise/sigma, 1, DPSGDClipMaxBoost). The noise added per
// coordinate is sigma C, so a small sigma (large epsilon) buys a larger
// clip, hence less clipping bias, for little noise.
func DPSGDClip(o *PrivateOptions, order int, sigma float64) float64 {
	boost := 1.0
	if sigma > 0 {
		boost = math.Max(1, math.Min(DPSGDClipMaxBoost, DPSGDClipNoise/sigma))
	}
	return boost * DPSGDClipFactor * o.ratingRange() / 4 * math.Sqrt(float64(order))
}

// planMinibatch solves the noise of minibatch DP-SGD for the budget and
// writes the report.
func (p *GradientPerturbation) planMinibatch(train *data.Store, s *Settings, hasBias bool) error {
	if p.o.Unit != UnitEntry {
		return fmt.Errorf("completion: minibatch DP-SGD: %w: only the entry unit is supported (use the per-entry variant, --dp-sgd per-entry, for the user unit)", perturb.ErrSensitivity)
	}
	if p.o.Accounting != "" && p.o.Accounting != perturb.RDP {
		return fmt.Errorf("completion: minibatch DP-SGD: accounting %q does not apply to subsampled Gaussian steps (use rdp)", p.o.Accounting)
	}
	if err := perturb.CheckPositiveDelta(p.o.Delta); err != nil {
		return fmt.Errorf("completion: minibatch DP-SGD: %w", err)
	}
	n := train.NNZ()
	if n == 0 {
		return ErrEmpty
	}
	mb := &minibatchPlan{q: p.o.SampleRate, clip: p.o.Clip, eta: DPSGDDamping}
	if mb.q == 0 {
		mb.q = DefaultDPSGDRate
	}
	mb.steps = int(math.Ceil(float64(s.Epochs) / mb.q))
	mb.counts = make([][]int, train.Order())
	for mo := range mb.counts {
		c := make([]int, train.Dims[mo])
		for _, i := range train.Idx[mo] {
			c[i]++
		}
		mb.counts[mo] = c
	}
	// acc composes everything under zero-out; warmAcc holds the warm
	// start alone (its sensitivities cover a value change directly).
	var acc, warmAcc perturb.Accountant
	if hasBias {
		if err := p.planWarmStart(train, mb, &acc, &warmAcc); err != nil {
			return err
		}
	}
	s2, err := perturb.SampledGaussianNoiseMultiplier(mb.q, mb.steps, p.o.Epsilon, p.o.Delta, &acc)
	if err != nil {
		return fmt.Errorf("completion: minibatch DP-SGD: %w", err)
	}
	if p.o.Sigma > 0 { // a fixed noise multiplier, refused below if over budget
		s2 = p.o.Sigma
	}
	if mb.clip == 0 { // the noise multiplier does not depend on the clip
		mb.clip = DPSGDClip(&p.o, train.Order(), s2)
	}
	mb.noiseMult = s2
	g, err := perturb.NewGaussianSigma(mb.clip, s2*mb.clip)
	if err != nil {
		return fmt.Errorf("completion: minibatch DP-SGD: %w", err)
	}
	mb.gauss = g
	rel := g.Release("sum of the clipped per-rating gradients of a Poisson batch (factor rows, biases, core)")
	if mb.q < 1 {
		rel.SampleRate = mb.q
	}
	rel.Derivation = fmt.Sprintf("zero-out neighbours: the batch sums differ by one clipped per-rating gradient, norm <= C = %g; Poisson rate q = %g, %d steps, RDP of the sampled Gaussian (Mironov, Talwar and Zhang 2019) (completion/private_dpsgd.go)", mb.clip, mb.q, mb.steps)
	if err := acc.Add(rel, mb.steps); err != nil {
		return err
	}
	eps, delta, used, err := perturb.Budget{Epsilon: p.o.Epsilon, Delta: p.o.Delta}.Admit(&acc, perturb.RDP)
	if err != nil {
		return fmt.Errorf("completion: minibatch DP-SGD: %w", err)
	}
	var stepAcc perturb.Accountant
	if err := stepAcc.Add(rel, mb.steps); err != nil {
		return err
	}
	var ok bool
	if mb.vcEps, mb.vcOrder, ok = perturb.GroupTwoEpsilon(&stepAcc, &warmAcc, delta); !ok {
		return fmt.Errorf("completion: minibatch DP-SGD: no value-change guarantee at delta %v", delta)
	}
	sr := p.o.ratingRange() / 4
	tau := sr / dpsgdPriorDivisor
	mb.kappa = mb.eta * s2 * mb.clip * math.Sqrt(float64(mb.steps)) / (2 * tau)
	p.mb = mb
	p.steps = mb.steps
	p.report = baseReport(&p.o, "gradient", &acc, eps, delta, used)
	p.report.RelationKind, p.report.ValueChangeEpsilon = perturb.RelationZeroOut, mb.vcEps
	p.report.Relation = fmt.Sprintf("zero-out neighbours at entry level: rating logs with the same observed positions where one rating of one log is replaced by a null that contributes no gradient to any step and counts as r_min in the warm start's sums (Kairouz et al. 2021); ratings clamped to the public range [%g, %g]. A change of one rating's value (the relation of the other entry-level modes) is two such steps: epsilon %.4g at delta %.3g for it (group size 2 by RDP, in the notes)", p.o.RatingMin, p.o.RatingMax, mb.vcEps, delta)
	p.report.Notes = append(p.report.Notes,
		fmt.Sprintf("minibatch DP-SGD: Poisson sampling rate q = %g, T = %d steps, clip C = %g, noise multiplier sigma = %.6g (noise sd %.6g per coordinate per step, dense on every trained coordinate), RDP of the sampled Gaussian (Mironov, Talwar and Zhang 2019) at orders 1.1-10.9 by 0.1, 12-63 and 80-65536 (exact to order 1024, the plain Gaussian bound above), composed with the warm start and converted by Canonne, Kamath and Steinke 2020", mb.q, mb.steps, mb.clip, s2, s2*mb.clip),
		fmt.Sprintf("steps preconditioned by public counts: theta_r -= eta (G_r + 2 q n_r lambda theta_r)/(2 (q n_r + kappa)), eta = %g, kappa = %.6g; rows with eta T q n_r/(q n_r + kappa) < 1 frozen at their public initial values", mb.eta, mb.kappa),
		fmt.Sprintf("value change of one rating (the entry relation of the other modes): epsilon %.4g at delta %.3g, by RDP group privacy at group size 2 through the log with that rating nulled (Mironov 2017, Proposition 11, p = 2): rho2(a) = warm(a) + (a - 1/2)/(a - 1) T rho(2a) + T rho(2a - 1), rho the step's sampled-Gaussian RDP, the warm start once (its sensitivities cover a value change), minimised at order %g (perturb.GroupTwoEpsilon; derivation in go doc completion, Sensitivities)", mb.vcEps, delta, mb.vcOrder),
		fastNoiseNote("DP-SGD step"),
		"the per-epoch training losses are computed from raw ratings: do not publish them")
	if hasBias {
		p.report.Notes = append(p.report.Notes, fmt.Sprintf("warm start: the bias mode's release at epsilon %g (global mean, item biases) composed in RDP with the steps; its mean is the model's", mb.warmEps))
	}
	// The trainer's early stopping would compare snapshots on data it
	// does not see privately; private runs have no validation store.
	s.Patience = -1
	p.planned = true
	return nil
}

// planWarmStart releases the bias mode's statistics at WarmFraction of the
// budget as minibatch DP-SGD's warm start, recording them in acc (the
// zero-out composition) and warmAcc (the warm start alone).
func (p *GradientPerturbation) planWarmStart(train *data.Store, mb *minibatchPlan, acc, warmAcc *perturb.Accountant) error {
	frac := p.o.WarmFraction
	if frac == 0 {
		frac = DefaultWarmFraction
	}
	eps := frac * p.o.Epsilon
	wm, rep, err := scratchBiasRelease(train, &p.o, eps)
	if err != nil {
		return fmt.Errorf("completion: minibatch DP-SGD (bias warm start): %w", err)
	}
	if err := addReleases(acc, rep.Releases); err != nil {
		return err
	}
	if err := addReleases(warmAcc, rep.Releases); err != nil {
		return err
	}
	mb.warm, mb.warmEps = wm, eps
	p.muT, p.meanSet = wm.Mean, true
	return nil
}

// runLoop trains m by minibatch DP-SGD (see the file comment); vals are
// the clamped training values in store order.
func (p *GradientPerturbation) runLoop(ctx context.Context, train, valid *data.Store, m *decomposition.Model, cfg *Settings, vals []float64, res *Result, progress func(EpochRecord)) error {
	mb := p.mb
	if mb.warm != nil && m.HasBias {
		m.Mean = mb.warm.Mean
		copy(m.Bias[1], mb.warm.Bias[1])
	}
	d := newDPSGDState(m, mb, cfg)
	src := p.o.Noise.FastSource(streamDPSGD)
	perEpoch := int(math.Round(1 / mb.q))
	good := snapshot(m)
	ep := 0
	var sse float64
	var seen int
	t0 := time.Now()
	for t := 0; t < mb.steps; t++ {
		if err := ctx.Err(); err != nil {
			good.restore(m)
			return fmt.Errorf("completion: training stopped at DP-SGD step %d: %w", t+1, err)
		}
		s, k := d.step(train, vals, src)
		sse += s
		seen += k
		if (t+1)%perEpoch != 0 && t+1 != mb.steps {
			continue
		}
		ep++
		rec := EpochRecord{Epoch: ep, LearningRate: mb.eta, Seconds: time.Since(t0).Seconds()}
		if seen > 0 {
			rec.TrainRMSE = math.Sqrt(sse / float64(seen))
		}
		rec.TrainLoss = sse + regNorms(m, cfg)
		if !finite(rec.TrainLoss) || !modelFinite(m) {
			good.restore(m)
			res.History = append(res.History, rec)
			return &ErrDiverged{Epoch: ep, Loss: rec.TrainLoss}
		}
		if valid != nil {
			rec.ValidRMSE = RMSE(m, valid, cfg.Threads)
		}
		res.History = append(res.History, rec)
		if progress != nil {
			progress(rec)
		}
		good.take(m)
		res.BestEpoch = ep
		sse, seen, t0 = 0, 0, time.Now()
	}
	return nil
}

// dpsgdState holds the compact gradient buffer of the trained coordinates.
type dpsgdState struct {
	m       *decomposition.Model
	mb      *minibatchPlan
	work    *decomposition.Work
	idx     []int32
	rows3   [][]float64  // scratch: the rating's factor rows (cpGrad)
	prod    [3][]float64 // scratch: the pairwise row products (addClippedCP3)
	off     [][]int32    // offset of each row's block in buf, -1 when frozen
	rows    []dpsgdRow
	coreOff int // offset of the core in buf (-1 without a core)
	buf     []float64
	batch   []int         // the current Poisson batch (entry indices, increasing)
	shards  []*dpsgdState // workers 1..Threads-1 (worker 0 is the state itself)
	sses    []float64     // per-worker sums of squared residuals
	qN      float64       // q N, the expected batch size
	regO    float64
	regB    float64
	regG    float64
}

// dpsgdRow is one trained row: its mode, index, buffer offset and
// preconditioned step eta/(2 (q n + kappa)).
type dpsgdRow struct {
	mode, row int32
	off       int32
	step, qn  float64
}

func newDPSGDState(m *decomposition.Model, mb *minibatchPlan, cfg *Settings) *dpsgdState {
	d := &dpsgdState{m: m, mb: mb, work: m.NewWork(), idx: make([]int32, m.Order()), rows3: make([][]float64, m.Order()), coreOff: -1,
		regO: cfg.Reg, regB: cfg.RegBias, regG: cfg.RegCore}
	for i := range d.prod {
		d.prod[i] = make([]float64, m.Ranks[0])
	}
	off := 0
	d.off = make([][]int32, m.Order())
	T := float64(mb.steps)
	for mo := range d.off {
		d.off[mo] = make([]int32, m.Dims[mo])
		blk := m.Ranks[mo]
		if m.HasBias {
			blk++
		}
		for i, n := range mb.counts[mo] {
			qn := mb.q * float64(n)
			if mb.eta*T*qn/(qn+mb.kappa) < 1 {
				d.off[mo][i] = -1
				continue
			}
			d.off[mo][i] = int32(off)
			d.rows = append(d.rows, dpsgdRow{mode: int32(mo), row: int32(i), off: int32(off), step: mb.eta / (2 * (qn + mb.kappa)), qn: qn})
			off += blk
		}
	}
	for _, c := range mb.counts[0] {
		d.qN += mb.q * float64(c)
	}
	if m.Core != nil {
		d.coreOff = off
		off += len(m.Core)
	}
	d.buf = make([]float64, off)
	for w := 1; w < cfg.Threads; w++ {
		// Workers share the model, the plan and the offsets (read only)
		// and own their scratch and partial sum.
		sh := *d
		sh.work, sh.idx, sh.rows3 = m.NewWork(), make([]int32, m.Order()), make([][]float64, m.Order())
		for i := range sh.prod {
			sh.prod[i] = make([]float64, m.Ranks[0])
		}
		sh.buf, sh.batch, sh.shards = make([]float64, off), nil, nil
		d.shards = append(d.shards, &sh)
	}
	d.sses = make([]float64, len(d.shards)+1)
	return d
}

// worker returns worker w's state (0: d itself).
func (d *dpsgdState) worker(w int) *dpsgdState {
	if w == 0 {
		return d
	}
	return d.shards[w-1]
}

// trained returns the number of trained coordinates (noised per step).
func (d *dpsgdState) trained() int { return len(d.buf) }

// step runs one DP-SGD step and returns the sum of squared residuals of
// the sampled ratings and their number.
func (d *dpsgdState) step(train *data.Store, vals []float64, src rand.Source) (float64, int) {
	sse, k := d.noisySum(train, vals, src)
	d.apply()
	return sse, k
}

// noisySum leaves in buf the noisy sum of the clipped gradients of one
// Poisson batch (the released quantity of a step) and returns the batch's
// sum of squared residuals and size. The batch is drawn from src first, then
// its clipped gradients are summed (in parallel over contiguous chunks of
// the batch when Threads > 1, each worker into its own buffer, the
// buffers then added in worker order: the result depends on the seed and
// the number of workers only), then the noise is drawn from src.
func (d *dpsgdState) noisySum(train *data.Store, vals []float64, src rand.Source) (float64, int) {
	d.batch = poissonBatch(len(vals), d.mb.q, rand.New(src), d.batch[:0])
	sse := d.sumClipped(train, vals)
	d.mb.gauss.AddToFast(d.buf, src)
	return sse, len(d.batch)
}

// sumClipped sets buf to the sum of the clipped gradients of the batch and
// returns the batch's sum of squared residuals.
func (d *dpsgdState) sumClipped(train *data.Store, vals []float64) float64 {
	p := len(d.sses)
	if p == 1 {
		clear(d.buf)
		return d.addBatch(train, vals, d.batch)
	}
	n := len(d.batch)
	parallelFor(p, func(w int) {
		sh := d.worker(w)
		clear(sh.buf)
		d.sses[w] = sh.addBatch(train, vals, d.batch[w*n/p:(w+1)*n/p])
	})
	// Each worker adds the partial sums of its coordinate range, in worker
	// order.
	L := len(d.buf)
	parallelFor(p, func(w int) {
		lo, hi := w*L/p, (w+1)*L/p
		dst := d.buf[lo:hi]
		for _, sh := range d.shards {
			for i, v := range sh.buf[lo:hi] {
				dst[i] += v
			}
		}
	})
	sse := 0.0
	for _, v := range d.sses {
		sse += v
	}
	return sse
}

// addBatch adds the clipped gradients of the entries es to buf and returns
// their sum of squared residuals.
func (d *dpsgdState) addBatch(train *data.Store, vals []float64, es []int) float64 {
	sse := 0.0
	if d.m.Kind == decomposition.CP && d.m.Order() == 3 {
		I, J, K := train.Idx[0], train.Idx[1], train.Idx[2]
		for _, e := range es {
			sse += d.addClippedCP3(I[e], J[e], K[e], vals[e])
		}
		return sse
	}
	for _, e := range es {
		sse += d.addClipped(train, vals, e)
	}
	return sse
}

// poissonBatch appends to dst every index in [0, n) kept by Poisson
// sampling at rate q (each independently), in increasing order, and
// returns it.
//
// For q >= 1/16 an index is kept with probability th/2^16, th =
// floor(q 2^16): at most q and within 2^-16 of it (the sampled-Gaussian
// RDP grows with q, so accounting at q is conservative; at the default
// q = 1/2 it is exact). Writing th = k 2^z with k odd, the index is kept
// when an m-bit uniform number u (m = 16 - z) is below k. The sampler
// decides 64 indices at a time, bit-sliced: it draws m words, bit l of
// word b being bit m-1-b of index l's u, and compares all 64 numbers with
// k at once (from the most significant bit down: u < k at the first bit
// where they differ and k has a 1). At q = 1/2 (m = 1, k = 1) that is one
// word per 64 indices, kept where the bit is 0 (at q = 1/4 two words,
// kept where both bits are 0); the kept indices are then read off the
// mask with trailing-zero counts. It consumes exactly ceil(n/64) m words. Below 1/16 the gaps
// are geometric, 1 + floor(log U / log(1-q)), one logarithm per kept
// index.
func poissonBatch(n int, q float64, r *rand.Rand, dst []int) []int {
	switch {
	case q >= 1:
		for e := 0; e < n; e++ {
			dst = append(dst, e)
		}
		return dst
	case q >= 1.0/16:
		th := uint64(q * 0x1p16)
		z := bits.TrailingZeros64(th)
		k, m := th>>z, 16-z
		dst = slices.Grow(dst, int(float64(n)*q)+64)
		for base := 0; base < n; base += 64 {
			kept := bitSlicedBelow(r, k, m)
			if rest := n - base; rest < 64 {
				kept &= 1<<rest - 1
			}
			for kept != 0 {
				dst = append(dst, base+bits.TrailingZeros64(kept))
				kept &= kept - 1
			}
		}
		return dst
	}
	lq := math.Log1p(-q)
	for e := -1; ; {
		u := 1 - r.Float64() // in (0, 1]
		gap := math.Floor(math.Log(u) / lq)
		if gap >= float64(n) {
			return dst
		}
		e += 1 + int(gap)
		if e >= n {
			return dst
		}
		dst = append(dst, e)
	}
}

// bitSlicedBelow draws m words from r and returns the mask of the 64 lanes
// whose m-bit number (bit m-1-b in word b) is below k (k < 2^m).
func bitSlicedBelow(r *rand.Rand, k uint64, m int) uint64 {
	var lt uint64
	eq := ^uint64(0)
	for b := m - 1; b >= 0; b-- {
		w := r.Uint64()
		if k>>b&1 == 1 {
			lt |= eq &^ w
			eq &= w
		} else {
			eq &^= w
		}
	}
	return lt
}

// addClipped adds rating e's clipped gradient (projected on the trained
// coordinates) to the buffer and returns its squared residual.
func (d *dpsgdState) addClipped(train *data.Store, vals []float64, e int) float64 {
	m, w := d.m, d.work
	if m.Kind == decomposition.CP && m.Order() == 3 {
		return d.addClippedCP3(train.Idx[0][e], train.Idx[1][e], train.Idx[2][e], vals[e])
	}
	for mo := range d.idx {
		d.idx[mo] = train.Idx[mo][e]
	}
	var res float64
	if m.Kind == decomposition.CP {
		res = d.cpGrad(vals[e])
	} else {
		res = m.DataGrad(d.idx, vals[e], w)
	}
	s := d.preClip(w)
	c := 1.0
	if nrm := math.Sqrt(s); nrm > d.mb.clip {
		c = d.mb.clip / nrm
	}
	for mo, i := range d.idx {
		o := d.off[mo][i]
		if o < 0 {
			continue
		}
		b := d.buf[o : int(o)+len(w.Factor[mo])]
		for t, v := range w.Factor[mo] {
			b[t] += c * v
		}
		if m.HasBias {
			d.buf[int(o)+len(w.Factor[mo])] += c * w.Bias[mo]
		}
	}
	if d.coreOff >= 0 {
		b := d.buf[d.coreOff : d.coreOff+len(w.Core)]
		for t, v := range w.Core {
			b[t] += c * v
		}
	}
	return res * res
}

// addClippedCP3 is addClipped for order-3 CP models in one pass: the
// gradient of (x - xhat)^2 is -2e (b*c, a*c, a*b) for the rows and -2e for
// each bias (the arithmetic of DataGrad); the squared norm over the
// trained rows is accumulated, then the clipped vector is added to the
// buffer. TestDPSGDSensitivityNeighbours runs it against the generic path's
// bound; TestDPSGDFastPathMatchesGeneric compares the two.
func (d *dpsgdState) addClippedCP3(i, j, k int32, x float64) float64 {
	m := d.m
	R := m.Ranks[0]
	A := m.Factors[0][int(i)*R : int(i)*R+R]
	B := m.Factors[1][int(j)*R : int(j)*R+R]
	C := m.Factors[2][int(k)*R : int(k)*R+R]
	B, C = B[:len(A)], C[:len(A)]
	xh := 0.0
	nb := 0.0
	if m.HasBias {
		xh = m.Mean + m.Bias[0][i] + m.Bias[1][j] + m.Bias[2][k]
		nb = 1
	}
	oa, ob, oc := d.off[0][i], d.off[1][j], d.off[2][k]
	if oa >= 0 && ob >= 0 && oc >= 0 {
		// Every row trained (the common case): one pass for the
		// prediction, the pairwise products and the norm (a*b*c is
		// (a*b)*c, as in the prediction loop below, so the same bits),
		// one to add.
		var sn float64
		bc, ac, ab := d.prod[0][:len(A)], d.prod[1][:len(A)], d.prod[2][:len(A)]
		for r, a := range A {
			b, c := B[r], C[r]
			x, y, z := b*c, a*c, a*b
			xh += z * c
			bc[r], ac[r], ab[r] = x, y, z
			sn += x*x + y*y + z*z
		}
		e := x - xh
		g := -2 * e
		f := g
		if s2 := g * g * (sn + 3*nb); s2 > d.mb.clip*d.mb.clip {
			f = g * d.mb.clip / math.Sqrt(s2)
		}
		w := R + int(nb)
		ga, gb, gc := d.buf[oa:int(oa)+w], d.buf[ob:int(ob)+w], d.buf[oc:int(oc)+w]
		ga, gb, gc = ga[:len(A)], gb[:len(A)], gc[:len(A)]
		for r := range bc {
			ga[r] += f * bc[r]
			gb[r] += f * ac[r]
			gc[r] += f * ab[r]
		}
		if nb > 0 {
			d.buf[int(oa)+R] += f
			d.buf[int(ob)+R] += f
			d.buf[int(oc)+R] += f
		}
		return e * e
	}
	for r, a := range A {
		xh += a * B[r] * C[r]
	}
	e := x - xh
	g := -2 * e
	var sa, sb, sc float64
	for r, a := range A {
		b, c := B[r], C[r]
		sa += b * b * c * c
		sb += a * a * c * c
		sc += a * a * b * b
	}
	s := 0.0
	if oa >= 0 {
		s += sa + nb
	}
	if ob >= 0 {
		s += sb + nb
	}
	if oc >= 0 {
		s += sc + nb
	}
	s *= g * g
	f := g
	if nrm := math.Sqrt(s); nrm > d.mb.clip {
		f = g * d.mb.clip / nrm
	}
	add := func(o int32, u, v []float64) {
		if o < 0 {
			return
		}
		blk := d.buf[o : int(o)+R+int(nb)]
		for r := range u {
			blk[r] += f * u[r] * v[r]
		}
		if nb > 0 {
			blk[R] += f
		}
	}
	add(oa, B, C)
	add(ob, A, C)
	add(oc, A, B)
	return e * e
}

// cpGrad is DataGrad for CP models (the same arithmetic without the
// generic contraction): it fills d.work with the gradient of (x - xhat)^2
// at d.idx and returns the residual.
func (d *dpsgdState) cpGrad(x float64) float64 {
	m, w := d.m, d.work
	R := m.Ranks[0]
	rows := d.rows3[:len(d.idx)]
	for mo, i := range d.idx {
		rows[mo] = m.Factors[mo][int(i)*R : int(i)*R+R]
	}
	xh := 0.0
	if m.HasBias {
		xh = m.Mean
		for mo, i := range d.idx {
			xh += m.Bias[mo][i]
		}
	}
	for r := 0; r < R; r++ {
		p := 1.0
		for _, row := range rows {
			p *= row[r]
		}
		xh += p
	}
	e := x - xh
	g := -2 * e
	for mo := range rows {
		f := w.Factor[mo][:R]
		for r := range f {
			p := g
			for m2, row := range rows {
				if m2 != mo {
					p *= row[r]
				}
			}
			f[r] = p
		}
	}
	for mo := range w.Bias {
		w.Bias[mo] = g
	}
	return e
}

// preClip returns the squared l2 norm of the per-rating gradient in w
// restricted to the trained coordinates (the vector that is clipped).
func (d *dpsgdState) preClip(w *decomposition.Work) float64 {
	s := 0.0
	for mo, i := range d.idx {
		if d.off[mo][i] < 0 {
			continue
		}
		for _, v := range w.Factor[mo] {
			s += v * v
		}
		if w.Bias != nil {
			s += w.Bias[mo] * w.Bias[mo]
		}
	}
	if d.coreOff >= 0 {
		for _, v := range w.Core {
			s += v * v
		}
	}
	return s
}

// apply takes the preconditioned step on every trained coordinate from the
// noisy summed gradient in buf.
func (d *dpsgdState) apply() {
	m := d.m
	p := len(d.sses)
	parallelFor(p, func(w int) { d.applyRows(d.rows[w*len(d.rows)/p : (w+1)*len(d.rows)/p]) })
	if d.coreOff >= 0 {
		// The core is touched by every rating: n = N.
		st := d.mb.eta / (2 * (d.qN + d.mb.kappa))
		g := d.buf[d.coreOff : d.coreOff+len(m.Core)]
		for t, v := range m.Core {
			m.Core[t] = v - st*(g[t]+2*d.qN*d.regG*v)
		}
	}
}

// applyRows steps the given trained rows (each row's update reads only
// its own gradient block and values, so workers take disjoint ranges).
func (d *dpsgdState) applyRows(rows []dpsgdRow) {
	m := d.m
	for _, rw := range rows {
		row := m.Row(int(rw.mode), int(rw.row))
		g := d.buf[rw.off : int(rw.off)+len(row)]
		for t, v := range row {
			row[t] = v - rw.step*(g[t]+2*rw.qn*d.regO*v)
		}
		if m.HasBias {
			b := &m.Bias[rw.mode][rw.row]
			*b -= rw.step * (d.buf[int(rw.off)+len(row)] + 2*rw.qn*d.regB**b)
		}
	}
}
