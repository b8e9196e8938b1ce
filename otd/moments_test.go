package otd

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dprec/dprec/data"
	"gonum.org/v1/gonum/mat"
)

func randW(d, k int, rng *rand.Rand) *mat.Dense {
	W := mat.NewDense(d, k, nil)
	for i := 0; i < d; i++ {
		for j := 0; j < k; j++ {
			W.Set(i, j, rng.NormFloat64())
		}
	}
	return W
}

func maxAbsDiff(a, b []float64) float64 {
	var m float64
	for i := range a {
		m = math.Max(m, math.Abs(a[i]-b[i]))
	}
	return m
}

// The whitened path must equal the dense path followed by Multilinear.
func TestWhitenedEqualsDense(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 5))
	syn, err := SyntheticLDA(12, 3, 1.5, 60, 7, 0.5, rand.NewPCG(1, 2))
	if err != nil {
		t.Fatal(err)
	}
	c := syn.Input.Corpus
	W := randW(12, 4, rng)
	for _, tc := range []struct {
		name  string
		dense func() (*SymTensor, error)
		white func() (*SymTensor, error)
	}{
		{"stm all-triples", func() (*SymTensor, error) { _, m, e := STMMoments(c, AllTriples); return m, e },
			func() (*SymTensor, error) { return STMWhitenedM3(c, W, AllTriples) }},
		{"stm first-three", func() (*SymTensor, error) { _, m, e := STMMoments(c, FirstThree); return m, e },
			func() (*SymTensor, error) { return STMWhitenedM3(c, W, FirstThree) }},
		{"lda", func() (*SymTensor, error) { _, _, m, e := LDAMoments(c, 1.5); return m, e },
			func() (*SymTensor, error) { return LDAWhitenedM3(c, W, 1.5) }},
	} {
		d, err := tc.dense()
		if err != nil {
			t.Fatal(tc.name, err)
		}
		w, err := tc.white()
		if err != nil {
			t.Fatal(tc.name, err)
		}
		if diff := maxAbsDiff(d.Multilinear(W).Data, w.Data); diff > 1e-10 {
			t.Errorf("%s: whitened path differs from dense by %g", tc.name, diff)
		}
	}
	ms, _, err := SyntheticMoG(7, 3, 200, 0.05, 0.8, rand.NewPCG(3, 3))
	if err != nil {
		t.Fatal(err)
	}
	W = randW(7, 3, rng)
	_, M3, err := MoGMoments(ms.Input.Rows, 0.05)
	if err != nil {
		t.Fatal(err)
	}
	M3w, err := MoGWhitenedM3(ms.Input.Rows, W, 0.05)
	if err != nil {
		t.Fatal(err)
	}
	if diff := maxAbsDiff(M3.Multilinear(W).Data, M3w.Data); diff > 1e-10 {
		t.Errorf("mog: whitened path differs from dense by %g", diff)
	}
}

// The implicit M2 product must equal the dense M2 times X.
func TestM2ApplyMatchesDense(t *testing.T) {
	t.Parallel()
	syn, _ := SyntheticLDA(15, 3, 2, 40, 6, 0.5, rand.NewPCG(8, 1))
	c := syn.Input.Corpus
	X := randW(15, 4, rand.New(rand.NewPCG(2, 9)))
	for _, a0 := range []float64{0, 2} {
		M2 := secondMoment(c, a0)
		var want mat.Dense
		want.Mul(M2, X)
		got := mat.NewDense(15, 4, nil)
		m2Apply(c, a0, X, got)
		if !mat.EqualApprox(&want, got, 1e-12) {
			t.Fatalf("alpha0=%v: implicit M2 product differs", a0)
		}
	}
}

// populationSTM returns sum_k w_k a_k a_k^T and sum_k w_k a_k^(x)3.
func populationMoments(A *mat.Dense, w []float64, s2, s3 float64) (*mat.SymDense, *SymTensor) {
	d, k := A.Dims()
	M2 := mat.NewSymDense(d, nil)
	M3, _ := NewSymTensor(d)
	for c := 0; c < k; c++ {
		a := mat.Col(nil, c, A)
		M2.SymRankOne(M2, s2*w[c], mat.NewVecDense(d, a))
		M3.AddRankOne(s3*w[c], a)
	}
	return M2, M3
}

// checkUnbiased averages estimates over R independent corpora and requires
// every entry's mean to lie within 5 standard errors of the population
// value (5 sigma per entry: false reject probability about 6e-7 per entry,
// below 1e-4 over the <= 100 entries checked here).
func checkUnbiased(t *testing.T, name string, R int, pop []float64, est func(r int) []float64) {
	t.Helper()
	worst, at, mean := unbiasedZ(R, pop, est)
	if worst > 5 {
		t.Errorf("%s entry %d: mean %.6g vs population %.6g (%.1f standard errors)", name, at, mean, pop[at], worst)
		return
	}
	t.Logf("%s: largest deviation %.2f standard errors over %d corpora", name, worst, R)
}

// unbiasedZ returns the largest |mean - population| / standard error over
// the entries, its entry and mean.
func unbiasedZ(R int, pop []float64, est func(r int) []float64) (worst float64, at int, mean float64) {
	n := len(pop)
	sum := make([]float64, n)
	sq := make([]float64, n)
	for r := 0; r < R; r++ {
		e := est(r)
		for i, v := range e {
			sum[i] += v
			sq[i] += v * v
		}
	}
	for i := range pop {
		m := sum[i] / float64(R)
		v := sq[i]/float64(R) - m*m
		se := math.Sqrt(math.Max(v, 0) / float64(R))
		if z := math.Abs(m-pop[i]) / math.Max(se, 1e-15); z > worst {
			worst, at, mean = z, i, m
		}
	}
	return worst, at, mean
}

// The unbiasedness check must reject a biased estimator: the plug-in
// second moment (1/N) sum_n c c^T / l^2, whose diagonal is biased by
// E[diag(x1)]/l.
func TestUnbiasedCheckRejectsPlugIn(t *testing.T) {
	t.Parallel()
	A := mat.NewDense(4, 2, []float64{0.5, 0.1, 0.3, 0.1, 0.1, 0.3, 0.1, 0.5})
	w := []float64{0.3, 0.7}
	P2, _ := populationMoments(A, w, 1, 1)
	z, _, _ := unbiasedZ(200, symData(P2), func(r int) []float64 {
		rng := rand.New(rand.NewPCG(uint64(r), 80))
		syn, _ := sampleDocs(rng, A, w, 0, 100, 4, 4)
		c := syn.Input.Corpus
		M := mat.NewSymDense(4, nil)
		for n := 0; n < c.NumDocs(); n++ {
			ws, cs := c.Doc(n)
			v := make([]float64, 4)
			for i, x := range ws {
				v[x] = float64(cs[i])
			}
			M.SymRankOne(M, 1/(16*float64(c.NumDocs())), mat.NewVecDense(4, v))
		}
		return symData(M)
	})
	if z <= 5 {
		t.Fatalf("plug-in estimator passed the unbiasedness check (z = %.1f)", z)
	}
	t.Logf("plug-in estimator rejected at %.0f standard errors", z)
}

func TestSTMUnbiased(t *testing.T) {
	t.Parallel()
	// D=4, K=2, documents of only 4 words: the naive plug-in
	// c c^T / l^2 would be biased by diag(M1)/l = O(25%) here.
	A := mat.NewDense(4, 2, []float64{0.5, 0.1, 0.3, 0.1, 0.1, 0.3, 0.1, 0.5})
	w := []float64{0.3, 0.7}
	P2, P3 := populationMoments(A, w, 1, 1)
	const R, N = 400, 100
	for _, est := range []Estimator{AllTriples, FirstThree} {
		cache := map[int][]float64{}
		get := func(r int) (*mat.SymDense, *SymTensor) {
			rng := rand.New(rand.NewPCG(uint64(r), 77))
			syn, err := sampleDocs(rng, A, w, 0, N, 4, 4)
			if err != nil {
				t.Fatal(err)
			}
			M2, M3, err := STMMoments(syn.Input.Corpus, est)
			if err != nil {
				t.Fatal(err)
			}
			return M2, M3
		}
		checkUnbiased(t, "STM M3 "+est.String(), R, P3.Packed(), func(r int) []float64 {
			M2, M3 := get(r)
			cache[r] = symData(M2)
			return M3.Packed()
		})
		checkUnbiased(t, "STM M2 "+est.String(), R, symData(P2), func(r int) []float64 { return cache[r] })
	}
}

func symData(m *mat.SymDense) []float64 {
	d := m.SymmetricDim()
	out := make([]float64, 0, d*d)
	for i := 0; i < d; i++ {
		for j := i; j < d; j++ {
			out = append(out, m.At(i, j))
		}
	}
	return out
}

func TestLDAUnbiased(t *testing.T) {
	t.Parallel()
	// Small corpora (N = 8 documents of 5 words): products of plug-in means
	// would be biased by O(1/N); the U-statistics of Lemma 25 are not.
	A := mat.NewDense(4, 2, []float64{0.6, 0.1, 0.2, 0.1, 0.1, 0.2, 0.1, 0.6})
	w := []float64{0.5, 0.5}
	const alpha0 = 1.0
	P2, P3 := populationMoments(A, w, 1/(alpha0+1), 2/((alpha0+1)*(alpha0+2)))
	const R, N = 3000, 8
	m2s := map[int][]float64{}
	checkUnbiased(t, "LDA M3", R, P3.Packed(), func(r int) []float64 {
		rng := rand.New(rand.NewPCG(uint64(r), 78))
		syn, err := sampleDocs(rng, A, w, alpha0, N, 5, 4)
		if err != nil {
			t.Fatal(err)
		}
		_, M2, M3, err := LDAMoments(syn.Input.Corpus, alpha0)
		if err != nil {
			t.Fatal(err)
		}
		m2s[r] = symData(M2)
		return M3.Packed()
	})
	checkUnbiased(t, "LDA M2", R, symData(P2), func(r int) []float64 { return m2s[r] })
}

func TestMoGUnbiased(t *testing.T) {
	t.Parallel()
	A := mat.NewDense(3, 2, []float64{0.5, -0.3, 0.2, 0.4, -0.1, 0.3})
	w := []float64{0.5, 0.5}
	const s2 = 0.01
	P2, P3 := populationMoments(A, w, 1, 1)
	const R, N = 300, 200
	m2s := map[int][]float64{}
	checkUnbiased(t, "MoG M3", R, P3.Packed(), func(r int) []float64 {
		rng := rand.New(rand.NewPCG(uint64(r), 79))
		X := mat.NewDense(N, 3, nil)
		for n := 0; n < N; n++ {
			h := rng.IntN(2)
			for i := 0; i < 3; i++ {
				X.Set(n, i, A.At(i, h)+math.Sqrt(s2)*rng.NormFloat64())
			}
		}
		M2, M3, err := MoGMoments(X, s2)
		if err != nil {
			t.Fatal(err)
		}
		m2s[r] = symData(M2)
		return M3.Packed()
	})
	checkUnbiased(t, "MoG M2", R, symData(P2), func(r int) []float64 { return m2s[r] })
}

func TestMomentErrors(t *testing.T) {
	t.Parallel()
	short, err := data.CorpusFromCounts([]string{"a", "b"}, [][]int32{{1, 1}, {2, 2}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := STMMoments(short, AllTriples); err == nil {
		t.Fatal("2-word document accepted")
	}
	if _, _, _, err := LDAMoments(short, 0); err == nil {
		t.Fatal("alpha0 = 0 accepted")
	}
	X := mat.NewDense(2, 2, []float64{0.5, 0.5, 1, 1})
	if _, _, err := MoGMoments(X, 0.1); err == nil {
		t.Fatal("row of norm > 1 accepted")
	}
	if _, err := ParseEstimator("bogus"); err == nil {
		t.Fatal("bad estimator accepted")
	}
}
