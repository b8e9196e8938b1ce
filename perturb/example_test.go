package perturb_test

import (
	"fmt"

	"github.com/dprec/dprec/perturb"
)

func ExampleNewLaplace() {
	l, err := perturb.NewLaplace(4, 0.5) // ratings in [1, 5]: Delta_1 = 4
	if err != nil {
		panic(err)
	}
	fmt.Printf("scale b = %.1f\n", l.Scale())
	// Output: scale b = 8.0
}

func ExampleGaussianSigma() {
	for _, cal := range []perturb.Calibration{perturb.Analytic, perturb.Classic, perturb.Tight} {
		s, err := perturb.GaussianSigma(1, 1, 1e-5, cal)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%-8s sigma = %.3f\n", cal, s)
	}
	// Output:
	// analytic sigma = 3.731
	// classic  sigma = 4.845
	// tight    sigma = 4.901
}

func ExampleAccountant() {
	l, _ := perturb.NewLaplace(1, 0.1)
	var a perturb.Accountant
	_ = a.Add(l.Release("gradient of C"), 100) // 100 epochs
	eps, delta, method := a.Total(1e-5)
	fmt.Printf("%.2f %.0e %s\n", eps, delta, method)
	// Output: 4.53 1e-05 rdp
}

// ExampleSampledGaussianEpsilon accounts DP-SGD with Poisson sampling:
// Opacus's golden vector (noise multiplier 1.5, rate 0.04, 2250 steps,
// delta 1e-5), then the inverse problem.
func ExampleSampledGaussianEpsilon() {
	eps, _, err := perturb.SampledGaussianEpsilon(0.04, 1.5, 2250, 1e-5)
	if err != nil {
		panic(err)
	}
	s, err := perturb.SampledGaussianNoiseMultiplier(0.04, 2250, 1, 1e-5, nil)
	if err != nil {
		panic(err)
	}
	fmt.Printf("epsilon %.4f; epsilon 1 needs noise multiplier %.2f\n", eps, s)
	// Output: epsilon 7.3291; epsilon 1 needs noise multiplier 7.75
}
