package completion

import (
	"cmp"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/perturb"
)

// TestPrivateImplicitSweep prints the validation figures behind the
// private implicit mode's constants (ImplicitPrivateSteps,
// ImplicitPrivateGate, DefaultPrivateImplicitRank): NDCG@10 of the
// lists of non-private weighted ALS with the same settings, of
// most-popular and of TrainPrivateImplicit at each epsilon, user unit
// with k events a user, on the validation part of each log (sweepData:
// a random tenth of the training part; relevance: validation events
// rated at least DPREC_IMPLICIT_THRESHOLD, default 4; every user folds
// in from all their training events; training items left out). It runs
// only with DPREC_IMPLICIT_SWEEP=1:
//
//	DPREC_IMPLICIT_SWEEP=1 DPREC_ALS_SETS=ml,synth go test -run TestPrivateImplicitSweep -v ./completion/
//
// DPREC_IMPLICIT_RANK, _ALPHA, _K and DPREC_ALS_EPS override the rank,
// alpha, k and epsilons; DPREC_IMPLICIT_BOUNDED=1 trains on the k-bounded
// log instead of every event (users above k weighted);
// DPREC_IMPLICIT_SEED sets the noise seed (1).
func TestPrivateImplicitSweep(t *testing.T) {
	if os.Getenv("DPREC_IMPLICIT_SWEEP") == "" {
		t.Skip("set DPREC_IMPLICIT_SWEEP=1 to run")
	}
	R, _ := strconv.Atoi(envOr("DPREC_IMPLICIT_RANK", strconv.Itoa(DefaultPrivateImplicitRank)))
	k, _ := strconv.Atoi(envOr("DPREC_IMPLICIT_K", "100"))
	alpha, _ := strconv.ParseFloat(envOr("DPREC_IMPLICIT_ALPHA", "0"), 64)
	thr, _ := strconv.ParseFloat(envOr("DPREC_IMPLICIT_THRESHOLD", "4"), 64)
	var eps []float64
	for _, f := range strings.Split(envOr("DPREC_ALS_EPS", "1,3,10,30,100"), ",") {
		x, err := strconv.ParseFloat(f, 64)
		if err != nil {
			t.Fatal(err)
		}
		eps = append(eps, x)
	}
	for _, name := range strings.Split(envOr("DPREC_ALS_SETS", "ml,synth"), ",") {
		tr, va, _, _ := sweepData(t, name)
		if tr == nil {
			continue
		}
		thr := thr
		if strings.HasPrefix(name, "click") {
			thr = 1 // every event of a click log is relevant
		}
		s := PrivateImplicitSettings(&ImplicitSettings{Alpha: alpha, Reg: DefaultPrivateImplicitReg, Threads: 2})
		pop := make([]float64, tr.Dims[1])
		for _, j := range tr.Idx[1] {
			pop[j]++
		}
		m, err := decomposition.NewModel(decomposition.CP, tr.Dims[:2], []int{R}, false)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		ns := s // the non-private reference sweeps to convergence
		ns.Iterations = DefaultImplicitIterations
		if _, err := TrainImplicit(tr, m, &ns, rand.NewPCG(1, 1), nil); err != nil {
			t.Fatal(err)
		}
		npTime := time.Since(start)
		np := implicitListNDCG(m.Factors[1], R, tr, va, &s, thr)
		mp := implicitListNDCG(nil, 0, tr, va, &s, thr, pop...)
		t.Logf("%s: %d events, %v; weighted ALS rank %d (binary, alpha %g, reg %g): NDCG@10 %.4f (%.2fx most-popular %.4f; %.2f s)", name, tr.NNZ(), tr.Dims, R, s.Alpha, s.Reg, np, np/mp, mp, npTime.Seconds())
		bounded, _, err := BoundUserContributions(tr, k, rand.NewPCG(1, 77))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range eps {
			pm, err := decomposition.NewModel(decomposition.CP, tr.Dims[:2], []int{R}, false)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			fit := tr // every event, users above k weighted, as dprec train hands it over
			if os.Getenv("DPREC_IMPLICIT_BOUNDED") != "" {
				fit = bounded // the k-bounded log (every weight 1)
			}
			seed, _ := strconv.ParseUint(envOr("DPREC_IMPLICIT_SEED", "1"), 10, 64)
			rep, err := TrainPrivateImplicit(fit, pm, &s, &PrivateOptions{Epsilon: e, Delta: 1e-5, Unit: UnitUser, MaxRatingsPerUser: k, Noise: perturb.SeededNoise(seed)})
			if err != nil {
				t.Fatal(err)
			}
			got := implicitListNDCG(pm.Factors[1], R, tr, va, &s, thr)
			route := "learnt"
			for _, n := range rep.Notes {
				if strings.Contains(n, "most-popular list") {
					route = "most-popular"
				}
				if c, ok := strings.CutPrefix(n, "learnability: "); ok {
					f := strings.Fields(strings.TrimPrefix(c, "only "))
					route += ", " + f[0] + " " + f[1]
				}
			}
			t.Logf("%s eps %g, user k = %d: private NDCG@10 %.4f (%.2fx most-popular; %s; %.2f s)", name, e, k, got, got/mp, route, time.Since(start).Seconds())
		}
	}
}

// implicitListNDCG is the mean NDCG@10 over the users with a relevant
// validation event (value >= thr) and a training event: each user folds
// in from all their training events (ImplicitFoldIn with s) and ranks
// every item they have no training event on. With Y nil the list is by
// pop (most-popular).
func implicitListNDCG(Y []float64, R int, tr, va *data.Store, s *ImplicitSettings, thr float64, pop ...float64) float64 {
	U, I := tr.Dims[0], tr.Dims[1]
	hist := make([][]int32, U)
	for e, u := range tr.Idx[0] {
		hist[u] = append(hist[u], tr.Idx[1][e])
	}
	rel := make([]map[int32]bool, U)
	for e, u := range va.Idx[0] {
		if va.Val[e] >= thr {
			if rel[u] == nil {
				rel[u] = map[int32]bool{}
			}
			rel[u][va.Idx[1][e]] = true
		}
	}
	score := make([]float64, I)
	order := make([]int32, I)
	var sum float64
	n := 0
	for u := 0; u < U; u++ {
		if len(rel[u]) == 0 || len(hist[u]) == 0 {
			continue
		}
		if Y == nil {
			copy(score, pop)
		} else {
			ones := make([]float64, len(hist[u]))
			for i := range ones {
				ones[i] = 1
			}
			x, err := ImplicitFoldIn(Y, R, hist[u], ones, s)
			if err != nil {
				panic(err)
			}
			for j := 0; j < I; j++ {
				score[j] = dot(x, Y[j*R:j*R+R])
			}
		}
		for j := range order {
			order[j] = int32(j)
		}
		slices.SortStableFunc(order, func(a, b int32) int { return cmp.Compare(score[b], score[a]) })
		seen := map[int32]bool{}
		for _, j := range hist[u] {
			seen[j] = true
		}
		dcg, idcg, pos := 0.0, 0.0, 0
		for _, j := range order {
			if seen[j] {
				continue
			}
			if rel[u][j] {
				dcg += 1 / math.Log2(float64(pos+2))
			}
			if pos++; pos == 10 {
				break
			}
		}
		for p := 0; p < min(10, len(rel[u])); p++ {
			idcg += 1 / math.Log2(float64(p+2))
		}
		sum += dcg / idcg
		n++
	}
	return sum / float64(n)
}
