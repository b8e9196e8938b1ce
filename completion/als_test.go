package completion

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestALSFits: on noiseless low-rank data ALS drives the held-out RMSE far
// below the data's standard deviation, for every kind, order and thread
// count, with time rows free (RegTime off) as the data's are random.
func TestALSFits(t *testing.T) {
	for _, tc := range trainCases {
		for _, threads := range []int{1, 2} {
			train, test := lowRankStore(tc.dims, 1, 3*len(tc.dims)*80, 200, 3, 9)
			m := newModel(t, tc.kind, tc.dims, tc.ranks, tc.bias)
			s := &Settings{Solver: SolverALS, Epochs: 50, Threads: threads, Reg: 1e-3, RegBias: 1e-3, RegTime: 1e-3, RegCore: 1e-4}
			res, err := Train(train, nil, m, s, rand.NewPCG(1, 2), nil)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			first, last := res.History[0].TrainRMSE, res.History[len(res.History)-1].TrainRMSE
			got := RMSE(m, test, 1)
			if !(last < first/5) || got > 0.3 {
				t.Errorf("%s threads %d: train RMSE %.3f -> %.3f, test RMSE %.3f (want < 0.3)", tc.name, threads, first, last, got)
			}
		}
	}
}

// TestSolversReproducible: ALS and Gibbs give bit-identical models (CP and
// Tucker) for the same seed and thread count, and the sampler a different
// one for another seed.
func TestSolversReproducible(t *testing.T) {
	for _, solver := range []Solver{SolverALS, SolverGibbs} {
		for _, threads := range []int{1, 3} {
			for _, k := range []int{2, 3, 5, 6} { // cp3, cp3bias, tucker3, tucker3bias
				tc := trainCases[k]
				train, valid := lowRankStore(tc.dims, 2, 600, 100, 0, 1)
				run := func(seed uint64) *Result {
					m := newModel(t, tc.kind, tc.dims, tc.ranks, tc.bias)
					res, err := Train(train, valid, m, &Settings{Solver: solver, Epochs: 6, Threads: threads, Patience: -1}, rand.NewPCG(seed, 6), nil)
					if err != nil {
						t.Fatalf("%v %s: %v", solver, tc.name, err)
					}
					return res
				}
				a, b, c := run(5), run(5), run(9)
				if !modelsEqual(a.Model, b.Model) {
					t.Errorf("%v %s threads %d: two runs with one seed differ", solver, tc.name, threads)
				}
				if solver == SolverGibbs && modelsEqual(a.Model, c.Model) {
					t.Errorf("%v %s threads %d: another seed gave the same samples", solver, tc.name, threads)
				}
			}
		}
	}
}

// TestGibbsFits: the sampler's posterior-mean model recovers noiseless
// low-rank CP data, with and without biases.
func TestGibbsFits(t *testing.T) {
	for _, tc := range trainCases[:4] {
		train, test := lowRankStore(tc.dims, 1, 3*len(tc.dims)*80, 200, 3, 9)
		m := newModel(t, tc.kind, tc.dims, tc.ranks, tc.bias)
		// The data's time factors are random: the time rows get the learned
		// hyperprior (RegTime off) instead of the all-ones anchor.
		res, err := Train(train, nil, m, &Settings{Solver: SolverGibbs, Epochs: 80, Threads: 2, RegTime: -1}, rand.NewPCG(1, 2), nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := RMSE(m, test, 1); got > 0.3 || res.BestEpoch != 80 {
			t.Errorf("%s: test RMSE %.3f (want < 0.3), best epoch %d", tc.name, got, res.BestEpoch)
		}
	}
}

// TestSamplers checks the Gamma and Wishart draws against their means:
// E Gamma(k, 1) = k, E Wishart(W, nu) = nu W.
func TestSamplers(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, k := range []float64{0.3, 1, 2.5, 40} {
		const n = 40000
		s := 0.0
		for i := 0; i < n; i++ {
			s += sampleGamma(k, r)
		}
		// The standard error of the mean is sqrt(k/n); allow 5 of them.
		if m := s / n; math.Abs(m-k) > 5*math.Sqrt(k/n) {
			t.Errorf("Gamma(%g) mean %.4f", k, m)
		}
	}
	// W = inverse of winv; E Lambda = nu W.
	winv := []float64{2, 0.5, 0.5, 1}
	W := invertSPD(winv, 2)
	nu := 5.0
	sum := make([]float64, 4)
	const n = 20000
	for i := 0; i < n; i++ {
		for j, v := range sampleWishartInv(winv, 2, nu, r) {
			sum[j] += v / n
		}
	}
	for j := range sum {
		if want := nu * W[j]; math.Abs(sum[j]-want) > 0.05*nu {
			t.Errorf("Wishart mean[%d] %.4f, want %.4f", j, sum[j], want)
		}
	}
}

// TestALSSweepSSE: the training SSE a sweep returns (for CP models, summed
// from the last mode's normal equations without a pass over the entries)
// equals the SSE recomputed entry by entry, with biases and pair biases.
func TestALSSweepSSE(t *testing.T) {
	for _, tc := range trainCases {
		train, _ := lowRankStore(tc.dims, 1, 3*len(tc.dims)*80, 10, 0.3, 9)
		m := newModel(t, tc.kind, tc.dims, tc.ranks, tc.bias)
		cfg := (&Settings{Solver: SolverALS, Threads: 2, Reg: 0.05, RegBias: 0.1, RegTime: 0.05}).resolved()
		vals := append([]float64(nil), train.Val...)
		initModel(m, vals, &cfg, rand.New(rand.NewPCG(1, 2)))
		tr := newALSTrainer(m, train, vals, &cfg)
		for sweep := 0; sweep < 3; sweep++ {
			got, err := tr.sweep()
			if err != nil {
				t.Fatal(err)
			}
			want := tr.sse()
			if math.Abs(got-want) > 1e-9*want+1e-12 {
				t.Errorf("%s sweep %d: sweep SSE %.12g, recomputed %.12g", tc.name, sweep, got, want)
			}
		}
	}
}
