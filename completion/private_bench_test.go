package completion

import (
	"math/rand/v2"
	"testing"

	"github.com/dprec/dprec/decomposition"
)

// benchPrivateEpoch times one training epoch (plus planning and input /
// output steps) on a 20,000-entry 200 x 150 x 10 log, CP or Tucker rank 8
// with biases, one thread, under a privacy mode. Compare the modes with
// benchstat against BenchmarkPrivateEpoch_*_None.
func benchPrivateEpoch(b *testing.B, kind decomposition.Kind, mode string) {
	dims := []int{200, 150, 10}
	st := privStore(dims, 20000, 42)
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		o := baseOpts()
		var p Privacy = NoPrivacy{}
		var err error
		switch mode {
		case "input":
			p, err = NewInputPerturbation(&o)
		case "gradC":
			p, err = NewGradientPerturbation(&o)
		case "gradAll":
			o.Protect = ProtectAll
			p, err = NewGradientPerturbation(&o)
		case "output":
			p, err = NewOutputPerturbation(&o)
		}
		if err != nil {
			b.Fatal(err)
		}
		m := privModel(b, kind, dims, 8, true, 1, 0.1)
		b.StartTimer()
		if _, err := Train(st, nil, m, &Settings{Epochs: 1, Threads: 1, Privacy: p}, rand.NewPCG(1, 1), nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPrivateEpoch_CP_None(b *testing.B)  { benchPrivateEpoch(b, decomposition.CP, "none") }
func BenchmarkPrivateEpoch_CP_Input(b *testing.B) { benchPrivateEpoch(b, decomposition.CP, "input") }
func BenchmarkPrivateEpoch_CP_GradC(b *testing.B) { benchPrivateEpoch(b, decomposition.CP, "gradC") }
func BenchmarkPrivateEpoch_CP_GradAll(b *testing.B) {
	benchPrivateEpoch(b, decomposition.CP, "gradAll")
}
func BenchmarkPrivateEpoch_CP_Output(b *testing.B) { benchPrivateEpoch(b, decomposition.CP, "output") }
func BenchmarkPrivateEpoch_Tucker_None(b *testing.B) {
	benchPrivateEpoch(b, decomposition.Tucker, "none")
}
func BenchmarkPrivateEpoch_Tucker_GradC(b *testing.B) {
	benchPrivateEpoch(b, decomposition.Tucker, "gradC")
}
func BenchmarkPrivateEpoch_Tucker_GradAll(b *testing.B) {
	benchPrivateEpoch(b, decomposition.Tucker, "gradAll")
}
