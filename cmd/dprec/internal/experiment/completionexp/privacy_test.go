package completionexp

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dprec/dprec/completion"
	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
)

// smallStore returns n distinct cells of a dims-shaped log with ratings
// on the half-star scale [1, 5] (a smooth pattern plus noise; a third of
// the cells in the first time bucket).
func smallStore(dims []int, n int, seed uint64) *data.Store {
	rng := rand.New(rand.NewPCG(seed, 99))
	s := &data.Store{Dims: append([]int(nil), dims...), Idx: make([][]int32, len(dims))}
	seen := map[[3]int32]bool{}
	last := len(dims) - 1
	for len(s.Val) < n {
		var c [3]int32
		for m, d := range dims {
			c[m] = int32(rng.IntN(d))
		}
		if rng.IntN(3) == 0 {
			c[last] = 0
		}
		if seen[c] {
			continue
		}
		seen[c] = true
		for m := range dims {
			s.Idx[m] = append(s.Idx[m], c[m])
		}
		v := 3 + math.Sin(float64(c[0]))*math.Cos(float64(c[1]))*2 + 0.3*rng.NormFloat64()
		s.Val = append(s.Val, math.Round(math.Min(5, math.Max(1, v))*2)/2)
	}
	return s
}

// TestPrivacyExperimentBillboardModes: the experiment runs the bias and
// als modes, scores them by fold-in and marks them covered.
func TestPrivacyExperimentBillboardModes(t *testing.T) {
	t.Parallel()
	ds := PrivacyExpDataset{Name: "small", Train: smallStore([]int{30, 20, 5}, 400, 31), Test: smallStore([]int{30, 20, 5}, 80, 32),
		RatingMin: 1, RatingMax: 5, Kind: decomposition.CP, Rank: 2, Bias: true, Settings: completion.Settings{Epochs: 2, Threads: 1}}
	rows, err := RunPrivacyExperiment(PrivacyExpConfig{Datasets: []PrivacyExpDataset{ds}, Modes: []string{ExpBias, ExpALS}, Epsilons: []float64{1}, Seeds: []uint64{1}, Delta: 1e-5}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 {
		t.Fatalf("%d rows", len(rows))
	}
	for _, r := range rows {
		if r.Err != "" || math.IsNaN(r.RMSE) || !(r.RMSE > 0) || !r.Covered {
			t.Errorf("row %+v", r)
		}
	}
}

// TestPrivacyExperimentUserUnit: with MaxRatingsPerUser the bias and als
// runs are at the user unit (add-remove, delta given, each user bounded
// to k) and still score by fold-in; a mode without a user unit is
// refused before anything runs.
func TestPrivacyExperimentUserUnit(t *testing.T) {
	t.Parallel()
	ds := PrivacyExpDataset{Name: "small", Train: smallStore([]int{30, 20, 5}, 400, 51), Test: smallStore([]int{30, 20, 5}, 80, 52),
		RatingMin: 1, RatingMax: 5, Kind: decomposition.CP, Rank: 2, Bias: true, Settings: completion.Settings{Epochs: 2, Threads: 1}}
	cfg := PrivacyExpConfig{Datasets: []PrivacyExpDataset{ds}, Modes: []string{ExpBias, ExpALS}, Epsilons: []float64{5}, Seeds: []uint64{1}, Delta: 1e-5, MaxRatingsPerUser: 4}
	rows, err := RunPrivacyExperiment(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 {
		t.Fatalf("%d rows", len(rows))
	}
	for _, r := range rows {
		if r.Err != "" || math.IsNaN(r.RMSE) || !(r.RMSE > 0) || !r.Covered || r.Unit != string(completion.UnitUser) || r.Delta != 1e-5 {
			t.Errorf("row %+v", r)
		}
	}
	entry, err := RunPrivacyExperiment(PrivacyExpConfig{Datasets: []PrivacyExpDataset{ds}, Modes: []string{ExpBias}, Epsilons: []float64{5}, Seeds: []uint64{1}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if entry[0].Unit != string(completion.UnitEntry) || entry[0].RMSE == rows[0].RMSE {
		t.Errorf("entry unit row %+v against the user unit's %+v", entry[0], rows[0])
	}
	cfg.Modes = []string{ExpBias, ExpInput}
	if _, err := RunPrivacyExperiment(cfg, nil); err == nil {
		t.Error("input at the user unit: no error")
	}
}

// TestPrivacyExperimentModes: every SGD mode runs on a small set-up and
// gives a finite RMSE; non-private runs once per seed.
func TestPrivacyExperimentModes(t *testing.T) {
	t.Parallel()
	ds := PrivacyExpDataset{Name: "small", Train: smallStore([]int{30, 20, 5}, 400, 41), Test: smallStore([]int{30, 20, 5}, 80, 42),
		RatingMin: 1, RatingMax: 5, Kind: decomposition.CP, Rank: 2, Bias: true, Settings: completion.Settings{Epochs: 2, Threads: 1}}
	modes := []string{ExpNone, ExpInput, ExpGradientC, ExpGradientAll, ExpOutput}
	rows, err := RunPrivacyExperiment(PrivacyExpConfig{Datasets: []PrivacyExpDataset{ds}, Modes: modes, Epsilons: []float64{1, 10}, Seeds: []uint64{1}, Delta: 1e-5}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := 1 + 2*(len(modes)-1); len(rows) != want {
		t.Fatalf("%d rows, want %d", len(rows), want)
	}
	for _, r := range rows {
		if r.Err == "" && (math.IsNaN(r.RMSE) || !(r.RMSE > 0)) {
			t.Errorf("row %+v", r)
		}
	}
	if _, err := RunPrivacyExperiment(PrivacyExpConfig{Datasets: []PrivacyExpDataset{ds}, Modes: []string{"bogus"}, Epsilons: []float64{1}, Seeds: []uint64{1}}, nil); err == nil {
		t.Error("unknown mode accepted")
	}
}

// TestSyntheticSeed001: the set-up's stores are disjoint, of the asked
// sizes, and the declared range is symmetric.
func TestSyntheticSeed001(t *testing.T) {
	tr, te, lo, hi, err := SyntheticSeed001(decomposition.CP, []int{10, 8, 6}, 2, 1, 0.5, 0.2, rand.NewPCG(1, 1))
	if err != nil {
		t.Fatal(err)
	}
	if tr.NNZ() != 240 || te.NNZ() != 96 || lo != -hi || !(hi > 0) {
		t.Fatalf("train %d, test %d, range [%g, %g]", tr.NNZ(), te.NNZ(), lo, hi)
	}
	cells := map[[3]int32]bool{}
	for e := range tr.Val {
		cells[[3]int32{tr.Idx[0][e], tr.Idx[1][e], tr.Idx[2][e]}] = true
	}
	for e := range te.Val {
		if cells[[3]int32{te.Idx[0][e], te.Idx[1][e], te.Idx[2][e]}] {
			t.Fatal("a test cell is also a training cell")
		}
	}
	if _, _, _, _, err := SyntheticSeed001(decomposition.CP, []int{10, 8, 6}, 2, 1, 0.9, 0.2, rand.NewPCG(1, 1)); err == nil {
		t.Error("observed + test > 1 accepted")
	}
}

func TestSummarizePrivacy(t *testing.T) {
	rows := []PrivacyExpRow{
		{Dataset: "b", Mode: ExpInput, Epsilon: 1, RMSE: 1, NDCG: 0.1},
		{Dataset: "b", Mode: ExpInput, Epsilon: 1, RMSE: 3, NDCG: 0.3},
		{Dataset: "b", Mode: ExpInput, Epsilon: 1, RMSE: math.NaN(), NDCG: math.NaN(), Err: "diverged"},
		{Dataset: "a", Mode: ExpNone, RMSE: 2, NDCG: math.NaN()},
	}
	got := SummarizePrivacy(rows)
	if len(got) != 2 || got[0].Dataset != "a" || got[0].SD != 0 || got[0].Runs != 1 {
		t.Fatalf("summary %+v", got)
	}
	// Mean of 1 and 3 is 2, sample SD sqrt(2); the failed run is counted.
	if b := got[1]; b.Mean != 2 || math.Abs(b.SD-math.Sqrt2) > 1e-12 || b.Runs != 3 || b.Failed != 1 || math.Abs(b.NDCGMean-0.2) > 1e-12 {
		t.Errorf("point %+v", b)
	}
	if !math.IsNaN(got[0].NDCGMean) {
		t.Errorf("NDCG of a point without ranking: %v", got[0].NDCGMean)
	}
}

func TestPrivateSchedule(t *testing.T) {
	f := PrivateSchedule(completion.Settings{LearningRate: 0.01, Reg: 0.05}, 0.5, 1)
	if s := f(1); s.LearningRate != 0.005 || s.Reg != 1 {
		t.Errorf("epsilon 1: lr %g reg %g", s.LearningRate, s.Reg)
	}
	if s := f(10); s.LearningRate != 0.01 || s.Reg != 0.05 {
		t.Errorf("epsilon 10: lr %g reg %g", s.LearningRate, s.Reg)
	}
}

// plantedDataset is a planted low-rank log (rank 3 with biases, whole
// stars, uniform popularity) split 90/10, with ranking metrics on.
func plantedDataset(t *testing.T) PrivacyExpDataset {
	t.Helper()
	st, _, err := data.Synth(data.SynthOptions{Users: 300, Items: 120, Times: 4, Ratings: 12000, Rank: 3, Bias: true, Noise: 0.3, Scale: "1-5"}, rand.NewPCG(5, 5))
	if err != nil {
		t.Fatal(err)
	}
	tr, te := SplitStore(st, 0.1, rand.NewPCG(6, 6))
	return PrivacyExpDataset{Name: "planted", Train: tr, Test: te, RatingMin: 1, RatingMax: 5, Kind: decomposition.CP, Rank: 3, Bias: true,
		Settings: completion.Settings{Epochs: 30, Threads: 2}, Ranking: &Ranking{Threshold: DefaultThreshold(1, 5), Threads: 2}}
}

// TestPrivacyExperimentNDCG: on a planted low-rank log every run and
// reference row has an NDCG@10 in [0, 1] (never left at zero), the
// non-private model's lists beat the most-popular list, and the bias
// run's private most-popular row follows it, equal to the non-private
// list at entry level (public counts).
func TestPrivacyExperimentNDCG(t *testing.T) {
	t.Parallel()
	ds := plantedDataset(t)
	rows, err := RunPrivacyExperiment(PrivacyExpConfig{Datasets: []PrivacyExpDataset{ds}, Modes: []string{ExpNone, ExpBias, ExpALS}, Epsilons: []float64{1, 100}, Seeds: []uint64{1}, Delta: 1e-5}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	modes := map[string]int{}
	for _, r := range rows {
		if r.Err != "" || !(r.NDCG > 0 && r.NDCG <= 1) {
			t.Errorf("row %+v: NDCG not in (0, 1]", r)
		}
		got[fmt.Sprintf("%s@%g", r.Mode, r.Epsilon)] = r.NDCG
		modes[r.Mode]++
	}
	// most-popular, lists-positions, none, bias x2, most-popular-private
	// x2, als x2.
	if len(rows) != 9 || modes[ExpPopular] != 1 || modes[ExpPositions] != 1 || modes[ExpPopularPrivate] != 2 {
		t.Fatalf("%d rows: %v", len(rows), modes)
	}
	pop, none := got[ExpPopular+"@0"], got[ExpNone+"@0"]
	if !(none > 1.5*pop) {
		t.Errorf("non-private model NDCG %.4f does not beat most-popular %.4f", none, pop)
	}
	for _, e := range []string{"@1", "@100"} {
		if p := got[ExpPopularPrivate+e]; p != pop {
			t.Errorf("private most-popular%s %.4f, want the non-private %.4f (public counts at entry level)", e, p, pop)
		}
	}
	if !(got[ExpALS+"@100"] > pop) {
		t.Errorf("private als at epsilon 100: NDCG %.4f, most-popular %.4f", got[ExpALS+"@100"], pop)
	}
	t.Logf("NDCG@10: %v", got)
	// Rows without ranking keep NDCG NaN.
	ds.Ranking = nil
	rows, err = RunPrivacyExperiment(PrivacyExpConfig{Datasets: []PrivacyExpDataset{ds}, Modes: []string{ExpBias}, Epsilons: []float64{1}, Seeds: []uint64{1}}, nil)
	if err != nil || len(rows) != 1 || !math.IsNaN(rows[0].NDCG) {
		t.Fatalf("%v %+v", err, rows)
	}
}

// TestPrivacyExperimentImplicit: the implicit modes score lists only (RMSE
// NaN, NDCG in (0, 1]), the private one at the user unit (add-remove, the
// report covering its release), its lists approaching the non-private
// reference's at a large epsilon; without a user bound it is refused.
func TestPrivacyExperimentImplicit(t *testing.T) {
	t.Parallel()
	ds := plantedDataset(t)
	cfg := PrivacyExpConfig{Datasets: []PrivacyExpDataset{ds}, Modes: []string{ExpNoneImplicit, ExpImplicit}, Epsilons: []float64{300}, Seeds: []uint64{1}, Delta: 1e-5}
	if _, err := RunPrivacyExperiment(cfg, nil); err == nil {
		t.Fatal("the implicit mode ran without a user bound")
	}
	cfg.MaxRatingsPerUser = 60
	rows, err := RunPrivacyExperiment(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]PrivacyExpRow{}
	for _, r := range rows {
		got[r.Mode] = r
	}
	np, p := got[ExpNoneImplicit], got[ExpImplicit]
	for _, r := range []PrivacyExpRow{np, p} {
		if r.Err != "" || !math.IsNaN(r.RMSE) || !(r.NDCG > 0 && r.NDCG <= 1) || !r.Covered {
			t.Fatalf("row %+v", r)
		}
	}
	if p.Unit != string(completion.UnitUser) || p.Delta != 1e-5 {
		t.Errorf("private row unit %q delta %g", p.Unit, p.Delta)
	}
	if p.NDCG < 0.8*np.NDCG {
		t.Errorf("private implicit at epsilon 300: NDCG %.4f, non-private %.4f", p.NDCG, np.NDCG)
	}
	t.Logf("NDCG@10: private %.4f, non-private %.4f, most-popular %.4f", p.NDCG, np.NDCG, got[ExpPopular].NDCG)
}
