package otd

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dprec/dprec/data"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// vocabN returns n synthetic word strings.
func vocabN(n int) []string {
	v := make([]string, n)
	for i := range v {
		v[i] = string(rune('a'+i%26)) + string(rune('a'+i/26))
	}
	return v
}

// corpusFromDocs builds a corpus from documents given as word-id lists.
func corpusFromDocs(t *testing.T, d int, docs [][]int) *data.Corpus {
	t.Helper()
	counts := make([][]int32, len(docs))
	for n, doc := range docs {
		counts[n] = make([]int32, d)
		for _, w := range doc {
			counts[n][w]++
		}
	}
	c, err := data.CorpusFromCounts(vocabN(d), counts, 1)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// packedDiff returns the l2 norms of the changes of the packed M2 (upper
// triangle) and packed M3 between two moment pairs.
func packedDiff(M2a, M2b *mat.SymDense, M3a, M3b *SymTensor) (d2, d3 float64) {
	d := M2a.SymmetricDim()
	pa, pb := packUpper(d, M2a.At), packUpper(d, M2b.At)
	floats.Sub(pa, pb)
	qa, qb := M3a.Packed(), M3b.Packed()
	floats.Sub(qa, qb)
	return floats.Norm(pa, 2), floats.Norm(qa, 2)
}

func randomDoc(r *rand.Rand, d, l int) []int {
	doc := make([]int, l)
	for i := range doc {
		doc[i] = r.IntN(d)
	}
	return doc
}

// TestSTMSensitivityEmpirical checks (S1): replacing one document moves the
// packed M2 and M3 by at most sqrt(2)/N (AllTriples estimator), on random
// and worst-case neighbours, and that the bound is attained ("a a a" ->
// "b b b").
func TestSTMSensitivityEmpirical(t *testing.T) {
	t.Parallel()
	const d, n = 6, 40
	r := rand.New(rand.NewPCG(1, 2))
	base := make([][]int, n)
	for i := range base {
		base[i] = randomDoc(r, d, 3+r.IntN(6))
	}
	cases := []struct {
		name     string
		old, new []int
		tight    bool // the bound is attained
	}{
		{"aaa->bbb", []int{0, 0, 0}, []int{1, 1, 1}, true},
		{"abc->def", []int{0, 1, 2}, []int{3, 4, 5}, false},
		{"aab->ccd", []int{0, 0, 1}, []int{2, 2, 3}, false},
		{"long->aaa", []int{0, 1, 2, 3, 4, 5, 0, 1}, []int{0, 0, 0}, false},
		{"aaaa..->bbbb..", []int{2, 2, 2, 2, 2, 2, 2}, []int{5, 5, 5, 5}, true},
	}
	for i := 0; i < 30; i++ {
		cases = append(cases, struct {
			name     string
			old, new []int
			tight    bool
		}{"random", randomDoc(r, d, 3+r.IntN(5)), randomDoc(r, d, 3+r.IntN(5)), false})
	}
	bound, _ := STMSensitivities(n)
	for _, est := range []Estimator{AllTriples} {
		for _, tc := range cases {
			a := append([][]int(nil), base...)
			b := append([][]int(nil), base...)
			a[n-1], b[n-1] = tc.old, tc.new
			M2a, M3a, err := STMMoments(corpusFromDocs(t, d, a), est)
			if err != nil {
				t.Fatal(err)
			}
			M2b, M3b, err := STMMoments(corpusFromDocs(t, d, b), est)
			if err != nil {
				t.Fatal(err)
			}
			d2, d3 := packedDiff(M2a, M2b, M3a, M3b)
			// 1e-12 relative: rounding of the per-document sums.
			if d2 > bound.M2*(1+1e-12) || d3 > bound.M3*(1+1e-12) {
				t.Errorf("%v %s: packed change M2 %.6g, M3 %.6g exceeds sqrt(2)/N = %.6g", est, tc.name, d2, d3, bound.M3)
			}
			if tc.tight && (d2 < bound.M2*(1-1e-9) || d3 < bound.M3*(1-1e-9)) {
				t.Errorf("%v %s: worst case should attain sqrt(2)/N = %.6g, got M2 %.6g M3 %.6g", est, tc.name, bound.M3, d2, d3)
			}
		}
	}
}

// TestPackedVersusFrobenius shows why the packed parametrisation matters:
// for "a b c" -> "d e f" the packed change is smaller than the Frobenius
// change of the full tensor (by sqrt(6) for the off-diagonal entry).
func TestPackedVersusFrobenius(t *testing.T) {
	t.Parallel()
	const d = 6
	a := corpusFromDocs(t, d, [][]int{{0, 1, 2}})
	b := corpusFromDocs(t, d, [][]int{{3, 4, 5}})
	_, M3a, _ := STMMoments(a, AllTriples)
	_, M3b, _ := STMMoments(b, AllTriples)
	diff := M3a.Clone()
	neg := M3b.Clone()
	neg.Scale(-1)
	diff.Add(neg)
	p := diff.Packed()
	// P = sym(e_a e_b e_c): 6 entries of 1/6 in the full tensor, one in the
	// packed vector. Change: packed sqrt(2)/6, Frobenius sqrt(12)/6.
	if got, want := floats.Norm(p, 2), math.Sqrt2/6; math.Abs(got-want) > 1e-12 {
		t.Errorf("packed change %v, want %v", got, want)
	}
	if got, want := diff.FrobeniusNorm(), math.Sqrt(12)/6; math.Abs(got-want) > 1e-12 {
		t.Errorf("Frobenius change %v, want %v", got, want)
	}
}

// unitRow returns a unit-norm row (or a scaled one, norm s).
func rowsWith(base *mat.Dense, last []float64) *mat.Dense {
	n, d := base.Dims()
	X := mat.DenseCopyOf(base)
	for j := 0; j < d; j++ {
		X.Set(n-1, j, last[j])
	}
	return X
}

// TestMOGSensitivityEmpirical checks (S2) on neighbouring sample sets:
// the packed change never exceeds (sqrt(2)/N, (2 + 2 sigma2 sqrt(D+8))/N),
// and the printed Delta_2 = 1/N of Imtiaz and Sarwate 2018b is exceeded (x = e1 -> e2).
func TestMOGSensitivityEmpirical(t *testing.T) {
	t.Parallel()
	const n, d = 30, 5
	const sigma2 = 0.05
	r := rand.New(rand.NewPCG(3, 4))
	base := mat.NewDense(n, d, nil)
	for i := 0; i < n; i++ {
		u := dptpmRandomUnit(r, d)
		s := r.Float64()
		for j := range u {
			base.Set(i, j, u[j]*s)
		}
	}
	e := func(i int, s float64) []float64 { v := make([]float64, d); v[i] = s; return v }
	pairs := [][2][]float64{
		{e(0, 1), e(0, -1)},
		{e(0, 1), e(1, 1)},
		{e(2, 1), e(2, 0)},
		{e(0, 1), e(0, 1)},
	}
	for i := 0; i < 40; i++ {
		pairs = append(pairs, [2][]float64{dptpmRandomUnit(r, d), dptpmRandomUnit(r, d)})
	}
	bound, _ := MOGSensitivities(n, d, sigma2)
	paper2, paper3 := MOGSensitivitiesPaper(n, d, sigma2)
	var max2 float64
	for _, p := range pairs {
		M2a, M3a, err := MoGMoments(rowsWith(base, p[0]), sigma2)
		if err != nil {
			t.Fatal(err)
		}
		M2b, M3b, err := MoGMoments(rowsWith(base, p[1]), sigma2)
		if err != nil {
			t.Fatal(err)
		}
		d2, d3 := packedDiff(M2a, M2b, M3a, M3b)
		max2 = math.Max(max2, d2)
		if d2 > bound.M2*(1+1e-12) || d3 > bound.M3*(1+1e-12) {
			t.Errorf("%v -> %v: change (%.6g, %.6g) exceeds (%.6g, %.6g)", p[0], p[1], d2, d3, bound.M2, bound.M3)
		}
		if d3 > paper3 {
			t.Errorf("M3 change %.6g exceeds even the printed bound %.6g", d3, paper3)
		}
	}
	if !(max2 > paper2*1.4) {
		t.Errorf("expected x = e1 -> e2 to exceed the printed Delta_2 = 1/N = %.4g by sqrt(2); max change %.4g", paper2, max2)
	}
}
