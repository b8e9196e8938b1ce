package otd

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

func tensorDiff(a, b *SymTensor) *SymTensor {
	d := a.Clone()
	nb := b.Clone()
	nb.Scale(-1)
	d.Add(nb)
	return d
}

func l1(x []float64) float64 { return floats.Norm(x, 1) }

// TestLDASensitivityEmpirical checks (S5) on neighbouring corpora: the l1
// change of M2 and M3 (full tensors) and the l2 change of the packed
// vectors never exceed LDASensitivities, and the construction of the
// derivation (other documents "a a a", "b b b" -> "c c c", alpha0 = 0.1)
// exceeds the Delta_3 printed in DeCarolis et al. 2020 Theorem 4.
func TestLDASensitivityEmpirical(t *testing.T) {
	t.Parallel()
	const d, n = 5, 12
	r := rand.New(rand.NewPCG(5, 6))
	random := make([][]int, n)
	for i := range random {
		random[i] = randomDoc(r, d, 3+r.IntN(5))
	}
	allA := make([][]int, n)
	for i := range allA {
		allA[i] = []int{0, 0, 0}
	}
	type nb struct {
		base     [][]int
		old, new []int
	}
	cases := []nb{{allA, []int{1, 1, 1}, []int{2, 2, 2}}, {random, []int{1, 1, 1}, []int{2, 2, 2}}, {random, []int{0, 1, 2, 3}, []int{4, 4, 4}}}
	for i := 0; i < 15; i++ {
		cases = append(cases, nb{random, randomDoc(r, d, 3+r.IntN(4)), randomDoc(r, d, 3+r.IntN(4))})
	}
	for _, alpha0 := range []float64{0.1, 1, 10} {
		bound, err := LDASensitivities(n, alpha0)
		if err != nil {
			t.Fatal(err)
		}
		_, paper3 := LDASensitivitiesPaper(n, alpha0)
		for ci, tc := range cases {
			a := append([][]int(nil), tc.base...)
			b := append([][]int(nil), tc.base...)
			a[n-1], b[n-1] = tc.old, tc.new
			_, M2a, M3a, err := LDAMoments(corpusFromDocs(t, d, a), alpha0)
			if err != nil {
				t.Fatal(err)
			}
			_, M2b, M3b, err := LDAMoments(corpusFromDocs(t, d, b), alpha0)
			if err != nil {
				t.Fatal(err)
			}
			var m2 mat.Dense
			m2.Sub(M2a, M2b)
			d2l1 := l1(m2.RawMatrix().Data)
			diff := tensorDiff(M3a, M3b)
			d3l1 := l1(diff.Data)
			p2, p3 := packedDiff(M2a, M2b, M3a, M3b)
			tol := 1 + 1e-9 // rounding of the U-statistics
			if d2l1 > bound.M2*tol || p2 > bound.M2*tol {
				t.Errorf("alpha0 %v case %d: M2 change l1 %.5g / packed l2 %.5g exceeds %.5g", alpha0, ci, d2l1, p2, bound.M2)
			}
			if d3l1 > bound.M3*tol || p3 > bound.M3*tol {
				t.Errorf("alpha0 %v case %d: M3 change l1 %.5g / packed l2 %.5g exceeds %.5g", alpha0, ci, d3l1, p3, bound.M3)
			}
			if alpha0 == 0.1 && ci == 0 && !(d3l1 > paper3) {
				t.Errorf("alpha0 0.1: the derivation's construction should exceed the printed Delta_3 %.5g, got %.5g", paper3, d3l1)
			}
		}
	}
}

// TestWhitenedTensorSensitivityEmpirical checks (S6): for a fixed W the
// packed whitened tensor moves by at most Delta_3(l1) r_W^3.
func TestWhitenedTensorSensitivityEmpirical(t *testing.T) {
	t.Parallel()
	const d, n, k, alpha0 = 6, 15, 3, 1.0
	r := rand.New(rand.NewPCG(7, 8))
	W := mat.NewDense(d, k, nil)
	for i := 0; i < d; i++ {
		for j := 0; j < k; j++ {
			W.Set(i, j, r.NormFloat64()*3)
		}
	}
	bound, _ := LDASensitivities(n, alpha0)
	st := WhitenedTensorSensitivity(W, bound.M3)
	base := make([][]int, n)
	for i := range base {
		base[i] = randomDoc(r, d, 3+r.IntN(4))
	}
	for i := 0; i < 20; i++ {
		a := append([][]int(nil), base...)
		b := append([][]int(nil), base...)
		a[n-1], b[n-1] = randomDoc(r, d, 3+r.IntN(3)), randomDoc(r, d, 3)
		if i == 0 {
			a[n-1], b[n-1] = []int{0, 0, 0}, []int{5, 5, 5}
		}
		Ta, err := LDAWhitenedM3(corpusFromDocs(t, d, a), W, alpha0)
		if err != nil {
			t.Fatal(err)
		}
		Tb, err := LDAWhitenedM3(corpusFromDocs(t, d, b), W, alpha0)
		if err != nil {
			t.Fatal(err)
		}
		if got := floats.Norm(tensorDiff(Ta, Tb).Packed(), 2); got > st*(1+1e-9) {
			t.Errorf("neighbour %d: packed whitened change %.5g exceeds %.5g", i, got, st)
		}
	}
}

// TestDPTPMSensitivityEmpirical checks the query bounds of (S4) for the
// single-topic model at random unit vectors and neighbouring corpora.
func TestDPTPMSensitivityEmpirical(t *testing.T) {
	t.Parallel()
	const d, n, k = 6, 20, 3
	r := rand.New(rand.NewPCG(9, 10))
	W := mat.NewDense(d, k, nil)
	for i := 0; i < d; i++ {
		for j := 0; j < k; j++ {
			W.Set(i, j, r.NormFloat64())
		}
	}
	sens := STMDPTPMSensitivity(W, n)
	base := make([][]int, n)
	for i := range base {
		base[i] = randomDoc(r, d, 3+r.IntN(4))
	}
	for i := 0; i < 20; i++ {
		a := append([][]int(nil), base...)
		b := append([][]int(nil), base...)
		a[n-1], b[n-1] = randomDoc(r, d, 3), randomDoc(r, d, 3+r.IntN(3))
		if i == 0 {
			a[n-1], b[n-1] = []int{0, 0, 0}, []int{1, 1, 1}
		}
		_, M3a, _ := STMMoments(corpusFromDocs(t, d, a), AllTriples)
		_, M3b, _ := STMMoments(corpusFromDocs(t, d, b), AllTriples)
		Td := tensorDiff(M3a, M3b).Multilinear(W)
		for j := 0; j < 10; j++ {
			u := dptpmRandomUnit(r, k)
			f1, f2 := sens(u)
			if g := floats.Norm(Td.TIuu(u, nil), 2); g > f1*(1+1e-9) {
				t.Errorf("f1 change %.5g exceeds %.5g", g, f1)
			}
			if g := math.Abs(Td.Tuuu(u)); g > f2*(1+1e-9) {
				t.Errorf("f2 change %.5g exceeds %.5g", g, f2)
			}
		}
	}
	// Gaussian mixture: rows e1 -> -e1 and random unit rows.
	X := mat.NewDense(n, d, nil)
	for i := 0; i < n; i++ {
		X.SetRow(i, dptpmRandomUnit(r, d))
	}
	const s2 = 0.05
	msens := MOGDPTPMSensitivity(W, n, s2)
	for i := 0; i < 20; i++ {
		x, y := dptpmRandomUnit(r, d), dptpmRandomUnit(r, d)
		if i == 0 {
			x, y = make([]float64, d), make([]float64, d)
			x[0], y[0] = 1, -1
		}
		_, M3a, err := MoGMoments(rowsWith(X, x), s2)
		if err != nil {
			t.Fatal(err)
		}
		_, M3b, _ := MoGMoments(rowsWith(X, y), s2)
		Td := tensorDiff(M3a, M3b).Multilinear(W)
		for j := 0; j < 10; j++ {
			u := dptpmRandomUnit(r, k)
			f1, f2 := msens(u)
			if g := floats.Norm(Td.TIuu(u, nil), 2); g > f1*(1+1e-9) {
				t.Errorf("mog f1 change %.5g exceeds %.5g", g, f1)
			}
			if g := math.Abs(Td.Tuuu(u)); g > f2*(1+1e-9) {
				t.Errorf("mog f2 change %.5g exceeds %.5g", g, f2)
			}
		}
	}
}
