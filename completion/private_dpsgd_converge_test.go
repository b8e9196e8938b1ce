package completion

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/perturb"
)

// TestDPSGDConverges is the convergence check of issue 25 for minibatch
// DP-SGD: on a planted low-rank log (1,500 users, 150 items, 45,000
// ratings, rank 3 plus biases, noise 0.5, values clamped to the public
// range [0.5, 5]), DP-SGD at epsilon 100 (zero-out, delta 1e-5, the
// default rules, 30 epochs) scores within 2% of the better of two
// non-private models of the same rank trained with the same settings on a
// held-out part: SGD (which after 30 epochs of its default step is still
// near the bias-only level here) and ALS (converged); and it closes at
// least half the gap between the bias-only model and that reference (the
// factors learn). Before issue 25 DP-SGD scored at SGD's level (0.78 against
// ALS's 0.59).
func TestDPSGDConverges(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode")
	}
	train, test := plantedConvergenceLog(t)
	const lo, hi = plantedLo, plantedHi
	const R, epochs = 3, 30
	fit := func(p Privacy, solver Solver) float64 {
		m, err := decomposition.NewModel(decomposition.CP, train.Dims, []int{R}, true)
		if err != nil {
			t.Fatal(err)
		}
		m.ClampLo, m.ClampHi = lo, hi
		s := &Settings{Threads: 2, Solver: solver, Epochs: epochs, Patience: -1, Privacy: p}
		if _, err := Train(train, nil, m, s, rand.NewPCG(1, 1), nil); err != nil {
			t.Fatal(err)
		}
		return RMSE(m, test, 2)
	}
	sgd, als := fit(nil, SolverSGD), fit(nil, SolverALS)
	ref := math.Min(sgd, als)
	p, err := NewGradientPerturbation(&PrivateOptions{Epsilon: 100, Delta: 1e-5, RatingMin: lo, RatingMax: hi, Noise: perturb.SeededNoise(2)})
	if err != nil {
		t.Fatal(err)
	}
	got := fit(p, SolverSGD)
	bias := biasOnlyRMSE(train, test, lo, hi)
	t.Logf("non-private SGD %.4f, ALS %.4f; DP-SGD at epsilon 100 %.4f; bias-only %.4f", sgd, als, got, bias)
	if got > 1.02*ref {
		t.Errorf("epsilon 100: DP-SGD %.4f, more than 2%% above the better non-private model of the same rank, %.4f", got, ref)
	}
	if got > bias-0.5*(bias-ref) {
		t.Errorf("epsilon 100: DP-SGD %.4f closes less than half the gap between the bias-only model %.4f and the non-private model %.4f", got, bias, ref)
	}
}

// The public range of plantedConvergenceLog.
const plantedLo, plantedHi = 0.5, 5.0

// plantedConvergenceLog is the planted low-rank log of the convergence
// checks (1,500 users, 150 items, 45,000 ratings, rank 3 plus biases,
// noise 0.5, values clamped to [plantedLo, plantedHi]) split into a
// training part and a held-out part of 4,500 ratings.
func plantedConvergenceLog(t *testing.T) (train, test *data.Store) {
	t.Helper()
	st, _, err := data.Synth(data.SynthOptions{Users: 1500, Items: 150, Ratings: 45000, Rank: 3, Bias: true, Mean: 3.5, Noise: 0.5, Skew: 0.3}, rand.NewPCG(3, 4))
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range st.Val {
		st.Val[i] = math.Max(plantedLo, math.Min(plantedHi, v))
	}
	perm := rand.New(rand.NewPCG(5, 6)).Perm(st.NNZ())
	return st.Subset(perm[4500:]), st.Subset(perm[:4500])
}

// biasOnlyRMSE fits mu + b_u + b_i (ridge 5 pseudo-observations, 20
// alternating exact updates) on train and scores test, clamped to [lo, hi].
func biasOnlyRMSE(train, test *data.Store, lo, hi float64) float64 {
	const reg = 5
	mu := 0.0
	for _, v := range train.Val {
		mu += v
	}
	mu /= float64(train.NNZ())
	b := [2][]float64{make([]float64, train.Dims[0]), make([]float64, train.Dims[1])}
	var n [2][]float64
	for mo := range n {
		n[mo] = make([]float64, train.Dims[mo])
		for _, i := range train.Idx[mo] {
			n[mo][i]++
		}
	}
	for range 20 {
		for mo := range b {
			s := make([]float64, len(b[mo]))
			for e, v := range train.Val {
				s[train.Idx[mo][e]] += v - mu - b[1-mo][train.Idx[1-mo][e]]
			}
			for i := range s {
				b[mo][i] = s[i] / (n[mo][i] + reg)
			}
		}
	}
	sse := 0.0
	for e, v := range test.Val {
		p := math.Max(lo, math.Min(hi, mu+b[0][test.Idx[0][e]]+b[1][test.Idx[1][e]]))
		sse += (v - p) * (v - p)
	}
	return math.Sqrt(sse / float64(test.NNZ()))
}

// TestDPSGDBillboard: at epsilon 3 (noise multiplier 8.7, at least
// DPSGDBillboardNoise) minibatch DP-SGD releases a billboard model (user
// rows and biases zero, the report says so and covers no user parameter);
// at epsilon 1 (23.5, at least DPSGDFallbackNoise) it releases the bias
// mode's model at the whole budget (the free columns, value-change
// relation), whose users folded in score within 0.01 of the private bias
// model's (with its own noisy user rows DP-SGD scored 0.03-0.28 worse than
// it on the validation logs); at epsilon 100 it keeps its user rows.
func TestDPSGDBillboard(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode")
	}
	train, test := plantedConvergenceLog(t)
	const lo, hi = plantedLo, plantedHi
	run := func(eps float64) (*decomposition.Model, *perturb.Report) {
		p, err := NewGradientPerturbation(&PrivateOptions{Epsilon: eps, Delta: 1e-5, RatingMin: lo, RatingMax: hi, Noise: perturb.SeededNoise(2)})
		if err != nil {
			t.Fatal(err)
		}
		m, err := decomposition.NewModel(decomposition.CP, train.Dims, []int{3}, true)
		if err != nil {
			t.Fatal(err)
		}
		m.ClampLo, m.ClampHi = lo, hi
		if _, err := Train(train, nil, m, &Settings{Threads: 2, Solver: SolverSGD, Epochs: 30, Patience: -1, Privacy: p}, rand.NewPCG(1, 1), nil); err != nil {
			t.Fatal(err)
		}
		return m, p.Report()
	}
	noUsers := func(eps float64, m *decomposition.Model, rep *perturb.Report) {
		t.Helper()
		if !rep.Billboard {
			t.Fatalf("epsilon %g: not a billboard model: %q", eps, rep.Notes)
		}
		for i, x := range m.Factors[0] {
			if x != 0 {
				t.Fatalf("epsilon %g: user row entry %d = %v released", eps, i, x)
			}
		}
		for i, x := range m.Bias[0] {
			if x != 0 {
				t.Fatalf("epsilon %g: user bias %d = %v released", eps, i, x)
			}
		}
		if slices.Contains(rep.Covered, "A (users)") {
			t.Errorf("epsilon %g: covered %q", eps, rep.Covered)
		}
	}
	m, rep := run(3)
	noUsers(3, m, rep)
	if rep.Composition == "basic (bias-only fallback)" || !slices.Contains(rep.Covered, "B (items)") {
		t.Errorf("epsilon 3: the steps did not run: composition %q, covered %q", rep.Composition, rep.Covered)
	}
	m, rep = run(1)
	noUsers(1, m, rep)
	if rep.Composition != "basic (bias-only fallback)" || rep.RelationKind != perturb.RelationValueChange || rep.Epsilon > 1+1e-9 {
		t.Errorf("epsilon 1: not the bias-only fallback: composition %q, relation %q, epsilon %v", rep.Composition, rep.RelationKind, rep.Epsilon)
	}
	got, err := FoldInRMSE(m, train, test, BillboardFoldFor(rep))
	if err != nil {
		t.Fatal(err)
	}
	bm, err := decomposition.NewModel(decomposition.CP, train.Dims, []int{1}, true)
	if err != nil {
		t.Fatal(err)
	}
	brep, err := TrainPrivateBias(train, bm, &PrivateOptions{Epsilon: 1, Delta: 1e-5, RatingMin: lo, RatingMax: hi, Noise: perturb.SeededNoise(2)})
	if err != nil {
		t.Fatal(err)
	}
	bias, err := FoldInRMSE(bm, train, test, BillboardFoldFor(brep))
	if err != nil {
		t.Fatal(err)
	}
	// The release is the bias mode's at the whole budget, draw for draw:
	// the warm start drawn before the fallback was chosen is unused.
	if m.Mean != bm.Mean || !slices.Equal(m.Bias[1], bm.Bias[1]) {
		t.Errorf("epsilon 1: the fallback's mean %v and item biases differ from the bias mode's release at the same seed (mean %v)", m.Mean, bm.Mean)
	}
	t.Logf("epsilon 1: DP-SGD (fallback) folded in %.4f, private bias model %.4f", got, bias)
	if got > bias+0.01 {
		t.Errorf("epsilon 1: DP-SGD %.4f, more than 0.01 above the private bias model's %.4f", got, bias)
	}
	m, rep = run(100)
	if rep.Billboard || !slices.Contains(rep.Covered, "A (users)") {
		t.Fatalf("epsilon 100: billboard %v, covered %q", rep.Billboard, rep.Covered)
	}
	nz := 0
	for _, x := range m.Factors[0] {
		if x != 0 {
			nz++
		}
	}
	if nz == 0 {
		t.Error("epsilon 100: no user row released")
	}
}
