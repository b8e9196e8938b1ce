package completion

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/internal/stattest"
	"github.com/dprec/dprec/perturb"
)

// lowRankStore returns n distinct random cells of a dims-shaped tensor whose
// values are a rank-r CP tensor with N(0,1) factors (plus offset), and the
// same for a disjoint test set of nTest cells.
func lowRankStore(dims []int, r, n, nTest int, offset float64, seed uint64) (train, test *data.Store) {
	rng := rand.New(rand.NewPCG(seed, 2))
	f := make([][]float64, len(dims))
	for m, d := range dims {
		f[m] = make([]float64, d*r)
		for i := range f[m] {
			f[m][i] = rng.NormFloat64()
		}
	}
	seen := map[[3]int32]bool{}
	mk := func(n int) *data.Store {
		s := &data.Store{Dims: append([]int(nil), dims...), Idx: make([][]int32, len(dims))}
		for len(s.Val) < n {
			var c [3]int32
			for m, d := range dims {
				c[m] = int32(rng.IntN(d))
			}
			if seen[c] {
				continue
			}
			seen[c] = true
			v := offset
			for t := 0; t < r; t++ {
				p := 1.0
				for m := range dims {
					p *= f[m][int(c[m])*r+t]
				}
				v += p
			}
			for m := range dims {
				s.Idx[m] = append(s.Idx[m], c[m])
			}
			s.Val = append(s.Val, v)
		}
		return s
	}
	return mk(n), mk(nTest)
}

func newModel(t testing.TB, kind decomposition.Kind, dims, ranks []int, bias bool) *decomposition.Model {
	t.Helper()
	m, err := decomposition.NewModel(kind, dims, ranks, bias)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func modelsEqual(a, b *decomposition.Model) bool {
	for i := range a.Factors {
		if !slices.Equal(a.Factors[i], b.Factors[i]) {
			return false
		}
	}
	for i := range a.Bias {
		if !slices.Equal(a.Bias[i], b.Bias[i]) {
			return false
		}
	}
	return slices.Equal(a.Core, b.Core) && a.Mean == b.Mean
}

var trainCases = []struct {
	name  string
	kind  decomposition.Kind
	dims  []int
	ranks []int
	bias  bool
}{
	{"cp2", decomposition.CP, []int{30, 25}, []int{3}, false},
	{"cp2bias", decomposition.CP, []int{30, 25}, []int{3}, true},
	{"cp3", decomposition.CP, []int{15, 12, 10}, []int{3}, false},
	{"cp3bias", decomposition.CP, []int{15, 12, 10}, []int{3}, true},
	{"tucker2", decomposition.Tucker, []int{30, 25}, []int{3, 2}, true},
	{"tucker3", decomposition.Tucker, []int{15, 12, 10}, []int{3, 3, 2}, false},
	{"tucker3bias", decomposition.Tucker, []int{15, 12, 10}, []int{3, 3, 2}, true},
}

// TestTrainDeterministic: the same seed and thread count give bit-identical
// models, for 1 and several threads (run under -race, this also checks the
// stratified schedule is free of data races).
func TestTrainDeterministic(t *testing.T) {
	for _, tc := range trainCases {
		for _, threads := range []int{1, 3} {
			train, valid := lowRankStore(tc.dims, 2, 600, 100, 0, 1)
			var models []*decomposition.Model
			var hist [][]EpochRecord
			for run := 0; run < 2; run++ {
				m := newModel(t, tc.kind, tc.dims, tc.ranks, tc.bias)
				res, err := Train(train, valid, m, &Settings{Epochs: 4, Threads: threads, Patience: -1}, rand.NewPCG(5, 6), nil)
				if err != nil {
					t.Fatalf("%s threads %d: %v", tc.name, threads, err)
				}
				models = append(models, m)
				hist = append(hist, res.History)
			}
			if !modelsEqual(models[0], models[1]) {
				t.Errorf("%s threads %d: two runs with one seed differ", tc.name, threads)
			}
			for e := range hist[0] {
				if hist[0][e].TrainLoss != hist[1][e].TrainLoss || hist[0][e].ValidRMSE != hist[1][e].ValidRMSE {
					t.Errorf("%s threads %d: epoch %d records differ", tc.name, threads, e+1)
				}
			}
			m := newModel(t, tc.kind, tc.dims, tc.ranks, tc.bias)
			if _, err := Train(train, valid, m, &Settings{Epochs: 4, Threads: threads, Patience: -1}, rand.NewPCG(5, 7), nil); err != nil {
				t.Fatal(err)
			}
			if modelsEqual(m, models[0]) {
				t.Errorf("%s threads %d: a different seed gave the same model", tc.name, threads)
			}
		}
	}
}

// TestTrainFits: on noiseless low-rank data SGD drives the held-out RMSE far
// below the data's standard deviation (1 for the rank-1 product of N(0,1)
// factors, ~1.4 at rank 2), for every kind, order and thread count.
func TestTrainFits(t *testing.T) {
	for _, tc := range trainCases {
		for _, threads := range []int{1, 2} {
			train, test := lowRankStore(tc.dims, 1, 3*len(tc.dims)*80, 200, 3, 9)
			m := newModel(t, tc.kind, tc.dims, tc.ranks, tc.bias)
			s := &Settings{Solver: SolverSGD, Epochs: 200, Threads: threads, LearningRate: 0.02, Decay: 0.01, Reg: 1e-4, RegCore: 1e-6, InitScale: 0.5}
			res, err := Train(train, nil, m, s, rand.NewPCG(1, 2), nil)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			first, last := res.History[0].TrainRMSE, res.History[len(res.History)-1].TrainRMSE
			got := RMSE(m, test, 1)
			// 0.3 is far below the data's standard deviation (1 to 1.4) while
			// leaving room for the draw of initial values and block layout.
			if !(last < first/5) || got > 0.3 {
				t.Errorf("%s threads %d: train RMSE %.3f -> %.3f, test RMSE %.3f (want < 0.3)", tc.name, threads, first, last, got)
			}
		}
	}
}

// TestFastPathMatchesGeneric: the specialised CP kernels and the generic
// kernel (taken whenever a gradient transform is installed) compute the
// same updates up to rounding.
func TestFastPathMatchesGeneric(t *testing.T) {
	for _, tc := range trainCases[:4] {
		train, _ := lowRankStore(tc.dims, 2, 500, 1, 1, 4)
		a := newModel(t, tc.kind, tc.dims, tc.ranks, tc.bias)
		b := newModel(t, tc.kind, tc.dims, tc.ranks, tc.bias)
		s := Settings{Solver: SolverSGD, Epochs: 5, Threads: 2}
		if _, err := Train(train, nil, a, &s, rand.NewPCG(3, 3), nil); err != nil {
			t.Fatal(err)
		}
		s.Privacy = &recorder{identity: true}
		if _, err := Train(train, nil, b, &s, rand.NewPCG(3, 3), nil); err != nil {
			t.Fatal(err)
		}
		for mo := range a.Factors {
			for i, v := range a.Factors[mo] {
				if math.Abs(v-b.Factors[mo][i]) > 1e-9 {
					t.Fatalf("%s: factor %d[%d]: fast %g, generic %g", tc.name, mo, i, v, b.Factors[mo][i])
				}
			}
		}
	}
}

// recorder is a Privacy plug-in that records the calls the trainer makes.
type recorder struct {
	identity  bool    // transform leaves gradients unchanged
	zero      bool    // transform zeroes the data gradients
	setInput  float64 // PerturbInput replaces every value by this when != 0
	calls     []string
	transform []*countingTransform
}

type countingTransform struct {
	r    *recorder
	n    int
	bad  int
	zero bool
}

func (c *countingTransform) Transform(g *EntryGrad) {
	c.n++
	if len(g.Factor) != len(g.Idx) || g.Factor[0] == nil {
		c.bad++
	}
	if c.zero {
		for _, f := range g.Factor {
			clear(f)
		}
		clear(g.Core)
		clear(g.Bias)
	}
}

func (r *recorder) Plan(train *data.Store, s *Settings) error {
	r.calls = append(r.calls, "plan")
	if s.Epochs <= 0 || s.Reg < 0 || s.Threads <= 0 {
		return errors.New("settings not resolved")
	}
	return nil
}

func (r *recorder) PerturbInput(vals []float64, train *data.Store) error {
	r.calls = append(r.calls, "input")
	if &vals[0] == &train.Val[0] {
		return errors.New("PerturbInput got the store's own values")
	}
	if r.setInput != 0 {
		for i := range vals {
			vals[i] = r.setInput
		}
	}
	return nil
}

func (r *recorder) GradientTransform(w int) GradientTransform {
	r.calls = append(r.calls, "transform")
	if !r.identity && !r.zero {
		return nil
	}
	c := &countingTransform{r: r, zero: r.zero}
	r.transform = append(r.transform, c)
	return c
}

func (r *recorder) PerturbOutput(m *decomposition.Model, train *data.Store) error {
	r.calls = append(r.calls, "output")
	return nil
}

func (r *recorder) Report() *perturb.Report {
	r.calls = append(r.calls, "report")
	return &perturb.Report{Mode: "test"}
}

func TestPrivacyPlugPoints(t *testing.T) {
	dims := []int{12, 10, 8}
	train, _ := lowRankStore(dims, 2, 300, 1, 0, 3)
	orig := append([]float64(nil), train.Val...)

	r := &recorder{identity: true}
	m := newModel(t, decomposition.Tucker, dims, []int{2, 2, 2}, true)
	res, err := Train(train, nil, m, &Settings{Epochs: 3, Threads: 2, Privacy: r}, rand.NewPCG(1, 1), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"plan", "input", "transform", "transform", "output", "report"}
	if !slices.Equal(r.calls, want) {
		t.Errorf("calls %v, want %v", r.calls, want)
	}
	total := 0
	for _, c := range r.transform {
		total += c.n
		if c.bad != 0 {
			t.Errorf("transform saw %d malformed gradients", c.bad)
		}
	}
	if total != 3*train.NNZ() {
		t.Errorf("transform called %d times, want %d (every entry of 3 epochs)", total, 3*train.NNZ())
	}
	if res.Privacy == nil || res.Privacy.Mode != "test" {
		t.Errorf("result does not carry the plug-in's report: %+v", res.Privacy)
	}
	if !slices.Equal(train.Val, orig) {
		t.Error("training modified the store's values")
	}

	// Input perturbation: the trainer fits the values PerturbInput leaves.
	r = &recorder{setInput: 7}
	m = newModel(t, decomposition.CP, dims, []int{2}, true)
	if _, err := Train(train, nil, m, &Settings{Epochs: 2, Threads: 1, Privacy: r}, rand.NewPCG(1, 1), nil); err != nil {
		t.Fatal(err)
	}
	if m.Mean != 7 {
		t.Errorf("mean %g after input perturbation to 7", m.Mean)
	}

	// A transform that zeroes every data gradient leaves only the
	// regulariser: factors shrink and biases stay at 0.
	r = &recorder{zero: true}
	m = newModel(t, decomposition.CP, dims, []int{2}, true)
	init := newModel(t, decomposition.CP, dims, []int{2}, true)
	if _, err := Train(train, nil, init, &Settings{Epochs: 1, Threads: 1, LearningRate: 1e-12}, rand.NewPCG(1, 1), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := Train(train, nil, m, &Settings{Epochs: 2, Threads: 1, Privacy: r}, rand.NewPCG(1, 1), nil); err != nil {
		t.Fatal(err)
	}
	for _, b := range m.Bias {
		for _, v := range b {
			if v != 0 {
				t.Fatalf("bias %g moved with zero data gradients", v)
			}
		}
	}
	n0, n1 := 0.0, 0.0
	for mo := range m.Factors {
		for i, v := range m.Factors[mo] {
			n0 += init.Factors[mo][i] * init.Factors[mo][i]
			n1 += v * v
		}
	}
	if !(n1 < n0) {
		t.Errorf("factor norm %g did not shrink below %g under regularisation only", n1, n0)
	}
}

func TestTrainErrors(t *testing.T) {
	dims := []int{6, 5, 4}
	train, _ := lowRankStore(dims, 1, 40, 1, 0, 3)
	empty := &data.Store{Dims: dims, Idx: make([][]int32, 3)}
	nan := train.Subset([]int{0, 1, 2})
	nan.Val[1] = math.NaN()
	wrong := &data.Store{Dims: []int{6, 5}, Idx: make([][]int32, 2)}
	cases := []struct {
		name  string
		st    *data.Store
		valid *data.Store
		ranks []int
		s     Settings
		src   rand.Source
		check func(error) bool
	}{
		{"empty", empty, nil, []int{2}, Settings{}, rand.NewPCG(1, 1), func(e error) bool { return errors.Is(e, ErrEmpty) }},
		{"order", wrong, nil, []int{2}, Settings{}, rand.NewPCG(1, 1), isShape},
		{"valid order", train, wrong, []int{2}, Settings{}, rand.NewPCG(1, 1), isShape},
		{"lr<0", train, nil, []int{2}, Settings{LearningRate: -1}, rand.NewPCG(1, 1), isSettings},
		{"lr>1", train, nil, []int{2}, Settings{LearningRate: 2}, rand.NewPCG(1, 1), isSettings},
		{"lr NaN", train, nil, []int{2}, Settings{LearningRate: math.NaN()}, rand.NewPCG(1, 1), isSettings},
		{"epochs<0", train, nil, []int{2}, Settings{Epochs: -1}, rand.NewPCG(1, 1), isSettings},
		{"reg Inf", train, nil, []int{2}, Settings{Reg: math.Inf(1)}, rand.NewPCG(1, 1), isSettings},
		{"nil source", train, nil, []int{2}, Settings{}, nil, func(e error) bool { return e != nil }},
		{"NaN value", nan, nil, []int{2}, Settings{}, rand.NewPCG(1, 1), func(e error) bool { return e != nil }},
	}
	for _, tc := range cases {
		m := newModel(t, decomposition.CP, dims, tc.ranks, false)
		_, err := Train(tc.st, tc.valid, m, &tc.s, tc.src, nil)
		if !tc.check(err) {
			t.Errorf("%s: error %v", tc.name, err)
		}
	}
	// A Tucker rank above its mode's size is refused, naming the flag; a CP
	// rank above a mode's size is fine (CP ranks are not bounded by sizes).
	for _, solver := range []Solver{SolverSGD, SolverALS} {
		m := newModel(t, decomposition.Tucker, dims, []int{5, 5, 5}, false)
		_, err := Train(train, nil, m, &Settings{Solver: solver, Epochs: 1}, rand.NewPCG(1, 1), nil)
		if !isShape(err) || !strings.Contains(err.Error(), "--rank") {
			t.Errorf("%v: Tucker rank 5 on a mode of size 4: error %v", solver, err)
		}
		m = newModel(t, decomposition.CP, dims, []int{8}, true)
		if _, err := Train(train, nil, m, &Settings{Solver: solver, Epochs: 2}, rand.NewPCG(1, 1), nil); err != nil {
			t.Errorf("%v: CP rank 8 on modes of sizes %v: %v", solver, dims, err)
		}
	}
}

func isShape(e error) bool    { var s *ShapeError; return errors.As(e, &s) }
func isSettings(e error) bool { var s *SettingsError; return errors.As(e, &s) }

// TestDivergence: a step far too large makes SGD blow up; Train reports
// ErrDiverged and leaves a finite model.
func TestDivergence(t *testing.T) {
	dims := []int{10, 10, 10}
	train, _ := lowRankStore(dims, 3, 400, 1, 0, 3)
	for i := range train.Val {
		train.Val[i] *= 1e3
	}
	m := newModel(t, decomposition.CP, dims, []int{3}, true)
	_, err := Train(train, nil, m, &Settings{Solver: SolverSGD, Epochs: 50, LearningRate: 1, Decay: -1, Reg: -1, InitScale: 1}, rand.NewPCG(1, 1), nil)
	var d *ErrDiverged
	if !errors.As(err, &d) {
		t.Fatalf("error %v, want ErrDiverged", err)
	}
	if !modelFinite(m) {
		t.Fatal("diverged training left a non-finite model")
	}
}

// TestEarlyStopping: the returned model is the best validation epoch's.
func TestEarlyStopping(t *testing.T) {
	dims := []int{20, 15, 10}
	train, valid := lowRankStore(dims, 2, 300, 100, 3, 8)
	// Noise on the training values makes a large model overfit.
	rng := rand.New(rand.NewPCG(1, 1))
	for i := range train.Val {
		train.Val[i] += rng.NormFloat64()
	}
	m := newModel(t, decomposition.CP, dims, []int{8}, true)
	res, err := Train(train, valid, m, &Settings{Solver: SolverSGD, Epochs: 300, Patience: 3, Reg: -1, LearningRate: 0.05, Decay: -1}, rand.NewPCG(2, 2), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !res.EarlyStopped || len(res.History) != res.BestEpoch+3 {
		t.Fatalf("early stopped %v after %d epochs, best %d", res.EarlyStopped, len(res.History), res.BestEpoch)
	}
	best := res.History[res.BestEpoch-1].ValidRMSE
	for _, r := range res.History {
		if r.ValidRMSE < best {
			t.Fatalf("epoch %d has validation RMSE %g below the best %g", r.Epoch, r.ValidRMSE, best)
		}
	}
	if got := RMSE(m, valid, 2); got != best {
		t.Fatalf("restored model has validation RMSE %g, best epoch had %g", got, best)
	}
}

// TestStrata: every block appears in exactly one stratum and the blocks of
// a stratum differ in every mode (the race-freedom argument).
func TestStrata(t *testing.T) {
	for _, order := range []int{2, 3} {
		for p := 1; p <= 4; p++ {
			L := &layout{order: order, p: p}
			nb := p * p
			if order == 3 {
				nb *= p
			}
			seen := make([]int, nb)
			for _, st := range L.strata() {
				used := make([]map[int]bool, order)
				for m := range used {
					used[m] = map[int]bool{}
				}
				for _, b := range st {
					seen[b]++
					for m := order - 1; m >= 0; m-- {
						c := b % p
						b /= p
						if used[m][c] {
							t.Fatalf("order %d p %d: stratum %v shares a block of mode %d", order, p, st, m)
						}
						used[m][c] = true
					}
				}
			}
			for b, c := range seen {
				if c != 1 {
					t.Fatalf("order %d p %d: block %d in %d strata", order, p, b, c)
				}
			}
		}
	}
}

// TestLayout: the bucketing keeps every observation exactly once,
// with its own value, inside the block its indices belong to.
func TestLayout(t *testing.T) {
	for _, dims := range [][]int{{37, 23}, {37, 23, 11}} {
		st, _ := lowRankStore(dims, 2, 700, 1, 0, 5)
		for e := range st.Val {
			st.Val[e] = float64(e) // identifies the observation
		}
		for _, p := range []int{1, 2, 3} {
			vals := append([]float64(nil), st.Val...)
			L, err := newLayout(st, vals, p, rand.New(rand.NewPCG(1, 1)))
			if err != nil {
				t.Fatal(err)
			}
			seen := make([]bool, st.NNZ())
			blockOfMode := make([][]map[int32]bool, len(dims)) // mode -> block -> indices
			for m := range dims {
				blockOfMode[m] = make([]map[int32]bool, p)
				for b := range blockOfMode[m] {
					blockOfMode[m][b] = map[int32]bool{}
				}
			}
			for b := 0; b+1 < len(L.start); b++ {
				for pos := L.start[b]; pos < L.start[b+1]; pos++ {
					e := int(L.vals[pos])
					if seen[e] {
						t.Fatalf("observation %d twice", e)
					}
					seen[e] = true
					bb := b
					for m := len(dims) - 1; m >= 0; m-- {
						i := int32((L.coords[pos] >> L.shift[m]) & L.mask[m])
						if i != st.Idx[m][e] {
							t.Fatalf("p %d: observation %d mode %d index %d, want %d", p, e, m, i, st.Idx[m][e])
						}
						blockOfMode[m][bb%p][i] = true
						bb /= p
					}
				}
			}
			for e, ok := range seen {
				if !ok {
					t.Fatalf("observation %d lost", e)
				}
			}
			// Each index lies in exactly one block of its mode.
			for m := range dims {
				for i := 0; i < dims[m]; i++ {
					n := 0
					for b := 0; b < p; b++ {
						if blockOfMode[m][b][int32(i)] {
							n++
						}
					}
					if n > 1 {
						t.Fatalf("p %d: index %d of mode %d in %d blocks", p, i, m, n)
					}
				}
			}
		}
	}
}

// TestLayoutShuffleUniform: with several sub-buckets per block, the
// position of an observation after newLayout's shuffle is uniform (chi-
// square over 3000 seeds) and two observations are equally likely in
// either order; a biased shuffle (for example one that kept sub-bucket
// order) fails.
func TestLayoutShuffleUniform(t *testing.T) {
	old := subBucketLen
	subBucketLen = 4
	defer func() { subBucketLen = old }()
	st, _ := lowRankStore([]int{40, 40}, 2, 24, 1, 0, 3)
	n := st.NNZ()
	for e := range st.Val {
		st.Val[e] = float64(e)
	}
	const runs = 3000
	pos := make([]int, n)
	before := 0
	for s := uint64(0); s < runs; s++ {
		L, err := newLayout(st, append([]float64(nil), st.Val...), 1, rand.New(rand.NewPCG(s, 7)))
		if err != nil {
			t.Fatal(err)
		}
		p0, p1 := -1, -1
		for q, v := range L.vals {
			switch v {
			case 0:
				p0 = q
			case 1:
				p1 = q
			}
		}
		pos[p0]++
		if p0 < p1 {
			before++
		}
	}
	exp := make([]float64, n)
	for i := range exp {
		exp[i] = float64(runs) / float64(n)
	}
	chi := stattest.ChiSquare(pos, exp)
	// n-1 degrees of freedom; the 0.999 quantile of chi-square(23) is 49.7.
	if chi > 49.7 {
		t.Errorf("position of observation 0 not uniform: chi-square %.1f over %d positions %v", chi, n, pos)
	}
	if f := float64(before) / runs; math.Abs(f-0.5) > 0.04 {
		t.Errorf("observation 0 before 1 in %.3f of runs, want 0.5", f)
	}
}
