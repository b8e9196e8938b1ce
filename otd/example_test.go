package otd_test

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/dprec/dprec/otd"
)

// Fit a single-topic model to a synthetic corpus and measure e_comp.
func ExampleFit() {
	syn, err := otd.SyntheticSTM(10, 3, 20000, 20, 1, []float64{0.5, 0.3, 0.2}, rand.NewPCG(1, 2))
	if err != nil {
		panic(err)
	}
	res, err := otd.Fit(&syn.Input, otd.FitOptions{Model: "stm", K: 3}, rand.NewPCG(3, 4))
	if err != nil {
		panic(err)
	}
	fmt.Printf("weights %.1f\n", res.Weights)
	fmt.Printf("e_comp below 0.02: %v\n", otd.EComp(syn.A, res.A) < 0.02)
	fmt.Println("private:", res.Report.Private())
	// Output:
	// weights [0.5 0.3 0.2]
	// e_comp below 0.02: true
	// private: false
}

// Decompose an orthogonal tensor with the robust tensor power method.
func ExamplePowerIteration() {
	T, _ := otd.NewSymTensor(3)
	T.AddRankOne(2, []float64{1, 0, 0})
	T.AddRankOne(1, []float64{0, 0, 1})
	lambda, V, _ := otd.PowerIteration(T, 2, otd.TPMOptions{}, rand.NewPCG(1, 1))
	fmt.Printf("%.3f\n", lambda)
	r := func(x float64) float64 { return math.Round(x*1000)/1000 + 0 } // +0 turns -0 into 0
	fmt.Printf("v1 = (%.3f, %.3f)\n", r(V.At(0, 0)), r(V.At(2, 0)))
	fmt.Printf("v2 = (%.3f, %.3f)\n", r(V.At(0, 1)), r(V.At(2, 1)))
	// Output:
	// [2.000 1.000]
	// v1 = (1.000, 0.000)
	// v2 = (0.000, 1.000)
}
