package completion

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestUniformCP(t *testing.T) {
	st, err := UniformCP([]int{50, 40, 30}, 2000, 3, 0, rand.NewPCG(1, 1))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Validate(); err != nil {
		t.Fatal(err)
	}
	// Values are 3 + a rank-3 CP term with N(0, 1/3) factors: mean 3.
	s := 0.0
	for _, v := range st.Val {
		s += v
	}
	if mean := s / float64(st.NNZ()); math.Abs(mean-3) > 0.1 {
		t.Errorf("mean %g, want ~3", mean)
	}
	if _, err := UniformCP([]int{5}, 10, 1, 0, rand.NewPCG(1, 1)); err == nil {
		t.Error("order 1 accepted")
	}
}
