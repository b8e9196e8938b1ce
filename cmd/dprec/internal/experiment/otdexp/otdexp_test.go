package otdexp

import (
	"math"
	"testing"

	"github.com/dprec/dprec/otd"
)

// TestSpectralExperimentSmall runs a reduced grid and checks the tables'
// shape and the qualitative findings that hold even with 3 runs: AGN at a
// large epsilon is within 0.03 of non-private, and every method except
// random beats random vectors at the largest N.
func TestSpectralExperimentSmall(t *testing.T) {
	t.Parallel()
	cfg := Config{
		Settings: []Setting{{8, 3}},
		Epsilons: []float64{0.5, 50}, FixedN: 20000,
		Ns: []int{500, 50000}, FixedEpsilon: 20,
		Runs: 3, Seed: 5,
	}
	tabs, err := Spectral(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(tabs) != 2 || tabs[0].Vary != "epsilon" || tabs[1].Vary != "n" || len(tabs[0].Methods) != 5 {
		t.Fatalf("tables %+v", tabs)
	}
	idx := map[otd.Method]int{}
	for i, m := range tabs[0].Methods {
		idx[m] = i
	}
	te := tabs[0]
	if np, agn := te.Mean[idx[ExpNonPrivate]][1], te.Mean[idx[otd.MethodAGN]][1]; math.Abs(agn-np) > 0.03 {
		t.Errorf("AGN at epsilon 50: %.4f, non-private %.4f", agn, np)
	}
	tn := tabs[1]
	for _, m := range []otd.Method{ExpNonPrivate, otd.MethodAGN, otd.MethodAVN} {
		if tn.Mean[idx[m]][1] >= tn.Mean[idx[ExpRandom]][1] {
			t.Errorf("%s at N = 50000: %.4f not below random %.4f", m, tn.Mean[idx[m]][1], tn.Mean[idx[ExpRandom]][1])
		}
	}
	for mi := range tn.Methods {
		for xi := range tn.X {
			if tn.Fail[mi][xi] != 0 {
				t.Errorf("%s failed %d runs", tn.Methods[mi], tn.Fail[mi][xi])
			}
		}
	}
	// Reproducible: same seed, same numbers.
	again, _ := Spectral(cfg)
	if again[1].Mean[idx[otd.MethodAVN]][0] != tn.Mean[idx[otd.MethodAVN]][0] {
		t.Error("experiment is not reproducible for a fixed seed")
	}
	if _, err := Spectral(Config{Model: "hmm"}); err == nil {
		t.Error("unknown model accepted")
	}
	if _, err := Spectral(Config{Methods: []otd.Method{"agm"}}); err == nil {
		t.Error("unknown method accepted")
	}
}
