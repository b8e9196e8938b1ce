package otd

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/dprec/dprec/data"
	"gonum.org/v1/gonum/mat"
)

// TestAGNWhitenedRecovers: on a single-topic corpus with a vocabulary
// above DenseWhitenMax (the sketch path: no D x D or D^3 array), a large
// budget recovers the topics, a tiny one does not and warns, and the
// report states three releases composing to the budget.
func TestAGNWhitenedRecovers(t *testing.T) {
	t.Parallel()
	syn, err := SyntheticSTM(DenseWhitenMax+100, 4, 20000, 30, 0.1, nil, rand.NewPCG(11, 12))
	if err != nil {
		t.Fatal(err)
	}
	opts := FitOptions{Model: ModelSTM, K: 4, Method: MethodAGNWhitened, Epsilon: 300, Delta: 1e-5}
	res, err := Fit(&syn.Input, opts, rand.NewPCG(1, 2))
	if err != nil {
		t.Fatal(err)
	}
	e := EComp(syn.A, res.A)
	if e > 0.05 || res.Path != "whitened" {
		t.Errorf("epsilon 300: e_comp %.3f (want <= 0.05), path %s", e, res.Path)
	}
	r := res.Report
	if len(r.Releases) != 3 || math.Abs(r.Epsilon-300) > 1e-9 || math.Abs(r.Delta-1e-5) > 1e-15 {
		t.Errorf("report: %d releases, (%v, %v)", len(r.Releases), r.Epsilon, r.Delta)
	}
	for _, n := range r.Notes {
		if strings.Contains(n, "WARNING") {
			t.Errorf("warning at epsilon 300: %s", n)
		}
	}
	opts.Epsilon = 0.01
	res, err = Fit(&syn.Input, opts, rand.NewPCG(1, 2))
	if err != nil {
		t.Fatal(err)
	}
	warned := false
	for _, n := range res.Report.Notes {
		warned = warned || strings.Contains(n, "WARNING") && strings.Contains(n, "documents")
	}
	if e2 := EComp(syn.A, res.A); e2 < 2*e || !warned {
		t.Errorf("epsilon 0.01: e_comp %.3f (epsilon 300: %.3f), warned %v", e2, e, warned)
	}
	if _, err := Fit(&syn.Input, FitOptions{Model: ModelLDA, Alpha0: 1, K: 4, Method: MethodAGNWhitened, Epsilon: 1, Delta: 1e-5}, nil); err == nil {
		t.Error("agn-whitened accepted model lda")
	}
}

// TestAGNWhitenedSensitivity: on neighbouring corpora (one document
// replaced, including the extreme "a a a" -> "b b b" on the words with the
// largest rows of W), the packed whitened tensor moves by at most
// WhitenedTensorSensitivity(W, 2/N), and the extreme pair comes within a
// factor 2 of it.
func TestAGNWhitenedSensitivity(t *testing.T) {
	t.Parallel()
	const d, k, n = 30, 3, 50
	rng := rand.New(rand.NewPCG(21, 22))
	W := mat.NewDense(d, k, nil)
	for i := 0; i < d; i++ {
		for j := 0; j < k; j++ {
			W.Set(i, j, rng.NormFloat64())
		}
	}
	// Two words with the largest, opposite rows.
	W.SetRow(0, []float64{3, 0, 0})
	W.SetRow(1, []float64{-3, 0, 0})
	docs := make([][]int32, n)
	for j := range docs {
		docs[j] = make([]int32, d)
		for i := 0; i < 5; i++ {
			docs[j][2+rng.IntN(d-2)]++
		}
	}
	bound := WhitenedTensorSensitivity(W, 2/float64(n))
	tensor := func(docs [][]int32) []float64 {
		c, err := data.CorpusFromCounts(vocabNames(d), docs, 3)
		if err != nil {
			t.Fatal(err)
		}
		T, err := whitenedM3(c, W, 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		return T.Packed()
	}
	var worst float64
	for trial := 0; trial < 40; trial++ {
		before := append([][]int32(nil), docs...)
		after := append([][]int32(nil), docs...)
		before[n-1], after[n-1] = make([]int32, d), make([]int32, d)
		if trial == 0 {
			before[n-1][0], after[n-1][1] = 3, 3 // "a a a" -> "b b b"
		} else {
			for i := 0; i < 3+rng.IntN(5); i++ {
				before[n-1][rng.IntN(d)]++
				after[n-1][rng.IntN(d)]++
			}
		}
		p, q := tensor(before), tensor(after)
		var s float64
		for i := range p {
			s += (p[i] - q[i]) * (p[i] - q[i])
		}
		change := math.Sqrt(s)
		if change > bound*(1+1e-9) {
			t.Fatalf("trial %d: packed change %.4g exceeds the bound %.4g", trial, change, bound)
		}
		worst = math.Max(worst, change)
	}
	if worst < bound/2 {
		t.Errorf("largest change %.4g is far below the bound %.4g: the extreme pair is not extreme", worst, bound)
	}
}

func TestSwampNote(t *testing.T) {
	t.Parallel()
	if s := swampNote(1, 0.1, 5, 1000); s != "" {
		t.Errorf("clear signal warned: %s", s)
	}
	// signal sqrt(0.25^2 - 0.15^2) = 0.2: N = 1000 * 2 * 0.15 / 0.2.
	if s := swampNote(0.25, 0.15, 5, 1000); !strings.Contains(s, "N = 1500") {
		t.Errorf("note %q does not name N = 1500", s)
	}
	if s := swampNote(0.1, 0.15, 5, 1000); !strings.Contains(s, "no signal") {
		t.Errorf("note %q", s)
	}
}
