package completion

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/internal/stattest"
)

// tuckerStore draws a log from a planted Tucker model with a dense random
// core (data.Synth) and splits it into n training and the rest test cells.
func tuckerStore(t *testing.T, ranks [3]int, times, ratings, n int, noise float64, seed uint64) (train, test *data.Store, truth *data.SynthTruth) {
	t.Helper()
	st, tr, err := data.Synth(data.SynthOptions{Users: 40, Items: 30, Times: times, Ratings: ratings,
		Kind: "tucker", Ranks: ranks, Noise: noise}, rand.NewPCG(seed, 1))
	if err != nil {
		t.Fatal(err)
	}
	perm := rand.New(rand.NewPCG(seed, 2)).Perm(st.NNZ())
	return st.Subset(perm[:n]), st.Subset(perm[n:]), tr
}

// TestGibbsTuckerRecovers: the sampler's posterior-mean Tucker model
// recovers a noiseless planted Tucker tensor whose core is dense, for
// order 3 and order 2 and both thread counts. At order 3 the core matters:
// with the core step skipped the test RMSE is 0.21, against 0.0015 with it
// (at order 2 any core is absorbed by the factors).
func TestGibbsTuckerRecovers(t *testing.T) {
	for _, tc := range []struct {
		name    string
		times   int
		ranks   []int
		regCore float64 // 0: the fixed default prior precision; -1: learned
		max     float64 // largest test RMSE accepted
	}{{"tucker3", 8, []int{3, 3, 2}, 0, 0.1}, {"tucker3 learned", 8, []int{3, 3, 2}, -1, 0.01}, {"tucker2", 0, []int{3, 2}, 0, 0.02}} {
		for _, threads := range []int{1, 2} {
			train, test, _ := tuckerStore(t, [3]int{tc.ranks[0], tc.ranks[1], 2}, tc.times, 1200+tc.times*300, 1000+tc.times*250, 0, 3)
			m := newModel(t, decomposition.Tucker, train.Dims, tc.ranks, true)
			// The planted time factors are random: free time rows.
			s := &Settings{Solver: SolverGibbs, Epochs: 80, Threads: threads, RegTime: -1, TimeBiases: ToggleOff, RegCore: tc.regCore}
			res, err := Train(train, nil, m, s, rand.NewPCG(1, 2), nil)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			// The planted low-rank part has standard deviation 0.71.
			got := RMSE(m, test, 1)
			t.Logf("%s threads %d: test RMSE %.4f", tc.name, threads, got)
			if got > tc.max || res.BestEpoch != 80 {
				t.Errorf("%s threads %d: test RMSE %.4f (want < %g), best epoch %d", tc.name, threads, got, tc.max, res.BestEpoch)
			}
		}
	}
}

// TestGibbsCoreConditional checks the core's conditional against a direct
// computation: the normal equations accumulated through the Kronecker
// grouping equal sum_e g_e g_e^T and sum_e g_e y_e over the entries (g_e
// from decomposition's Partial, y_e the value minus the offset with pair
// biases), and the draws have the conditional's mean and variances.
func TestGibbsCoreConditional(t *testing.T) {
	train, _, _ := tuckerStore(t, [3]int{3, 2, 2}, 6, 900, 800, 0.3, 5)
	for _, tc := range []struct {
		ranks   []int
		regCore float64 // negative: learned precision; positive: fixed
	}{{[]int{3, 2, 2}, -1}, {[]int{2, 3, 2}, 1e-3}, {[]int{2, 2, 3}, -1}} {
		ranks := tc.ranks
		m := newModel(t, decomposition.Tucker, train.Dims, ranks, true)
		cfg := (&Settings{Solver: SolverGibbs, Threads: 3, RegCore: tc.regCore}).resolvedFor(decomposition.Tucker)
		vals := append([]float64(nil), train.Val...)
		g, err := newGibbsTrainer(m, train, vals, &cfg, rand.New(rand.NewPCG(7, 7)))
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Pairs) == 0 {
			t.Fatal("no pair biases: the offsets are not fully exercised")
		}
		c := g.core
		n := c.nG
		P, h := make([]float64, n*n), make([]float64, n)
		w, idx := m.NewWork(), make([]int32, 3)
		for e := 0; e < train.NNZ(); e++ {
			train.Entry(e, idx)
			m.Partial(idx, w)
			y := train.Val[e] - m.Offset(idx)
			for q, gq := range w.Core {
				h[q] += gq * y
				for r, gr := range w.Core {
					P[q*n+r] += gq * gr
				}
			}
		}
		for wk := range g.work {
			c.accumulate(g.alsTrainer, wk)
		}
		for k1 := 0; k1 < n; k1++ {
			got := 0.0
			for wk := range c.rhs {
				got += c.rhs[wk][k1]
			}
			if want := h[c.perm[k1]]; math.Abs(got-want) > 1e-9*(1+math.Abs(want)) {
				t.Fatalf("ranks %v: rhs[%d] = %g, direct %g", ranks, c.perm[k1], got, want)
			}
			for k2 := k1; k2 < n; k2++ {
				got := 0.0
				for wk := range c.acc {
					got += c.acc[wk][k1*n+k2]
				}
				if want := P[c.perm[k1]*n+c.perm[k2]]; math.Abs(got-want) > 1e-9*(1+math.Abs(want)) {
					t.Fatalf("ranks %v: precision[%d,%d] = %g, direct %g", ranks, c.perm[k1], c.perm[k2], got, want)
				}
			}
		}
		checkCoreDraws(t, g, P, h)
	}
}

// checkCoreDraws draws the core K times at a fixed alpha and lambda_g (2,
// or alpha RegCore |Omega| for a fixed precision) and compares each
// coordinate's sample mean and variance with the conditional
// N(Q^-1 (alpha h + lambda_g G0), Q^-1), Q = alpha P + lambda_g I.
func checkCoreDraws(t *testing.T, g *gibbsTrainer, P, h []float64) {
	t.Helper()
	c := g.core
	n := c.nG
	const alpha, K = 3.0, 4000
	lam := 2.0
	if g.cfg.RegCore > 0 {
		lam = alpha * g.cfg.RegCore * float64(g.st.NNZ())
	}
	G0 := make([]float64, n)
	superdiagonal(G0, g.m.Ranks)
	Q := make([]float64, n*n)
	mean := make([]float64, n)
	for q := range mean {
		mean[q] = alpha*h[q] + lam*G0[q]
		for r := 0; r < n; r++ {
			Q[q*n+r] = alpha * P[q*n+r]
		}
		Q[q*n+q] += lam
	}
	cov := invertSPD(Q, n)
	if !cholSolve(Q, mean, n) {
		t.Fatal("conditional precision not positive definite")
	}
	draws := make([][]float64, n)
	for k := 0; k < K; k++ {
		g.alpha, c.prec = alpha, 2
		if err := g.sampleCore(); err != nil {
			t.Fatal(err)
		}
		for q, v := range g.m.Core {
			draws[q] = append(draws[q], v)
		}
	}
	for q := range draws {
		mu, v := stattest.MeanVar(draws[q])
		if z := (mu - mean[q]) / math.Sqrt(cov[q*n+q]/K); math.Abs(z) > stattest.Z5 {
			t.Errorf("core[%d]: sample mean %.5f, conditional mean %.5f (z = %.2f)", q, mu, mean[q], z)
		}
		// The sample variance has relative standard deviation sqrt(2/(K-1)).
		if r := v / cov[q*n+q]; math.Abs(r-1) > stattest.Z5*math.Sqrt(2.0/(K-1)) {
			t.Errorf("core[%d]: sample variance / conditional variance = %.4f", q, r)
		}
	}
}

// TestDefaultSolverTucker: without privacy the default solver is the Gibbs
// sampler for CP and for Tucker cores up to MaxGibbsCore entries, ALS
// above; SGD with a privacy plug-in.
func TestDefaultSolverTucker(t *testing.T) {
	for _, tc := range []struct {
		kind  decomposition.Kind
		ranks []int
		s     *Settings
		want  Solver
	}{
		{decomposition.CP, []int{10}, nil, SolverGibbs},
		{decomposition.Tucker, []int{10, 10, 10}, nil, SolverGibbs},
		{decomposition.Tucker, []int{10, 10, 10}, &Settings{}, SolverGibbs},
		{decomposition.Tucker, []int{13, 13, 12}, nil, SolverALS},
		{decomposition.Tucker, []int{13, 13, 12}, &Settings{Threads: 1}, SolverALS},
		{decomposition.Tucker, []int{13, 13, 12}, &Settings{Solver: SolverSGD}, SolverSGD},
		{decomposition.Tucker, []int{10, 10, 10}, &Settings{Privacy: &recorder{}}, SolverSGD},
		{decomposition.Tucker, []int{13, 13, 12}, &Settings{Privacy: &recorder{}}, SolverSGD},
	} {
		m := newModel(t, tc.kind, []int{20, 20, 20}, tc.ranks, true)
		if got := tc.s.resolvedForModel(m).Solver; got != tc.want {
			t.Errorf("%s %v %+v: solver %v, want %v", tc.kind, tc.ranks, tc.s, got, tc.want)
		}
	}
}

// TestCholUpperRows: the blocked, row-ordered Cholesky of the core's
// system gives cholUpper's factor (sizes that are and are not multiples of
// the block, above and below the size split over workers), and reports a
// matrix that is not positive definite.
func TestCholUpperRows(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 3))
	g := &gibbsTrainer{alsTrainer: &alsTrainer{threads: 2}}
	for _, n := range []int{1, 6, 257, 302} {
		B := make([]float64, n*n)
		for i := range B {
			B[i] = r.NormFloat64()
		}
		A := make([]float64, n*n) // B B^T + I
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				s := 0.0
				for k := 0; k < n; k++ {
					s += B[i*n+k] * B[j*n+k]
				}
				A[i*n+j] = s
			}
			A[i*n+i]++
		}
		want := append([]float64(nil), A...)
		if !g.cholUpperRows(A, n) || !cholUpper(want, n) {
			t.Fatalf("n %d: not positive definite", n)
		}
		for i := 0; i < n; i++ {
			for j := i; j < n; j++ {
				if d := math.Abs(A[i*n+j] - want[i*n+j]); d > 1e-9*(1+math.Abs(want[i*n+j])) {
					t.Fatalf("n %d: U[%d,%d] = %g, cholUpper %g", n, i, j, A[i*n+j], want[i*n+j])
				}
			}
		}
	}
	if A := []float64{1, 2, 2, 1}; g.cholUpperRows(A, 2) {
		t.Error("indefinite matrix accepted")
	}
}
