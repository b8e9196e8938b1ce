package completionexp

import (
	"fmt"
	"math/rand/v2"
	"runtime"

	"github.com/dprec/dprec/completion"
	"github.com/dprec/dprec/decomposition"
)

// SpeedSize is one tensor shape of CompletionSpeed.
type SpeedSize struct {
	Name string
	Dims []int
	NNZ  int
}

// SpeedConfig configures CompletionSpeed. Zero fields take the defaults
// noted.
type SpeedConfig struct {
	// Sizes to time; nil means the two peer shapes of bench/README.md:
	// MovieLens-100K-shaped (943 x 1682 x 212, 100,000 entries) and the 10M
	// synthetic tensor (200,000 x 50,000 x 500).
	Sizes []SpeedSize
	// Kind is the model kind; empty means CP.
	Kind decomposition.Kind
	// Rank is the CP rank (and each Tucker rank); zero means 10.
	Rank int
	// Threads lists the worker counts to time; nil means {1, GOMAXPROCS}.
	Threads []int
	// Epochs timed per run (zero means 5); the table reports their mean.
	Epochs int
	// Bias trains bias terms too.
	Bias bool
}

// SpeedRow is one line of the CompletionSpeed table.
type SpeedRow struct {
	Size             string  `json:"size"`
	Dims             []int   `json:"dims"`
	NNZ              int     `json:"nnz"`
	Kind             string  `json:"kind"`
	Rank             int     `json:"rank"`
	Threads          int     `json:"threads"`
	Epochs           int     `json:"epochs"`
	SecondsPerEpoch  float64 `json:"seconds_per_epoch"`
	EntriesPerSecond float64 `json:"entries_per_second"`
	TrainRMSE        float64 `json:"train_rmse"`
}

// DefaultSpeedSizes are the peer benchmark shapes.
var DefaultSpeedSizes = []SpeedSize{
	{Name: "ml100k-shaped", Dims: []int{943, 1682, 212}, NNZ: 100_000},
	{Name: "synth-10M", Dims: []int{200_000, 50_000, 500}, NNZ: 10_000_000},
}

// CompletionSpeed times SGD epochs (the stratified pass over all entries,
// with the running training loss it yields; no validation) on UniformCP
// tensors of the configured sizes, for every thread count. It uses the
// peer settings step 0.01, reg 0.005 (bench/README.md).
func CompletionSpeed(cfg SpeedConfig, src rand.Source, progress func(SpeedRow)) ([]SpeedRow, error) {
	if cfg.Sizes == nil {
		cfg.Sizes = DefaultSpeedSizes
	}
	if cfg.Kind == "" {
		cfg.Kind = decomposition.CP
	}
	if cfg.Rank == 0 {
		cfg.Rank = 10
	}
	if cfg.Threads == nil {
		cfg.Threads = []int{1, runtime.GOMAXPROCS(0)}
		if cfg.Threads[1] == 1 {
			cfg.Threads = cfg.Threads[:1]
		}
	}
	if cfg.Epochs == 0 {
		cfg.Epochs = 5
	}
	rng := rand.New(src)
	var out []SpeedRow
	for _, sz := range cfg.Sizes {
		st, err := completion.UniformCP(sz.Dims, sz.NNZ, 10, 0.1, rand.NewPCG(rng.Uint64(), rng.Uint64()))
		if err != nil {
			return nil, err
		}
		for _, th := range cfg.Threads {
			ranks := make([]int, len(sz.Dims))
			for i := range ranks {
				ranks[i] = cfg.Rank
			}
			m, err := decomposition.NewModel(cfg.Kind, sz.Dims, ranks, cfg.Bias)
			if err != nil {
				return nil, err
			}
			s := &completion.Settings{Epochs: cfg.Epochs, Threads: th, LearningRate: 0.01, Reg: 0.005, Decay: -1}
			res, err := completion.Train(st, nil, m, s, rand.NewPCG(rng.Uint64(), rng.Uint64()), nil)
			if err != nil {
				return nil, fmt.Errorf("completion: speed run %s threads %d: %w", sz.Name, th, err)
			}
			sec := 0.0
			for _, r := range res.History {
				sec += r.Seconds
			}
			sec /= float64(len(res.History))
			row := SpeedRow{Size: sz.Name, Dims: sz.Dims, NNZ: st.NNZ(), Kind: string(cfg.Kind), Rank: cfg.Rank,
				Threads: th, Epochs: len(res.History), SecondsPerEpoch: sec, EntriesPerSecond: float64(st.NNZ()) / sec,
				TrainRMSE: res.History[len(res.History)-1].TrainRMSE}
			out = append(out, row)
			if progress != nil {
				progress(row)
			}
		}
	}
	return out, nil
}
