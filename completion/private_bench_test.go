package completion

import (
	"math/rand/v2"
	"testing"

	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/perturb"
)

// benchEpochs is the number of epochs each private-epoch benchmark trains:
// planning (the noise calibration, the bias warm start) happens once per
// run, so it is amortised over the epochs as it is in a real run.
const benchEpochs = 5

// benchPrivateEpoch times one training run on a 20,000-entry 200 x 150 x
// 10 log, CP or Tucker rank 8 with biases, one thread, under a privacy
// mode, planning and input / output steps included, and reports it per
// epoch (ns/epoch, the figure to compare; ns/op is the whole run). One
// epoch is one pass over the ratings:
//
//   - SGD modes (none, input, gradC, gradAll per-entry, output):
//     benchEpochs epochs, each one step per rating;
//   - minibatch DP-SGD (gradAll, the default of --protect all): Poisson
//     rate q = DefaultDPSGDRate, T = benchEpochs/q steps, so each rating
//     is used q T = benchEpochs times in expectation: benchEpochs epochs;
//   - private ALS (als): one item step is one epoch (every user's ridge
//     solve from their ratings, every rating's term in its item's
//     statistics, every item's solve); the fit runs ALSPrivateSteps of
//     them (a public constant), after the bias mode's release, so its
//     ns/epoch is the whole fit over ALSPrivateSteps. NoneALS is
//     non-private ALS (SolverALS) for as many sweeps, the same algorithm
//     without privacy;
//   - the bias mode (bias) fits from one pass of sums: ns/epoch is the
//     whole fit.
//
// The overhead ratio is ns/epoch of the mode over ns/epoch of
// BenchmarkPrivateEpoch_*_None measured in the same run (target <= 1.5).
// cpu-ns/epoch is the process's CPU time (user + system, garbage collector
// included) per epoch: on a shared machine it moves less with the load
// than the wall clock, so its ratios are the steadier ones:
//
//	go test -run XXX -bench PrivateEpoch -benchtime 20x ./completion/
func benchPrivateEpoch(b *testing.B, kind decomposition.Kind, mode string) {
	benchPrivateEpochs(b, kind, mode, benchEpochs)
}

// benchPrivateEpochs is benchPrivateEpoch with the number of epochs of the
// SGD modes given.
func benchPrivateEpochs(b *testing.B, kind decomposition.Kind, mode string, epochs int) {
	dims := []int{200, 150, 10}
	st := privStore(dims, 20000, 42)
	switch mode {
	case "als", "noneALS":
		epochs = ALSPrivateSteps
	case "bias":
		epochs = 1
	}
	var cpu float64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		o := baseOpts()
		var p Privacy = NoPrivacy{}
		var err error
		solver := SolverSGD
		switch mode {
		case "input":
			p, err = NewInputPerturbation(&o)
		case "gradC":
			o.Protect = ProtectC
			p, err = NewGradientPerturbation(&o)
		case "gradAll":
			// The steps: at epsilon 1 and 60 epochs the default would be
			// the bias-only fallback (DPSGDFallbackNoise), which trains
			// nothing.
			o.Protect, o.dpsgdRules = ProtectAll, &dpsgdRules{fallbackNoise: -1}
			p, err = NewGradientPerturbation(&o)
		case "gradAllSecure":
			o.Protect, o.Noise, o.dpsgdRules = ProtectAll, perturb.SecureNoise(), &dpsgdRules{fallbackNoise: -1}
			p, err = NewGradientPerturbation(&o)
		case "gradAllPerEntry":
			o.Protect, o.DPSGD = ProtectAll, DPSGDPerEntry
			p, err = NewGradientPerturbation(&o)
		case "output":
			p, err = NewOutputPerturbation(&o)
		case "bias":
			p, err = NewBiasMode(&o)
		case "als":
			// At epsilon 100 the learnability rule lets the item steps
			// run on this log (at the test options' epsilon they would be
			// skipped and the fit would be the bias mode's).
			o.Epsilon = 100
			p, err = NewALSMode(&o)
		case "noneALS":
			solver = SolverALS
		}
		if err != nil {
			b.Fatal(err)
		}
		m := privModel(b, kind, dims, 8, true, 1, 0.1)
		s := &Settings{Epochs: epochs, Threads: 1, Solver: solver, Privacy: p}
		c0 := cpuSeconds()
		b.StartTimer()
		if sm, ok := p.(*StatisticsMode); ok {
			_, err = sm.Fit(st, m, s)
		} else {
			_, err = Train(st, nil, m, s, rand.NewPCG(1, 1), nil)
		}
		b.StopTimer()
		cpu += cpuSeconds() - c0
		b.StartTimer()
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*epochs), "ns/epoch")
	b.ReportMetric(cpu*1e9/float64(b.N*epochs), "cpu-ns/epoch")
}

func BenchmarkPrivateEpoch_CP_None(b *testing.B)  { benchPrivateEpoch(b, decomposition.CP, "none") }
func BenchmarkPrivateEpoch_CP_Input(b *testing.B) { benchPrivateEpoch(b, decomposition.CP, "input") }
func BenchmarkPrivateEpoch_CP_GradC(b *testing.B) { benchPrivateEpoch(b, decomposition.CP, "gradC") }
func BenchmarkPrivateEpoch_CP_GradAll(b *testing.B) {
	benchPrivateEpoch(b, decomposition.CP, "gradAll")
}
func BenchmarkPrivateEpoch_CP_GradAllPerEntry(b *testing.B) {
	benchPrivateEpoch(b, decomposition.CP, "gradAllPerEntry")
}
func BenchmarkPrivateEpoch_CP_Output(b *testing.B) { benchPrivateEpoch(b, decomposition.CP, "output") }
func BenchmarkPrivateEpoch_CP_Bias(b *testing.B)   { benchPrivateEpoch(b, decomposition.CP, "bias") }
func BenchmarkPrivateEpoch_CP_ALS(b *testing.B)    { benchPrivateEpoch(b, decomposition.CP, "als") }
func BenchmarkPrivateEpoch_CP_NoneALS(b *testing.B) {
	benchPrivateEpoch(b, decomposition.CP, "noneALS")
}
func BenchmarkPrivateEpoch_Tucker_None(b *testing.B) {
	benchPrivateEpoch(b, decomposition.Tucker, "none")
}
func BenchmarkPrivateEpoch_Tucker_GradC(b *testing.B) {
	benchPrivateEpoch(b, decomposition.Tucker, "gradC")
}
func BenchmarkPrivateEpoch_Tucker_GradAll(b *testing.B) {
	benchPrivateEpoch(b, decomposition.Tucker, "gradAll")
}
func BenchmarkPrivateEpoch_Tucker_GradAllPerEntry(b *testing.B) {
	benchPrivateEpoch(b, decomposition.Tucker, "gradAllPerEntry")
}

// BenchmarkPrivateEpoch60_CP_None and BenchmarkPrivateEpoch60_CP_GradAll
// train DefaultEpochs (60) epochs, the default run, over which minibatch
// DP-SGD's planning (its bias warm start and noise calibration, a fixed
// cost per run) weighs less than over benchEpochs.
func BenchmarkPrivateEpoch60_CP_None(b *testing.B) {
	benchPrivateEpochs(b, decomposition.CP, "none", DefaultEpochs)
}
func BenchmarkPrivateEpoch60_CP_GradAll(b *testing.B) {
	benchPrivateEpochs(b, decomposition.CP, "gradAll", DefaultEpochs)
}

// BenchmarkPrivateEpoch_CP_GradAllSecure and
// BenchmarkPrivateEpoch60_CP_GradAllSecure are the GradAll benchmarks
// with secure noise (the default of a run without --seed: the sampling and
// the noise from a ChaCha8 keyed from crypto/rand) instead of the seeded
// stream of the others.
func BenchmarkPrivateEpoch_CP_GradAllSecure(b *testing.B) {
	benchPrivateEpoch(b, decomposition.CP, "gradAllSecure")
}
func BenchmarkPrivateEpoch60_CP_GradAllSecure(b *testing.B) {
	benchPrivateEpochs(b, decomposition.CP, "gradAllSecure", DefaultEpochs)
}

// BenchmarkDPSGDPlan times the planning of minibatch DP-SGD alone (bias
// warm start and the noise-multiplier bisection), once per training run,
// on the benchmark log of benchPrivateEpoch.
func BenchmarkDPSGDPlan(b *testing.B) {
	st := privStore([]int{200, 150, 10}, 20000, 42)
	for i := 0; i < b.N; i++ {
		o := baseOpts()
		o.Protect = ProtectAll
		p, err := NewGradientPerturbation(&o)
		if err != nil {
			b.Fatal(err)
		}
		if err := p.Plan(st, &Settings{Epochs: benchEpochs, hasBias: true}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDPSGDClippedSum times minibatch DP-SGD's per-rating kernel
// alone: the sum of the clipped gradients of every rating of the
// benchmark log of benchPrivateEpoch (CP rank 8 with biases, every row
// trained), one thread; ns/rating is the figure.
func BenchmarkDPSGDClippedSum(b *testing.B) {
	dims := []int{200, 150, 10}
	st := privStore(dims, 20000, 42)
	o := baseOpts()
	o.Protect = ProtectAll
	p, err := NewGradientPerturbation(&o)
	if err != nil {
		b.Fatal(err)
	}
	if err := p.Plan(st, &Settings{Epochs: DefaultEpochs, hasBias: true}); err != nil {
		b.Fatal(err)
	}
	m := privModel(b, decomposition.CP, dims, 8, true, 1, 0.1)
	d := newDPSGDState(m, p.mb, &Settings{Threads: 1})
	d.batch = d.batch[:0]
	for e := range st.Val {
		d.batch = append(d.batch, e)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		d.sumClipped(st, st.Val)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(st.Val)), "ns/rating")
}
