package completion

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dprec/dprec/decomposition"
)

// TestRefitFactorStationary: after RefitFactor the gradient of objective (4)
// with respect to every row of the refitted mode vanishes (the normal
// equations hold), computed independently from EntryLoss's gradients.
func TestRefitFactorStationary(t *testing.T) {
	for _, tc := range trainCases {
		train, _ := lowRankStore(tc.dims, 2, 250, 1, 1, 6)
		m := newModel(t, tc.kind, tc.dims, tc.ranks, tc.bias)
		if _, err := Train(train, nil, m, &Settings{Epochs: 2, Threads: 1}, rand.NewPCG(1, 1), nil); err != nil {
			t.Fatal(err)
		}
		for mode := range tc.dims {
			const lambda = 0.3
			if err := RefitFactor(m, train, nil, mode, lambda, 0); err != nil {
				t.Fatal(err)
			}
			R := m.Ranks[mode]
			grad := make([]float64, tc.dims[mode]*R)
			w := m.NewWork()
			idx := make([]int32, len(tc.dims))
			for e := range train.Val {
				x := train.Entry(e, idx)
				m.DataGrad(idx, x, w)
				i := int(idx[mode])
				for r := 0; r < R; r++ {
					grad[i*R+r] += w.Factor[mode][r]
				}
			}
			for i, g := range grad {
				g += 2 * lambda * m.Factors[mode][i]
				if math.Abs(g) > 1e-8 {
					t.Fatalf("%s mode %d: gradient %g at %d after refit", tc.name, mode, g, i)
				}
			}
		}
	}
}

func TestRefitFactorClipAndErrors(t *testing.T) {
	dims := []int{8, 7, 6}
	train, _ := lowRankStore(dims, 2, 100, 1, 0, 2)
	m := newModel(t, decomposition.CP, dims, []int{3}, false)
	for i := range m.Factors[1] {
		m.Factors[1][i] = 5
	}
	for i := range m.Factors[2] {
		m.Factors[2][i] = 0.1
	}
	if err := RefitFactor(m, train, nil, 0, 1, 2); err != nil {
		t.Fatal(err)
	}
	for mo := 1; mo < 3; mo++ {
		for i := 0; i < dims[mo]; i++ {
			n := 0.0
			for _, v := range m.Row(mo, i) {
				n += v * v
			}
			want := 2.0
			if mo == 2 {
				want = math.Sqrt(3 * 0.01) // below the clip: unchanged
			}
			if math.Abs(math.Sqrt(n)-want) > 1e-12 {
				t.Fatalf("mode %d row %d has norm %g, want %g", mo, i, math.Sqrt(n), want)
			}
		}
	}
	// vals overrides the store's values: refitting against zeros gives zero rows.
	if err := RefitFactor(m, train, make([]float64, train.NNZ()), 0, 1, 0); err != nil {
		t.Fatal(err)
	}
	for _, v := range m.Factors[0] {
		if v != 0 {
			t.Fatalf("refit against zero values left %g", v)
		}
	}
	for _, bad := range []struct {
		mode   int
		lambda float64
		vals   []float64
	}{{3, 1, nil}, {-1, 1, nil}, {0, -1, nil}, {0, math.NaN(), nil}, {0, 1, []float64{1}}} {
		if err := RefitFactor(m, train, bad.vals, bad.mode, bad.lambda, 0); err == nil {
			t.Errorf("RefitFactor(mode %d, lambda %g, %d vals) accepted", bad.mode, bad.lambda, len(bad.vals))
		}
	}
}
