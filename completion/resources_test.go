package completion

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/perturb"
)

// TestTrainResourceGuards: settings that would panic or exhaust memory
// are errors before anything is allocated (issue 24 items 6 and 7): a
// thread count above MaxThreads (5,000 SGD threads panicked with
// "makeslice: len out of range" in newLayout; 100,000 hung minibatch
// DP-SGD), a thread count whose SGD stratification needs p^(order+1)
// counters beyond the machine's memory (1,024 threads on an order-3 log),
// a rank whose Gibbs or ALS normal equations do not fit (rank 100,000),
// and more epochs than MaxEpochs. Each is refused by the estimate, not by
// running into the limit.
func TestTrainResourceGuards(t *testing.T) {
	t.Parallel()
	st := privStore([]int{12, 9, 4}, 150, 1)
	gradient, err := NewGradientPerturbation(&PrivateOptions{Epsilon: 1, Delta: 1e-5, RatingMin: 1, RatingMax: 5, Noise: perturb.SeededNoise(1)})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		rank  int
		s     Settings
		field string // a *SettingsError on this field, else ErrTooLarge
	}{
		{"5000 SGD threads", 2, Settings{Solver: SolverSGD, Threads: 5000}, "Threads"},
		{"100000 DP-SGD threads", 2, Settings{Threads: 100000, Privacy: gradient}, "Threads"},
		{"1024 SGD threads, order 3", 2, Settings{Solver: SolverSGD, Threads: MaxThreads}, ""},
		{"rank 100000 Gibbs", 100000, Settings{Solver: SolverGibbs, Threads: 2}, ""},
		{"rank 100000 ALS", 100000, Settings{Solver: SolverALS, Threads: 1}, ""},
		{"2e6 epochs", 2, Settings{Solver: SolverSGD, Epochs: 2_000_000}, "Epochs"},
	} {
		m, err := decomposition.NewModel(decomposition.CP, st.Dims, []int{tc.rank}, true)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Train(st, nil, m, &tc.s, rand.NewPCG(1, 2), nil)
		var se *SettingsError
		switch {
		case tc.field != "" && (!errors.As(err, &se) || se.Field != tc.field):
			t.Errorf("%s: got %v, want a setting error on %s", tc.name, err, tc.field)
		case tc.field == "" && !errors.Is(err, ErrTooLarge):
			t.Errorf("%s: got %v, want ErrTooLarge", tc.name, err)
		}
	}
	// Within the limits, the same shapes train.
	m, _ := decomposition.NewModel(decomposition.CP, st.Dims, []int{2}, true)
	if _, err := Train(st, nil, m, &Settings{Solver: SolverSGD, Threads: 8, Epochs: 2}, rand.NewPCG(1, 2), nil); err != nil {
		t.Errorf("8 SGD threads: %v", err)
	}
}

// TestEstimateTrain: the estimates grow as the allocations do: SGD's
// stratification as p^(order+1) (16 p^4 bytes at order 3: the 460 MB of 64
// threads on a 5,000-rating log, 68 GiB at 256), minibatch DP-SGD's
// gradient copies as p, ALS and Gibbs as the rank squared per thread.
func TestEstimateTrain(t *testing.T) {
	t.Parallel()
	w := Workload{Kind: decomposition.CP, Dims: []int{600, 900, 60}, Ranks: []int{10}, Bias: true, NNZ: 5000,
		Settings: Settings{Solver: SolverSGD, Threads: 64}}
	e64 := EstimateTrain(w)
	if e64.Bytes < 16*64*64*64*64 || e64.Bytes > 600<<20 {
		t.Errorf("64 SGD threads, order 3: %g bytes", e64.Bytes)
	}
	w.Settings.Threads = 256
	if e := EstimateTrain(w); e.Bytes < 16*256*256*256*256.0 {
		t.Errorf("256 SGD threads, order 3: %g bytes", e.Bytes)
	}
	w.Mode, w.MinibatchDPSGD = "gradient", true
	e1 := EstimateTrain(Workload{Kind: w.Kind, Dims: w.Dims, Ranks: w.Ranks, Bias: true, NNZ: 5000, Settings: Settings{Threads: 1}, Mode: "gradient", MinibatchDPSGD: true})
	if e := EstimateTrain(w); e.Bytes < 50*e1.Bytes {
		t.Errorf("DP-SGD: 256 threads %g bytes, 1 thread %g", e.Bytes, e1.Bytes)
	}
	g := Workload{Kind: decomposition.CP, Dims: []int{600, 900}, Ranks: []int{2000}, Bias: true, NNZ: 5000,
		Settings: Settings{Solver: SolverGibbs, Threads: 2}}
	if e := EstimateTrain(g); e.Bytes < 2*2*2000*2000*8.0 || e.Flops < 200*1500*2000.0*2000*2000/3 {
		t.Errorf("Gibbs rank 2000: %g bytes, %g flops", e.Bytes, e.Flops)
	}
	// Input perturbation trains by the non-private default (Gibbs) unless
	// a solver is named: its estimate is the Gibbs sampler's.
	g.Settings.Solver = SolverDefault
	none, in := EstimateTrain(g), g
	in.Mode = "input"
	if e := EstimateTrain(in); e != none {
		t.Errorf("input at the default solver: %+v, the non-private default's %+v", e, none)
	}
}

// TestNewModelTooLarge: a Tucker model whose core overflows int (rank
// 100,000 on three modes) or whose parameters exceed MaxParams is an
// error, not a panic.
func TestNewModelTooLarge(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		kind  decomposition.Kind
		ranks []int
	}{
		{decomposition.Tucker, []int{100000, 100000, 100000}},
		{decomposition.Tucker, []int{3000, 3000, 3000}},
		{decomposition.Tucker, []int{3_000_000, 3_000_000, 3_000_000}},
		{decomposition.CP, []int{1 << 40}},
	} {
		if _, err := decomposition.NewModel(tc.kind, []int{10, 10, 10}, tc.ranks, false); err == nil {
			t.Errorf("%s ranks %v: no error", tc.kind, tc.ranks)
		}
	}
}

// TestTuneSizeGuards: more folds than ratings (tune --folds 100000 on
// 5,000 rows would run for hours) and a grid of more than MaxGridPoints
// combinations are refused before any training (issue 24 item 9).
func TestTuneSizeGuards(t *testing.T) {
	t.Parallel()
	st := privStore([]int{12, 9}, 60, 1)
	grid, err := ParseGrid("rank=1,2")
	if err != nil {
		t.Fatal(err)
	}
	var se *SettingsError
	_, err = Tune(st, &TuneConfig{Kind: decomposition.CP, Rank: 2, Grid: grid, Folds: 61}, rand.NewPCG(1, 1), nil)
	if !errors.As(err, &se) || se.Field != "Folds" {
		t.Errorf("61 folds of 60 ratings: %v", err)
	}
	var big []Param
	for _, name := range []string{"reg", "lr", "decay", "reg-bias", "init-scale", "reg-core"} {
		p := Param{Name: name}
		for v := 1; v <= 10; v++ {
			p.Values = append(p.Values, "0.0"+string(rune('0'+v%10)))
		}
		big = append(big, p)
	}
	_, err = Tune(st, &TuneConfig{Kind: decomposition.CP, Rank: 2, Grid: big, Random: 3}, rand.NewPCG(1, 1), nil)
	if !errors.As(err, &se) || se.Field != "Grid" {
		t.Errorf("a 10^6-point grid: %v", err)
	}
	if c := (TuneConfig{Grid: big, Random: 3, Folds: 5}); c.GridPoints() != 1e6 || c.Points() != 3 || c.Runs() != 15 {
		t.Errorf("grid %g points, %g scored, %g runs", c.GridPoints(), c.Points(), c.Runs())
	}
}

// TestImplicitThreadsLimit: TrainImplicit refuses more workers than
// MaxThreads.
func TestImplicitThreadsLimit(t *testing.T) {
	t.Parallel()
	st := implicitStore(10, 8, 40, 1)
	_, err := TrainImplicit(st, implicitModel(t, 10, 8, 2), &ImplicitSettings{Threads: MaxThreads + 1}, rand.NewPCG(1, 1), nil)
	var se *SettingsError
	if !errors.As(err, &se) || se.Field != "Threads" {
		t.Errorf("got %v", err)
	}
}
