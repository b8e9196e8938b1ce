package completion

import (
	"math/rand/v2"
	"testing"
)

// TestALSFits: on noiseless low-rank data ALS drives the held-out RMSE far
// below the data's standard deviation, for every kind, order and thread
// count, with time rows free (RegTime off) as the data's are random.
func TestALSFits(t *testing.T) {
	for _, tc := range trainCases {
		for _, threads := range []int{1, 2} {
			train, test := lowRankStore(tc.dims, 1, 3*len(tc.dims)*80, 200, 3, 9)
			m := newModel(t, tc.kind, tc.dims, tc.ranks, tc.bias)
			s := &Settings{Solver: SolverALS, Epochs: 50, Threads: threads, Reg: 1e-3, RegBias: 1e-3, RegTime: 1e-3, RegCore: 1e-4}
			res, err := Train(train, nil, m, s, rand.NewPCG(1, 2), nil)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			first, last := res.History[0].TrainRMSE, res.History[len(res.History)-1].TrainRMSE
			got := RMSE(m, test, 1)
			if !(last < first/5) || got > 0.3 {
				t.Errorf("%s threads %d: train RMSE %.3f -> %.3f, test RMSE %.3f (want < 0.3)", tc.name, threads, first, last, got)
			}
		}
	}
}
