package completion

import (
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

// TestMovieLensDPSGDSweep is the sweep behind the defaults table of
// private_dpsgd.go: minibatch DP-SGD (CP rank 10 with biases, week
// buckets) fitted on the 85.5% part of ml-latest-small's seed-42 training
// log and scored on its 4.5% validation part (never the test part). Each
// setting takes a comma list (0 = the default rule): EPS, Q (sampling
// rate), CLIP, WF (warm-start share), EPOCHS, SEEDS (noise seeds), REGB,
// REGO; DAY=1 uses day buckets instead of weeks. For example
//
//	DPREC_ML_DPSGD_SWEEP=1 EPS=0.1,1,10 WF=0.02,0.1,0.25,0.5,0.75 go test -run TestMovieLensDPSGDSweep -v ./completion/
func TestMovieLensDPSGDSweep(t *testing.T) {
	if os.Getenv("DPREC_ML_DPSGD_SWEEP") == "" {
		t.Skip("set DPREC_ML_DPSGD_SWEEP=1 to run (seconds per setting)")
	}
	unit := data.TimeWeek
	if os.Getenv("DAY") != "" { // day buckets, the CLI default
		unit = data.TimeDay
	}
	train, valid, _ := movieLensSplit(t, unit)
	for _, e := range envFloats("EPS", 1) {
		for _, q := range envFloats("Q", 0) {
			for _, c := range envFloats("CLIP", 0) {
				for _, wf := range envFloats("WF", 0) {
					for _, ep := range envFloats("EPOCHS", 60) {
						for _, sd := range envFloats("SEEDS", 1) {
							for _, rb := range envFloats("REGB", 0) {
								for _, ro := range envFloats("REGO", 0) {
									o := &PrivateOptions{Epsilon: e, Delta: 1e-5, RatingMin: 0.5, RatingMax: 5, Noise: perturb.SeededNoise(uint64(sd)), Protect: ProtectAll, SampleRate: q, Clip: c, WarmFraction: wf}
									p, err := NewGradientPerturbation(o)
									if err != nil {
										t.Fatal(err)
									}
									m, err := decomposition.NewModel(decomposition.CP, train.Dims, []int{10}, true)
									if err != nil {
										t.Fatal(err)
									}
									m.ClampLo, m.ClampHi = 0.5, 5
									s := &Settings{Threads: 1, Privacy: p, Epochs: int(ep), RegBias: rb, Reg: ro}
									if _, err := Train(train, nil, m, s, rand.NewPCG(1, 1), nil); err != nil {
										t.Fatal(err)
									}
									t.Logf("eps %g q %g clip %.4g warm %g epochs %g seed %g regb %g rego %g: valid RMSE %.4f (noise multiplier %.4g, kappa %.4g)",
										e, p.mb.q, p.mb.clip, wf, ep, sd, rb, ro, RMSE(m, valid, 2), p.mb.noiseMult, p.mb.kappa)
								}
							}
						}
					}
				}
			}
		}
	}
}
