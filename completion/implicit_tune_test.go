package completion

import (
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"testing"

	"github.com/dprec/dprec/data"
)

// implicitNDCG trains an implicit model on train and returns the mean
// NDCG@k and P@k on valid (relevance: value >= 4; the user's train items
// excluded; users with a relevant item averaged). Both stores share
// dictionaries.
func implicitNDCG(t testing.TB, train, valid *data.Store, rank int, s *ImplicitSettings, k int) (ndcg, prec float64) {
	t.Helper()
	m := implicitModel(t, train.Dims[0], train.Dims[1], rank)
	if _, err := TrainImplicit(train, m, s, rand.NewPCG(1, 1), nil); err != nil {
		t.Fatal(err)
	}
	U, I := train.Dims[0], train.Dims[1]
	seen := make([]map[int32]bool, U)
	rel := make([]map[int32]bool, U)
	for u := range seen {
		seen[u], rel[u] = map[int32]bool{}, map[int32]bool{}
	}
	for e, u := range train.Idx[0] {
		seen[u][train.Idx[1][e]] = true
	}
	for e, u := range valid.Idx[0] {
		if valid.Val[e] >= 4 {
			rel[u][valid.Idx[1][e]] = true
		}
	}
	n := 0
	scores := make([]float64, I)
	order := make([]int32, I)
	for u := 0; u < U; u++ {
		if len(rel[u]) == 0 {
			continue
		}
		x := m.Row(0, u)
		for j := 0; j < I; j++ {
			s := 0.0
			for r, v := range m.Row(1, j) {
				s += v * x[r]
			}
			scores[j] = s
			order[j] = int32(j)
		}
		slices.SortStableFunc(order, func(a, b int32) int {
			switch {
			case scores[a] > scores[b]:
				return -1
			case scores[a] < scores[b]:
				return 1
			}
			return 0
		})
		var dcg, idcg, hits float64
		r := 0
		for _, j := range order {
			if r == k {
				break
			}
			if seen[u][j] {
				continue
			}
			if rel[u][j] {
				dcg += 1 / math.Log2(float64(r+2))
				hits++
			}
			r++
		}
		for r := 0; r < min(k, len(rel[u])); r++ {
			idcg += 1 / math.Log2(float64(r+2))
		}
		ndcg += dcg / idcg
		prec += hits / float64(k)
		n++
	}
	return ndcg / float64(n), prec / float64(n)
}

// TestImplicitTune is how the implicit defaults were chosen (run with
// DPREC_IMPLICIT_TUNE=1 go test -run TestImplicitTune -v ./completion/). It
// reproduces the training part of `dprec data split --method user
// --fraction 0.2 --seed 1` on ml-latest-small, carves a validation part out
// of it (per user, 20%, seed 2) and grids confidence function, alpha, reg,
// rank and sweeps on validation NDCG@10. The test part is never read.
func TestImplicitTune(t *testing.T) {
	if os.Getenv("DPREC_IMPLICIT_TUNE") == "" {
		t.Skip("set DPREC_IMPLICIT_TUNE=1 to run the grid")
	}
	if _, err := os.Stat(mlPath); err != nil {
		t.Skipf("MovieLens log not available at %s", mlPath)
	}
	st, _, err := data.Load(mlPath, data.LoadOptions{Builder: data.BuilderOptions{TimeUnit: data.TimeNone}})
	if err != nil {
		t.Fatal(err)
	}
	sp, err := data.PerUserSplit(st, 0, 0.2, rand.NewPCG(1, 1))
	if err != nil {
		t.Fatal(err)
	}
	trainAll, _ := sp.Stores(st) // the test part is dropped here
	sp2, err := data.PerUserSplit(trainAll, 0, 0.2, rand.NewPCG(2, 2))
	if err != nil {
		t.Fatal(err)
	}
	train, valid := sp2.Stores(trainAll)
	type cfg struct {
		rank int
		s    ImplicitSettings
	}
	best, bestND := cfg{}, -1.0
	run := func(c cfg) {
		s := c.s
		s.Threads = 2
		nd, p := implicitNDCG(t, train, valid, c.rank, &s, 10)
		t.Logf("rank %3d %-6s alpha %5g reg %5g sweeps %2d: validation NDCG@10 %.4f P@10 %.4f", c.rank, s.Confidence, s.Alpha, s.Reg, s.Iterations, nd, p)
		if nd > bestND {
			best, bestND = c, nd
		}
	}
	// Stage 1: confidence function and alpha (rank 64, reg 20, 15 sweeps).
	for _, cf := range []ConfidenceFunc{ConfidenceLog, ConfidenceLinear, ConfidenceBinary} {
		for _, a := range []float64{0.5, 2, 8, 30} {
			run(cfg{64, ImplicitSettings{Confidence: cf, Alpha: a, Reg: 20, Iterations: 15}})
		}
	}
	// Stage 2: reg and rank (linear, alpha 0.5).
	for _, reg := range []float64{2, 5, 10, 20, 50, 100} {
		for _, r := range []int{32, 64, 128} {
			run(cfg{r, ImplicitSettings{Confidence: ConfidenceLinear, Alpha: 0.5, Reg: reg, Iterations: 15}})
		}
	}
	// Stage 3: smaller alpha, sweeps.
	for _, c := range []cfg{
		{64, ImplicitSettings{Confidence: ConfidenceLinear, Alpha: 0.25, Reg: 20, Iterations: 15}},
		{64, ImplicitSettings{Confidence: ConfidenceLinear, Alpha: 1, Reg: 20, Iterations: 15}},
		{64, ImplicitSettings{Confidence: ConfidenceLinear, Alpha: 0.1, Reg: 20, Iterations: 15}},
		{64, ImplicitSettings{Confidence: ConfidenceLinear, Alpha: 0.05, Reg: 20, Iterations: 15}},
		{64, ImplicitSettings{Confidence: ConfidenceLinear, Alpha: 0.1, Reg: 10, Iterations: 15}},
		{64, ImplicitSettings{Confidence: ConfidenceLinear, Alpha: 0.25, Reg: 10, Iterations: 15}},
		{64, ImplicitSettings{Confidence: ConfidenceLinear, Alpha: 0.25, Reg: 30, Iterations: 15}},
		{64, ImplicitSettings{Confidence: ConfidenceLog, Alpha: 0.25, Reg: 20, Iterations: 15}},
		{128, ImplicitSettings{Confidence: ConfidenceLinear, Alpha: 0.25, Reg: 20, Iterations: 15}},
		{64, ImplicitSettings{Confidence: ConfidenceLinear, Alpha: 0.5, Reg: 20, Iterations: 8}},
		{64, ImplicitSettings{Confidence: ConfidenceLinear, Alpha: 0.5, Reg: 20, Iterations: 25}},
	} {
		run(c)
	}
	t.Logf("best: rank %d %+v: validation NDCG@10 %.4f", best.rank, best.s, bestND)
}
