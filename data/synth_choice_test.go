package data

import (
	"math/rand/v2"
	"testing"
)

// TestSynthChoice: a click log (Choice > 0) has exactly Ratings distinct
// user x item events of value 1, and its positions follow the model: the
// chosen items' model values lie well above those of items drawn at random
// for the same users (at Choice 0 they would not: the test fails if the
// positions ignore the tastes). Bad options are refused.
func TestSynthChoice(t *testing.T) {
	o := SynthOptions{Users: 400, Items: 120, Ratings: 2400, Rank: 3, Bias: true, Skew: 0.5, Choice: 3}
	for _, kind := range []string{"cp", "tucker"} {
		o.Kind = kind
		st, tr, err := Synth(o, rand.NewPCG(1, 2))
		if err != nil {
			t.Fatal(err)
		}
		if st.NNZ() != o.Ratings || st.Order() != 2 {
			t.Fatalf("%s: %d events of order %d, want %d of order 2", kind, st.NNZ(), st.Order(), o.Ratings)
		}
		seen := map[[2]int32]bool{}
		r := rand.New(rand.NewPCG(3, 4))
		var chosen, random float64
		for e := range st.Val {
			if st.Val[e] != 1 {
				t.Fatalf("%s: value %g, want 1", kind, st.Val[e])
			}
			c := [2]int32{st.Idx[0][e], st.Idx[1][e]}
			if seen[c] {
				t.Fatalf("%s: cell %v twice", kind, c)
			}
			seen[c] = true
			chosen += tr.Value(c[:]) - tr.Bias[0][c[0]]
			other := []int32{c[0], int32(r.IntN(st.Dims[1]))}
			random += tr.Value(other) - tr.Bias[0][c[0]]
		}
		chosen /= float64(st.NNZ())
		random /= float64(st.NNZ())
		if !(chosen > random+0.4) {
			t.Errorf("%s: mean model value of chosen items %.3f, of random items %.3f: the clicks do not follow the tastes", kind, chosen, random)
		}
	}
	for _, bad := range []SynthOptions{
		{Users: 10, Items: 10, Ratings: 20, Choice: 1, Times: 5},
		{Users: 10, Items: 10, Ratings: 20, Choice: -1},
	} {
		if _, _, err := Synth(bad, rand.NewPCG(1, 1)); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}
