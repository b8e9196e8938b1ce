package completion

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
)

// mlPath is the shared MovieLens log (100,836 ratings); tests skip without it.
const mlPath = "../../shared/data/ml-latest-small/ratings.csv"

// movieLensSplit loads ml-latest-small with weekly time buckets and splits
// it at random (seed 42) into 85.5% train, 4.5% validation (early stopping)
// and 10% test, i.e. a 90/10 train/test split whose train part lends 5% to
// validation.
func movieLensSplit(t testing.TB, unit data.TimeUnit) (train, valid, test *data.Store) {
	t.Helper()
	if _, err := os.Stat(mlPath); err != nil {
		t.Skipf("MovieLens log not available at %s", mlPath)
	}
	st, _, err := data.Load(mlPath, data.LoadOptions{Builder: data.BuilderOptions{TimeUnit: unit}})
	if err != nil {
		t.Fatal(err)
	}
	perm := rand.New(rand.NewPCG(42, 0)).Perm(st.NNZ())
	nTest := st.NNZ() / 10
	nValid := (st.NNZ() - nTest) / 20
	return st.Subset(perm[nTest+nValid:]), st.Subset(perm[nTest : nTest+nValid]), st.Subset(perm[:nTest])
}

func trainMovieLens(t testing.TB, kind decomposition.Kind, ranks []int, s *Settings, train, valid, test *data.Store) (float64, *Result) {
	t.Helper()
	m, err := decomposition.NewModel(kind, train.Dims, ranks, true)
	if err != nil {
		t.Fatal(err)
	}
	m.ClampLo, m.ClampHi = 0.5, 5
	res, err := Train(train, valid, m, s, rand.NewPCG(1, 1), nil)
	if err != nil {
		t.Fatal(err)
	}
	return RMSE(m, test, 2), res
}

// TestMovieLensTarget is the accuracy target of issue 9: the default model
// (CP rank 10 with biases, user x movie x day, default solver and
// settings), trained on the 90% training part of ml-latest-small, reaches
// test RMSE <= 0.830 (Surprise's KNNBaseline: 0.834). The settings were
// chosen on the validation part only (TestALSTune); this is the one test
// figure. Skipped in -short mode and under the race detector (.ci/run runs
// it without).
func TestMovieLensTarget(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("short mode or race detector")
	}
	train, valid, test := movieLensSplit(t, data.TimeDay)
	all := data.Concat(train, valid)
	got, res := trainMovieLens(t, decomposition.CP, []int{10}, &Settings{Threads: 2}, all, nil, test)
	t.Logf("defaults (%v): test RMSE %.4f after %d sweeps", res.Settings.Solver, got, len(res.History))
	if got > 0.830 {
		t.Errorf("test RMSE %.4f above the 0.830 target", got)
	}
}

// TestMovieLensTable prints the RMSE table of docs/models.md (CP and Tucker, ranks
// 5/10/20). It takes minutes, so it runs only with DPREC_ML_TABLE=1:
//
//	DPREC_ML_TABLE=1 go test -run TestMovieLensTable -v ./completion/
//
// DPREC_ML_SETTINGS="lr,decay,reg,init,regcore[,corelr]" overrides the defaults
// (for tuning).
func TestMovieLensTable(t *testing.T) {
	if os.Getenv("DPREC_ML_TABLE") == "" {
		t.Skip("set DPREC_ML_TABLE=1 to run (minutes)")
	}
	s := Settings{Threads: 2}
	if v := os.Getenv("DPREC_ML_SETTINGS"); v != "" {
		f := strings.Split(v, ",")
		p := func(i int) float64 {
			x, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				t.Fatal(err)
			}
			return x
		}
		s.LearningRate, s.Decay, s.Reg, s.InitScale, s.RegCore = p(0), p(1), p(2), p(3), p(4)
		if len(f) > 5 {
			s.CoreLearningRate = p(5)
		}
	}
	train, valid, test := movieLensSplit(t, data.TimeWeek)
	kinds := strings.Split(os.Getenv("DPREC_ML_KINDS"), ",")
	if kinds[0] == "" {
		kinds = []string{"cp", "tucker"}
	}
	ranksList := []int{5, 10, 20}
	if v := os.Getenv("DPREC_ML_RANKS"); v != "" {
		ranksList = nil
		for _, f := range strings.Split(v, ",") {
			r, _ := strconv.Atoi(f)
			ranksList = append(ranksList, r)
		}
	}
	for _, k := range kinds {
		for _, r := range ranksList {
			ranks := []int{r}
			if k == "tucker" {
				ranks = []int{r, r, r}
			}
			got, res := trainMovieLens(t, decomposition.Kind(k), ranks, &s, train, valid, test)
			sec := 0.0
			for _, h := range res.History {
				sec += h.Seconds
			}
			fmt.Printf("%s rank %d: test RMSE %.4f (valid %.4f), %d epochs, best %d, %.3f s/epoch\n", k, r, got,
				res.History[res.BestEpoch-1].ValidRMSE, len(res.History), res.BestEpoch, sec/float64(len(res.History)))
		}
	}
}

// TestMovieLensSolverTable prints the solver x model x time-unit table of
// docs/models.md: each setting trained with the defaults on the 85.5% training part,
// early stopping on the 4.5% validation part, then refit on both (as
// "dprec train" does) and scored once on the 10% test part. It also runs
// the per-user time split (each user's latest 10% held out). Minutes (the
// Tucker Gibbs rows alone, about 8 minutes on two shared cores:
// DPREC_ML_SOLVERS=tucker:gibbs DPREC_ML_TIMESPLIT=1):
//
//	DPREC_ML_SOLVERS=1 go test -run TestMovieLensSolverTable -v -timeout 2h ./completion/
func TestMovieLensSolverTable(t *testing.T) {
	if os.Getenv("DPREC_ML_SOLVERS") == "" {
		t.Skip("set DPREC_ML_SOLVERS=1 to run (tens of minutes)")
	}
	type cfg struct {
		kind   decomposition.Kind
		solver Solver
	}
	cfgs := []cfg{{decomposition.CP, SolverGibbs}, {decomposition.CP, SolverALS}, {decomposition.CP, SolverSGD},
		{decomposition.Tucker, SolverGibbs}, {decomposition.Tucker, SolverALS}, {decomposition.Tucker, SolverSGD}}
	if v := os.Getenv("DPREC_ML_SOLVERS"); v != "1" {
		// e.g. "cp:gibbs,tucker:als"
		cfgs = nil
		for _, f := range strings.Split(v, ",") {
			k, s, _ := strings.Cut(f, ":")
			sv, err := ParseSolver(s)
			if err != nil {
				t.Fatal(err)
			}
			cfgs = append(cfgs, cfg{decomposition.Kind(k), sv})
		}
	}
	units := []data.TimeUnit{data.TimeNone, data.TimeWeek, data.TimeDay}
	if v := os.Getenv("DPREC_ML_UNITS"); v != "" {
		units = nil
		for _, f := range strings.Split(v, ",") {
			u, err := data.ParseTimeUnit(f)
			if err != nil {
				t.Fatal(err)
			}
			units = append(units, u)
		}
	}
	splits := []string{"random"}
	if os.Getenv("DPREC_ML_TIMESPLIT") != "" {
		splits = append(splits, "time")
	}
	for _, split := range splits {
		for _, unit := range units {
			train, valid, test := movieLensSplit(t, unit)
			if split == "time" {
				train, valid, test = movieLensTimeSplit(t, unit)
			}
			for _, c := range cfgs {
				got := refitRMSE(t, c.kind, c.solver, train, valid, test)
				t.Logf("TABLE split=%s unit=%s model=%s solver=%s test RMSE %.4f", split, unit, c.kind, c.solver, got)
			}
		}
	}
}

// movieLensTimeSplit holds out each user's latest 10% of ratings as the
// test part and, of the rest, each user's latest 5% for validation.
func movieLensTimeSplit(t testing.TB, unit data.TimeUnit) (train, valid, test *data.Store) {
	t.Helper()
	if _, err := os.Stat(mlPath); err != nil {
		t.Skipf("MovieLens log not available at %s", mlPath)
	}
	st, _, err := data.Load(mlPath, data.LoadOptions{Builder: data.BuilderOptions{TimeUnit: unit, KeepTimestamps: true}})
	if err != nil {
		t.Fatal(err)
	}
	sp, err := data.TimeSplit(st, 0.1)
	if err != nil {
		t.Fatal(err)
	}
	rest, test := sp.Stores(st)
	sp2, err := data.TimeSplit(rest, 0.05)
	if err != nil {
		t.Fatal(err)
	}
	train, valid = sp2.Stores(rest)
	return train, valid, test
}

// refitRMSE trains with the defaults of the solver (early stopping on
// valid), refits on train+valid for the chosen number of epochs and returns
// the test RMSE.
func refitRMSE(t testing.TB, kind decomposition.Kind, solver Solver, train, valid, test *data.Store) float64 {
	t.Helper()
	s := &Settings{Threads: 2, Solver: solver}
	ranks := make([]int, train.Order())
	for i := range ranks {
		ranks[i] = 10
	}
	m, err := decomposition.NewModel(kind, train.Dims, ranks, true)
	if err != nil {
		t.Fatal(err)
	}
	m.ClampLo, m.ClampHi = 0.5, 5
	res, err := Train(train, valid, m, s, rand.NewPCG(1, 1), nil)
	if err != nil {
		t.Fatal(err)
	}
	s2 := res.Settings
	s2.Epochs, s2.Patience = res.BestEpoch, -1
	all := data.Concat(train, valid)
	m2, _ := decomposition.NewModel(kind, all.Dims, ranks, true)
	m2.ClampLo, m2.ClampHi = 0.5, 5
	if _, err := Train(all, nil, m2, &s2, rand.NewPCG(1, 1), nil); err != nil {
		t.Fatal(err)
	}
	return RMSE(m2, test, 2)
}
