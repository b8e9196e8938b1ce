package otd

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/dprec/dprec/data"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// TestAGNWhitenedRecovers: on a single-topic corpus with a vocabulary
// above DenseWhitenMax, a large budget recovers the topics (with the whole
// vocabulary kept, and with a private selection of 400 of the 500 words),
// a tiny one does not and warns, and the report states the releases
// composing to the budget.
func TestAGNWhitenedRecovers(t *testing.T) {
	t.Parallel()
	syn, err := SyntheticSTM(DenseWhitenMax+100, 4, 20000, 30, 0.1, nil, rand.NewPCG(11, 12))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		vocab, releases int
		maxE            float64 // e_comp at epsilon 300
	}{
		{0, 2, 0.05},   // 500 words <= the default 1000: no selection
		{400, 3, 0.15}, // selection drops the rarest fifth of the words (their topic mass counts as error)
	} {
		opts := FitOptions{Model: ModelSTM, K: 4, Method: MethodAGNWhitened, Epsilon: 300, Delta: 1e-5, Private: PrivateOptions{Vocab: tc.vocab}}
		res, err := Fit(&syn.Input, opts, rand.NewPCG(1, 2))
		if err != nil {
			t.Fatal(err)
		}
		e := EComp(syn.A, res.A)
		if e > tc.maxE || res.Path != "whitened" {
			t.Errorf("vocab %d, epsilon 300: e_comp %.3f (want <= %.2f), path %s", tc.vocab, e, tc.maxE, res.Path)
		}
		r := res.Report
		if len(r.Releases) != tc.releases || math.Abs(r.Epsilon-300) > 1e-9 || math.Abs(r.Delta-1e-5) > 1e-15 {
			t.Errorf("vocab %d: report: %d releases, (%v, %v)", tc.vocab, len(r.Releases), r.Epsilon, r.Delta)
		}
		for _, n := range r.Notes {
			if strings.Contains(n, "WARNING") {
				t.Errorf("vocab %d: warning at epsilon 300: %s", tc.vocab, n)
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
			t.Errorf("vocab %d, epsilon 0.01: e_comp %.3f (epsilon 300: %.3f), warned %v", tc.vocab, e2, e, warned)
		}
	}
	if _, err := Fit(&Input{Rows: mat.NewDense(5, 4, nil)}, FitOptions{Model: ModelMoG, K: 2, Method: MethodAGNWhitened, Epsilon: 1, Delta: 1e-5}, nil); err == nil {
		t.Error("agn-whitened accepted model mog")
	}
	for _, p := range []PrivateOptions{{Vocab: MaxPrivateVocab + 1}, {Vocab: 3}, {ClipLen: 0.5}, {ClipM3: math.NaN()}} {
		if _, err := Fit(&syn.Input, FitOptions{Model: ModelSTM, K: 4, Method: MethodAGNWhitened, Epsilon: 1, Delta: 1e-5, Private: p}, nil); err == nil {
			t.Errorf("options %+v accepted", p)
		}
	}
}

// TestAGNWhitenedLDA: on an LDA corpus above DenseWhitenMax, agn-whitened
// with model lda recovers the topics at a large budget (with and without
// the private selection), states six releases (five without selection)
// summing to the budget, and is far worse at a tiny one.
func TestAGNWhitenedLDA(t *testing.T) {
	t.Parallel()
	syn, err := SyntheticLDA(DenseWhitenMax+100, 3, 1, 20000, 60, 0.05, rand.NewPCG(7, 8))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		vocab, releases int
		maxE            float64
	}{
		{0, 5, 0.1},
		{450, 6, 0.15},
	} {
		opts := FitOptions{Model: ModelLDA, Alpha0: 1, K: 3, Method: MethodAGNWhitened, Epsilon: 300, Delta: 1e-5, Private: PrivateOptions{Vocab: tc.vocab}}
		res, err := Fit(&syn.Input, opts, rand.NewPCG(3, 4))
		if err != nil {
			t.Fatal(err)
		}
		e := EComp(syn.A, res.A)
		t.Logf("lda, vocab %d: e_comp %.3f at epsilon 300", tc.vocab, e)
		r := res.Report
		if e > tc.maxE || len(r.Releases) != tc.releases || math.Abs(r.Epsilon-300) > 1e-9 || math.Abs(r.Delta-1e-5) > 1e-15 {
			t.Errorf("vocab %d: e_comp %.3f (want <= %.2f), %d releases, (%v, %v)", tc.vocab, e, tc.maxE, len(r.Releases), r.Epsilon, r.Delta)
		}
		opts.Epsilon = 0.01
		res, err = Fit(&syn.Input, opts, rand.NewPCG(3, 4))
		if err != nil {
			t.Fatal(err)
		}
		if e2 := EComp(syn.A, res.A); e2 < 2*e {
			t.Errorf("vocab %d: epsilon 0.01 e_comp %.3f, epsilon 300 %.3f", tc.vocab, e2, e)
		}
	}
}

// TestAGNWhitenedNeighbours is the neighbouring-corpus test of (S10): for
// each clipping setting, one document of a corpus is replaced (by the
// extreme pair "a a a" -> "b b b" on the words whose rows of W are
// largest and opposite, and by random documents), and the change of each
// of the three released statistics (clipped frequencies, clipped M2,
// clipped whitened tensor) is measured against the sensitivity the
// privacy report states for it. The extreme pair must reach each bound
// (within 1e-9), so a bound too large would fail as well as one too
// small.
func TestAGNWhitenedNeighbours(t *testing.T) {
	t.Parallel()
	const d, k, n = 30, 3, 60
	rng := rand.New(rand.NewPCG(31, 32))
	W := mat.NewDense(d, k, nil)
	for i := 0; i < d; i++ {
		for j := 0; j < k; j++ {
			W.Set(i, j, rng.NormFloat64())
		}
	}
	W.SetRow(0, []float64{3, 0, 0})
	W.SetRow(1, []float64{-3, 0, 0})
	docs := make([][]int32, n)
	for j := range docs {
		docs[j] = make([]int32, d)
		for i := 0; i < 4+rng.IntN(30); i++ {
			docs[j][2+rng.IntN(d-2)]++
		}
	}
	corpus := func(docs [][]int32) *data.Corpus {
		c, err := data.CorpusFromCounts(vocabNames(d), docs, 3)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	for _, tc := range []struct {
		name string
		opts PrivateOptions
	}{
		{"default clipping", PrivateOptions{}},
		{"tight clipping", PrivateOptions{ClipLen: 5, ClipM3: 0.5}},
		{"no clipping", PrivateOptions{ClipLen: -1, ClipM3: -1}},
	} {
		// The sensitivities the report states for this corpus (a large
		// epsilon keeps the run fast; the sensitivities do not depend on it).
		res, err := Fit(&Input{Corpus: corpus(docs)}, FitOptions{Model: ModelSTM, K: k, Method: MethodAGNWhitened, Epsilon: 10, Delta: 1e-5,
			Private: PrivateOptions{Vocab: d - 1, ClipLen: tc.opts.ClipLen, ClipM3: tc.opts.ClipM3}}, rand.NewPCG(1, 1))
		if err != nil {
			t.Fatal(err)
		}
		rels := res.Report.Releases
		if len(rels) != 3 {
			t.Fatalf("%s: %d releases", tc.name, len(rels))
		}
		c1, c2, c3 := tc.opts.clips(k)
		_, s3, _ := clippedTriples(corpus(docs), W, c3, n, nil)
		claimed := []float64{rels[0].Sensitivity, rels[1].Sensitivity, s3}
		// Stage 2's stated sensitivity is 2 min(C3, r_W^3)/N for the W of
		// the run; recompute it for the test's W and check the formula.
		if math.Abs(rels[0].Sensitivity-math.Sqrt2*c1/n) > 1e-15 || math.Abs(rels[1].Sensitivity-math.Sqrt2*c2/n) > 1e-15 {
			t.Errorf("%s: stated sensitivities %v, %v", tc.name, rels[0].Sensitivity, rels[1].Sensitivity)
		}
		// Statistics 3 and 4 are the clip-weight means released by (S11):
		// (rho1, rho2) and rho3, each weight in [0, 1].
		claimed = append(claimed, math.Sqrt2/n, 1.0/n)
		stats := func(docs [][]int32) [5][]float64 {
			c := corpus(docs)
			m2, rho2 := clippedM2(c, c2, n)
			p, _, rho3 := clippedTriples(c, W, c3, n, nil)
			m1, rho1 := clippedFrequencies(c, c1, n)
			return [5][]float64{m1, packUpper(d, m2.At), p, {rho1, rho2}, {rho3}}
		}
		worst := [5]float64{}
		for trial := 0; trial < 60; trial++ {
			before := append([][]int32(nil), docs...)
			after := append([][]int32(nil), docs...)
			before[n-1], after[n-1] = make([]int32, d), make([]int32, d)
			if trial == 0 {
				before[n-1][0], after[n-1][1] = 3, 3 // "a a a" -> "b b b"
			} else {
				for i := 0; i < 3+rng.IntN(40); i++ {
					before[n-1][rng.IntN(d)]++
				}
				for i := 0; i < 3+rng.IntN(40); i++ {
					after[n-1][rng.IntN(d)]++
				}
			}
			p, q := stats(before), stats(after)
			for s := range p {
				change := floats.Distance(p[s], q[s], 2)
				if change > claimed[s]*(1+1e-9) {
					t.Fatalf("%s, trial %d, statistic %d: change %.4g exceeds the stated sensitivity %.4g", tc.name, trial, s, change, claimed[s])
				}
				worst[s] = math.Max(worst[s], change)
			}
		}
		for s := range worst[:3] { // the weight means' bounds are not attained by documents of >= 3 words
			if worst[s] < claimed[s]*(1-1e-9) {
				t.Errorf("%s, statistic %d: largest change %.4g below the stated sensitivity %.4g: the extreme pair does not reach it", tc.name, s, worst[s], claimed[s])
			}
		}
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

// TestSwampNote: no warning above twice the noise; the N estimate from
// the K-th signal sqrt(s_K^2 - level^2); with no K-th signal, the lower
// bound from the smallest direction above twice the noise; none at all.
func TestSwampNote(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		top   []float64
		level float64
		want  []string // substrings; nil: no warning
	}{
		{"clear", []float64{2, 1}, 0.1, nil},
		// signal sqrt(0.25^2 - 0.15^2) = 0.2: N = 1000 * 2 * 0.15 / 0.2.
		{"k-th detectable", []float64{1, 0.25}, 0.15, []string{"N = 1500", "1 of the K = 2"}},
		{"k-th lost", []float64{0.8, 0.5, 0.3}, 0.3, []string{"no signal is detectable in the 3-th", "more than 2 N = 2000", "K (at most 1)", "1 of the K = 3"}},
		{"nothing", []float64{0.1, 0.1}, 0.15, []string{"no signal is detectable in the 2-th", "0 of the K = 2"}},
	} {
		s := swampNote(tc.top, tc.level, len(tc.top), 1000)
		if tc.want == nil && s != "" {
			t.Errorf("%s: warned: %s", tc.name, s)
		}
		for _, w := range tc.want {
			if !strings.Contains(s, w) {
				t.Errorf("%s: note %q lacks %q", tc.name, s, w)
			}
		}
	}
}

// TestAGNWhitenedSplit: FitOptions.Split gives agn-whitened's three
// stages their fractions of epsilon and delta (two fractions: M2 and the
// tensor, only when no selection is made); bad splits are errors.
func TestAGNWhitenedSplit(t *testing.T) {
	t.Parallel()
	syn, err := SyntheticSTM(DenseWhitenMax+100, 3, 3000, 30, 0.1, nil, rand.NewPCG(13, 14))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		vocab int
		split []float64
		want  []float64 // release epsilons; nil: error
	}{
		{"default, selecting", 400, nil, []float64{0.2, 1.2, 0.6}},
		{"default, whole vocabulary", 0, nil, []float64{2 * 0.6 / 0.9, 2 * 0.3 / 0.9}},
		{"three", 400, []float64{0.2, 0.5, 0.3}, []float64{0.4, 1, 0.6}},
		{"two, whole vocabulary", 0, []float64{0.25, 0.75}, []float64{0.5, 1.5}},
		{"two, selecting", 400, []float64{0.25, 0.75}, nil},
		{"zero tensor share", 400, []float64{0.5, 0.5, 0}, nil},
		{"not summing to 1", 400, []float64{0.2, 0.2, 0.2}, nil},
		{"four", 400, []float64{0.25, 0.25, 0.25, 0.25}, nil},
	} {
		res, err := Fit(&syn.Input, FitOptions{Model: ModelSTM, K: 3, Method: MethodAGNWhitened, Epsilon: 2, Delta: 1e-5, Split: tc.split,
			Private: PrivateOptions{Vocab: tc.vocab}}, rand.NewPCG(1, 1))
		if tc.want == nil {
			if err == nil {
				t.Errorf("%s: accepted", tc.name)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		rels := res.Report.Releases
		if len(rels) != len(tc.want) {
			t.Errorf("%s: %d releases, want %d", tc.name, len(rels), len(tc.want))
			continue
		}
		for i, r := range rels {
			if math.Abs(r.Epsilon-tc.want[i]) > 1e-12 || math.Abs(r.Delta-tc.want[i]*1e-5/2) > 1e-18 {
				t.Errorf("%s: release %d (%v, %v), want epsilon %v", tc.name, i, r.Epsilon, r.Delta, tc.want[i])
			}
		}
	}
}
