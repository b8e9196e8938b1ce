package perturb

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dprec/dprec/internal/stattest"
)

func TestSymmetricGaussianMatrix(t *testing.T) {
	t.Parallel()
	const d, reps, sigma = 4, 20000, 1.7
	r := rand.New(SeededSource(8))
	var sumSq [d][d]float64
	for rep := 0; rep < reps; rep++ {
		e := SymmetricGaussianMatrix(d, sigma, r)
		for i := 0; i < d; i++ {
			for j := 0; j < d; j++ {
				if e.At(i, j) != e.At(j, i) {
					t.Fatalf("E not symmetric at (%d,%d)", i, j)
				}
				sumSq[i][j] += e.At(i, j) * e.At(i, j) / reps
			}
		}
	}
	// Each entry (diagonal or not) has variance sigma^2; the sample second
	// moment has sd sqrt(2) sigma^2/sqrt(reps); tolerance Z5 sd.
	tol := stattest.Z5 * math.Sqrt2 * sigma * sigma / math.Sqrt(reps)
	for i := 0; i < d; i++ {
		for j := i; j < d; j++ {
			if math.Abs(sumSq[i][j]-sigma*sigma) > tol {
				t.Errorf("Var E[%d][%d] = %v, want %v +- %v", i, j, sumSq[i][j], sigma*sigma, tol)
			}
		}
	}
}

func TestSymmetricTensor(t *testing.T) {
	t.Parallel()
	for d := 1; d <= 6; d++ {
		if got, want := SymPackedSize(d), d*(d+1)*(d+2)/6; got != want {
			t.Errorf("SymPackedSize(%d) = %d, want %d", d, got, want)
		}
		b := make([]float64, SymPackedSize(d))
		for i := range b {
			b[i] = float64(i + 1) // distinct, so positions are identifiable
		}
		ten := SymmetricTensorFromPacked(d, b)
		seen := map[float64]bool{}
		p := 0
		for i := 0; i < d; i++ {
			for j := 0; j < d; j++ {
				for k := 0; k < d; k++ {
					v := ten[(i*d+j)*d+k]
					for _, q := range [][3]int{{i, k, j}, {j, i, k}, {j, k, i}, {k, i, j}, {k, j, i}} {
						if ten[(q[0]*d+q[1])*d+q[2]] != v {
							t.Fatalf("d=%d: tensor not symmetric at (%d,%d,%d)", d, i, j, k)
						}
					}
					if v != b[SymPackedIndex(d, i, j, k)] {
						t.Fatalf("d=%d: entry (%d,%d,%d) = %v, SymPackedIndex says b[%d] = %v", d, i, j, k, v, SymPackedIndex(d, i, j, k), b[SymPackedIndex(d, i, j, k)])
					}
					seen[v] = true
					if i <= j && j <= k { // documented lexicographic order of sorted triples
						if v != b[p] {
							t.Fatalf("d=%d: sorted triple (%d,%d,%d) is not b[%d]", d, i, j, k, p)
						}
						p++
					}
				}
			}
		}
		if len(seen) != len(b) {
			t.Errorf("d=%d: tensor uses %d of %d packed entries", d, len(seen), len(b))
		}
	}
	// Per-entry variance of Gaussian packed noise and norm of l2 packed noise.
	r := rand.New(SeededSource(9))
	const reps, sigma, d = 5000, 0.8, 3
	var ss float64
	for rep := 0; rep < reps; rep++ {
		for _, v := range GaussianPacked(d, sigma, r) {
			ss += v * v
		}
	}
	n := float64(reps * SymPackedSize(d))
	if v := ss / n; math.Abs(v-sigma*sigma) > stattest.Z5*math.Sqrt2*sigma*sigma/math.Sqrt(n) {
		t.Errorf("GaussianPacked variance %v, want %v", v, sigma*sigma)
	}
	var meanNorm float64
	for rep := 0; rep < reps; rep++ {
		b, err := L2Packed(d, 1, 2, r)
		if err != nil {
			t.Fatal(err)
		}
		var s float64
		for _, v := range b {
			s += v * v
		}
		meanNorm += math.Sqrt(s) / reps
	}
	// ||b|| ~ Gamma(10, 1/2): mean 5, sd sqrt(10)/2.
	if want, sd := 5.0, math.Sqrt(10)/2/math.Sqrt(reps); math.Abs(meanNorm-want) > stattest.Z5*sd {
		t.Errorf("L2Packed mean norm %v, want %v", meanNorm, want)
	}
}
