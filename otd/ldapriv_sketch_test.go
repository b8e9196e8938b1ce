package otd

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// TestPrivateWhitenSketch: with a large budget the sketch whitening
// whitens the exact M2 (W^T M2 W = I up to signs, within 0.03: at epsilon
// 700 the sketch noise is still about 0.5% of the sketch, whose columns
// see only a fraction sqrt(p/D) of the top eigenspace), and the
// releases' sensitivity bound holds on neighbouring corpora for a fixed
// orthonormal Omega.
func TestPrivateWhitenSketch(t *testing.T) {
	t.Parallel()
	syn, err := SyntheticLDA(60, 4, 1, 3000, 20, 0.3, rand.NewPCG(71, 72))
	if err != nil {
		t.Fatal(err)
	}
	c := syn.Input.Corpus
	sens, _ := LDASensitivities(c.NumDocs(), 1)
	W, rels, err := privateWhitenSketch(c, 1, 4, sens.M2, 700, 0.5, "", rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if len(rels) != 2 || rels[0].Epsilon != 350 || rels[1].Epsilon != 350 {
		t.Errorf("releases %+v", rels)
	}
	_, M2, _ := LDASecondMoment(c, 1)
	var g, tmp mat.Dense
	tmp.Mul(M2, W)
	g.Mul(W.T(), &tmp)
	for i := 0; i < 4; i++ {
		for j := 0; j < 4; j++ {
			want := 0.0
			if i == j {
				want = 1
			}
			if math.Abs(math.Abs(g.At(i, j))-want) > 0.03 {
				t.Errorf("W^T M2 W [%d,%d] = %v, want +-%v", i, j, g.At(i, j), want)
			}
		}
	}
	// Sensitivity of the sketch release for neighbouring corpora.
	const d, n = 7, 10
	r := rand.New(rand.NewPCG(73, 74))
	om := orthonormalColumns(mat.NewDense(d, 3, func() []float64 {
		x := make([]float64, d*3)
		for i := range x {
			x[i] = r.NormFloat64()
		}
		return x
	}()))
	base := make([][]int, n)
	for i := range base {
		base[i] = randomDoc(r, d, 3+r.IntN(4))
	}
	for _, alpha0 := range []float64{0.1, 1, 10} {
		bnd, _ := LDASensitivities(n, alpha0)
		for i := 0; i < 15; i++ {
			a := append([][]int(nil), base...)
			b := append([][]int(nil), base...)
			a[n-1], b[n-1] = randomDoc(r, d, 3), randomDoc(r, d, 3+r.IntN(3))
			if i == 0 {
				a[n-1], b[n-1] = []int{0, 0, 0}, []int{1, 1, 1}
			}
			Ya, Yb := mat.NewDense(d, 3, nil), mat.NewDense(d, 3, nil)
			m2Apply(corpusFromDocs(t, d, a), alpha0, om, Ya)
			m2Apply(corpusFromDocs(t, d, b), alpha0, om, Yb)
			Ya.Sub(Ya, Yb)
			if f := mat.Norm(Ya, 2); f > bnd.M2*(1+1e-9) {
				t.Errorf("alpha0 %v: sketch change %.5g exceeds %.5g", alpha0, f, bnd.M2)
			}
		}
	}
}

// TestOrthonormalColumns checks Q^T Q = I and that Q spans the input.
func TestOrthonormalColumns(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(75, 76))
	m := mat.NewDense(50, 6, nil)
	for i := 0; i < 50; i++ {
		for j := 0; j < 6; j++ {
			m.Set(i, j, r.NormFloat64()*math.Pow(10, float64(-j)))
		}
	}
	q := orthonormalColumns(m)
	var g mat.Dense
	g.Mul(q.T(), q)
	if !mat.EqualApprox(&g, eye(6), 1e-12) {
		t.Errorf("Q^T Q != I")
	}
	var proj, res mat.Dense
	proj.Mul(q.T(), m)
	res.Mul(q, &proj)
	res.Sub(&res, m)
	if mat.Norm(&res, 2) > 1e-12*mat.Norm(m, 2) {
		t.Errorf("Q does not span the columns of m")
	}
}

func eye(n int) *mat.Dense {
	m := mat.NewDense(n, n, nil)
	for i := 0; i < n; i++ {
		m.Set(i, i, 1)
	}
	return m
}
