package completion

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/perturb"
)

// TestInputConverges is issue 25's convergence check for input
// perturbation at its default solver: the solver is post-processing of the
// noisy values, so the default is the non-private one (the Gibbs
// sampler), and at epsilon 100 on a planted low-rank log (1,500 users, 150
// items, 45,000 ratings, rank 3 plus biases, noise 0.5) the private model
// scores within 2% of the non-private default model of the same rank on a
// held-out part, and at epsilon 10 it closes at least half the gap between
// the bias-only model and it. With SGD (the earlier default) the same runs
// score at the bias-only level (SGD's 60 epochs of its default step do not
// reach the factors here, non-private or not).
func TestInputConverges(t *testing.T) {
	if raceEnabled {
		t.Skip("tens of seconds under the race detector; .ci/run runs it without (the accuracy-target step)")
	}
	if testing.Short() {
		t.Skip("short mode")
	}
	train, test := plantedConvergenceLog(t)
	const lo, hi = plantedLo, plantedHi
	const R = 3
	fit := func(p Privacy) (float64, *Result) {
		m, err := decomposition.NewModel(decomposition.CP, train.Dims, []int{R}, true)
		if err != nil {
			t.Fatal(err)
		}
		m.ClampLo, m.ClampHi = lo, hi
		res, err := Train(train, nil, m, &Settings{Threads: 2, Privacy: p}, rand.NewPCG(1, 1), nil)
		if err != nil {
			t.Fatal(err)
		}
		return RMSE(m, test, 2), res
	}
	ref, _ := fit(nil)
	bias := biasOnlyRMSE(train, test, lo, hi)
	for _, eps := range []float64{10, 100} {
		p, err := NewInputPerturbation(&PrivateOptions{Epsilon: eps, RatingMin: lo, RatingMax: hi, Noise: perturb.SeededNoise(2)})
		if err != nil {
			t.Fatal(err)
		}
		got, res := fit(p)
		if res.Settings.Solver != SolverGibbs || res.Privacy == nil || res.Privacy.Mode != "input" || res.Privacy.Epsilon > eps {
			t.Fatalf("epsilon %g: solver %v, report %+v", eps, res.Settings.Solver, res.Privacy)
		}
		t.Logf("epsilon %g: input %.4f; non-private default %.4f; bias-only %.4f", eps, got, ref, bias)
		if eps == 100 && got > 1.02*ref {
			t.Errorf("epsilon 100: input %.4f, more than 2%% above the non-private default model, %.4f", got, ref)
		}
		if got > bias-0.5*(bias-ref) {
			t.Errorf("epsilon %g: input %.4f closes less than half the gap between the bias-only model %.4f and the non-private model %.4f", eps, got, bias, ref)
		}
	}
}

// TestInputCoversPairBiases: input perturbation on a time log trains by
// the Gibbs sampler, which also fits pair biases; the report names them
// among the covered parameters.
func TestInputCoversPairBiases(t *testing.T) {
	t.Parallel()
	st := privStore([]int{60, 40, 5}, 3000, 4)
	o := baseOpts()
	o.Epsilon = 20
	p, err := NewInputPerturbation(&o)
	if err != nil {
		t.Fatal(err)
	}
	m := privModel(t, decomposition.CP, st.Dims, 2, true, 1, 1)
	res, err := Train(st, nil, m, &Settings{Threads: 1, Epochs: 8, Privacy: p}, rand.NewPCG(1, 2), nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Settings.Solver != SolverGibbs || len(m.Pairs) == 0 {
		t.Fatalf("solver %v, %d pair biases", res.Settings.Solver, len(m.Pairs))
	}
	found := false
	for _, c := range res.Privacy.Covered {
		found = found || strings.HasPrefix(c, "pair biases")
	}
	if !found {
		t.Fatalf("covered %q: the pair biases are released and not named", res.Privacy.Covered)
	}
}
