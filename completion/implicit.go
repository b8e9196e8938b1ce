package completion

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
)

// Implicit-feedback defaults, chosen on a validation split carved from the
// training part of ml-latest-small only (the training part of `dprec data
// split --method user --fraction 0.2 --seed 1`, split again per user 80/20
// with seed 2; validation NDCG@10, relevance = rating >= 4, training items
// excluded; the test part is never read). Grid and scores:
// TestImplicitTune (DPREC_IMPLICIT_TUNE=1). Validation NDCG@10 at rank 64,
// reg 20, 15 sweeps: confidence linear with alpha 0.05, 0.1, 0.25, 0.5, 1,
// 2, 8, 30: 0.166, 0.175, 0.193, 0.188, 0.182, 0.171, 0.144, 0.125; log
// (alpha 0.25, 0.5, 2): 0.175, 0.188, 0.181; binary (0.5, 2): 0.180, 0.177.
// Reg (linear, alpha 0.5, rank 64) 2, 5, 10, 20, 50, 100: 0.164, 0.170,
// 0.177, 0.188, 0.156, 0.110; at alpha 0.25, reg 10 / 20 / 30: 0.177,
// 0.193, 0.169. Rank 32 / 64 / 128 (alpha 0.5): 0.187, 0.188, 0.189; at
// alpha 0.25 rank 128 reaches 0.196 against 0.193 at 64 (+1.3%) for about
// four times the sweep cost (R^2 per event, R^3 per row), so the default
// stays 64 (pass --rank 128 for the last percent). Sweeps 8 / 15 / 25
// (alpha 0.5): 0.188 each.
const (
	DefaultImplicitRank       = 64
	DefaultImplicitIterations = 15
	DefaultImplicitAlpha      = 0.25
	DefaultImplicitReg        = 20
	DefaultImplicitInitScale  = 0.01
	DefaultImplicitConfidence = ConfidenceLinear
)

// ConfidenceFunc names the function f of the confidence c = 1 + alpha f(v)
// that an observed value v (a rating, a play count, 1 for a click) gives its
// cell.
type ConfidenceFunc string

// Confidence functions. Values are the per-cell sums of the log's values
// (duplicate events of one (user, item) pair, and the time buckets of an
// order-3 log, add up before f is applied).
const (
	// ConfidenceLinear is f(v) = v (Hu, Koren and Volinsky 2008, eq. 6 with
	// alpha in place of their alpha).
	ConfidenceLinear ConfidenceFunc = "linear"
	// ConfidenceLog is f(v) = log(1 + v) (their eq. 7 with epsilon = 1):
	// the confidence grows slowly with heavy use.
	ConfidenceLog ConfidenceFunc = "log"
	// ConfidenceBinary is f(v) = 1: every observed cell has confidence
	// 1 + alpha whatever its value.
	ConfidenceBinary ConfidenceFunc = "binary"
)

// ParseConfidenceFunc parses a confidence function name ("" means the
// default).
func ParseConfidenceFunc(s string) (ConfidenceFunc, error) {
	switch ConfidenceFunc(s) {
	case "":
		return DefaultImplicitConfidence, nil
	case ConfidenceLinear, ConfidenceLog, ConfidenceBinary:
		return ConfidenceFunc(s), nil
	}
	return "", fmt.Errorf("completion: unknown confidence function %q (want linear, log or binary)", s)
}

func (f ConfidenceFunc) apply(v float64) float64 {
	switch f {
	case ConfidenceLinear:
		return v
	case ConfidenceBinary:
		return 1
	}
	return math.Log1p(v)
}

// ImplicitSettings configure TrainImplicit. The zero value of every field
// means its documented default.
type ImplicitSettings struct {
	// Iterations is the number of ALS sweeps (a user half-step and an item
	// half-step each). Zero means DefaultImplicitIterations.
	Iterations int
	// Alpha scales the confidence c = 1 + Alpha f(v) of an observed cell.
	// Zero means DefaultImplicitAlpha; it must be positive.
	Alpha float64
	// Confidence is f; empty means DefaultImplicitConfidence.
	Confidence ConfidenceFunc
	// Reg is the ridge penalty lambda on every factor row. Zero means
	// DefaultImplicitReg; it must be positive (it keeps every row's normal
	// equations positive definite).
	Reg float64
	// UnobservedWeight is the weight w0 of every unobserved cell (a zero
	// preference). Zero means 1; it must be positive and is normally at
	// most the smallest confidence 1.
	UnobservedWeight float64
	// InitScale is the standard deviation of the Gaussian initial factors.
	// Zero means DefaultImplicitInitScale.
	InitScale float64
	// Threads is the number of workers; zero means GOMAXPROCS. The model
	// does not depend on it (see TrainImplicit).
	Threads int
}

func (s *ImplicitSettings) resolved() ImplicitSettings {
	var r ImplicitSettings
	if s != nil {
		r = *s
	}
	if r.Iterations == 0 {
		r.Iterations = DefaultImplicitIterations
	}
	if r.Alpha == 0 {
		r.Alpha = DefaultImplicitAlpha
	}
	if r.Confidence == "" {
		r.Confidence = DefaultImplicitConfidence
	}
	if r.Reg == 0 {
		r.Reg = DefaultImplicitReg
	}
	if r.UnobservedWeight == 0 {
		r.UnobservedWeight = 1
	}
	if r.InitScale == 0 {
		r.InitScale = DefaultImplicitInitScale
	}
	if r.Threads == 0 {
		r.Threads = runtime.GOMAXPROCS(0)
	}
	return r
}

// Resolved returns the settings with every default filled in.
func (s *ImplicitSettings) Resolved() ImplicitSettings { return s.resolved() }

func (r *ImplicitSettings) validate() error {
	bad := func(name string, v float64, rule string) error {
		return &SettingsError{Field: name, Value: v, Rule: rule}
	}
	pos := func(v float64) bool { return v > 0 && !math.IsInf(v, 0) }
	switch {
	case r.Iterations < 0:
		return bad("Iterations", float64(r.Iterations), "must be positive")
	case r.Iterations > MaxEpochs:
		return bad("Iterations", float64(r.Iterations), fmt.Sprintf("must be at most %d (MaxEpochs)", MaxEpochs))
	case r.Threads < 0:
		return bad("Threads", float64(r.Threads), "must be positive")
	case r.Threads > MaxThreads:
		return bad("Threads", float64(r.Threads), fmt.Sprintf("must be at most %d (MaxThreads: every worker holds its own working space)", MaxThreads))
	case !pos(r.Alpha):
		return bad("Alpha", r.Alpha, "must be positive and finite")
	case !pos(r.Reg):
		return bad("Reg", r.Reg, "must be positive and finite")
	case !pos(r.UnobservedWeight):
		return bad("UnobservedWeight", r.UnobservedWeight, "must be positive and finite")
	case !pos(r.InitScale):
		return bad("InitScale", r.InitScale, "must be positive and finite")
	}
	_, err := ParseConfidenceFunc(string(r.Confidence))
	return err
}

// ImplicitRecord is what TrainImplicit reports after every sweep.
type ImplicitRecord struct {
	Iteration int `json:"iteration"`
	// Loss is the full weighted objective (over every cell, observed or
	// not, computed with the Gram-matrix identity, plus the penalty).
	Loss float64 `json:"loss"`
	// Seconds is the wall time of the sweep (without the loss).
	Seconds float64 `json:"seconds"`
}

// ImplicitResult is what TrainImplicit returns.
type ImplicitResult struct {
	Model    *decomposition.Model
	History  []ImplicitRecord
	Settings ImplicitSettings
	// Cells is the number of distinct observed (user, item) cells after
	// duplicates and time buckets were added up; Events the number of
	// store observations (after any merging the loader did).
	Cells, Events int
}

// TrainImplicit fits the user and item factors of m (a CP model of order 2
// without biases, Dims = the store's first two mode sizes) to an implicit
// feedback log by weighted alternating least squares (Hu, Koren and
// Volinsky 2008, "Collaborative filtering for implicit feedback datasets").
//
// # Objective
//
// Every (user u, item i) cell of the users x items matrix, observed or
// not, is a binary preference p_ui: 1 when the log has an event for it, 0
// otherwise. Observed cells weigh c_ui = 1 + alpha f(v_ui), where v_ui is
// the sum of the cell's values (duplicate events and, for an order-3 log,
// all its time buckets add up: the time mode is collapsed, and the model
// saved is the order-2 users x items model) and f is
// Settings.Confidence; unobserved cells weigh w0 (UnobservedWeight). The
// loss is
//
//	L = sum_{u,i} c_ui (p_ui - x_u . y_i)^2 + lambda (sum_u |x_u|^2 + sum_i |y_i|^2)
//
// with c_ui = w0 on unobserved cells. With Y fixed, L is a ridge
// regression per user, solved exactly:
//
//	x_u = (w0 Y'Y + sum_{i in I(u)} (c_ui - w0) y_i y_i' + lambda I)^{-1} sum_{i in I(u)} c_ui y_i
//
// because sum_i c_ui y_i y_i' = w0 sum_all y_i y_i' + sum_{observed} (c_ui
// - w0) y_i y_i' (the Gram-matrix trick) and p_ui = 0 off I(u). Y'Y is
// computed once per half-step (O(items R^2)), each user then costs O(|I(u)|
// R^2) for its rank-one updates and O(R^3) for a Cholesky solve, so a sweep
// (users, then items symmetrically) costs O(nnz R^2 + (users + items) R^3)
// and never touches the dense matrix. The matrix is positive definite
// (every weight is positive and lambda > 0), so the Cholesky factorisation
// exists. A user (item) with no event gets the zero row, the minimiser of
// its own (pure-penalty plus zero-preference) problem.
//
// The reported loss uses the same identity: sum_{all cells} w0 s_ui^2 =
// w0 sum_{a,b} (X'X)_{ab} (Y'Y)_{ab}, so L = that + sum_observed [c_ui (1 -
// s_ui)^2 - w0 s_ui^2] + penalty, in O(nnz R + (users + items) R^2).
//
// # Parallelism and determinism
//
// Rows are solved in parallel (chunks of 64 rows handed out to Threads
// workers); each row's solution depends only on the fixed other factor, and
// the Gram matrix is summed over fixed 1024-row chunks in chunk order, so
// the model is bit-identical for a fixed seed whatever the thread count.
// src draws the initial factors, N(0, InitScale^2).
//
// # Memory
//
// Beyond the store and the model, training holds at most 24 bytes per
// event: the events grouped by user (int32 item, float64 value, 12 bytes
// each; repeated cells are merged in place) and the same cells grouped by
// item (12 bytes each), plus R^2 floats of scratch per worker and the two
// Gram matrices.
//
// Values must be finite and non-negative (a confidence below 1 would make
// an event count less than nothing).
func TrainImplicit(train *data.Store, m *decomposition.Model, s *ImplicitSettings, src rand.Source, progress func(ImplicitRecord)) (*ImplicitResult, error) {
	cfg := s.resolved()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if src == nil {
		return nil, errors.New("completion: nil random source")
	}
	if train == nil || m == nil {
		return nil, &ShapeError{Reason: "nil store or model"}
	}
	if m.Kind != decomposition.CP || m.Order() != 2 || m.HasBias {
		return nil, &ShapeError{Reason: "the implicit objective trains an order-2 CP model without biases"}
	}
	if train.Order() < 2 || train.Dims[0] != m.Dims[0] || train.Dims[1] != m.Dims[1] {
		return nil, &ShapeError{Reason: fmt.Sprintf("model dims %v do not match the store's users x items %v", m.Dims, train.Dims)}
	}
	for mo, r := range m.Ranks {
		if r > m.Dims[mo] {
			return nil, &ShapeError{Reason: fmt.Sprintf("rank %d of mode %d exceeds its size %d", r, mo, m.Dims[mo])}
		}
	}
	if train.NNZ() == 0 {
		return nil, ErrEmpty
	}
	if err := checkEstimate(EstimateImplicit(m.Dims[0], m.Dims[1], train.NNZ(), m.Ranks[0], &cfg)); err != nil {
		return nil, err
	}
	pr, err := newImplicitProblem(train, &cfg)
	if err != nil {
		return nil, err
	}
	rng := rand.New(src)
	for _, f := range m.Factors {
		for t := range f {
			f[t] = cfg.InitScale * rng.NormFloat64()
		}
	}
	res := &ImplicitResult{Model: m, Settings: cfg, Cells: len(pr.byUser.idx), Events: train.NNZ()}
	for it := 0; it < cfg.Iterations; it++ {
		t0 := time.Now()
		if err := pr.sweep(m); err != nil {
			return res, err
		}
		rec := ImplicitRecord{Iteration: it + 1, Seconds: time.Since(t0).Seconds()}
		rec.Loss = pr.loss(m)
		if !finite(rec.Loss) || !modelFinite(m) {
			return res, &ErrDiverged{Epoch: it + 1, Loss: rec.Loss}
		}
		res.History = append(res.History, rec)
		if progress != nil {
			progress(rec)
		}
	}
	return res, nil
}

// csr is a compressed sparse row matrix of confidences.
type csr struct {
	ptr  []int64
	idx  []int32
	conf []float64
}

func (c *csr) row(u int) ([]int32, []float64) {
	return c.idx[c.ptr[u]:c.ptr[u+1]], c.conf[c.ptr[u]:c.ptr[u+1]]
}

// implicitProblem holds the collapsed log by user and by item.
type implicitProblem struct {
	cfg            *ImplicitSettings
	byUser, byItem csr
}

// newImplicitProblem collapses the store to users x items (adding up the
// values of repeated cells and time buckets) and turns the sums into
// confidences.
func newImplicitProblem(st *data.Store, cfg *ImplicitSettings) (*implicitProblem, error) {
	U, I := st.Dims[0], st.Dims[1]
	n := st.NNZ()
	us, is := st.Idx[0], st.Idx[1]
	for e, v := range st.Val {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return nil, fmt.Errorf("completion: implicit feedback value %g of observation %d (user %s, item %s) is not a finite non-negative number",
				v, e, storeID(st, 0, us[e]), storeID(st, 1, is[e]))
		}
	}
	// Bucket by user.
	ptr := make([]int64, U+1)
	for _, u := range us {
		ptr[u+1]++
	}
	for u := 0; u < U; u++ {
		ptr[u+1] += ptr[u]
	}
	fill := slices.Clone(ptr[:U])
	idx := make([]int32, n)
	val := make([]float64, n)
	for e := 0; e < n; e++ {
		u := us[e]
		idx[fill[u]], val[fill[u]] = is[e], st.Val[e]
		fill[u]++
	}
	// Sort each row by item and add up repeated cells, compacting in place.
	w := int64(0)
	type pair struct {
		j int32
		v float64
	}
	var buf []pair
	for u := 0; u < U; u++ {
		lo, hi := ptr[u], ptr[u+1]
		buf = buf[:0]
		for k := lo; k < hi; k++ {
			buf = append(buf, pair{idx[k], val[k]})
		}
		slices.SortStableFunc(buf, func(a, b pair) int { return int(a.j) - int(b.j) })
		ptr[u] = w
		for k := 0; k < len(buf); {
			j, v := buf[k].j, buf[k].v
			k++
			for k < len(buf) && buf[k].j == j {
				v += buf[k].v
				k++
			}
			idx[w], val[w] = j, v
			w++
		}
	}
	ptr[U] = w
	idx, val = idx[:w:w], val[:w:w]
	for k, v := range val {
		val[k] = 1 + cfg.Alpha*cfg.Confidence.apply(v)
	}
	p := &implicitProblem{cfg: cfg, byUser: csr{ptr: ptr, idx: idx, conf: val}}
	// Transpose to by-item (rows visited in user order, so each item's
	// users come sorted).
	iptr := make([]int64, I+1)
	for _, j := range idx {
		iptr[j+1]++
	}
	for j := 0; j < I; j++ {
		iptr[j+1] += iptr[j]
	}
	ifill := slices.Clone(iptr[:I])
	iidx := make([]int32, w)
	ival := make([]float64, w)
	for u := 0; u < U; u++ {
		for k := ptr[u]; k < ptr[u+1]; k++ {
			j := idx[k]
			iidx[ifill[j]], ival[ifill[j]] = int32(u), val[k]
			ifill[j]++
		}
	}
	p.byItem = csr{ptr: iptr, idx: iidx, conf: ival}
	return p, nil
}

func storeID(st *data.Store, mo int, i int32) string {
	if mo < len(st.Dicts) && st.Dicts[mo] != nil {
		return st.Dicts[mo].String(i)
	}
	return fmt.Sprintf("#%d", i)
}

// sweep runs one user half-step and one item half-step.
func (p *implicitProblem) sweep(m *decomposition.Model) error {
	R := m.Ranks[0]
	if err := p.half(m.Factors[0], m.Factors[1], &p.byUser, R); err != nil {
		return err
	}
	return p.half(m.Factors[1], m.Factors[0], &p.byItem, R)
}

// gramChunk is the row chunk of the Gram matrix partial sums.
const gramChunk = 1024

// gram returns the full R x R matrix F'F, summed over fixed chunks of rows
// in chunk order (deterministic whatever the thread count).
func gram(F []float64, R, threads int) []float64 {
	n := len(F) / R
	nc := (n + gramChunk - 1) / gramChunk
	parts := make([][]float64, nc)
	parallelChunks(nc, threads, func(c int) {
		G := make([]float64, R*R)
		for i := c * gramChunk; i < min(n, (c+1)*gramChunk); i++ {
			symRank1(G, F[i*R:i*R+R], 1, R)
		}
		parts[c] = G
	})
	G := make([]float64, R*R)
	for _, P := range parts {
		for t, v := range P {
			G[t] += v
		}
	}
	mirrorLower(G, R)
	return G
}

// parallelChunks calls fn(c) for c in [0, n) on up to threads goroutines.
func parallelChunks(n, threads int, fn func(c int)) {
	threads = max(1, min(threads, n))
	if threads == 1 {
		for c := 0; c < n; c++ {
			fn(c)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < threads; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				c := int(next.Add(1) - 1)
				if c >= n {
					return
				}
				fn(c)
			}
		}()
	}
	wg.Wait()
}

// solveChunk is the number of rows a worker takes at a time.
const solveChunk = 64

// half solves every row of X (rows of c) against the fixed factor Y.
func (p *implicitProblem) half(X, Y []float64, c *csr, R int) error {
	w0, lambda := p.cfg.UnobservedWeight, p.cfg.Reg
	G := gram(Y, R, p.cfg.Threads)
	for t := range G {
		G[t] *= w0
	}
	for a := 0; a < R; a++ {
		G[a*R+a] += lambda
	}
	rows := len(c.ptr) - 1
	nc := (rows + solveChunk - 1) / solveChunk
	var failed atomic.Int64
	failed.Store(-1)
	scratch := sync.Pool{New: func() any { return &solveScratch{A: make([]float64, R*R), b: make([]float64, R)} }}
	parallelChunks(nc, p.cfg.Threads, func(ch int) {
		s := scratch.Get().(*solveScratch)
		defer scratch.Put(s)
		for u := ch * solveChunk; u < min(rows, (ch+1)*solveChunk); u++ {
			x := X[u*R : u*R+R]
			items, conf := c.row(u)
			if len(items) == 0 {
				clear(x)
				continue
			}
			copy(s.A, G)
			clear(s.b)
			k := 0
			for ; k+1 < len(items); k += 2 {
				y0 := Y[int(items[k])*R : int(items[k])*R+R]
				y1 := Y[int(items[k+1])*R : int(items[k+1])*R+R]
				symRank2(s.A, y0, conf[k]-w0, y1, conf[k+1]-w0, R)
				axpy(s.b, conf[k], y0)
				axpy(s.b, conf[k+1], y1)
			}
			if k < len(items) {
				y := Y[int(items[k])*R : int(items[k])*R+R]
				symRank1(s.A, y, conf[k]-w0, R)
				axpy(s.b, conf[k], y)
			}
			if !choleskySolve(s.A, s.b, R) {
				failed.CompareAndSwap(-1, int64(u))
				clear(x)
				continue
			}
			copy(x, s.b)
		}
	})
	if u := failed.Load(); u >= 0 {
		return fmt.Errorf("completion: implicit ALS: the normal equations of row %d are not positive definite (raise Reg)", u)
	}
	return nil
}

type solveScratch struct{ A, b []float64 }

// symRank1 adds w y y' to the lower triangle of the R x R matrix A.
func symRank1(A, y []float64, w float64, R int) {
	y = y[:R]
	for a := 0; a < R; a++ {
		ya := w * y[a]
		row := A[a*R : a*R+a+1]
		for b := range row {
			row[b] += ya * y[b]
		}
	}
}

// symRank2 adds w0 y0 y0' + w1 y1 y1' to the lower triangle of A (one pass
// over A for two updates).
func symRank2(A, y0 []float64, w0 float64, y1 []float64, w1 float64, R int) {
	y0, y1 = y0[:R], y1[:R]
	for a := 0; a < R; a++ {
		p0, p1 := w0*y0[a], w1*y1[a]
		row := A[a*R : a*R+a+1]
		u0, u1 := y0[:len(row)], y1[:len(row)]
		for b := range row {
			row[b] += p0*u0[b] + p1*u1[b]
		}
	}
}

func axpy(dst []float64, a float64, x []float64) {
	x = x[:len(dst)]
	for i := range dst {
		dst[i] += a * x[i]
	}
}

// mirrorLower copies the lower triangle of A onto its upper triangle.
func mirrorLower(A []float64, R int) {
	for a := 0; a < R; a++ {
		for b := 0; b < a; b++ {
			A[b*R+a] = A[a*R+b]
		}
	}
}

// choleskySolve solves A x = b for a symmetric positive definite A given by
// its lower triangle (row-major R x R; the upper triangle is ignored and
// overwritten), in place: A becomes L (A = L L') and b becomes x. It
// reports false when A is not numerically positive definite.
func choleskySolve(A, b []float64, R int) bool {
	for j := 0; j < R; j++ {
		rj := A[j*R : j*R+j+1]
		s := rj[j]
		for _, v := range rj[:j] {
			s -= v * v
		}
		if !(s > 0) || math.IsInf(s, 0) {
			return false
		}
		d := math.Sqrt(s)
		rj[j] = d
		for i := j + 1; i < R; i++ {
			ri := A[i*R : i*R+j+1]
			t := ri[j]
			lj := rj[:j]
			for k, v := range ri[:j] {
				t -= v * lj[k]
			}
			ri[j] = t / d
		}
	}
	// L z = b
	for i := 0; i < R; i++ {
		ri := A[i*R : i*R+i+1]
		t := b[i]
		for k, v := range ri[:i] {
			t -= v * b[k]
		}
		b[i] = t / ri[i]
	}
	// L' x = z
	for i := R - 1; i >= 0; i-- {
		t := b[i]
		for k := i + 1; k < R; k++ {
			t -= A[k*R+i] * b[k]
		}
		b[i] = t / A[i*R+i]
	}
	return true
}

// loss evaluates the full weighted objective (see TrainImplicit).
func (p *implicitProblem) loss(m *decomposition.Model) float64 {
	R := m.Ranks[0]
	X, Y := m.Factors[0], m.Factors[1]
	w0 := p.cfg.UnobservedWeight
	GX, GY := gram(X, R, p.cfg.Threads), gram(Y, R, p.cfg.Threads)
	all := 0.0
	for t := range GX {
		all += GX[t] * GY[t]
	}
	L := w0 * all
	rows := len(p.byUser.ptr) - 1
	nc := (rows + solveChunk - 1) / solveChunk
	parts := make([]float64, nc)
	parallelChunks(nc, p.cfg.Threads, func(ch int) {
		s := 0.0
		for u := ch * solveChunk; u < min(rows, (ch+1)*solveChunk); u++ {
			x := X[u*R : u*R+R]
			items, conf := p.byUser.row(u)
			for k, j := range items {
				y := Y[int(j)*R : int(j)*R+R]
				d := 0.0
				for r, v := range x {
					d += v * y[r]
				}
				s += conf[k]*(1-d)*(1-d) - w0*d*d
			}
		}
		parts[ch] = s
	})
	for _, v := range parts {
		L += v
	}
	pen := 0.0
	for t := 0; t < R; t++ {
		pen += GX[t*R+t] + GY[t*R+t]
	}
	return L + p.cfg.Reg*pen
}

// ImplicitFoldIn solves the factor row of a new user with the given events
// (item rows of the item factor Y, n x R row-major, and their values;
// repeated items add up) against the frozen items, exactly as a user
// half-step of TrainImplicit would (same confidence, unobserved weight and
// penalty). It costs O(n R^2 + R^3) on top of Y'Y (O(items R^2)).
func ImplicitFoldIn(Y []float64, R int, items []int32, values []float64, s *ImplicitSettings) ([]float64, error) {
	cfg := s.resolved()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if R <= 0 || len(Y)%R != 0 || len(items) != len(values) {
		return nil, &ShapeError{Reason: "fold-in: item factor, rank and events do not agree"}
	}
	I := len(Y) / R
	sum := map[int32]float64{}
	var order []int32
	for k, j := range items {
		v := values[k]
		if j < 0 || int(j) >= I {
			return nil, &ShapeError{Reason: fmt.Sprintf("fold-in: item %d outside the model's %d items", j, I)}
		}
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return nil, fmt.Errorf("completion: fold-in value %g is not a finite non-negative number", v)
		}
		if _, ok := sum[j]; !ok {
			order = append(order, j)
		}
		sum[j] += v
	}
	slices.Sort(order)
	c := csr{ptr: []int64{0, int64(len(order))}, idx: order, conf: make([]float64, len(order))}
	for k, j := range order {
		c.conf[k] = 1 + cfg.Alpha*cfg.Confidence.apply(sum[j])
	}
	p := &implicitProblem{cfg: &cfg}
	x := make([]float64, R)
	if err := p.half(x, Y, &c, R); err != nil {
		return nil, err
	}
	return x, nil
}
