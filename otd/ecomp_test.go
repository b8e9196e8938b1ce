package otd

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

func TestEComp(t *testing.T) {
	t.Parallel()
	A := mat.NewDense(3, 2, []float64{0.5, 0, 0.5, 0.2, 0, 0.8})
	// A's columns: a1 = (0.5, 0.5, 0), a2 = (0, 0.2, 0.8). Estimated
	// columns: a2 exactly, and (1, 1, -0.5), which post-processing turns
	// into (0.5, 0.5, 0) = a1.
	E := mat.NewDense(3, 2, []float64{0, 1, 0.2, 1, 0.8, -0.5})
	if got := EComp(A, E); math.Abs(got) > 1e-15 {
		t.Fatalf("EComp = %v, want 0", got)
	}
	// Raw: (1, 1, -0.5) is sqrt(0.75) from a1 and sqrt(3.33) from a2.
	want := (0 + math.Sqrt(0.75)) / 2
	if got := ECompRaw(A, E); math.Abs(got-want) > 1e-12 {
		t.Fatalf("ECompRaw = %v, want %v", got, want)
	}
	// Min over true columns, not a matching: two copies of a1 give 0.
	D := mat.NewDense(3, 2, []float64{0.5, 0.5, 0.5, 0.5, 0, 0})
	if EComp(A, D) != 0 {
		t.Fatal("duplicate columns must both match a1")
	}
}

// AllTriples must recover single-topic models better than FirstThree
// (measured over 3 seeds at D=10, K=5, N=10,000 documents of 20 words;
// typical e_comp 0.005 vs 0.04, see docs/spectral.md).
func TestAllTriplesBeatsFirstThree(t *testing.T) {
	t.Parallel()
	var sumAll, sumFirst float64
	for seed := uint64(0); seed < 3; seed++ {
		syn, _ := SyntheticSTM(10, 5, 10000, 20, 1, nil, rand.NewPCG(seed, 100))
		for _, est := range []Estimator{AllTriples, FirstThree} {
			res, err := Fit(&syn.Input, FitOptions{Model: "stm", K: 5, Estimator: est}, rand.NewPCG(seed, 1))
			if err != nil {
				t.Fatal(err)
			}
			e := EComp(syn.A, res.A)
			if est == AllTriples {
				sumAll += e
			} else {
				sumFirst += e
			}
		}
	}
	t.Logf("mean e_comp: all-triples %.4f, first-three %.4f", sumAll/3, sumFirst/3)
	if sumAll >= sumFirst {
		t.Fatalf("all-triples %.4f not better than first-three %.4f", sumAll/3, sumFirst/3)
	}
}
