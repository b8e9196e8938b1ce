package pipeline

import (
	"context"
	"flag"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	beamlog "github.com/apache/beam/sdks/v2/go/pkg/beam/log"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/dprec/dprec/completion"
	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
)

func TestMain(m *testing.M) {
	beamlog.LogLevel = "warn"
	ptest.MainWithDefault(m, "prism")
}

var mlSweeps = flag.Int("ml.sweeps", 2, "sweeps of TestTrainEqualsSingleMachineML")

// mlSmall is MovieLens ml-latest-small (100,836 ratings), outside the repo.
const mlSmall = "../../../shared/data/ml-latest-small/ratings.csv"

// singleMachine trains completion's ALS on path as dprec train
// --solver als --time-unit none --validation 0 --seed seed does.
func singleMachine(t testing.TB, path string, rank int, seed uint64, s completion.Settings) *decomposition.Model {
	t.Helper()
	st, _, err := data.Load(path, data.LoadOptions{Builder: data.BuilderOptions{TimeUnit: data.TimeNone}})
	if err != nil {
		t.Fatal(err)
	}
	m, err := decomposition.NewModel(decomposition.CP, st.Dims, []int{rank}, true)
	if err != nil {
		t.Fatal(err)
	}
	s.Solver = completion.SolverALS
	res, err := completion.Train(st, nil, m, &s, rand.NewPCG(seed, SeedStream), nil)
	if err != nil {
		t.Fatal(err)
	}
	secs := 0.0
	for _, r := range res.History {
		secs += r.Seconds
	}
	t.Logf("single machine: %d sweeps, %.3f s per sweep (threads %d)", len(res.History), secs/float64(len(res.History)), res.Settings.Threads)
	return m
}

// maxRelDiff is the largest |a-b| / max(|a|, |b|, 1e-300) over every
// parameter (mean, factors, biases).
func maxRelDiff(a, b *decomposition.Model) float64 {
	worst := 0.0
	cmp := func(x, y []float64) {
		for i := range x {
			d := math.Abs(x[i] - y[i])
			if d == 0 {
				continue
			}
			worst = max(worst, d/max(math.Abs(x[i]), math.Abs(y[i]), 1e-300))
		}
	}
	cmp([]float64{a.Mean}, []float64{b.Mean})
	for k := range a.Factors {
		cmp(a.Factors[k], b.Factors[k])
	}
	for k := range a.Bias {
		cmp(a.Bias[k], b.Bias[k])
	}
	return worst
}

func checkEquivalent(t *testing.T, path string, rank int, seed uint64, sweeps int) {
	want := singleMachine(t, path, rank, seed, completion.Settings{Epochs: sweeps})
	res, err := Train(context.Background(), TrainOptions{Data: path, Rank: rank, Seed: seed,
		Settings: completion.Settings{Epochs: sweeps}, Work: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	got := res.File.Model
	if got.Dims[0] != want.Dims[0] || got.Dims[1] != want.Dims[1] {
		t.Fatalf("dims %v, single machine %v", got.Dims, want.Dims)
	}
	d := maxRelDiff(got, want)
	t.Logf("%s: %d sweeps rank %d: max relative difference %.3g; prepare %v, half-sweeps %v", filepath.Base(path), sweeps, rank, d, res.Prepare, res.HalfSweeps)
	if d > 1e-9 {
		t.Fatalf("max relative difference %.3g > 1e-9", d)
	}
}

func TestTrainEqualsSingleMachineML(t *testing.T) {
	if _, err := os.Stat(mlSmall); err != nil {
		t.Skip("ml-latest-small not present")
	}
	checkEquivalent(t, mlSmall, 10, 7, *mlSweeps)
}

func loadTSV(t testing.TB, path string) *data.Store {
	t.Helper()
	st, _, err := data.Load(path, data.LoadOptions{Builder: data.BuilderOptions{TimeUnit: data.TimeNone}})
	if err != nil {
		t.Fatal(err)
	}
	return st
}
