package completion

import (
	"bufio"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
)

// benchFileStore reads the tensor of DPREC_BENCH_TSV (0-based "i j k value"
// lines, the .tsv that ../shared/bench/makedata writes beside SPLATT's .tns),
// for same-run comparisons against SPLATT on the identical file.
func benchFileStore(b *testing.B) *data.Store {
	path := os.Getenv("DPREC_BENCH_TSV")
	if path == "" {
		b.Skip("set DPREC_BENCH_TSV to a 0-based i j k value file")
	}
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	st := &data.Store{Dims: make([]int, 3), Idx: make([][]int32, 3)}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) != 4 {
			b.Fatalf("line %q: want 4 fields", sc.Text())
		}
		for m := 0; m < 3; m++ {
			v, err := strconv.Atoi(fs[m])
			if err != nil {
				b.Fatal(err)
			}
			st.Idx[m] = append(st.Idx[m], int32(v))
			st.Dims[m] = max(st.Dims[m], v+1)
		}
		v, err := strconv.ParseFloat(fs[3], 64)
		if err != nil {
			b.Fatal(err)
		}
		st.Val = append(st.Val, v)
	}
	if err := sc.Err(); err != nil {
		b.Fatal(err)
	}
	return st
}

// BenchmarkFileSGD times SGD epochs (CP rank 10, no biases, step 0.01 /
// reg 0.005 in SPLATT's units) on DPREC_BENCH_TSV.
func BenchmarkFileSGD(b *testing.B) {
	st := benchFileStore(b)
	m, err := decomposition.NewModel(decomposition.CP, st.Dims, []int{10}, false)
	if err != nil {
		b.Fatal(err)
	}
	cfg := (&Settings{Solver: SolverSGD, Threads: runtime.GOMAXPROCS(0), LearningRate: 0.005, Reg: 0.005}).resolved()
	rng := rand.New(rand.NewPCG(3, 4))
	initModel(m, st.Val, &cfg, rng)
	t, err := newTrainer(m, st, append([]float64(nil), st.Val...), &cfg, rng)
	if err != nil {
		b.Fatal(err)
	}
	cpu0 := cpuSeconds()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t.epoch(0.005, 0)
	}
	b.ReportMetric((cpuSeconds()-cpu0)/float64(b.N), "cpu-s/epoch")
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/epoch")
}

// BenchmarkFileALS times ALS sweeps (CP rank 10, no biases) on
// DPREC_BENCH_TSV.
func BenchmarkFileALS(b *testing.B) {
	st := benchFileStore(b)
	m, err := decomposition.NewModel(decomposition.CP, st.Dims, []int{10}, false)
	if err != nil {
		b.Fatal(err)
	}
	cfg := (&Settings{Solver: SolverALS, Threads: runtime.GOMAXPROCS(0), Reg: 0.01, RegTime: 0.01}).resolved()
	rng := rand.New(rand.NewPCG(3, 4))
	initModel(m, st.Val, &cfg, rng)
	t := newALSTrainer(m, st, st.Val, &cfg)
	cpu0 := cpuSeconds()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := t.sweep(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric((cpuSeconds()-cpu0)/float64(b.N), "cpu-s/epoch")
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/sweep")
}

// BenchmarkFileWholeSGD times what `dprec train --solver sgd` does on
// DPREC_BENCH_DAY_TSV (user, item, time in seconds, value; the 10M tensor
// with its third index in days): load with data.Load (parse, dictionaries,
// day buckets), build the layout and run 5 SGD epochs at rank 10, no
// biases, 2 threads. Profile with -cpuprofile to split the phases.
func BenchmarkFileWholeSGD(b *testing.B) {
	path := os.Getenv("DPREC_BENCH_DAY_TSV")
	if path == "" {
		b.Skip("set DPREC_BENCH_DAY_TSV to a user, item, time, value file")
	}
	for i := 0; i < b.N; i++ {
		st, _, err := data.Load(path, data.LoadOptions{Columns: data.Columns{Order: []string{"user", "item", "time", "rating"}}})
		if err != nil {
			b.Fatal(err)
		}
		m, err := decomposition.NewModel(decomposition.CP, st.Dims, []int{10}, false)
		if err != nil {
			b.Fatal(err)
		}
		s := &Settings{Solver: SolverSGD, Threads: runtime.GOMAXPROCS(0), LearningRate: 0.005, Reg: 0.005, Epochs: 5, Patience: -1}
		if _, err := Train(st, nil, m, s, rand.NewPCG(1, 2), nil); err != nil {
			b.Fatal(err)
		}
	}
}
