package models

import (
	"math/rand/v2"
	"strconv"
	"syscall"
	"testing"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/perturb"
)

// benchRecommendAll times RecommendAll top-10 over every user of a random
// CP rank-10 model with biases of the given shape and reports users/s.
func benchRecommendAll(b *testing.B, users, items, threads int) {
	benchRecommendAllWith(b, users, items, threads, func(f *File) *Predictor { return NewPredictor(f) })
}

// benchRecommendAllWith is benchRecommendAll with the predictor built by
// mk from the model file.
func benchRecommendAllWith(b *testing.B, users, items, threads int, mk func(*File) *Predictor) {
	f := testFile(b, decomposition.CP, []int{users, items}, []int{10}, true, 1)
	p := mk(f)
	b.ResetTimer()
	cpu0 := benchCPU()
	for i := 0; i < b.N; i++ {
		n := 0
		if err := p.RecommendAll(10, nil, threads, nil, func(int32, []Scored) error { n++; return nil }); err != nil {
			b.Fatal(err)
		}
		if n != users {
			b.Fatalf("%d users emitted", n)
		}
	}
	b.ReportMetric(float64(users)*float64(b.N)/b.Elapsed().Seconds(), "users/s")
	// On a shared machine wall time depends on the load; users per
	// CPU-second (user+system time of the process) does not.
	b.ReportMetric(float64(users)*float64(b.N)/(benchCPU()-cpu0), "users/cpu-s")
}

// benchCPU returns the process's user+system CPU seconds.
func benchCPU() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// MovieLens-25M shape: 162,541 users x 62,423 items. The full run scores
// 1.0e10 (user, item) pairs; use -benchtime=1x.
func BenchmarkRecommendAllML25M(b *testing.B) { benchRecommendAll(b, 162541, 62423, 0) }

// The first 4,096 users of the ML-25M shape: same per-user cost, quick.
func BenchmarkRecommendAllML25MUsers4096(b *testing.B)         { benchRecommendAll(b, 4096, 62423, 0) }
func BenchmarkRecommendAllML25MUsers4096Threads1(b *testing.B) { benchRecommendAll(b, 4096, 62423, 1) }

// The same 4,096 users ranked as a private model with item counts is:
// by relevance (Predictor.WithShrinkage), an Erfc and a Log per pair;
// and with the credibility score, for the ratio in the same run.
func BenchmarkRecommendAllML25MUsers4096Relevance(b *testing.B) {
	benchRecommendAllWith(b, 4096, 62423, 1, func(f *File) *Predictor {
		f.Model.ClampLo, f.Model.ClampHi = 0.5, 5
		f.Privacy = &perturb.Report{Mode: "bias", ItemCounts: benchCounts(62423), ItemCountsSD: 10}
		return NewPredictor(f).WithShrinkage(DefaultShrinkage)
	})
}

func BenchmarkRecommendAllML25MUsers4096Credibility(b *testing.B) {
	benchRecommendAllWith(b, 4096, 62423, 1, func(f *File) *Predictor {
		f.Model.ClampLo, f.Model.ClampHi = 0, 0 // no public range: the credibility score
		f.Privacy = &perturb.Report{Mode: "bias", ItemCounts: benchCounts(62423)}
		return NewPredictor(f).WithShrinkage(DefaultShrinkage)
	})
}

// benchCounts returns n Zipf-like item counts.
func benchCounts(n int) []float64 {
	c := make([]float64, n)
	for j := range c {
		c[j] = 1e5 / float64(j+1)
	}
	return c
}

// BenchmarkRecommendOne is one user's top-10 over 62,423 items.
func BenchmarkRecommendOne(b *testing.B) {
	f := testFile(b, decomposition.CP, []int{100, 62423}, []int{10}, true, 1)
	p := NewPredictor(f)
	b.ResetTimer()
	cpu0 := benchCPU()
	for i := 0; i < b.N; i++ {
		p.Recommend(strconv.Itoa(100+3*(i%100)), nil, 10, nil)
	}
	b.ReportMetric(float64(b.N)/(benchCPU()-cpu0), "users/cpu-s")
}

// BenchmarkLoad loads an ML-25M-shaped rank-10 model (about 21 MB).
func BenchmarkLoadML25M(b *testing.B) {
	f := testFile(b, decomposition.CP, []int{162541, 62423}, []int{10}, true, 1)
	buf := encode(b, f)
	b.SetBytes(int64(len(buf)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := decode(buf); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSeenFromStore builds the seen items of a 10M-rating log of the
// shape of the SPLATT comparison tensor (200,000 users, 50,000 items).
func BenchmarkSeenFromStore(b *testing.B) {
	const users, items, n = 200_000, 50_000, 10_000_000
	rng := rand.New(rand.NewPCG(1, 2))
	st := &data.Store{Dims: []int{users, items}, Idx: [][]int32{make([]int32, n), make([]int32, n)}, Val: make([]float64, n)}
	for k := range n {
		st.Idx[0][k] = int32(rng.IntN(users))
		st.Idx[1][k] = int32(rng.IntN(items))
	}
	b.ResetTimer()
	for range b.N {
		if _, err := SeenFromStore(st, users, items); err != nil {
			b.Fatal(err)
		}
	}
}
