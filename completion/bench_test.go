package completion

import (
	"math/rand/v2"
	"runtime"
	"syscall"
	"testing"

	"github.com/dprec/dprec/decomposition"
)

// benchEpoch times one stratified SGD epoch (no validation) on a UniformCP
// tensor, with GOMAXPROCS workers, reporting seconds per epoch and entries
// per second. Compare with SPLATT's SGD epoch (bench/README.md): 0.0035 s on
// MovieLens 100K, 0.52-0.79 s on the 10M tensor, rank 10, 2 threads.
func benchEpoch(b *testing.B, kind decomposition.Kind, dims []int, nnz, rank int, bias bool) {
	st, err := UniformCP(dims, nnz, 10, 0.1, rand.NewPCG(1, 2))
	if err != nil {
		b.Fatal(err)
	}
	ranks := make([]int, len(dims))
	for i := range ranks {
		ranks[i] = rank
	}
	m, err := decomposition.NewModel(kind, dims, ranks, bias)
	if err != nil {
		b.Fatal(err)
	}
	cfg := (&Settings{Threads: runtime.GOMAXPROCS(0), LearningRate: 0.01, Reg: 0.005}).resolved()
	rng := rand.New(rand.NewPCG(3, 4))
	initModel(m, st.Val, &cfg, rng)
	t, err := newTrainer(m, st, append([]float64(nil), st.Val...), &cfg, rng)
	if err != nil {
		b.Fatal(err)
	}
	cpu0 := cpuSeconds()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t.epoch(0.01, 0.0001)
	}
	sec := b.Elapsed().Seconds() / float64(b.N)
	// CPU seconds per epoch (all threads) are steadier than wall time on a
	// shared machine; on an idle one wall ~ cpu / threads.
	b.ReportMetric((cpuSeconds()-cpu0)/float64(b.N), "cpu-s/epoch")
	b.ReportMetric(sec, "s/epoch")
	b.ReportMetric(float64(nnz)/sec, "entries/s")
}

func BenchmarkEpochML100kShaped(b *testing.B) {
	benchEpoch(b, decomposition.CP, []int{943, 1682, 212}, 100_000, 10, false)
}

func BenchmarkEpochML100kShapedBias(b *testing.B) {
	benchEpoch(b, decomposition.CP, []int{943, 1682, 212}, 100_000, 10, true)
}

func BenchmarkEpochML100kShapedTucker(b *testing.B) {
	benchEpoch(b, decomposition.Tucker, []int{943, 1682, 212}, 100_000, 5, true)
}

func BenchmarkEpoch10M(b *testing.B) {
	benchEpoch(b, decomposition.CP, []int{200_000, 50_000, 500}, 10_000_000, 10, false)
}

// cpuSeconds is the process's user+system CPU time.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
