package completion

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"time"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
)

// gibbsTrainer samples the posterior of a Bayesian CP model (package doc,
// "Gibbs"). It reuses the ALS trainer's grouping of the entries by row and
// pair.
type gibbsTrainer struct {
	*alsTrainer
	seed  uint64
	alpha float64 // noise precision
	// hyper[mo] is mode mo's prior (mean, precision) over augmented rows.
	hyper []hyper
	// pairPrec is the prior precision of the pair biases.
	pairPrec []float64
	rng      *rand.Rand
	pcg      []*rand.PCG // per worker, reseeded per row
	rngs     []*rand.Rand
	// core draws the Tucker core (nil for CP).
	core *coreSampler
	// rowTab and valTab are the contracted cores of an order-3 Tucker
	// model for the row designs and the multilinear values (nil otherwise).
	rowTab, valTab *coreTable
}

type hyper struct {
	mu  []float64 // D
	lam []float64 // D x D
}

// augDim is the augmented row dimension of mode mo (the factor row and,
// with biases, the bias).
func augDim(m *decomposition.Model, mo int) int {
	if m.HasBias {
		return m.Ranks[mo] + 1
	}
	return m.Ranks[mo]
}

// priorMean0 is the hyperprior's mean of mode mo: all-ones time rows (plain
// matrix factorisation), zero elsewhere, zero biases.
func priorMean0(m *decomposition.Model, mo int) []float64 {
	mu := make([]float64, augDim(m, mo))
	if mo == 2 {
		for r := 0; r < m.Ranks[mo]; r++ {
			mu[r] = 1
		}
	}
	return mu
}

// augRow copies row i of mode mo and its bias into dst.
func augRow(m *decomposition.Model, mo, i int, dst []float64) {
	R := m.Ranks[mo]
	copy(dst, m.Row(mo, i))
	if m.HasBias {
		dst[R] = m.Bias[mo][i]
	}
}

// sampleHyper draws mode mo's (mu, Lambda) from its Normal-Wishart
// conditional given the current rows (Salakhutdinov and Mnih 2008, eq. 14):
// with N rows of mean xbar and scatter S,
//
//	beta* = beta0 + N, nu* = nu0 + N, mu* = (beta0 mu0 + N xbar) / beta*,
//	W*^-1 = W0^-1 + S + beta0 N / beta* (mu0 - xbar)(mu0 - xbar)^T,
//	Lambda ~ Wishart(W*, nu*), mu ~ N(mu*, (beta* Lambda)^-1),
//
// with beta0 = 2, nu0 = D, W0 = I.
func (g *gibbsTrainer) sampleHyper(mo int) {
	m := g.m
	D := augDim(m, mo)
	N := m.Dims[mo]
	mu0 := priorMean0(m, mo)
	const beta0 = 2.0
	nu0 := float64(D)
	xbar := make([]float64, D)
	row := make([]float64, D)
	for i := 0; i < N; i++ {
		augRow(m, mo, i, row)
		for p := range xbar {
			xbar[p] += row[p]
		}
	}
	for p := range xbar {
		xbar[p] /= float64(N)
	}
	winv := make([]float64, D*D)
	for p := 0; p < D; p++ {
		winv[p*D+p] = 1
	}
	for i := 0; i < N; i++ {
		augRow(m, mo, i, row)
		for p := 0; p < D; p++ {
			dp := row[p] - xbar[p]
			for q := 0; q < D; q++ {
				winv[p*D+q] += dp * (row[q] - xbar[q])
			}
		}
	}
	betaS := beta0 + float64(N)
	c := beta0 * float64(N) / betaS
	for p := 0; p < D; p++ {
		for q := 0; q < D; q++ {
			winv[p*D+q] += c * (mu0[p] - xbar[p]) * (mu0[q] - xbar[q])
		}
	}
	lam := sampleWishartInv(winv, D, nu0+float64(N), g.rng)
	// mu ~ N(mu*, (beta* Lambda)^-1).
	mu := make([]float64, D)
	for p := range mu {
		mu[p] = (beta0*mu0[p] + float64(N)*xbar[p]) / betaS
	}
	prec := make([]float64, D*D)
	for k, v := range lam {
		prec[k] = betaS * v
	}
	eps := make([]float64, D)
	for p := range eps {
		eps[p] = g.rng.NormFloat64()
	}
	if cholUpper(prec, D) {
		backSolveUpper(prec, eps, D) // eps ~ N(0, (U^T U)^-1)
		for p := range mu {
			mu[p] += eps[p]
		}
	}
	g.hyper[mo] = hyper{mu: mu, lam: lam}
}

// sampleWishartInv draws Lambda ~ Wishart(W, nu) with W = inverse of winv
// (D x D), by the Bartlett decomposition: W = L L^T, A lower triangular
// with A_pp^2 ~ chi^2(nu - p) and A_pq ~ N(0, 1) below the diagonal, and
// Lambda = L A A^T L^T.
func sampleWishartInv(winv []float64, D int, nu float64, r *rand.Rand) []float64 {
	W := invertSPD(winv, D)
	// Lower Cholesky factor of W: transpose of the upper one.
	U := slices.Clone(W)
	if !cholUpper(U, D) {
		// Numerically singular scatter: fall back to the identity scale.
		clear(U)
		for p := 0; p < D; p++ {
			U[p*D+p] = 1
		}
	}
	A := make([]float64, D*D)
	for p := 0; p < D; p++ {
		A[p*D+p] = math.Sqrt(2 * sampleGamma((nu-float64(p))/2, r))
		for q := 0; q < p; q++ {
			A[p*D+q] = r.NormFloat64()
		}
	}
	// LA = U^T A.
	LA := make([]float64, D*D)
	for p := 0; p < D; p++ {
		for q := 0; q < D; q++ {
			s := 0.0
			for k := 0; k <= p; k++ { // U^T[p][k] = U[k][p], zero for k > p
				s += U[k*D+p] * A[k*D+q]
			}
			LA[p*D+q] = s
		}
	}
	lam := make([]float64, D*D)
	for p := 0; p < D; p++ {
		for q := 0; q <= p; q++ {
			s := 0.0
			for k := 0; k < D; k++ {
				s += LA[p*D+k] * LA[q*D+k]
			}
			lam[p*D+q], lam[q*D+p] = s, s
		}
	}
	return lam
}

// invertSPD inverts a symmetric positive definite matrix (full storage).
func invertSPD(a []float64, D int) []float64 {
	U := slices.Clone(a)
	out := make([]float64, D*D)
	if !cholUpper(U, D) {
		for p := 0; p < D; p++ {
			out[p*D+p] = 1
		}
		return out
	}
	col := make([]float64, D)
	for q := 0; q < D; q++ {
		clear(col)
		col[q] = 1
		forwardSolveUpperT(U, col, D)
		backSolveUpper(U, col, D)
		for p := 0; p < D; p++ {
			out[p*D+q] = col[p]
		}
	}
	return out
}

// sampleGamma draws Gamma(shape, 1) (Marsaglia and Tsang 2000; shape < 1 by
// boosting with U^(1/shape)).
func sampleGamma(shape float64, r *rand.Rand) float64 {
	if shape < 1 {
		u := r.Float64()
		for u == 0 {
			u = r.Float64()
		}
		return sampleGamma(shape+1, r) * math.Pow(u, 1/shape)
	}
	d := shape - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := r.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := r.Float64()
		if u < 1-0.0331*x*x*x*x || math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return d * v
		}
	}
}

// sampleMode draws every augmented row of mode mo from its Gaussian
// conditional: precision P = Lambda + alpha sum_e z_e z_e^T and mean
// P^-1 (Lambda mu + alpha sum_e z_e y_e), with z_e the entry's design vector
// (and 1 for the bias) and y_e the value minus the offset without the row's
// bias. Each row draws from its own stream, seeded by (run seed, sweep,
// mode, row), so the result does not depend on the thread count.
func (g *gibbsTrainer) sampleMode(it, mo int) error {
	m := g.m
	D := augDim(m, mo)
	R := m.Ranks[mo]
	h := g.hyper[mo]
	lmu := make([]float64, D)
	for p := 0; p < D; p++ {
		for q := 0; q < D; q++ {
			lmu[p] += h.lam[p*D+q] * h.mu[q]
		}
	}
	// The time rows of an order-3 CP model are anchored at all-ones unless
	// RegTime is off (package doc, "Gibbs").
	anchored := mo == 2 && g.cfg.RegTime > 0
	cp3 := m.Kind == decomposition.CP && m.Order() == 3
	var failed atomic.Bool
	g.parallel(m.Dims[mo], 64, func(w, lo, hi int) {
		ws := g.work[w]
		pcg, r := g.pcg[w], g.rngs[w]
		A, b, z := ws.a[:D*D], ws.b[:D], ws.z[:D]
		for i := lo; i < hi; i++ {
			pcg.Seed(g.seed^uint64(it)<<8^uint64(mo), uint64(i))
			copy(A, h.lam)
			for p := range b {
				b[p] = lmu[p]
			}
			if anchored {
				// Time rows: prior N(1, (alpha RegTime n_k)^-1 I) on the
				// factor part, as ALS's penalty; the bias keeps its
				// hyperprior (its row and column of Lambda).
				pr := g.alpha * g.cfg.RegTime * float64(max(1, g.start[mo][i+1]-g.start[mo][i]))
				for p := 0; p < R; p++ {
					for q := 0; q < R; q++ {
						A[p*D+q] = 0
					}
					A[p*D+D-1], A[(D-1)*D+p] = 0, 0
					A[p*D+p] = pr
					b[p] = pr
				}
				if m.HasBias {
					b[R] = h.lam[R*D+R] * h.mu[R]
				}
			}
			if cp3 {
				// The data part of the precision and right-hand side,
				// accumulated as in ALS (batched, prefetched), then
				// scaled by the noise precision.
				ad, bd := ws.ad[:D*D], ws.bd[:D]
				clear(ad)
				clear(bd)
				g.accumulateCP3(mo, g.start[mo][i], g.start[mo][i+1], ad, bd, D, ws)
				for p := 0; p < D; p++ {
					b[p] += g.alpha * bd[p]
					for q := p; q < D; q++ {
						A[p*D+q] += g.alpha * ad[p*D+q]
					}
				}
			}
			for q := g.start[mo][i]; !cp3 && q < g.start[mo][i+1]; q++ {
				v, pp := g.grouped(mo, q, ws.idx)
				g.design(mo, ws, z)
				y := v - g.offsetAt(ws.idx, pp, mo)
				for p := 0; p < D; p++ {
					zp := g.alpha * z[p]
					b[p] += zp * y
					row := A[p*D : p*D+D]
					for q := p; q < D; q++ {
						row[q] += zp * z[q]
					}
				}
			}
			if !cholUpper(A, D) {
				failed.Store(true)
				continue
			}
			forwardSolveUpperT(A, b, D)
			// b now holds U^-T rhs; mean = U^-1 b, sample = U^-1 (b + eps).
			for p := range b {
				b[p] += r.NormFloat64()
			}
			backSolveUpper(A, b, D)
			copy(m.Row(mo, i), b[:R])
			if m.HasBias {
				m.Bias[mo][i] = b[R]
			}
		}
	})
	if failed.Load() {
		return errors.New("completion: Gibbs row precision not positive definite")
	}
	return nil
}

// design writes entry ws.idx's augmented design vector for mode mo into z.
func (g *gibbsTrainer) design(mo int, ws *alsWork, z []float64) {
	m := g.m
	R := m.Ranks[mo]
	idx := ws.idx
	switch {
	case m.Kind == decomposition.CP && m.Order() == 3:
		u, v := otherModes(mo)
		fu, fv := m.Row(u, int(idx[u])), m.Row(v, int(idx[v]))
		for p := 0; p < R; p++ {
			z[p] = fu[p] * fv[p]
		}
	case m.Kind == decomposition.CP:
		copy(z, m.Row(1-mo, int(idx[1-mo])))
	case g.rowTab != nil:
		g.rowTab.design(m, mo, idx, z)
	default:
		m.Partial(idx, ws.w)
		copy(z, ws.w.Factor[mo])
	}
	if m.HasBias {
		z[R] = 1
	}
}

// samplePairs draws every pair bias from N(alpha s / P, 1/P), P = lambda_p +
// alpha n, s the sum of its entries' residuals without it, then the pairs'
// prior precision from Gamma(1 + K/2, 1 + sum b^2 / 2).
func (g *gibbsTrainer) samplePairs(it int) {
	for p := range g.pairs {
		ps := &g.pairs[p]
		vals := g.m.Pairs[p].Vals
		lam := g.pairPrec[p]
		g.parallel(len(vals), 1024, func(w, lo, hi int) {
			ws := g.work[w]
			r := g.rngs[w]
			g.pcg[w].Seed(g.seed^uint64(it)<<8^uint64(16+p), uint64(lo))
			for k := lo; k < hi; k++ {
				ents := ps.ent[ps.start[k]:ps.start[k+1]]
				s := 0.0
				for _, e := range ents {
					g.entry(e, ws.idx)
					s += g.vals[e] - g.rawAt(e, ws.idx, ws.w) + vals[k]
				}
				P := lam + g.alpha*float64(len(ents))
				vals[k] = g.alpha*s/P + r.NormFloat64()/math.Sqrt(P)
			}
		})
		ss := 0.0
		for _, v := range vals {
			ss += v * v
		}
		g.pairPrec[p] = sampleGamma(1+float64(len(vals))/2, g.rng) / (1 + ss/2)
	}
}

// trainGibbs is Train for SolverGibbs: Epochs sweeps of the sampler, the
// first BurnIn discarded; the returned model holds the mean of the
// parameters over the rest (package doc, "Gibbs"). ValidRMSE records the
// running average of the samples' predictions, except in the last record,
// which scores the returned model.
func trainGibbs(ctx context.Context, train, valid *data.Store, m *decomposition.Model, cfg *Settings, vals []float64, src rand.Source, progress func(EpochRecord)) (*Result, error) {
	if len(m.Core) > MaxGibbsCore {
		return nil, &SettingsError{Field: "Solver", Value: float64(cfg.Solver), Rule: fmt.Sprintf(
			"the Gibbs sampler draws a Tucker core of at most %d entries and ranks %v make %d (lower the ranks or use ALS)", MaxGibbsCore, m.Ranks, len(m.Core))}
	}
	rng := rand.New(src)
	g, err := newGibbsTrainer(m, train, vals, cfg, rng)
	if err != nil {
		return nil, err
	}
	pm := newParamMean(m)
	var validSum []float64
	if valid != nil {
		validSum = make([]float64, valid.NNZ())
	}
	res := &Result{Model: m, Settings: *cfg}
	nValid := 0
	for it := 0; it < cfg.Epochs; it++ {
		if err := ctx.Err(); err != nil {
			pm.finish(m) // the posterior mean so far (the last sample before burn-in ends)
			return res, fmt.Errorf("completion: sampling stopped before sweep %d: %w", it+1, err)
		}
		t0 := time.Now()
		sse, err := g.sweep(it)
		if err != nil {
			return nil, err
		}
		n := float64(train.NNZ())
		g.alpha = sampleGamma(1+n/2, rng) / (1 + sse/2)
		rec := EpochRecord{Epoch: it + 1, Seconds: time.Since(t0).Seconds(), TrainRMSE: math.Sqrt(sse / n), TrainLoss: sse}
		if !finite(sse) || !modelFinite(m) {
			return nil, &ErrDiverged{Epoch: it + 1, Loss: sse}
		}
		if it >= cfg.BurnIn && valid != nil {
			// Running average of the (clamped) predictions after burn-in.
			addPredictions(m, valid, validSum, cfg.Threads)
			nValid++
			rec.ValidRMSE = averagedRMSE(valid, validSum, nValid, m)
		}
		if it >= cfg.BurnIn {
			pm.add(m)
		}
		res.History = append(res.History, rec)
		if progress != nil {
			progress(rec)
		}
	}
	pm.finish(m)
	res.BestEpoch = cfg.Epochs
	if valid != nil && len(res.History) > 0 {
		// The last record scores the returned (posterior-mean) model itself.
		res.History[len(res.History)-1].ValidRMSE = RMSE(m, valid, cfg.Threads)
	}
	if !modelFinite(m) {
		return nil, errors.New("completion: Gibbs sampler left non-finite parameters")
	}
	res.Privacy = cfg.Privacy.Report()
	return res, nil
}

// sweep runs one sweep of the sampler (hyperparameters and rows of every
// mode, the Tucker core, the pair biases) and returns the training SSE.
func (g *gibbsTrainer) sweep(it int) (float64, error) {
	m := g.m
	for mo := range m.Dims {
		g.sampleHyper(mo)
		if g.rowTab != nil {
			g.rowTab.build(g.alsTrainer, tableMode(m, mo))
		}
		if err := g.sampleMode(it, mo); err != nil {
			return 0, err
		}
	}
	if g.core != nil {
		if err := g.sampleCore(); err != nil {
			return 0, err
		}
	}
	if g.valTab != nil {
		// Valid until the next sweep changes a row or the core.
		g.valTab.build(g.alsTrainer, tableMode(m, -1))
		g.alsTrainer.valTab = g.valTab
		defer func() { g.alsTrainer.valTab = nil }()
	}
	g.samplePairs(it)
	return g.sse(), nil
}

// newGibbsTrainer initialises m (the Tucker core at the CP core, as ALS
// does) and starts the chain from two ALS sweeps, so the sampler begins
// near a mode.
func newGibbsTrainer(m *decomposition.Model, train *data.Store, vals []float64, cfg *Settings, rng *rand.Rand) (*gibbsTrainer, error) {
	cfg.InitScale = min(cfg.InitScale, 0.1)
	initModel(m, vals, cfg, rng)
	if m.Core != nil && !cfg.WarmStart {
		superdiagonal(m.Core, m.Ranks)
	}
	a := newALSTrainer(m, train, vals, cfg)
	g := &gibbsTrainer{alsTrainer: a, seed: rng.Uint64(), alpha: 2, rng: rng,
		hyper: make([]hyper, m.Order()), pairPrec: make([]float64, len(a.pairs))}
	for i := range g.pairPrec {
		g.pairPrec[i] = cfg.RegPair
	}
	for range a.work {
		p := rand.NewPCG(0, 0)
		g.pcg = append(g.pcg, p)
		g.rngs = append(g.rngs, rand.New(p))
	}
	if m.Core != nil {
		g.core = newCoreSampler(a)
	}
	if m.Core != nil && m.Order() == 3 {
		g.rowTab, g.valTab = &coreTable{}, &coreTable{}
	}
	for s := 0; s < 2; s++ {
		if _, err := a.sweep(); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// addPredictions adds m's clamped predictions on st to sum.
func addPredictions(m *decomposition.Model, st *data.Store, sum []float64, threads int) {
	_ = threads
	w := m.NewWork()
	idx := make([]int32, st.Order())
	for e := range sum {
		st.Entry(e, idx)
		sum[e] += m.PredictWork(idx, w)
	}
}

func averagedRMSE(st *data.Store, sum []float64, n int, m *decomposition.Model) float64 {
	s := 0.0
	for e, v := range st.Val {
		d := v - m.Clamp(sum[e]/float64(n))
		s += d * d
	}
	return math.Sqrt(s / float64(len(sum)))
}

// paramMean accumulates the post-burn-in samples' parameters; finish sets
// the model to their means (package doc, "Gibbs", on why the posterior mean
// of the parameters stands in for the mean of the predictions).
type paramMean struct {
	factors, bias, pairs [][]float64
	core                 []float64
	n                    int
}

func newParamMean(m *decomposition.Model) *paramMean {
	a := &paramMean{}
	for _, f := range m.Factors {
		a.factors = append(a.factors, make([]float64, len(f)))
	}
	for _, b := range m.Bias {
		a.bias = append(a.bias, make([]float64, len(b)))
	}
	for _, p := range m.Pairs {
		a.pairs = append(a.pairs, make([]float64, len(p.Vals)))
	}
	a.core = make([]float64, len(m.Core))
	return a
}

func addTo(dst, src []float64) {
	for i, v := range src {
		dst[i] += v
	}
}

func (a *paramMean) add(m *decomposition.Model) {
	for i, f := range m.Factors {
		addTo(a.factors[i], f)
	}
	for i, b := range m.Bias {
		addTo(a.bias[i], b)
	}
	for i, p := range m.Pairs {
		addTo(a.pairs[i], p.Vals)
	}
	addTo(a.core, m.Core)
	a.n++
}

func (a *paramMean) finish(m *decomposition.Model) {
	if a.n == 0 {
		return
	}
	inv := 1 / float64(a.n)
	set := func(dst, sum []float64) {
		for i, v := range sum {
			dst[i] = v * inv
		}
	}
	for i := range m.Factors {
		set(m.Factors[i], a.factors[i])
	}
	for i := range m.Bias {
		set(m.Bias[i], a.bias[i])
	}
	for i := range m.Pairs {
		set(m.Pairs[i].Vals, a.pairs[i])
	}
	set(m.Core, a.core)
}
