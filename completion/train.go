package completion

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/perturb"
)

// EpochRecord is what Train reports after every epoch.
type EpochRecord struct {
	// Epoch counts from 1.
	Epoch int `json:"epoch"`
	// LearningRate is the step size used in this epoch.
	LearningRate float64 `json:"learning_rate"`
	// TrainLoss is objective (4): the sum of squared residuals over the
	// epoch (each taken just before its entry's update) plus lambda_o times
	// the squared Frobenius norms of the factors, the bias penalty times the
	// squared biases and lambda_g times the squared core norm at epoch end.
	TrainLoss float64 `json:"train_loss"`
	// TrainRMSE is the root mean of those squared residuals (unclamped).
	TrainRMSE float64 `json:"train_rmse"`
	// ValidRMSE is the RMSE of the clamped predictions on the validation
	// store after the epoch (0 when there is none).
	ValidRMSE float64 `json:"valid_rmse"`
	// Seconds is the wall time of the epoch's SGD pass (without validation).
	Seconds float64 `json:"seconds"`
}

// Result is what Train returns.
type Result struct {
	// Model is the trained model (the one passed to Train, modified in place).
	Model *decomposition.Model
	// History has one record per epoch run.
	History []EpochRecord
	// BestEpoch is the epoch (from 1) whose parameters Model holds.
	BestEpoch int
	// EarlyStopped says whether patience ran out before Settings.Epochs.
	EarlyStopped bool
	// Settings are the settings used, with defaults filled in.
	Settings Settings
	// Privacy is the privacy plug-in's report ("none" for NoPrivacy).
	Privacy *perturb.Report
}

// Train fits m to the observed entries of train by stratified parallel SGD
// on objective (4) (see the package doc for the schedule, regularisation,
// initialisation and the privacy plug points). valid, when non-nil, drives
// early stopping. src seeds every random choice; the same src state, data,
// settings and Threads give bit-identical results. progress, when non-nil,
// is called after each epoch from the calling goroutine.
//
// On error the model holds the last finite parameters (never NaN).
func Train(train, valid *data.Store, m *decomposition.Model, s *Settings, src rand.Source, progress func(EpochRecord)) (*Result, error) {
	return TrainContext(context.Background(), train, valid, m, s, src, progress)
}

// TrainContext is Train that stops at the next epoch (sweep) boundary once
// ctx is done, returning ctx's error (wrapped) with the model at the last
// finite parameters.
func TrainContext(ctx context.Context, train, valid *data.Store, m *decomposition.Model, s *Settings, src rand.Source, progress func(EpochRecord)) (*Result, error) {
	if m == nil {
		return nil, &ShapeError{Reason: "nil model"}
	}
	cfg := s.resolvedForModel(m)
	valid, err := checkTrainInputs(train, valid, m, &cfg, src)
	if err != nil {
		return nil, err
	}
	cfg.hasBias = m.HasBias
	cfg.modelKind, cfg.modelRank = m.Kind, m.Ranks[0]
	if _, none := cfg.Privacy.(NoPrivacy); !none && cfg.WarmStart {
		// The private modes start from a data-independent model (random
		// factors; minibatch DP-SGD freezes rows at their public initial
		// values): the model's current values may come from the data.
		return nil, &SettingsError{Field: "WarmStart", Value: 1, Rule: "refused by the private modes: they start from a data-independent model (minibatch DP-SGD's frozen rows keep their public initial values), and a warm start keeps values that may come from the private data"}
	}
	// Refuse what cannot fit before anything is allocated (resources.go).
	if err := checkEstimate(EstimateTrain(workloadOf(train, m, &cfg))); err != nil {
		return nil, err
	}
	if err := cfg.Privacy.Plan(train, &cfg); err != nil {
		return nil, err
	}
	vals := append([]float64(nil), train.Val...)
	if err := cfg.Privacy.PerturbInput(vals, train); err != nil {
		return nil, err
	}
	for e, v := range vals {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("completion: training value %d is %g (not finite)", e, v)
		}
	}
	ip, input := cfg.Privacy.(*InputPerturbation)
	if (cfg.Solver == SolverGibbs || cfg.Solver == SolverALS) && !(input && ip.fallback != nil) {
		// Input perturbation's bias-only fallback trains nothing: its
		// loop (trainSGD's loop owner) writes the released biases.
		_, none := cfg.Privacy.(NoPrivacy)
		if !none && !input {
			return nil, &SettingsError{Field: "Solver", Value: float64(cfg.Solver), Rule: "the Gibbs sampler and ALS have no privacy plug points: use SolverSGD with a privacy mode other than input"}
		}
		var res *Result
		var err error
		if cfg.Solver == SolverGibbs {
			res, err = trainGibbs(ctx, train, valid, m, &cfg, vals, src, progress)
		} else {
			res, err = trainALS(ctx, train, valid, m, &cfg, vals, src, progress)
		}
		if err != nil || none {
			return res, err
		}
		// Input perturbation: the solver is post-processing of the noisy
		// values; the plug-in records what is covered.
		if err := cfg.Privacy.PerturbOutput(m, train); err != nil {
			return nil, err
		}
		res.Privacy = withPublicCounts(cfg.Privacy.Report(), train)
		return res, nil
	}
	res, err := trainSGD(ctx, train, valid, m, &cfg, vals, src, progress)
	var div *ErrDiverged
	if errors.As(err, &div) && div.Privacy == nil {
		if rep := cfg.Privacy.Report(); rep.Private() {
			div.Privacy = rep // the budget is spent (ErrDiverged.BudgetNote)
		}
	}
	return res, err
}

// trainSGD is Train for SolverSGD (called with validated, planned
// settings and the possibly perturbed values).
func trainSGD(ctx context.Context, train, valid *data.Store, m *decomposition.Model, c *Settings, vals []float64, src rand.Source, progress func(EpochRecord)) (*Result, error) {
	cfg := *c
	m.Pairs = nil // SGD trains no pair biases
	rng := rand.New(src)
	initModel(m, vals, &cfg, rng)
	if r, ok := cfg.Privacy.(meanReleaser); ok && m.HasBias {
		if mu, ok := r.ReleasedMean(); ok {
			m.Mean = mu // the released mean, never the raw one (privacy.go)
		}
	}
	if lo, ok := cfg.Privacy.(loopOwner); ok && lo.ownsLoop() {
		// Minibatch DP-SGD runs its own loop (private_dpsgd.go).
		res := &Result{Model: m, Settings: cfg}
		if err := lo.runLoop(ctx, train, valid, m, &cfg, vals, res, progress); err != nil {
			return res, err
		}
		if err := cfg.Privacy.PerturbOutput(m, train); err != nil {
			return nil, err
		}
		res.Privacy = withPublicCounts(cfg.Privacy.Report(), train)
		return res, nil
	}
	// The trainer's layout takes over vals (permuting it into block order).
	t, err := newTrainer(m, train, vals, &cfg, rng)
	if err != nil {
		return nil, err
	}
	res := &Result{Model: m, Settings: cfg}
	good := snapshot(m) // last finite parameters (best epoch when validating)
	stop := newStopper(good, valid != nil && cfg.Patience >= 0, cfg.Patience)
	for ep := 0; ep < cfg.Epochs; ep++ {
		if err := ctx.Err(); err != nil {
			good.restore(m)
			return res, fmt.Errorf("completion: training stopped before epoch %d: %w", ep+1, err)
		}
		lr := cfg.LearningRate / (1 + cfg.Decay*float64(ep))
		t0 := time.Now()
		sse := t.epoch(lr, cfg.CoreLearningRate/(1+cfg.Decay*float64(ep)))
		rec := EpochRecord{Epoch: ep + 1, LearningRate: lr, Seconds: time.Since(t0).Seconds()}
		rec.TrainRMSE = math.Sqrt(sse / float64(train.NNZ()))
		rec.TrainLoss = sse + regNorms(m, &cfg)
		if !finite(rec.TrainLoss) || !modelFinite(m) {
			good.restore(m)
			res.History = append(res.History, rec)
			return res, &ErrDiverged{Epoch: ep + 1, Loss: rec.TrainLoss}
		}
		if valid != nil {
			rec.ValidRMSE = RMSE(m, valid, cfg.Threads)
		}
		res.History = append(res.History, rec)
		if progress != nil {
			progress(rec)
		}
		if stop.observe(m, res, rec.ValidRMSE, ep) {
			break
		}
	}
	good.restore(m)
	if err := cfg.Privacy.PerturbOutput(m, train); err != nil {
		return nil, err
	}
	if !modelFinite(m) {
		return nil, errors.New("completion: output perturbation left non-finite parameters")
	}
	res.Privacy = withPublicCounts(cfg.Privacy.Report(), train)
	return res, nil
}

// withPublicCounts adds the item counts of train to the report of an
// entry-unit private run whose report carries none (input, gradient,
// output; minibatch DP-SGD's billboard release too): their relations keep
// every position, so the counts are public,
// and rankings weight by them (models.Predictor.WithShrinkage, as for the
// bias and als modes, whose reports carry theirs); without them a private
// model's lists put items with a handful of ratings first.
func withPublicCounts(rep *perturb.Report, train *data.Store) *perturb.Report {
	if !rep.Private() || len(rep.ItemCounts) > 0 || rep.Unit == string(UnitUser) || train.Order() < 2 {
		return rep
	}
	counts := make([]float64, train.Dims[1])
	for _, j := range train.Idx[1] {
		counts[j]++
	}
	rep.ItemCounts = counts
	rep.Notes = append(rep.Notes, "item counts: public under the relation (every position is kept), carried in item_counts for rankings (the relevance ranking of eval and recommend: models.Predictor.WithShrinkage)")
	return rep
}

// checkTrainInputs validates the resolved settings, the source and the
// stores' shapes against m; it returns valid, or nil when it is empty.
func checkTrainInputs(train, valid *data.Store, m *decomposition.Model, cfg *Settings, src rand.Source) (*data.Store, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if src == nil {
		return nil, errors.New("completion: nil random source")
	}
	if err := checkShape(m, train); err != nil {
		return nil, err
	}
	if train.NNZ() == 0 {
		return nil, ErrEmpty
	}
	if valid != nil {
		if err := checkShape(m, valid); err != nil {
			return nil, fmt.Errorf("validation store: %w", err)
		}
		if valid.NNZ() == 0 {
			valid = nil
		}
	}
	if m.Kind == decomposition.Tucker {
		// A Tucker rank above its mode's size only adds core entries the
		// data cannot identify; CP ranks have no such limit.
		for mo, r := range m.Ranks {
			if r > m.Dims[mo] {
				return nil, &ShapeError{Reason: fmt.Sprintf("Tucker rank %d of mode %d exceeds its size %d (lower --ranks / --rank)", r, mo, m.Dims[mo])}
			}
		}
	}
	if m.Kind == decomposition.Tucker && len(m.Core) == 0 {
		return nil, &ShapeError{Reason: "Tucker model without a core"}
	}
	return valid, nil
}

// initModel sets the global mean and, unless WarmStart, draws the factors
// from N(0, InitScale^2), sets the Tucker core to the superdiagonal identity
// plus N(0, InitScale^2) noise, and zeroes the biases.
func initModel(m *decomposition.Model, vals []float64, cfg *Settings, rng *rand.Rand) {
	mean := 0.0
	if m.HasBias {
		s := 0.0
		for _, v := range vals {
			s += v
		}
		mean = s / float64(len(vals))
	}
	initParams(m, mean, cfg, rng)
}

// initParams is initModel given the global mean (InitModel).
func initParams(m *decomposition.Model, mean float64, cfg *Settings, rng *rand.Rand) {
	if m.HasBias {
		m.Mean = mean
	}
	if cfg.WarmStart {
		return
	}
	for mo, f := range m.Factors {
		base := 0.0
		if mo == 2 {
			// The time factor of an order-3 model starts near one, so
			// the initial model is matrix factorisation modulated by time
			// (with the near-identity Tucker core) and the user/item rows get gradients of the same scale as in
			// order 2 (starting all three near zero makes the product, and
			// so every gradient, vanish as InitScale^2).
			base = 1
		}
		for t := range f {
			f[t] = base + cfg.InitScale*rng.NormFloat64()
		}
	}
	if m.Core != nil {
		for t := range m.Core {
			m.Core[t] = cfg.InitScale * rng.NormFloat64()
		}
		rmin := m.Ranks[0]
		for _, r := range m.Ranks {
			rmin = min(rmin, r)
		}
		for d := 0; d < rmin; d++ {
			off := 0
			for _, r := range m.Ranks {
				off = off*r + d
			}
			m.Core[off]++
		}
	}
	for _, b := range m.Bias {
		clear(b)
	}
}

// trainer runs epochs of stratified SGD.
type trainer struct {
	m       *decomposition.Model
	cfg     *Settings
	L       *layout
	rng     *rand.Rand
	strata  [][]int
	workers []*worker // generic kernel state, one per block slot; nil on the fast path
	seeds   [][2]uint64
	sse     []float64
	chunks  [][]int32 // chunk-order scratch, one per worker
}

func newTrainer(m *decomposition.Model, train *data.Store, vals []float64, cfg *Settings, rng *rand.Rand) (*trainer, error) {
	p := cfg.Threads
	L, err := newLayout(train, vals, p, rng)
	if err != nil {
		return nil, err
	}
	t := &trainer{m: m, cfg: cfg, L: L, rng: rng, strata: L.strata(), sse: make([]float64, p), chunks: make([][]int32, p)}
	fast := m.Kind == decomposition.CP
	trans := make([]GradientTransform, p)
	for w := range trans {
		trans[w] = cfg.Privacy.GradientTransform(w)
		if trans[w] != nil {
			fast = false
		}
	}
	if !fast {
		t.workers = make([]*worker, p)
		for w := range t.workers {
			t.workers[w] = newWorker(m, trans[w])
		}
	}
	t.seeds = make([][2]uint64, len(L.start)-1)
	return t, nil
}

// epoch runs one pass over every block in a random stratum order and
// returns the sum of squared residuals. Within a stratum the p blocks share
// no index in any mode, so the p workers update disjoint factor rows and
// biases; the Tucker core is the one shared parameter, and each worker
// updates a private copy that is merged at the end of the stratum by adding
// every worker's change (G <- G + sum_w (G_w - G)).
func (t *trainer) epoch(lr, lrG float64) float64 {
	st := step{lr: lr, lrG: lrG, regO: t.cfg.Reg, regB: t.cfg.RegBias, regG: t.cfg.RegCore}
	// All random draws are made here, in a fixed order, so the schedule
	// does not depend on goroutine timing.
	order := t.rng.Perm(len(t.strata))
	for b := range t.seeds {
		t.seeds[b] = [2]uint64{t.rng.Uint64(), t.rng.Uint64()}
	}
	total := 0.0
	p := len(t.sse)
	for _, s := range order {
		blocks := t.strata[s]
		if t.m.Core != nil {
			for _, w := range t.workers {
				copy(w.view.Core, t.m.Core)
			}
		}
		if p == 1 {
			t.runBlock(0, blocks[0], st)
		} else {
			var wg sync.WaitGroup
			for w, b := range blocks {
				wg.Add(1)
				go func() {
					defer wg.Done()
					t.runBlock(w, b, st)
				}()
			}
			wg.Wait()
		}
		for w := range t.sse {
			total += t.sse[w]
		}
		if G := t.m.Core; G != nil {
			if p == 1 {
				copy(G, t.workers[0].view.Core)
			} else {
				base := append([]float64(nil), G...)
				for _, w := range t.workers {
					for i, v := range w.view.Core {
						G[i] += v - base[i]
					}
				}
			}
		}
	}
	return total
}

// chunkLen is the granularity of the per-epoch visiting order: 1024
// entries (16 KiB of coordinates and values), long enough for sequential
// reads, short enough that the order changes every epoch.
const chunkLen = 1024

// runBlock runs SGD over block b as worker w. The block was shuffled as a
// whole when the layout was built; each epoch visits its chunks in a fresh
// random order and the entries of a chunk in that stored order, reading
// them sequentially. Keeping one random order of the entries ("shuffle
// once") has the convergence guarantees of reshuffling every epoch
// (Mishchenko, Khaled and Richtárik, "Random Reshuffling: Simple Analysis
// with Vast Improvements", NeurIPS 2020), and the per-epoch Fisher-Yates
// pass over the entries it saves was a fifth of the epoch's time.
func (t *trainer) runBlock(w, b int, st step) {
	L := t.L
	lo, hi := L.start[b], L.start[b+1]
	t.sse[w] = 0
	if hi-lo == 0 {
		return
	}
	r := rand.New(rand.NewPCG(t.seeds[b][0], t.seeds[b][1]))
	nc := (hi - lo + chunkLen - 1) / chunkLen
	co := t.chunks[w][:0]
	for c := 0; c < nc; c++ {
		co = append(co, int32(c))
	}
	t.chunks[w] = co
	for i := nc - 1; i > 0; i-- {
		j := int(r.Uint64N(uint64(i + 1)))
		co[i], co[j] = co[j], co[i]
	}
	sse := 0.0
	for _, c := range co {
		clo := lo + int(c)*chunkLen
		chi := min(clo+chunkLen, hi)
		switch {
		case t.workers != nil:
			sse += t.workers[w].genericBlock(L, clo, chi, st)
		case L.order == 3:
			sse += cp3Block(t.m, L, clo, chi, st)
		default:
			sse += cp2Block(t.m, L, clo, chi, st)
		}
	}
	t.sse[w] = sse
}

// regNorms is the regulariser of objective (4) at the current parameters.
func regNorms(m *decomposition.Model, cfg *Settings) float64 {
	sq := func(x []float64) float64 {
		s := 0.0
		for _, v := range x {
			s += v * v
		}
		return s
	}
	s := 0.0
	for _, f := range m.Factors {
		s += cfg.Reg * sq(f)
	}
	for _, b := range m.Bias {
		s += cfg.RegBias * sq(b)
	}
	return s + cfg.RegCore*sq(m.Core)
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

func modelFinite(m *decomposition.Model) bool {
	ok := func(x []float64) bool {
		for _, v := range x {
			if !finite(v) {
				return false
			}
		}
		return true
	}
	for _, f := range m.Factors {
		if !ok(f) {
			return false
		}
	}
	for _, b := range m.Bias {
		if !ok(b) {
			return false
		}
	}
	for _, p := range m.Pairs {
		if !ok(p.Vals) {
			return false
		}
	}
	return ok(m.Core) && finite(m.Mean)
}

// params is a copy of a model's trainable parameters.
type params struct {
	factors, bias, pairs [][]float64
	core                 []float64
	mean                 float64
}

func snapshot(m *decomposition.Model) *params {
	p := &params{}
	p.take(m)
	return p
}

func (p *params) take(m *decomposition.Model) {
	p.factors = copyAll(p.factors, m.Factors)
	p.bias = copyAll(p.bias, m.Bias)
	if len(p.pairs) != len(m.Pairs) {
		p.pairs = make([][]float64, len(m.Pairs))
	}
	for i := range m.Pairs {
		p.pairs[i] = append(p.pairs[i][:0], m.Pairs[i].Vals...)
	}
	p.core = append(p.core[:0], m.Core...)
	p.mean = m.Mean
}

func (p *params) restore(m *decomposition.Model) {
	for i := range m.Factors {
		copy(m.Factors[i], p.factors[i])
	}
	for i := range m.Bias {
		copy(m.Bias[i], p.bias[i])
	}
	for i := range m.Pairs {
		copy(m.Pairs[i].Vals, p.pairs[i])
	}
	copy(m.Core, p.core)
	m.Mean = p.mean
}

func copyAll(dst, src [][]float64) [][]float64 {
	if len(dst) != len(src) {
		dst = make([][]float64, len(src))
	}
	for i := range src {
		dst[i] = append(dst[i][:0], src[i]...)
	}
	return dst
}

// RMSE returns the root mean squared error of m's clamped predictions on
// st, computed with up to threads goroutines (partial sums are added in a
// fixed order, so the result does not depend on scheduling).
func RMSE(m *decomposition.Model, st *data.Store, threads int) float64 {
	n := st.NNZ()
	if n == 0 {
		return 0
	}
	threads = max(1, min(threads, n/1024+1))
	part := make([]float64, threads)
	var wg sync.WaitGroup
	for w := 0; w < threads; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			work := m.NewWork()
			idx := make([]int32, st.Order())
			lo, hi := w*n/threads, (w+1)*n/threads
			s := 0.0
			for e := lo; e < hi; e++ {
				v := st.Entry(e, idx)
				d := v - m.PredictWork(idx, work)
				s += d * d
			}
			part[w] = s
		}()
	}
	wg.Wait()
	s := 0.0
	for _, v := range part {
		s += v
	}
	return math.Sqrt(s / float64(n))
}

// stopper keeps the parameters of the epoch the result reports (the last
// one without early stopping, else the best validation epoch) and decides
// when patience has run out.
type stopper struct {
	good     *params
	validate bool
	patience int
	best     float64
	since    int
}

func newStopper(good *params, validate bool, patience int) *stopper {
	return &stopper{good: good, validate: validate, patience: patience, best: math.Inf(1)}
}

// observe records epoch ep (from 0) with validation RMSE v and reports
// whether training should stop (res.EarlyStopped is then set).
func (s *stopper) observe(m *decomposition.Model, res *Result, v float64, ep int) bool {
	if !s.validate || v < s.best {
		s.best, s.since = v, 0
		s.good.take(m)
		res.BestEpoch = ep + 1
		return false
	}
	if s.since++; s.since >= s.patience {
		res.EarlyStopped = true
		return true
	}
	return false
}
