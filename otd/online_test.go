package otd

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// A full pass of the stream's data association must equal the whitened
// tensor's T(I,u,u) exactly (to rounding).
func TestStreamAssociateExact(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(4, 4))
	syn, _ := SyntheticSTM(9, 3, 300, 6, 1, nil, rand.NewPCG(1, 1))
	c := syn.Input.Corpus
	W := randW(9, 3, rng)
	T, err := STMWhitenedM3(c, W, AllTriples)
	if err != nil {
		t.Fatal(err)
	}
	mog, _, _ := SyntheticMoG(6, 2, 200, 0.05, 0.7, rand.NewPCG(2, 2))
	W2 := randW(6, 3, rng)
	T2, err := MoGWhitenedM3(mog.Input.Rows, W2, 0.05)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		s    Stream
		T    *SymTensor
		n    int
	}{
		{"corpus", &CorpusStream{C: c, W: W}, T, c.NumDocs()},
		{"rows", NewRowStream(mog.Input.Rows, W2, 0.05), T2, 200},
	} {
		us := [][]float64{{0.3, -0.5, 0.8}, {1, 0, 0}}
		du := [][]float64{make([]float64, 3), make([]float64, 3)}
		dl := make([]float64, 2)
		if err := tc.s.Associate(us, tc.n, du, dl); err != nil {
			t.Fatal(err)
		}
		for l, u := range us {
			want := tc.T.TIuu(u, nil)
			if d := maxAbsDiff(want, du[l]); d > 1e-12*math.Max(1, norm2(want)) {
				t.Errorf("%s: T(I,u,u) differs by %g", tc.name, d)
			}
			if math.Abs(tc.T.Tuuu(u)-dl[l]) > 1e-10 {
				t.Errorf("%s: T(u,u,u) %v vs %v", tc.name, dl[l], tc.T.Tuuu(u))
			}
		}
	}
}

// The streaming method (batches of 2,000 of 40,000 documents) must find
// the batch method's components within sampling error: each streaming
// eigenvector within 0.1 of a batch one (the batch-to-truth distance at
// this size is about 0.02-0.05), and e_comp after un-whitening within 0.03
// of the batch e_comp.
func TestStreamingAgreesWithBatch(t *testing.T) {
	t.Parallel()
	syn, _ := SyntheticSTM(10, 3, 40000, 10, 1, nil, rand.NewPCG(11, 11))
	c := syn.Input.Corpus
	M2, _ := STMSecondMoment(c, AllTriples)
	W, err := Whiten(M2, 3)
	if err != nil {
		t.Fatal(err)
	}
	T, _ := STMWhitenedM3(c, W, AllTriples)
	lb, Vb, _ := PowerIteration(T, 3, TPMOptions{}, rand.NewPCG(1, 1))
	ls, Vs, err := StreamingPowerIteration(&CorpusStream{C: c, W: W}, 3, StreamOptions{Batch: 2000}, rand.NewPCG(2, 2))
	if err != nil {
		t.Fatal(err)
	}
	for j := 0; j < 3; j++ {
		vs := mat.Col(nil, j, Vs)
		best := math.Inf(1)
		for i := 0; i < 3; i++ {
			vb := mat.Col(nil, i, Vb)
			var d float64
			for r := range vs {
				d += (vs[r] - vb[r]) * (vs[r] - vb[r])
			}
			best = math.Min(best, math.Sqrt(d))
		}
		if best > 0.1 {
			t.Errorf("streaming component %d is %.3f from every batch component", j, best)
		}
	}
	Ab, _ := Unwhiten(W, lb, Vb)
	As, _ := Unwhiten(W, ls, Vs)
	eb, es := EComp(syn.A, Ab), EComp(syn.A, As)
	t.Logf("e_comp batch %.4f, streaming %.4f", eb, es)
	if es > eb+0.03 {
		t.Errorf("streaming e_comp %.4f vs batch %.4f", es, eb)
	}
}
