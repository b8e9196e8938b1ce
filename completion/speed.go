package completion

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
)

// UniformCP returns a synthetic order-2 or order-3 store of nnz entries at
// uniformly drawn coordinates with values
//
//	3 + sum_r prod_m f_m[i_m, r] + noise * N(0, 1),  f ~ N(0, 1/rank),
//
// the shape of the peer benchmarks (bench/README.md). Coordinates are drawn
// independently, so a cell may repeat (about nnz^2 / (2 prod dims) times:
// 10 for 10M entries of 200,000 x 50,000 x 500), which does not matter for
// timing. It allocates the store only (the factors are mode-sized).
func UniformCP(dims []int, nnz, rank int, noise float64, src rand.Source) (*data.Store, error) {
	if len(dims) < 2 || len(dims) > 3 || nnz <= 0 || rank <= 0 || math.IsNaN(noise) || noise < 0 {
		return nil, fmt.Errorf("completion: UniformCP(dims %v, nnz %d, rank %d, noise %g): want order 2 or 3 and positive sizes", dims, nnz, rank, noise)
	}
	for _, d := range dims {
		if d <= 0 || d > math.MaxInt32 {
			return nil, fmt.Errorf("completion: UniformCP: mode size %d out of range", d)
		}
	}
	rng := rand.New(src)
	sd := 1 / math.Sqrt(float64(rank))
	f := make([][]float64, len(dims))
	for m, d := range dims {
		f[m] = make([]float64, d*rank)
		for i := range f[m] {
			f[m][i] = sd * rng.NormFloat64()
		}
	}
	s := &data.Store{Dims: append([]int(nil), dims...), Idx: make([][]int32, len(dims)), Val: make([]float64, nnz)}
	for m := range dims {
		s.Idx[m] = make([]int32, nnz)
	}
	prod := make([]float64, rank)
	for e := 0; e < nnz; e++ {
		for r := range prod {
			prod[r] = 1
		}
		for m, d := range dims {
			i := int32(rng.Uint64N(uint64(d)))
			s.Idx[m][e] = i
			row := f[m][int(i)*rank : int(i)*rank+rank]
			for r := range prod {
				prod[r] *= row[r]
			}
		}
		v := 3.0
		for _, p := range prod {
			v += p
		}
		if noise > 0 {
			v += noise * rng.NormFloat64()
		}
		s.Val[e] = v
	}
	return s, nil
}

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
		st, err := UniformCP(sz.Dims, sz.NNZ, 10, 0.1, rand.NewPCG(rng.Uint64(), rng.Uint64()))
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
			s := &Settings{Epochs: cfg.Epochs, Threads: th, LearningRate: 0.01, Reg: 0.005, Decay: -1}
			res, err := Train(st, nil, m, s, rand.NewPCG(rng.Uint64(), rng.Uint64()), nil)
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
