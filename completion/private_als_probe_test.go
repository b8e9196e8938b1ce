package completion

import (
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/perturb"
)

// TestPrivateALSProbe relaxes private ALS's public constants one at a
// time (env DPREC_ALS_PROBE="name=value,..." per run, runs separated by
// ";") on the validation parts of TestPrivateALSSweep's logs. Measurement
// only: it runs with DPREC_ALS_PROBE set.
func TestPrivateALSProbe(t *testing.T) {
	spec := os.Getenv("DPREC_ALS_PROBE")
	if spec == "" {
		t.Skip("set DPREC_ALS_PROBE")
	}
	sets := strings.Split(envOr("DPREC_ALS_SETS", "ml"), ",")
	alsDebug = t.Logf
	defer func() { alsDebug = nil }()
	var pcur alsPrivateParams
	var worstClosed, worstExact float64
	var argC, argE int
	if os.Getenv("DPREC_ALS_EXACT") != "" {
		alsDebugExact = func(n, tt int, du float64) {
			q := pcur
			q.terms = 0
			h, _ := q.entryParts(tt)
			// closed form at this user's n with t terms
			qq := pcur
			hc, _ := qq.entryParts(n)
			_ = h
			duc := min(2*q.gu, 2*q.c*math.Sqrt(q.gv*q.gv+1)/(q.lambda*float64(n)), q.c/math.Sqrt(q.lambda*float64(n)))
			du = min(du, 2*q.gu)
			he := hc * du / duc // approx: scale the stability part
			if hc > worstClosed {
				worstClosed, argC = hc, n
			}
			if he > worstExact {
				worstExact, argE = he, n
			}
		}
		defer func() { alsDebugExact = nil }()
	}
	const R = 10
	for _, name := range sets {
		tr, va, lo, hi := sweepData(t, name)
		if tr == nil {
			continue
		}
		if os.Getenv("DPREC_ALS_NP") != "" {
			np, _ := decomposition.NewModel(decomposition.CP, tr.Dims, []int{R}, true)
			np.ClampLo, np.ClampHi = lo, hi
			if _, err := Train(tr, nil, np, &Settings{Threads: 2, Solver: SolverALS}, rand.NewPCG(1, 1), nil); err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: non-private ALS %.4f", name, RMSE(np, va, 2))
			for _, pen := range []decomposition.FoldPenalties{{PerRating: 0.15}, {Row: 1, PerRating: 0.05}, {Row: 1, PerRating: 0.15}} {
				f, err := FoldInRMSE(np, tr, va, pen)
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("%s: non-private ALS, users folded in with %+v: %.4f", name, pen, f)
			}
			bm, _ := decomposition.NewModel(decomposition.CP, tr.Dims, []int{1}, true)
			rep, err := TrainPrivateBias(tr, bm, &PrivateOptions{Epsilon: 100, Delta: 1e-5, RatingMin: lo, RatingMax: hi, Noise: perturb.SeededNoise(1)})
			if err != nil {
				t.Fatal(err)
			}
			f, _ := FoldInRMSE(bm, tr, va, BillboardFoldFor(rep))
			t.Logf("%s: private bias eps 100: %.4f", name, f)
			for _, e := range []float64{1, 3, 10, 30} {
				bm, _ := decomposition.NewModel(decomposition.CP, tr.Dims, []int{1}, true)
				rep, _ := TrainPrivateBias(tr, bm, &PrivateOptions{Epsilon: e, Delta: 1e-5, RatingMin: lo, RatingMax: hi, Noise: perturb.SeededNoise(1)})
				f, _ := FoldInRMSE(bm, tr, va, BillboardFoldFor(rep))
				t.Logf("%s: private bias eps %g: %.4f", name, e, f)
			}
		}
		for _, run := range strings.Split(spec, ";") {
			kv := map[string]float64{}
			for _, f := range strings.Split(run, ",") {
				if f = strings.TrimSpace(f); f == "" {
					continue
				}
				k, v, _ := strings.Cut(f, "=")
				x, err := strconv.ParseFloat(v, 64)
				if err != nil {
					t.Fatal(err)
				}
				kv[k] = x
			}
			eps := 700.0
			if v, ok := kv["eps"]; ok {
				eps = v
			}
			o := &PrivateOptions{Epsilon: eps, Delta: 1e-5, RatingMin: lo, RatingMax: hi, Noise: perturb.SeededNoise(1)}
			m, _ := decomposition.NewModel(decomposition.CP, tr.Dims, []int{R}, true)
			var pp alsPrivateParams
			start := time.Now()
			rep, err := trainPrivateALS(tr, m, o, func(p *alsPrivateParams) {
				for k, v := range kv {
					switch k {
					case "c":
						p.c = v
					case "gu":
						p.gu = v
					case "gv":
						p.gv = v
					case "lambda":
						p.lambda = v
					case "ilambda":
						p.itemLambda = v
					case "steps":
						p.steps = int(v)
					case "terms":
						p.terms = int(v)
					case "gate":
						p.gate = v
					case "nridge":
						p.noiseRidge = v
					case "bfrac":
						p.biasFrac = v
					case "wmul":
						p.wMul = v
					case "input":
						p.input = v != 0
					case "ifrac":
						p.inputBiasFrac = v
					case "iclip":
						p.inputClip = v
					case "ireg":
						p.inputReg = v
					case "isweeps":
						p.inputSweeps = int(v)
					case "igate":
						p.inputGate = v
					case "nocorr":
						p.inputNoCorr = v != 0
					case "ifall":
						p.inputFallback = v
					case "gsig":
						p.gateSigma = v
					case "off":
						p.noiseOff = v != 0
					case "exactgram":
						p.exactGram = v != 0
					}
				}
				pp = *p
				pcur = *p
			})
			if worstClosed > 0 {
				t.Logf("rhs sensitivity: closed form max %.4g (n=%d), with exact delta_u (approx) max %.4g (n=%d)", worstClosed, argC, worstExact, argE)
				worstClosed, worstExact = 0, 0
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range rep.Notes {
				if (strings.Contains(n, "learnability") || strings.Contains(n, "residual route")) || strings.HasPrefix(n, "item steps") {
					t.Log(n)
				}
			}
			pen := BillboardFoldFor(rep)
			if v, ok := kv["frow"]; ok {
				pen.Row = v
			}
			if v, ok := kv["frate"]; ok {
				pen.PerRating = v
			}
			var nz, nsum float64
			for i := 0; i < m.Dims[1]; i++ {
				var q float64
				for _, x := range m.Row(1, i) {
					q += x * x
				}
				if q > 0 {
					nz++
					nsum += math.Sqrt(q)
				}
			}
			t.Logf("item rows: %.0f nonzero of %d, mean norm %.3g", nz, m.Dims[1], nsum/math.Max(nz, 1))
			got, err := FoldInRMSE(m, tr, va, pen)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s [%s] eps %g: %.4f (%.1fs) c=%.3g gu=%.3g gv=%.3g lam=%.3g ilam=%.3g steps=%d terms=%d gate=%g w=%.3g", name, run, eps, got, time.Since(start).Seconds(), pp.c, pp.gu, pp.gv, pp.lambda, pp.itemLambda, pp.steps, pp.terms, pp.gate, pp.gramWeight())
		}
	}
}
