package cape_test

import (
	"fmt"

	"github.com/dprec/dprec/otd/cape"
)

// Three equal sites with tau_s^2 = 0.09: eq. (2) of Imtiaz and Sarwate 2018b.
func ExampleNewPlan() {
	p, err := cape.NewPlan([]float64{0.09, 0.09, 0.09}, nil)
	if err != nil {
		panic(err)
	}
	fmt.Printf("tau_e^2 = %.3f, tau_f^2 = %.3f, tau_g^2 = %.3f, tau_c^2 = %.3f, gain %.0f\n",
		p.TauE2[0], p.TauF2[0], p.TauG2[0], p.TauC2, p.Gain())
	// Output: tau_e^2 = 0.060, tau_f^2 = 0.060, tau_g^2 = 0.030, tau_c^2 = 0.010, gain 3
}
