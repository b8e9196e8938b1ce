package completion

import (
	"math/rand/v2"
	"testing"

	"github.com/dprec/dprec/decomposition"
)

// TestRowSystemReplaysALS: InitModel and RowSystem, fed every row's
// ratings in storage order, reproduce Train's ALS sweeps bit for bit (the
// contract the Beam pipelines rely on), with and without biases.
func TestRowSystemReplaysALS(t *testing.T) {
	for _, bias := range []bool{true, false} {
		dims := []int{30, 20}
		train, _ := lowRankStore(dims, 2, 300, 10, 3, 4)
		s := Settings{Solver: SolverALS, Epochs: 3, Threads: 2}
		want := newModel(t, decomposition.CP, dims, []int{3}, bias)
		if _, err := Train(train, nil, want, &s, rand.NewPCG(8, 9), nil); err != nil {
			t.Fatal(err)
		}
		cfg := s.Resolved()
		got := newModel(t, decomposition.CP, dims, []int{3}, bias)
		mean := 0.0
		for _, v := range train.Val {
			mean += v
		}
		InitModel(got, mean/float64(train.NNZ()), &cfg, rand.NewPCG(8, 9))
		rs := NewRowSystem(3, bias)
		for range cfg.Epochs {
			for mo := range 2 {
				o := 1 - mo
				for i := 0; i < dims[mo]; i++ {
					rs.Reset()
					for e := range train.Val {
						if int(train.Idx[mo][e]) != i {
							continue
						}
						j := int(train.Idx[o][e])
						off := 0.0
						if bias {
							off = got.Mean + got.Bias[o][j]
						}
						rs.Add(got.Row(o, j), train.Val[e], off)
					}
					b, _, ok := rs.Solve(cfg.Reg, 0, cfg.RegBias, got.Row(mo, i))
					if !ok {
						t.Fatalf("row %d of mode %d not positive definite", i, mo)
					}
					if bias {
						got.Bias[mo][i] = b
					}
				}
			}
		}
		if !modelsEqual(got, want) {
			t.Fatalf("bias %v: the replayed sweeps differ from Train's", bias)
		}
	}
}
