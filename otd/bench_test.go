package otd

import (
	"math/rand/v2"
	"testing"
	"time"
)

// benchLDA generates an LDA corpus (Dirichlet(0.1) topics; 0.1 is an
// arbitrary sparse prior, documented in the README) and times Fit on it,
// reporting e_comp. Corpus generation is excluded from the timing.
func benchLDA(b *testing.B, d, k, n, l int) {
	syn, err := SyntheticLDA(d, k, 1, n, l, 0.1, rand.NewPCG(42, 42))
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	var e float64
	for i := 0; i < b.N; i++ {
		start := time.Now()
		res, err := Fit(&syn.Input, FitOptions{Model: "lda", K: k, Alpha0: 1}, rand.NewPCG(1, uint64(i)))
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
