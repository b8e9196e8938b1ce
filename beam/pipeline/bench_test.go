package pipeline

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/dprec/dprec/completion"
	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
)

// Sized benchmark families: one ALS sweep (two half-sweep pipelines) on
// Prism against one sweep of completion's ALS on the same log, in the same
// run. The prepare pipelines (scan and index) run once, outside the timer.
// Run with: go test ./pipeline -run '^$' -bench Sweep -benchtime 3x; Prism's
// parallelism follows GOMAXPROCS (-cpu 1,2). The 10^6 and 2x10^6 families
// need minutes and several GB on Prism (docs/scale-out.md has the figures
// and the commands that measured them with their peak memory).

func BenchmarkSweepPrism1e4(b *testing.B)  { benchSweep(b, 10_000, true) }
func BenchmarkSweepSingle1e4(b *testing.B) { benchSweep(b, 10_000, false) }
func BenchmarkSweepPrism1e5(b *testing.B)  { benchSweep(b, 100_000, true) }
func BenchmarkSweepSingle1e5(b *testing.B) { benchSweep(b, 100_000, false) }
func BenchmarkSweepPrism1e6(b *testing.B)  { benchSweep(b, 1_000_000, true) }
func BenchmarkSweepSingle1e6(b *testing.B) { benchSweep(b, 1_000_000, false) }
func BenchmarkSweepPrism2e6(b *testing.B)  { benchSweep(b, 2_000_000, true) }
func BenchmarkSweepSingle2e6(b *testing.B) { benchSweep(b, 2_000_000, false) }

func benchLog(b *testing.B, ratings int) string {
	b.Helper()
	st, _, err := data.Synth(data.SynthOptions{Users: ratings / 50, Items: ratings / 100, Ratings: ratings, Bias: true, Noise: 0.5, Scale: "0.5-5"},
		rand.NewPCG(1, 2))
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "ratings.csv")
	if err := data.Save(path, st, data.WriteOptions{}); err != nil {
		b.Fatal(err)
	}
	return path
}

func benchSweep(b *testing.B, ratings int, prism bool) {
	path := benchLog(b, ratings)
	const rank = 10
	if !prism {
		st, _, err := data.Load(path, data.LoadOptions{Builder: data.BuilderOptions{TimeUnit: data.TimeNone}})
		if err != nil {
			b.Fatal(err)
		}
		m, err := decomposition.NewModel(decomposition.CP, st.Dims, []int{rank}, true)
		if err != nil {
			b.Fatal(err)
		}
		s := completion.Settings{Solver: completion.SolverALS, Epochs: b.N}
		b.ResetTimer()
		if _, err := completion.Train(st, nil, m, &s, rand.NewPCG(1, SeedStream), nil); err != nil {
			b.Fatal(err)
		}
		return
	}
	ctx := context.Background()
	files, err := Expand(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	work := b.TempDir()
	prep, err := prepare(ctx, files, LoadSpec{}, work, 4, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	s := completion.Settings{Solver: completion.SolverALS}
	cfg := s.Resolved()
	cfg.Epochs = b.N
	m, err := decomposition.NewModel(decomposition.CP, []int{prep.dicts[0].Len(), prep.dicts[1].Len()}, []int{rank}, true)
	if err != nil {
		b.Fatal(err)
	}
	completion.InitModel(m, prep.counts.Sum/float64(prep.counts.Ratings), &cfg, rand.NewPCG(1, SeedStream))
	res := &TrainResult{}
	b.ResetTimer()
	if err := sweeps(ctx, m, prep, &cfg, TrainOptions{Shards: 4}, work, nil, res); err != nil {
		b.Fatal(err)
	}
}
