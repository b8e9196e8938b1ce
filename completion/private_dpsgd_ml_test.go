package completion

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/perturb"
)

// envFloats parses a comma-separated list of numbers from the environment
// (def when unset).
func envFloats(k string, def float64) []float64 {
	v := os.Getenv(k)
	if v == "" {
		return []float64{def}
	}
	var out []float64
	for _, f := range strings.Split(v, ",") {
		x, err := strconv.ParseFloat(f, 64)
		if err == nil {
			out = append(out, x)
		}
	}
	return out
}

// TestMovieLensDPSGDSweep is the sweep behind the rules table of
// private_dpsgd.go: minibatch DP-SGD (CP rank 10 with biases, week
// buckets) fitted on the 85.5% part of ml-latest-small's seed-42 training
// log and scored on its 4.5% validation part (never the test part); with
// SYNTH=1 on a planted low-rank log instead (2,000 users, 200 items,
// 60,000 ratings, rank 3 plus biases, noise 0.5, clamped to [0.5, 5],
// rank-3 model, 10% held out). Each setting takes a comma list (0 = the
// rule): EPS, Q (sampling rate), CLIP, CLIPNOISE (DPSGDClipNoise), KF (a
// constant kappa factor instead of DPSGDKappaFactor), BP (bias prior;
// negative: none), WF (warm-start share), EPOCHS (default 30), SEEDS
// (noise seeds, averaged), REGB, REGO; DAY=1 uses day buckets instead of
// weeks. For example
//
//	DPREC_ML_DPSGD_SWEEP=1 EPS=1,10,100 CLIPNOISE=15,30,60 SEEDS=1,2 go test -run TestMovieLensDPSGDSweep -v ./completion/
func TestMovieLensDPSGDSweep(t *testing.T) {
	if os.Getenv("DPREC_ML_DPSGD_SWEEP") == "" {
		t.Skip("set DPREC_ML_DPSGD_SWEEP=1 to run (seconds per setting)")
	}
	var train, valid *data.Store
	rank := 10
	lo, hi := 0.5, 5.0
	if set := os.Getenv("SET"); set != "" {
		// A log of the private ALS sweep (sweepData), user x item.
		train, valid, lo, hi = sweepData(t, set)
	} else if os.Getenv("SYNTH") != "" {
		train, valid = plantedSweepLog(t)
		rank = 3
	} else {
		unit := data.TimeWeek
		if os.Getenv("DAY") != "" { // day buckets, the CLI default
			unit = data.TimeDay
		}
		train, valid, _ = movieLensSplit(t, unit)
	}
	seeds := envFloats("SEEDS", 1)
	type knob struct {
		name string
		vals []float64
	}
	knobs := []knob{{"eps", envFloats("EPS", 1)}, {"q", envFloats("Q", 0)}, {"clip", envFloats("CLIP", 0)}, {"clipnoise", envFloats("CLIPNOISE", 0)},
		{"kf", envFloats("KF", 0)}, {"bp", envFloats("BP", 0)}, {"warm", envFloats("WF", 0)}, {"epochs", envFloats("EPOCHS", 30)},
		{"regb", envFloats("REGB", 0)}, {"rego", envFloats("REGO", 0)}, {"fallback", envFloats("FALLBACK", 0)}}
	settings := [][]float64{nil}
	for _, k := range knobs {
		var next [][]float64
		for _, s := range settings {
			for _, v := range k.vals {
				next = append(next, append(append([]float64(nil), s...), v))
			}
		}
		settings = next
	}
	ownHold := 0.0
	if h := envFloats("OWNHOLD", 0); len(h) == 1 {
		ownHold = h[0]
	} else {
		t.Fatalf("OWNHOLD=%q: one number", os.Getenv("OWNHOLD"))
	}
	for _, v := range settings {
		sum := 0.0
		var each []string
		var last *GradientPerturbation
		for _, sd := range seeds {
			o := &PrivateOptions{Epsilon: v[0], Delta: 1e-5, RatingMin: lo, RatingMax: hi, Noise: perturb.SeededNoise(uint64(sd)), Protect: ProtectAll,
				SampleRate: v[1], Clip: v[2], WarmFraction: v[6], dpsgdRules: &dpsgdRules{clipNoise: v[3], kappaFactor: v[4], biasPrior: v[5], fallbackNoise: v[10], noSelect: os.Getenv("NOSELECT") != "", ownHoldout: ownHold}}
			p, err := NewGradientPerturbation(o)
			if err != nil {
				t.Fatal(err)
			}
			m, err := decomposition.NewModel(decomposition.CP, train.Dims, []int{rank}, true)
			if err != nil {
				t.Fatal(err)
			}
			m.ClampLo, m.ClampHi = lo, hi
			s := &Settings{Threads: 2, Privacy: p, Epochs: int(v[7]), RegBias: v[8], Reg: v[9]}
			if _, err := Train(train, nil, m, s, rand.NewPCG(1, 1), nil); err != nil {
				t.Fatal(err)
			}
			got := RMSE(m, valid, 2)
			sum += got
			each = append(each, strconv.FormatFloat(got, 'f', 4, 64))
			last = p
			if os.Getenv("FOLD") != "" {
				// The same released item side, users folded in from their
				// own training ratings (billboard scoring).
				bb, err := FoldInRMSE(m, train, valid, BillboardFold())
				if err != nil {
					t.Fatal(err)
				}
				pa := BillboardFold()
				pa.Row, pa.PerRating = ALSPrivateFoldRow, DefaultALSReg
				al, err := FoldInRMSE(m, train, valid, pa)
				if err != nil {
					t.Fatal(err)
				}
				fc := "-"
				if R := m.Ranks[0]; m.Kind == decomposition.CP && R >= 4 {
					// The last two item columns replaced by the free
					// columns (post-processing), time rows there ones.
					mf := cloneModel(m)
					counts := make([]float64, mf.Dims[1])
					for _, i := range train.Idx[1] {
						counts[i]++
					}
					freeItemColumnsAt(mf, o, counts, R-2)
					for mo := 2; mo < mf.Order(); mo++ {
						for i := 0; i < mf.Dims[mo]; i++ {
							mf.Factors[mo][i*R+R-2], mf.Factors[mo][i*R+R-1] = 1, 1
						}
					}
					f, err := FoldInRMSE(mf, train, valid, BillboardFold())
					if err != nil {
						t.Fatal(err)
					}
					fc = strconv.FormatFloat(f, 'f', 4, 64)
				}
				t.Logf("eps %g seed %g: own rows %.4f, folded in (bias-mode penalties) %.4f, (ALS penalties) %.4f, free columns %s", v[0], sd, got, bb, al, fc)
			}
		}
		var desc []string
		for i, k := range knobs {
			desc = append(desc, fmt.Sprintf("%s %g", k.name, v[i]))
		}
		mb := last.mb
		chosen := "none"
		if mb.held != nil {
			chosen = mb.chosen.String()
		}
		t.Logf("%s: valid RMSE %.4f (seeds %s; q %g, T %d, clip %.4g, noise multiplier %.4g, kappa %.4g, selection: %s)",
			strings.Join(desc, " "), sum/float64(len(seeds)), strings.Join(each, " "), mb.q, mb.steps, mb.clip, mb.noiseMult, mb.kappa, chosen)
	}
}

// plantedSweepLog is the planted low-rank log of the DP-SGD sweep and of
// the rules' synthetic check (private_dpsgd.go): 2,000 users, 200 items,
// 60,000 ratings, rank 3 with biases, noise 0.5, values clamped to [0.5,
// 5], a random 10% held out.
func plantedSweepLog(t *testing.T) (train, valid *data.Store) {
	t.Helper()
	st, _, err := data.Synth(data.SynthOptions{Users: 2000, Items: 200, Ratings: 60000, Rank: 3, Bias: true, Mean: 3.5, Noise: 0.5, Skew: 0.3}, rand.NewPCG(3, 4))
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range st.Val {
		st.Val[i] = math.Max(0.5, math.Min(5, v))
	}
	perm := rand.New(rand.NewPCG(5, 6)).Perm(st.NNZ())
	n := st.NNZ() / 10
	return st.Subset(perm[n:]), st.Subset(perm[:n])
}
