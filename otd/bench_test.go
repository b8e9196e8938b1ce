package otd

import (
	"math/rand/v2"
	"testing"
	"time"
)

// benchLDA generates an LDA corpus (Dirichlet(0.1) topics; 0.1 is an
// arbitrary sparse prior, documented in docs/spectral.md) and times Fit on it,
// reporting e_comp. Corpus generation is excluded from the timing.
func benchLDA(b *testing.B, d, k, n, l int) { benchLDAMethod(b, d, k, n, l, MethodNonPrivate) }

func benchLDAMethod(b *testing.B, d, k, n, l int, method Method) {
	syn, err := SyntheticLDA(d, k, 1, n, l, 0.1, rand.NewPCG(42, 42))
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	var e float64
	for i := 0; i < b.N; i++ {
		start := time.Now()
		res, err := Fit(&syn.Input, FitOptions{Model: "lda", K: k, Alpha0: 1, Method: method, Epsilon: 1, Delta: 1e-5}, rand.NewPCG(1, uint64(i)))
		if err != nil {
			b.Fatal(err)
		}
		e = EComp(syn.A, res.A)
		b.ReportMetric(time.Since(start).Seconds(), "s/fit")
	}
	b.ReportMetric(e, "e_comp")
}

// BenchmarkLDA500 is the recovery target: D=500, K=10, alpha0=1,
// 20,000 documents of 100 words.
func BenchmarkLDA500(b *testing.B) { benchLDA(b, 500, 10, 20000, 100) }

// BenchmarkLDA500Small is the bench/README peer set-up (5,000 documents).
func BenchmarkLDA500Small(b *testing.B) { benchLDA(b, 500, 10, 5000, 100) }

// BenchmarkLDALarge is the scale target: 100,000 documents of 100 words,
// 10,000-word vocabulary, K=20, whitened path with implicit whitening.
func BenchmarkLDALarge(b *testing.B) { benchLDA(b, 10000, 20, 100000, 100) }

// BenchmarkLDALargeWhitened is the scale target for the private
// "lda-whitened" configuration (epsilon 1, delta 1e-5, seeded noise).
func BenchmarkLDALargeWhitened(b *testing.B) {
	benchLDAMethod(b, 10000, 20, 100000, 100, "lda-whitened")
}

// BenchmarkSTMEstimators measures non-private single-topic recovery
// (Imtiaz and Sarwate 2018a set-up: uniform weights, Dirichlet(1) topics, 10 runs) for
// the AllTriples and FirstThree estimators and logs a table of mean
// e_comp (run with -bench STMEstimators -benchtime 1x -v).
func BenchmarkSTMEstimators(b *testing.B) {
	for i := 0; i < b.N; i++ {
		for _, dk := range [][2]int{{10, 5}, {50, 10}} {
			for _, l := range []int{10, 50} {
				for _, n := range []int{1000, 10000, 100000} {
					var e [2]float64
					for run := 0; run < 10; run++ {
						syn, err := SyntheticSTM(dk[0], dk[1], n, l, 1, nil, rand.NewPCG(uint64(run), uint64(n)))
						if err != nil {
							b.Fatal(err)
						}
						for j, est := range []Estimator{AllTriples, FirstThree} {
							res, err := Fit(&syn.Input, FitOptions{Model: "stm", K: dk[1], Estimator: est}, rand.NewPCG(uint64(run), 9))
							if err != nil {
								b.Fatal(err)
							}
							e[j] += EComp(syn.A, res.A) / 10
						}
					}
					b.Logf("D=%d K=%d L=%d N=%d: e_comp all-triples %.4f first-three %.4f", dk[0], dk[1], l, n, e[0], e[1])
				}
			}
		}
	}
}
