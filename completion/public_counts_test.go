package completion

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/perturb"
)

// TestPrivateReportsCarryPublicCounts: the entry-unit modes that release
// user rows (input, gradient, output) put the training log's item counts
// (public under their relations) in the report, for the credibility
// weighting of rankings; a non-private run carries none.
func TestPrivateReportsCarryPublicCounts(t *testing.T) {
	st, _, err := data.Synth(data.SynthOptions{Users: 60, Items: 12, Ratings: 500, Rank: 2, Bias: true, Noise: 0.3, Scale: "1-5"}, rand.NewPCG(1, 2))
	if err != nil {
		t.Fatal(err)
	}
	want := make([]float64, st.Dims[1])
	for _, j := range st.Idx[1] {
		want[j]++
	}
	opts := func() *PrivateOptions {
		return &PrivateOptions{Epsilon: 5, Delta: 1e-5, RatingMin: 1, RatingMax: 5, Noise: perturb.SeededNoise(3)}
	}
	mk := map[string]func() (Privacy, error){
		"input":    func() (Privacy, error) { return NewInputPerturbation(opts()) },
		"gradient": func() (Privacy, error) { return NewGradientPerturbation(opts()) },
		"output":   func() (Privacy, error) { return NewOutputPerturbation(opts()) },
		"none":     func() (Privacy, error) { return NoPrivacy{}, nil },
	}
	for name, f := range mk {
		p, err := f()
		if err != nil {
			t.Fatal(name, err)
		}
		m, err := decomposition.NewModel(decomposition.CP, st.Dims, []int{2}, true)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Train(st, nil, m, &Settings{Epochs: 3, Patience: -1, Threads: 1, Privacy: p}, rand.NewPCG(1, 1), nil)
		if err != nil {
			t.Fatal(name, err)
		}
		got := res.Privacy.ItemCounts
		if name == "none" {
			if got != nil {
				t.Errorf("non-private report carries item counts")
			}
			continue
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: item counts %v, want the log's %v", name, got, want)
		}
	}
}
