package cape

import (
	"context"
	"math/rand/v2"
	"testing"
)

func benchZeroSum(b *testing.B, s, l int) {
	mu := make([]float64, s)
	for i := range mu {
		mu[i] = 1 / float64(s)
	}
	r := rand.New(rand.NewPCG(1, 1))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := ZeroSumNoise(mu, 1, l, r); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkZeroSumNoiseS5L1k(b *testing.B)   { benchZeroSum(b, 5, 1000) }
func BenchmarkZeroSumNoiseS5L20k(b *testing.B)  { benchZeroSum(b, 5, 20100) } // D = 200 matrix
func BenchmarkZeroSumNoiseS20L20k(b *testing.B) { benchZeroSum(b, 20, 20100) }

func benchCapePCA(b *testing.B, s, n, d, k int) {
	rows, err := SyntheticPCA(s, n, d, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		b.Fatal(err)
	}
	sites := equalSites(rows, 1, 1e-2)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, _, err := CapePCA(context.Background(), k, sites, "", RunOptions{Seeded: true, Seed: uint64(i)}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCapePCAS5D50(b *testing.B)  { benchCapePCA(b, 5, 500, 50, 10) }
func BenchmarkCapePCAS5D200(b *testing.B) { benchCapePCA(b, 5, 1000, 200, 50) }
