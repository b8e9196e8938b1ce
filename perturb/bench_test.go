package perturb

import (
	"math/rand/v2"
	"testing"
)

func benchAddTo(b *testing.B, n int, add func([]float64, *rand.Rand)) {
	r := rand.New(SeededSource(1))
	x := make([]float64, n)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		add(x, r)
	}
	b.SetBytes(int64(8 * n))
}

func BenchmarkLaplaceAddTo_32(b *testing.B) {
	l, _ := NewLaplace(1, 1)
	benchAddTo(b, 32, l.AddTo)
}

func BenchmarkGaussianAddTo_32(b *testing.B) {
	g, _ := NewGaussian(1, 1, 1e-5, Analytic)
	benchAddTo(b, 32, g.AddTo)
}

func BenchmarkL2NoiseAddTo_32(b *testing.B) {
	m, _ := NewL2Noise(1, 1, 32)
	benchAddTo(b, 32, m.AddTo)
}

func BenchmarkSymmetricGaussianMatrix_50(b *testing.B) {
	r := rand.New(SeededSource(1))
	for i := 0; i < b.N; i++ {
		SymmetricGaussianMatrix(50, 1, r)
	}
}

// BenchmarkGaussianAddToFast_100000 times the bulk noise of one DP-SGD
// step on 10^5 coordinates from the secure fast source; compare with
// BenchmarkGaussianAddTo_32 per coordinate.
func BenchmarkGaussianAddToFast_100000(b *testing.B) {
	g, _ := NewGaussianSigma(1, 3)
	src := SecureNoise().FastSource(1)
	x := make([]float64, 100000)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		g.AddToFast(x, src)
	}
	b.SetBytes(int64(8 * len(x)))
}

// BenchmarkL2NoiseAddTo_8 times one rank-8 vector of --protect C's
// per-entry noise.
func BenchmarkL2NoiseAddTo_8(b *testing.B) {
	m, _ := NewL2Noise(1, 1, 8)
	benchAddTo(b, 8, m.AddTo)
}
