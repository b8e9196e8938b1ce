package otd

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dprec/dprec/data"
	"gonum.org/v1/gonum/mat"
)

func TestNormalizeTopics(t *testing.T) {
	t.Parallel()
	syn, err := SyntheticLDA(40, 3, 1, 2000, 40, 0.3, rand.NewPCG(5, 5))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Fit(&syn.Input, FitOptions{Model: ModelLDA, K: 3, Alpha0: 1}, rand.NewPCG(6, 6))
	if err != nil {
		t.Fatal(err)
	}
	d, k := res.A.Dims()
	var ws float64
	for c := 0; c < k; c++ {
		var s float64
		for i := 0; i < d; i++ {
			if res.A.At(i, c) < 0 {
				t.Fatalf("topic %d has a negative entry", c)
			}
			s += res.A.At(i, c)
		}
		if math.Abs(s-1) > 1e-9 {
			t.Errorf("topic %d sums to %v", c, s)
		}
		ws += res.Weights[c]
		if math.Abs(res.Alpha[c]-res.RawWeights[c]) > 1e-12 {
			t.Errorf("alpha %v is not alpha0 * raw weight %v", res.Alpha[c], res.RawWeights[c])
		}
	}
	if math.Abs(ws-1) > 1e-12 {
		t.Errorf("weights sum to %v", ws)
	}
	// A negative weight is flagged, not shown as a topic.
	r := &Result{A: mat.NewDense(3, 3, []float64{1, 0.5, -1, 0, 0.5, -1, -0.2, 0, -1}), Weights: []float64{0.6, 0.6, -0.1}}
	normalizeTopics(r)
	if !r.Zero[2] || r.Zero[0] || r.Zero[1] || r.Weights[2] != 0 || math.Abs(r.Weights[0]-0.5) > 1e-12 {
		t.Errorf("zero %v weights %v", r.Zero, r.Weights)
	}
	if got := mat.Col(nil, 0, r.A); math.Abs(got[0]-1) > 1e-12 || got[2] != 0 {
		t.Errorf("projection of (1, 0, -0.2) = %v, want (1, 0, 0)", got)
	}
}

func TestEffectiveTopics(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		w    []float64
		want float64
	}{
		{[]float64{0.25, 0.25, 0.25, 0.25}, 4},
		{[]float64{1, 0, 0}, 1},
		{[]float64{2, 2, -1}, 2},
		{nil, 0},
	} {
		if got := EffectiveTopics(tc.w); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("EffectiveTopics(%v) = %v, want %v", tc.w, got, tc.want)
		}
	}
}

// disjointTopics returns K topics on disjoint blocks of m words each.
func disjointTopics(k, m int) *mat.Dense {
	A := mat.NewDense(k*m, k, nil)
	for c := 0; c < k; c++ {
		for i := 0; i < m; i++ {
			A.Set(c*m+i, c, 1/float64(m))
		}
	}
	return A
}

func TestInferDocTopics(t *testing.T) {
	t.Parallel()
	A := disjointTopics(2, 5)
	vocab := vocabNames(10)
	docs := [][]int32{
		{4, 4, 4, 4, 4, 0, 0, 0, 0, 0},   // topic 1 only
		{6, 6, 6, 6, 6, 2, 2, 2, 2, 2},   // 3:1
		{0, 0, 0, 0, 0, 10, 0, 0, 0, 10}, // topic 2 only
	}
	c, err := data.CorpusFromCounts(vocab, docs, 1)
	if err != nil {
		t.Fatal(err)
	}
	theta, err := InferDocTopics(c, A, []float64{0.1, 0.1}, InferOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := [][]float64{{1, 0}, {0.75, 0.25}, {0, 1}}
	for n, w := range want {
		for k := range w {
			if math.Abs(theta.At(n, k)-w[k]) > 0.02 {
				t.Errorf("doc %d: theta %v, want %v", n, mat.Row(nil, n, theta), w)
			}
		}
	}
	if _, err := InferDocTopics(c, disjointTopics(2, 4), []float64{0.1, 0.1}, InferOptions{}); err == nil {
		t.Error("topics over another vocabulary accepted")
	}
	if _, err := InferDocTopics(c, A, []float64{0.1, 0}, InferOptions{}); err == nil {
		t.Error("zero prior accepted")
	}
}

// ldaFromTopics samples an LDA corpus with the given topics.
func ldaFromTopics(A *mat.Dense, alpha float64, n, l int, src rand.Source) *data.Corpus {
	rng := rand.New(src)
	d, k := A.Dims()
	docs := make([][]int32, n)
	for j := range docs {
		theta := dirichlet(rng, alpha, k)
		docs[j] = make([]int32, d)
		for i := 0; i < l; i++ {
			z := cdfSample(rng, cumsum(theta))
			w := cdfSample(rng, cumsum(mat.Col(nil, z, A)))
			docs[j][w]++
		}
	}
	c, err := data.CorpusFromCounts(vocabNames(d), docs, 1)
	if err != nil {
		panic(err)
	}
	return c
}

func cumsum(x []float64) []float64 {
	out := make([]float64, len(x))
	var s float64
	for i, v := range x {
		s += v
		out[i] = s
	}
	return out
}

func TestRefineRecoversAndRebirths(t *testing.T) {
	t.Parallel()
	const k = 4
	Atrue := disjointTopics(k, 8)
	// Blur the blocks a little so the topics overlap.
	d, _ := Atrue.Dims()
	for c := 0; c < k; c++ {
		for i := 0; i < d; i++ {
			Atrue.Set(i, c, 0.9*Atrue.At(i, c)+0.1/float64(d))
		}
	}
	c := ldaFromTopics(Atrue, 0.2, 600, 40, rand.NewPCG(7, 7))
	// Start: topics 0 and 1 merged into one, topic 3 a dead topic on a
	// single word of block 3 (as a spectral component on a signature).
	A0 := mat.NewDense(d, k, nil)
	for i := 0; i < d; i++ {
		A0.Set(i, 0, (Atrue.At(i, 0)+Atrue.At(i, 1))/2)
		A0.Set(i, 1, Atrue.At(i, 2))
		A0.Set(i, 2, Atrue.At(i, 3))
	}
	A0.Set(d-1, 3, 1)
	ref, err := Refine(c, A0, RefineOptions{Sweeps: 15, NoBackground: true})
	if err != nil {
		t.Fatal(err)
	}
	if e := EComp(Atrue, ref.A); e > 0.1 || ref.Rebirths < 1 {
		t.Errorf("with rebirth: e_comp %.3f (want <= 0.1), %d rebirths, weights %v", e, ref.Rebirths, ref.Weights)
	}
	if eff := EffectiveTopics(ref.Weights); eff < 3.5 {
		t.Errorf("effective topics %.2f, want near 4", eff)
	}
	// Without rebirth the merged pair stays merged.
	plain, err := Refine(c, A0, RefineOptions{Sweeps: 15, NoBackground: true, MinShare: -1})
	if err != nil {
		t.Fatal(err)
	}
	if e := EComp(Atrue, plain.A); e < 0.2 {
		t.Errorf("without rebirth e_comp %.3f: the fixture does not exercise rebirth", e)
	}
	// Theta rows are distributions.
	for n := 0; n < c.NumDocs(); n++ {
		var s float64
		for j := 0; j < k; j++ {
			s += ref.Theta.At(n, j)
		}
		if math.Abs(s-1) > 1e-9 {
			t.Fatalf("theta row %d sums to %v", n, s)
		}
	}
	if _, err := Refine(c, A0, RefineOptions{}); err == nil {
		t.Error("zero sweeps accepted")
	}
}

func TestRefineBackground(t *testing.T) {
	t.Parallel()
	// Documents draw a fraction f ~ U(0, 0.9) of their words from a
	// background of 3 generic words (ids 0-2) and the rest from their topic
	// mixture over two disjoint blocks of 10 specific words. (With the
	// same fraction in every document the two models fit equally well.)
	const k, m, g = 2, 10, 3
	d := g + k*m
	A := mat.NewDense(d, k, nil)
	for c := 0; c < k; c++ {
		for i := 0; i < m; i++ {
			A.Set(g+c*m+i, c, 1/float64(m))
		}
	}
	rng := rand.New(rand.NewPCG(8, 8))
	docs := make([][]int32, 400)
	for j := range docs {
		docs[j] = make([]int32, d)
		theta := dirichlet(rng, 0.1, k)
		f := 0.9 * rng.Float64()
		for i := 0; i < 50; i++ {
			if rng.Float64() < f {
				docs[j][rng.IntN(g)]++
				continue
			}
			z := cdfSample(rng, cumsum(theta))
			docs[j][cdfSample(rng, cumsum(mat.Col(nil, z, A)))]++
		}
	}
	c, err := data.CorpusFromCounts(vocabNames(d), docs, 1)
	if err != nil {
		t.Fatal(err)
	}
	generic := func(ref *Refined) (n int) {
		for j := 0; j < k; j++ {
			if argmaxCol(ref.A, j) < g {
				n++
			}
		}
		return n
	}
	start := mat.NewDense(d, k, nil)
	for i := 0; i < d; i++ {
		for j := 0; j < k; j++ {
			start.Set(i, j, 0.5*A.At(i, j)+0.5/float64(d))
		}
	}
	with, err := Refine(c, start, RefineOptions{Sweeps: 8})
	if err != nil {
		t.Fatal(err)
	}
	without, err := Refine(c, start, RefineOptions{Sweeps: 8, NoBackground: true})
	if err != nil {
		t.Fatal(err)
	}
	if generic(without) != k {
		t.Fatalf("fixture: without background a generic word should top every topic, tops %d", generic(without))
	}
	if generic(with) != 0 || !(with.BackgroundShare > 0.3) {
		t.Errorf("with background a generic word tops %d topics, background share %.3f", generic(with), with.BackgroundShare)
	}
}

func argmaxCol(A *mat.Dense, c int) int {
	d, _ := A.Dims()
	best := 0
	for i := 1; i < d; i++ {
		if A.At(i, c) > A.At(best, c) {
			best = i
		}
	}
	return best
}

// TestThreads: InferDocTopics gives identical proportions with any number
// of threads; Refine's results agree to rounding.
func TestThreads(t *testing.T) {
	t.Parallel()
	A := disjointTopics(3, 6)
	c := ldaFromTopics(A, 0.3, 301, 30, rand.NewPCG(9, 9))
	alpha := []float64{0.1, 0.1, 0.1}
	one, err := InferDocTopics(c, A, alpha, InferOptions{})
	if err != nil {
		t.Fatal(err)
	}
	four, _ := InferDocTopics(c, A, alpha, InferOptions{Threads: 4})
	if !mat.Equal(one, four) {
		t.Error("InferDocTopics differs with 4 threads")
	}
	r1, err := Refine(c, A, RefineOptions{Sweeps: 5})
	if err != nil {
		t.Fatal(err)
	}
	r3, _ := Refine(c, A, RefineOptions{Sweeps: 5, Infer: InferOptions{Threads: 3}})
	if !mat.EqualApprox(r1.A, r3.A, 1e-9) || !mat.EqualApprox(r1.Theta, r3.Theta, 1e-9) {
		t.Error("Refine differs beyond rounding with 3 threads")
	}
}
