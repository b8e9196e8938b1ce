package completion

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkGramAdd times gramAdd on full batches at rank 10 with a bias
// (n = 11), the inner loop of the ALS and Gibbs row solves.
func BenchmarkGramAdd(b *testing.B) {
	const n = 11
	r := rand.New(rand.NewPCG(1, 2))
	zc := make([]float64, n*gramBatch)
	y := make([]float64, gramBatch)
	for i := range zc {
		zc[i] = r.NormFloat64()
	}
	for i := range y {
		y[i] = r.NormFloat64()
	}
	A, rhs := make([]float64, n*n), make([]float64, n)
	for i := 0; i < b.N; i++ {
		gramAdd(A, rhs, zc, y, n, gramBatch)
	}
}

// TestGramAdd: gramAdd adds Z'Z (upper triangle) and Z'y for every batch
// size and dimension, against the plain per-entry sums.
func TestGramAdd(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for n := 1; n <= 12; n++ {
		for nb := 1; nb <= gramBatch; nb++ {
			zc := make([]float64, n*gramBatch)
			y := make([]float64, gramBatch)
			for i := range zc {
				zc[i] = r.NormFloat64()
			}
			for i := range y {
				y[i] = r.NormFloat64()
			}
			A, rhs := make([]float64, n*n), make([]float64, n)
			gramAdd(A, rhs, zc, y, n, nb)
			for p := 0; p < n; p++ {
				s := 0.0
				for e := 0; e < nb; e++ {
					s += y[e] * zc[p*gramBatch+e]
				}
				if d := rhs[p] - s; d > 1e-12 || d < -1e-12 {
					t.Fatalf("n %d nb %d: b[%d] %g, want %g", n, nb, p, rhs[p], s)
				}
				for q := 0; q < n; q++ {
					want := 0.0
					if q >= p {
						for e := 0; e < nb; e++ {
							want += zc[p*gramBatch+e] * zc[q*gramBatch+e]
						}
					}
					if d := A[p*n+q] - want; d > 1e-12 || d < -1e-12 {
						t.Fatalf("n %d nb %d: A[%d,%d] %g, want %g", n, nb, p, q, A[p*n+q], want)
					}
				}
			}
		}
	}
}
