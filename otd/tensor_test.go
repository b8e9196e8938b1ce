package otd

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/dprec/dprec/perturb"
	"gonum.org/v1/gonum/mat"
)

func randSym(d int, rng *rand.Rand) *SymTensor {
	b := make([]float64, PackedLen(d))
	for i := range b {
		b[i] = rng.NormFloat64()
	}
	t, err := FromPacked(d, b)
	if err != nil {
		panic(err)
	}
	return t
}

func TestPackedOrderMatchesPerturb(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 1))
	for _, d := range []int{1, 2, 5, 7} {
		b := make([]float64, PackedLen(d))
		for i := range b {
			b[i] = rng.Float64()
		}
		mine, err := FromPacked(d, b)
		if err != nil {
			t.Fatal(err)
		}
		theirs := perturb.SymmetricTensorFromPacked(d, b)
		for i := range theirs {
			if theirs[i] != mine.Data[i] {
				t.Fatalf("d=%d entry %d: %v vs perturb %v", d, i, mine.Data[i], theirs[i])
			}
		}
		back := mine.Packed()
		for i := range b {
			if back[i] != b[i] {
				t.Fatalf("d=%d Packed round trip differs at %d", d, i)
			}
		}
		pi := newPackedIndex(d)
		for i := 0; i < d; i++ {
			for j := i; j < d; j++ {
				for k := j; k < d; k++ {
					if got, want := pi.at(i, j, k), perturb.SymPackedIndex(d, i, j, k); got != want {
						t.Fatalf("index (%d,%d,%d) = %d, perturb %d", i, j, k, got, want)
					}
				}
			}
		}
	}
}

func TestNewSymTensorRefusesHuge(t *testing.T) {
	t.Parallel()
	_, err := NewSymTensor(10000)
	if err == nil || !strings.Contains(err.Error(), "whitened path") {
		t.Fatalf("want a clear refusal, got %v", err)
	}
	if _, err := NewSymTensor(0); err == nil {
		t.Fatal("D=0 accepted")
	}
	if _, err := FromPacked(3, make([]float64, 9)); err == nil {
		t.Fatal("wrong packed length accepted")
	}
}

func TestMultilinearBruteForce(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(2, 2))
	d, k := 6, 3
	T := randSym(d, rng)
	W := mat.NewDense(d, k, nil)
	for i := 0; i < d; i++ {
		for j := 0; j < k; j++ {
			W.Set(i, j, rng.NormFloat64())
		}
	}
	got := T.Multilinear(W)
	for a := 0; a < k; a++ {
		for b := 0; b < k; b++ {
			for c := 0; c < k; c++ {
				var s float64
				for i := 0; i < d; i++ {
					for j := 0; j < d; j++ {
						for l := 0; l < d; l++ {
							s += T.At(i, j, l) * W.At(i, a) * W.At(j, b) * W.At(l, c)
						}
					}
				}
				if math.Abs(s-got.At(a, b, c)) > 1e-10 {
					t.Fatalf("(%d,%d,%d): %v vs %v", a, b, c, got.At(a, b, c), s)
				}
			}
		}
	}
	u := []float64{0.3, -1, 2, 0.5, 0, 1}
	v := T.TIuu(u, nil)
	for i := 0; i < d; i++ {
		var s float64
		for j := 0; j < d; j++ {
			for l := 0; l < d; l++ {
				s += T.At(i, j, l) * u[j] * u[l]
			}
		}
		if math.Abs(s-v[i]) > 1e-12 {
			t.Fatalf("TIuu[%d] = %v, want %v", i, v[i], s)
		}
	}
	var s float64
	for i := range u {
		s += v[i] * u[i]
	}
	if math.Abs(T.Tuuu(u)-s) > 1e-12 {
		t.Fatal("Tuuu disagrees with TIuu")
	}
}

// orthoTensor returns sum_k lambda_k v_k^(x)3 for a random orthonormal V.
func orthoTensor(d int, lambda []float64, rng *rand.Rand) (*SymTensor, *mat.Dense) {
	G := mat.NewDense(d, d, nil)
	for i := 0; i < d; i++ {
		for j := 0; j < d; j++ {
			G.Set(i, j, rng.NormFloat64())
		}
	}
	var qr mat.QR
	qr.Factorize(G)
	var Q mat.Dense
	qr.QTo(&Q)
	T, _ := NewSymTensor(d)
	for k, l := range lambda {
		T.AddRankOne(l, mat.Col(nil, k, &Q))
	}
	return T, &Q
}

func TestPowerIterationOrthogonal(t *testing.T) {
	t.Parallel()
	cases := []struct {
		d      int
		lambda []float64
	}{
		{3, []float64{3, 2, 1}},
		{5, []float64{1, 1.5, 2, 2.5, 3}},
		{8, []float64{5, 4, 3.5, 3, 2, 1.5, 1.2, 1}},
		{10, []float64{2, 1.9, 1.8, 1.7, 1.6}}, // K < D
	}
	for ci, tc := range cases {
		rng := rand.New(rand.NewPCG(uint64(ci), 7))
		T, Q := orthoTensor(tc.d, tc.lambda, rng)
		lam, V, err := PowerIteration(T, len(tc.lambda), TPMOptions{}, rand.NewPCG(3, uint64(ci)))
		if err != nil {
			t.Fatal(err)
		}
		used := map[int]bool{}
		for c, l := range lam {
			v := mat.Col(nil, c, V)
			found := false
			for k, tl := range tc.lambda {
				if used[k] {
					continue
				}
				q := mat.Col(nil, k, Q)
				var diff float64
				for i := range v {
					diff += (v[i] - q[i]) * (v[i] - q[i])
				}
				if math.Sqrt(diff) < 1e-8 && math.Abs(l-tl) < 1e-8 {
					used[k], found = true, true
					break
				}
			}
			if !found {
				t.Fatalf("case %d: component %d (lambda %v) matches no true component to 1e-8", ci, c, l)
			}
		}
	}
}

func TestPowerIterationErrors(t *testing.T) {
	t.Parallel()
	T, _ := NewSymTensor(3)
	if _, _, err := PowerIteration(T, 4, TPMOptions{}, rand.NewPCG(1, 1)); err == nil {
		t.Fatal("k > D accepted")
	}
	T.Data[0] = math.NaN()
	if _, _, err := PowerIteration(T, 1, TPMOptions{}, rand.NewPCG(1, 1)); err == nil {
		t.Fatal("NaN accepted")
	}
}

func TestPowerIterationDeterministic(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(9, 9))
	T := randSym(5, rng)
	l1, V1, _ := PowerIteration(T, 3, TPMOptions{}, rand.NewPCG(4, 4))
	l2, V2, _ := PowerIteration(T, 3, TPMOptions{}, rand.NewPCG(4, 4))
	if !mat.Equal(V1, V2) || l1[0] != l2[0] {
		t.Fatal("same seed, different result")
	}
}
