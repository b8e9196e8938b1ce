package otd

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"

	"github.com/dprec/dprec/data"
	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/mathext"
)

// Per-document inference and variational refinement of LDA topics.
//
// Both use the mean-field variational family of Blei, Ng and Jordan (2003)
// for LDA with document-topic prior Dirichlet(alpha): for a document with
// word counts n_w, the fixed point
//
//	phi_wk  ∝ b_kw exp(psi(gamma_k))
//	gamma_k = alpha_k + sum_w n_w phi_wk
//
// (psi the digamma function) is iterated from gamma_k = alpha_k + N_d/K
// until the mean absolute change of gamma per topic falls below Tol, and
// the topic proportions are theta = gamma / sum(gamma). InferDocTopics
// holds the topics fixed, b_kw = beta_kw (the model's distributions).
//
// Refine runs batch variational EM (as scikit-learn's
// LatentDirichletAllocation with learning_method="batch"), started from
// spectral topics instead of random ones: topic-word variational
// parameters lambda_kw with prior Dirichlet(eta); the E-step above with
// b_kw = exp(E[log beta_kw]) = exp(psi(lambda_kw) - psi(sum_v lambda_kv)),
// warm-started from the previous sweep's gamma; the M-step
// lambda_kw = eta + sum_d n_dw phi_dwk. The start is
// lambda_kw = eta + (T/K) a_kw with T the corpus's token count and a_k the
// spectral topic: every topic gets the same pseudo-count mass, so a topic
// that the spectral step gave a tiny weight can still gather documents
// (this is what balances the weights). The refined topics are the
// posterior means lambda_k / sum_v lambda_kv and the weights the share of
// the corpus's tokens assigned to each topic, sum_d (gamma_dk - alpha_k) / T.
//
// Three departures from plain batch VEM, each measured on 20 Newsgroups
// (docs/spectral.md): (1) a background topic (RefineOptions.NoBackground disables
// it); (2) rebirth of topics whose token share falls below
// RefineOptions.MinShare by a spectral bisection of the largest topic
// (rebirthTopics), in every sweep but the last two; (3) partial E-steps:
// before the last sweep each document's fixed point is capped at
// partialIters iterations. A capped fixed point still does not decrease
// the variational bound (each update of gamma and phi is a coordinate
// ascent step), and the gammas are kept between sweeps, so a document
// resumes where it stopped; the last sweep runs to Tol.

// InferOptions controls per-document inference. Zero values take the
// defaults.
type InferOptions struct {
	// MaxIters caps the fixed-point iterations per document (default 100).
	MaxIters int
	// Tol stops a document's iterations when the mean absolute change of
	// gamma per topic is below it (default 1e-3, as scikit-learn).
	Tol float64
	// Threads splits the documents into this many contiguous chunks run
	// concurrently (0 or 1: serial). Results are deterministic for a given
	// number of threads; Refine's statistics are summed in chunk order, so
	// different thread counts can differ by rounding.
	Threads int
}

func (o *InferOptions) defaults() {
	if o.MaxIters <= 0 {
		o.MaxIters = 100
	}
	if !(o.Tol > 0) {
		o.Tol = 1e-3
	}
}

// docState is the scratch space of one document's fixed point.
type docState struct {
	k       int
	expElog []float64 // exp(psi(gamma_k))
	norm    []float64 // per word of the document
	acc     []float64
	rows    []float64 // the document's rows of b, gathered
}

func newDocState(k int) *docState {
	return &docState{k: k, expElog: make([]float64, k), acc: make([]float64, k)}
}

// fixedPoint iterates the per-document updates on gamma (in place, used
// as the start) with b the V x K word-major topic weights b[w*K+k].
func (s *docState) fixedPoint(ws, cs []int32, b, alpha, gamma []float64, opts InferOptions) {
	k := s.k
	if cap(s.norm) < len(ws) {
		s.norm = make([]float64, len(ws))
	}
	s.norm = s.norm[:len(ws)]
	// Gather the document's rows of b once: the iterations then run over
	// a contiguous buffer instead of rows scattered over V x K.
	if cap(s.rows) < len(ws)*k {
		s.rows = make([]float64, len(ws)*k)
	}
	s.rows = s.rows[:len(ws)*k]
	for i, w := range ws {
		copy(s.rows[i*k:i*k+k], b[int(w)*k:int(w)*k+k])
	}
	for it := 0; it < opts.MaxIters; it++ {
		var g0 float64
		for t := 0; t < k; t++ {
			g0 += gamma[t]
		}
		p0 := mathext.Digamma(g0)
		for t := 0; t < k; t++ {
			s.expElog[t] = math.Exp(mathext.Digamma(gamma[t]) - p0)
			s.acc[t] = 0
		}
		for i := range ws {
			row := s.rows[i*k : i*k+k]
			var z float64
			for t, x := range row {
				z += x * s.expElog[t]
			}
			if z < 1e-300 {
				z = 1e-300
			}
			r := float64(cs[i]) / z
			s.norm[i] = z
			for t, x := range row {
				s.acc[t] += x * r
			}
		}
		var change float64
		for t := 0; t < k; t++ {
			g := alpha[t] + s.expElog[t]*s.acc[t]
			change += math.Abs(g - gamma[t])
			gamma[t] = g
		}
		if change/float64(k) < opts.Tol {
			break
		}
	}
}

// addStats adds the document's expected topic-word counts n_w phi_wk
// (from the last fixed-point pass: expElog and norm) to ss (word-major).
func (s *docState) addStats(ws, cs []int32, b, ss []float64) {
	k := s.k
	for i, w := range ws {
		row := b[int(w)*k : int(w)*k+k]
		dst := ss[int(w)*k : int(w)*k+k]
		r := float64(cs[i]) / s.norm[i]
		for t, x := range row {
			dst[t] += x * s.expElog[t] * r
		}
	}
}

// wordMajor returns the K x V topics of A (D x K, columns topics) as the
// V x K word-major slice b[w*K+k].
func wordMajor(A *mat.Dense) []float64 {
	d, k := A.Dims()
	b := make([]float64, d*k)
	for w := 0; w < d; w++ {
		for t := 0; t < k; t++ {
			b[w*k+t] = A.At(w, t)
		}
	}
	return b
}

func checkTopics(c *data.Corpus, A *mat.Dense, alpha []float64) error {
	if c == nil || A == nil {
		return errors.New("otd: nil corpus or topics")
	}
	d, k := A.Dims()
	if d != c.V() {
		return fmt.Errorf("otd: topics over %d words, corpus vocabulary has %d", d, c.V())
	}
	if len(alpha) != k {
		return fmt.Errorf("otd: %d alpha values for %d topics", len(alpha), k)
	}
	for _, a := range alpha {
		if !(a > 0) || math.IsInf(a, 0) {
			return fmt.Errorf("otd: document-topic prior alpha %v must be positive and finite", a)
		}
	}
	return nil
}

// InferDocTopics returns the N x K topic proportions theta of the corpus's
// documents (row n: document n), with the topics A (V x K, each column a
// distribution over the corpus's vocabulary) held fixed and document-topic
// prior Dirichlet(alpha) (see the comment block atop this file).
func InferDocTopics(c *data.Corpus, A *mat.Dense, alpha []float64, opts InferOptions) (*mat.Dense, error) {
	if err := checkTopics(c, A, alpha); err != nil {
		return nil, err
	}
	opts.defaults()
	_, k := A.Dims()
	b := wordMajor(A)
	n := c.NumDocs()
	theta := mat.NewDense(n, k, nil)
	parallelDocs(n, opts.Threads, func(lo, hi, _ int) {
		st := newDocState(k)
		gamma := make([]float64, k)
		for d := lo; d < hi; d++ {
			ws, cs := c.Doc(d)
			initGamma(gamma, alpha, c.DocLen(d))
			st.fixedPoint(ws, cs, b, alpha, gamma, opts)
			var s float64
			for _, g := range gamma {
				s += g
			}
			row := theta.RawRowView(d) // rows are disjoint between workers
			for t, g := range gamma {
				row[t] = g / s
			}
		}
	})
	return theta, nil
}

// parallelDocs runs fn on threads contiguous chunks of [0, n) concurrently
// (worker w gets the w-th chunk) and waits; threads < 2 runs fn(0, n, 0).
func parallelDocs(n, threads int, fn func(lo, hi, worker int)) {
	if threads > n {
		threads = n
	}
	if threads < 2 {
		fn(0, n, 0)
		return
	}
	var wg sync.WaitGroup
	for w := 0; w < threads; w++ {
		lo, hi := n*w/threads, n*(w+1)/threads
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			fn(lo, hi, w)
		}(w)
	}
	wg.Wait()
}

func initGamma(gamma, alpha []float64, docLen int64) {
	for t := range gamma {
		gamma[t] = alpha[t] + float64(docLen)/float64(len(gamma))
	}
}

// partialIters caps the per-document iterations of Refine's E-steps
// before the last sweep.
const partialIters = 10

// RefineOptions controls Refine. Zero values take the defaults.
type RefineOptions struct {
	// Sweeps is the number of variational EM sweeps over the corpus
	// (required, >= 1).
	Sweeps int
	// Alpha is the symmetric document-topic prior alpha_k (default 1/K, as
	// scikit-learn).
	Alpha float64
	// Eta is the symmetric topic-word prior (default 1/K, as
	// scikit-learn).
	Eta float64
	// MinShare: after a sweep (except the last two), every topic whose
	// share of the corpus's tokens is below MinShare is reborn by
	// splitting the largest topic (see rebirthTopics). Default 1/(4K);
	// negative disables.
	MinShare float64
	// By default a (K+1)-th background topic is added, fixed at the
	// corpus's word frequencies (its variational parameters are eta + the
	// corpus counts and are not updated), with document prior
	// BackgroundAlpha (default 1): words every document uses at their
	// corpus rate are explained by it instead of by the K topics, which
	// keeps generic words out of the top words. It is dropped from the
	// output (its share is reported). NoBackground disables it (plain
	// LDA).
	NoBackground    bool
	BackgroundAlpha float64
	// Infer controls the per-document fixed point of each E-step.
	Infer InferOptions
	// Progress, if set, receives one report per sweep.
	Progress ProgressFunc
}

// Refined is the outcome of Refine.
type Refined struct {
	// A is V x K, column k the posterior-mean topic k.
	A *mat.Dense
	// Weights are the shares of the corpus's tokens assigned to each topic
	// (sum 1), in the column order of A.
	Weights []float64
	// Alpha is the document-topic prior used (symmetric).
	Alpha []float64
	// Theta is N x K: the documents' topic proportions from the last
	// E-step.
	Theta *mat.Dense
	// Rebirths counts topics replaced by splitting the largest one.
	Rebirths int
	// BackgroundShare is the share of the tokens assigned to the
	// background topic (0 with RefineOptions.NoBackground).
	BackgroundShare float64
}

// Refine runs opts.Sweeps sweeps of batch variational EM for LDA on c
// started from the topics A0 (V x K, columns distributions: a spectral
// fit), as documented atop this file. Topics are returned sorted by
// decreasing weight.
func Refine(c *data.Corpus, A0 *mat.Dense, opts RefineOptions) (*Refined, error) {
	rf, err := newRefiner(c, A0, &opts)
	if err != nil {
		return nil, err
	}
	for sweep := 0; sweep < opts.Sweeps; sweep++ {
		rf.sweep(sweep)
		if opts.Progress != nil {
			opts.Progress("refine", sweep+1, opts.Sweeps)
		}
	}
	return rf.result(), nil
}

// refiner is the state of Refine's variational EM: lambda (word-major,
// v x k with the background topic bg last, or bg = -1), the per-document
// gammas, and per-worker scratch.
type refiner struct {
	c                 *data.Corpus
	opts              *RefineOptions
	v, k, K, bg, n    int
	alpha             []float64
	tokens            float64
	lambda, b, ss     []float64
	gammas            []float64
	colSum            []float64
	states            []*docState
	partial           [][]float64
	threads, rebirths int
}

// refineDefaults fills and checks the options' priors for k topics.
func refineDefaults(opts *RefineOptions, k int) error {
	if opts.Sweeps < 1 {
		return fmt.Errorf("otd: refine needs at least one sweep, got %d", opts.Sweeps)
	}
	if opts.Alpha == 0 {
		opts.Alpha = 1 / float64(k)
	}
	if opts.Eta == 0 {
		opts.Eta = 1 / float64(k)
	}
	if !(opts.Eta > 0) || math.IsInf(opts.Eta, 0) {
		return fmt.Errorf("otd: topic-word prior eta %v must be positive and finite", opts.Eta)
	}
	if !opts.NoBackground {
		if opts.BackgroundAlpha == 0 {
			opts.BackgroundAlpha = 1
		}
		if !(opts.BackgroundAlpha > 0) || math.IsInf(opts.BackgroundAlpha, 0) {
			return fmt.Errorf("otd: background prior %v must be positive and finite", opts.BackgroundAlpha)
		}
	}
	if opts.MinShare == 0 {
		opts.MinShare = 0.25 / float64(k)
	}
	opts.Infer.defaults()
	return nil
}

// newRefiner validates the input and initialises lambda from A0 (and the
// background topic from the corpus word frequencies).
func newRefiner(c *data.Corpus, A0 *mat.Dense, opts *RefineOptions) (*refiner, error) {
	if A0 == nil {
		return nil, errors.New("otd: nil topics")
	}
	v, k := A0.Dims()
	if err := refineDefaults(opts, k); err != nil {
		return nil, err
	}
	rf := &refiner{c: c, opts: opts, v: v, K: k, bg: -1, n: c.NumDocs(), alpha: make([]float64, k)}
	for t := range rf.alpha {
		rf.alpha[t] = opts.Alpha
	}
	if err := checkTopics(c, A0, rf.alpha); err != nil {
		return nil, err
	}
	// Internal topics: the K topics, then the fixed background (bg >= 0).
	if !opts.NoBackground {
		rf.bg = k
		k++
		rf.alpha = append(rf.alpha, opts.BackgroundAlpha)
	}
	rf.k = k
	cf := make([]float64, v)
	for i, x := range c.Counts {
		rf.tokens += float64(x)
		cf[c.Words[i]] += float64(x)
	}
	rf.lambda = make([]float64, v*k)
	for w := 0; w < v; w++ {
		for t := 0; t < rf.K; t++ {
			a := A0.At(w, t)
			if !(a > 0) {
				a = 0
			}
			rf.lambda[w*k+t] = opts.Eta + rf.tokens/float64(rf.K)*a
		}
		if rf.bg >= 0 {
			rf.lambda[w*k+rf.bg] = opts.Eta + cf[w]
		}
	}
	rf.b, rf.ss = make([]float64, v*k), make([]float64, v*k)
	rf.gammas = make([]float64, rf.n*k)
	for d := 0; d < rf.n; d++ {
		initGamma(rf.gammas[d*k:d*k+k], rf.alpha, c.DocLen(d))
	}
	rf.threads = max(1, min(opts.Infer.Threads, rf.n))
	rf.states = make([]*docState, rf.threads)
	for w := range rf.states {
		rf.states[w] = newDocState(k)
	}
	rf.partial = make([][]float64, rf.threads-1) // per-worker statistics
	for w := range rf.partial {
		rf.partial[w] = make([]float64, v*k)
	}
	rf.colSum = make([]float64, k)
	return rf, nil
}

// sweep runs one E-step and M-step (and rebirths, except in the last two
// sweeps).
func (rf *refiner) sweep(sweep int) {
	k, opts := rf.k, rf.opts
	// b = exp(E[log beta]).
	rf.columnSums()
	for t := range rf.colSum {
		rf.colSum[t] = mathext.Digamma(rf.colSum[t])
	}
	for i, x := range rf.lambda {
		rf.b[i] = math.Exp(mathext.Digamma(x) - rf.colSum[i%k])
	}
	for i := range rf.ss {
		rf.ss[i] = 0
	}
	// Partial E-steps: the per-document iterations are capped at
	// partialIters except in the last sweep (each capped E-step still
	// increases the variational bound from the warm start, and the
	// gammas carry over, so later sweeps resume where it stopped).
	inf := opts.Infer
	if sweep < opts.Sweeps-1 && inf.MaxIters > partialIters {
		inf.MaxIters = partialIters
	}
	parallelDocs(rf.n, rf.threads, func(lo, hi, w int) {
		st, acc := rf.states[w], rf.ss
		if w > 0 {
			acc = rf.partial[w-1]
			for i := range acc {
				acc[i] = 0
			}
		}
		for d := lo; d < hi; d++ {
			ws, cs := rf.c.Doc(d)
			g := rf.gammas[d*k : d*k+k]
			st.fixedPoint(ws, cs, rf.b, rf.alpha, g, inf)
			st.addStats(ws, cs, rf.b, acc)
		}
	})
	for _, p := range rf.partial { // fixed order: deterministic per thread count
		for i, x := range p {
			rf.ss[i] += x
		}
	}
	for i := range rf.lambda {
		if i%k != rf.bg {
			rf.lambda[i] = opts.Eta + rf.ss[i]
		}
	}
	if sweep < opts.Sweeps-2 && opts.MinShare >= 0 {
		rf.rebirths += rebirthTopics(rf.c, rf.lambda, rf.gammas, rf.alpha, opts.Eta, rf.tokens, opts.MinShare, rf.bg)
	}
}

// columnSums sets colSum to the column sums of lambda.
func (rf *refiner) columnSums() {
	for t := range rf.colSum {
		rf.colSum[t] = 0
	}
	for i, x := range rf.lambda {
		rf.colSum[i%rf.k] += x
	}
}

// result returns the posterior-mean topics sorted by token share.
func (rf *refiner) result() *Refined {
	rf.columnSums()
	k, K, bg, v, n := rf.k, rf.K, rf.bg, rf.v, rf.n
	w := make([]float64, k)
	for d := 0; d < n; d++ {
		for t := 0; t < k; t++ {
			w[t] += rf.gammas[d*k+t] - rf.alpha[t]
		}
	}
	var ws, wall float64
	for t, x := range w {
		wall += x
		if t != bg {
			ws += x
		}
	}
	ord := sortedOrder(w[:K])
	out := &Refined{A: mat.NewDense(v, K, nil), Weights: make([]float64, K), Alpha: rf.alpha[:K], Theta: mat.NewDense(n, K, nil), Rebirths: rf.rebirths}
	if bg >= 0 {
		out.BackgroundShare = w[bg] / wall
	}
	for c2, t := range ord {
		out.Weights[c2] = w[t] / ws
		for x := 0; x < v; x++ {
			out.A.Set(x, c2, rf.lambda[x*k+t]/rf.colSum[t])
		}
		for d := 0; d < n; d++ {
			g := rf.gammas[d*k : d*k+K]
			var s float64
			for _, y := range g {
				s += y
			}
			out.Theta.Set(d, c2, g[t]/s)
		}
	}
	return out
}

// sortedOrder returns the indices of w by decreasing value (stable).
func sortedOrder(w []float64) []int {
	ord := make([]int, len(w))
	for i := range ord {
		ord[i] = i
	}
	for i := 1; i < len(ord); i++ {
		for j := i; j > 0 && w[ord[j]] > w[ord[j-1]]; j-- {
			ord[j], ord[j-1] = ord[j-1], ord[j]
		}
	}
	return ord
}

// rebirthTopics replaces every topic whose token share is below minShare
// by one half of a split of the currently largest topic, and returns the
// number replaced. Variational EM cannot move a topic out of a poor local
// optimum (a spectral component on a few rare words, such as one
// author's signature, keeps a tiny share sweep after sweep), while a
// large topic often mixes several themes. The split is a spectral
// bisection: the documents whose largest proportion is the big topic L
// are projected on the leading principal direction of their
// length-normalised word counts (power iteration on the centred matrix,
// from a fixed start); those on the positive side become topic L
// (lambda_L = eta + their word counts) and the others the reborn topic.
// Their gammas are reset so that the next E-step reassigns them freely.
func rebirthTopics(c *data.Corpus, lambda, gammas, alpha []float64, eta, tokens, minShare float64, fixed int) int {
	n := c.NumDocs()
	k := len(alpha)
	v := c.V()
	share := make([]float64, k)
	for d := 0; d < n; d++ {
		for t := 0; t < k; t++ {
			share[t] += (gammas[d*k+t] - alpha[t]) / tokens
		}
	}
	born := 0
	for {
		dead, big := -1, -1
		for t := 0; t < k; t++ {
			if t == fixed {
				continue
			}
			if share[t] < minShare && (dead < 0 || share[t] < share[dead]) {
				dead = t
			}
			if big < 0 || share[t] > share[big] {
				big = t
			}
		}
		if dead < 0 || big == dead || share[big] < 2*minShare {
			return born
		}
		var docs []int
		for d := 0; d < n; d++ {
			g := gammas[d*k : d*k+k]
			best := 0
			for t := 1; t < k; t++ {
				if t != fixed && g[t] > g[best] {
					best = t
				}
			}
			if best == big {
				docs = append(docs, d)
			}
		}
		if len(docs) < 2 {
			return born
		}
		side := bisect(c, docs, v)
		for w := 0; w < v; w++ {
			lambda[w*k+big] = eta
			lambda[w*k+dead] = eta
		}
		var na float64
		for i, d := range docs {
			t := dead
			if side[i] {
				t = big
				na++
			}
			ws, cs := c.Doc(d)
			for j, w := range ws {
				lambda[int(w)*k+t] += float64(cs[j])
			}
			initGamma(gammas[d*k:d*k+k], alpha, c.DocLen(d))
		}
		f := na / float64(len(docs))
		share[dead] = share[big] * (1 - f)
		share[big] *= f
		born++
	}
}

// bisect splits docs by the sign of their projection on the leading
// principal direction of their length-normalised word-count vectors
// (30 power iterations on the centred matrix from a fixed start). It
// returns true for the documents on the positive side; if one side would
// be empty, the split is at the median projection instead.
func bisect(c *data.Corpus, docs []int, v int) []bool {
	mean := make([]float64, v)
	inv := make([]float64, len(docs))
	for i, d := range docs {
		inv[i] = 1 / float64(c.DocLen(d))
		ws, cs := c.Doc(d)
		for j, w := range ws {
			mean[w] += float64(cs[j]) * inv[i] / float64(len(docs))
		}
	}
	x := make([]float64, v)
	for w := range x {
		x[w] = math.Sin(float64(w) + 1)
	}
	u := make([]float64, len(docs))
	y := make([]float64, v)
	project := func() {
		var mx float64
		for w := range x {
			mx += mean[w] * x[w]
		}
		for i, d := range docs {
			ws, cs := c.Doc(d)
			var s float64
			for j, w := range ws {
				s += float64(cs[j]) * inv[i] * x[w]
			}
			u[i] = s - mx
		}
	}
	for it := 0; it < 30; it++ {
		project()
		var su float64
		for w := range y {
			y[w] = 0
		}
		for i, d := range docs {
			ws, cs := c.Doc(d)
			for j, w := range ws {
				y[w] += float64(cs[j]) * inv[i] * u[i]
			}
			su += u[i]
		}
		var norm float64
		for w := range y {
			y[w] -= mean[w] * su
			norm += y[w] * y[w]
		}
		if norm == 0 {
			break
		}
		norm = math.Sqrt(norm)
		for w := range y {
			x[w] = y[w] / norm
		}
	}
	project()
	side := make([]bool, len(docs))
	pos := 0
	for i := range u {
		side[i] = u[i] > 0
		if side[i] {
			pos++
		}
	}
	if pos == 0 || pos == len(docs) {
		s := append([]float64(nil), u...)
		sortFloats(s)
		med := s[len(s)/2]
		for i := range u {
			side[i] = u[i] >= med
		}
	}
	return side
}

func sortFloats(s []float64) { sort.Float64s(s) }
