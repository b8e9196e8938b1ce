package otd_test

import (
	"fmt"
	"math/rand/v2"

	"github.com/dprec/dprec/otd"
)

// ExampleSTMSensitivities prints the l2 sensitivities of the packed
// single-topic moments for 10,000 documents.
func ExampleSTMSensitivities() {
	s, _ := otd.STMSensitivities(10000)
	fmt.Printf("Delta_2 = %.3g, Delta_3 = %.3g\n", s.M2, s.M3)
	// Output: Delta_2 = 0.000141, Delta_3 = 0.000141
}

// ExampleMOGSensitivities compares the corrected Gaussian-mixture
// sensitivities with the values printed in Imtiaz and Sarwate 2018b appendix C.
func ExampleMOGSensitivities() {
	s, _ := otd.MOGSensitivities(1000, 10, 0.05)
	p2, p3 := otd.MOGSensitivitiesPaper(1000, 10, 0.05)
	fmt.Printf("derived: %.4g %.4g\nprinted: %.4g %.4g\n", s.M2, s.M3, p2, p3)
	// Output:
	// derived: 0.001414 0.002424
	// printed: 0.001 0.005
}

// ExampleFit_agn fits a single-topic model privately with AGN. A seeded
// source makes the run reproducible (and NOT private: pass nil for a
// release).
func ExampleFit_agn() {
	syn, _ := otd.SyntheticSTM(10, 3, 50000, 3, 1, nil, rand.NewPCG(1, 2))
	res, err := otd.Fit(&syn.Input, otd.FitOptions{Model: otd.ModelSTM, K: 3, Method: otd.MethodAGN, Epsilon: 5, Delta: 1e-5}, rand.NewPCG(3, 4))
	if err != nil {
		fmt.Println(err)
		return
	}
	r := res.Report
	fmt.Printf("%s: epsilon %g, delta %g, %d releases, %s\n", r.Mode, r.Epsilon, r.Delta, len(r.Releases), r.Randomness)
	fmt.Printf("e_comp below 0.1: %v\n", otd.EComp(syn.A, res.A) < 0.1)
	// Output:
	// agn: epsilon 5, delta 1e-05, 2 releases, seeded (reproducible, NOT private)
	// e_comp below 0.1: true
}

// ExampleFit_agnWhitened fits a single-topic model privately at a
// vocabulary size where no dense moment is formed: 300 of the 600 words
// are selected privately, each document's contributions are clipped, and
// three releases compose to the budget.
func ExampleFit_agnWhitened() {
	syn, _ := otd.SyntheticSTM(600, 3, 20000, 30, 0.1, nil, rand.NewPCG(5, 6))
	res, err := otd.Fit(&syn.Input, otd.FitOptions{Model: otd.ModelSTM, K: 3, Method: otd.MethodAGNWhitened, Epsilon: 50, Delta: 1e-5,
		Private: otd.PrivateOptions{Vocab: 300}}, rand.NewPCG(7, 8))
	if err != nil {
		fmt.Println(err)
		return
	}
	r := res.Report
	fmt.Printf("%s: epsilon %g, delta %g, %d releases\n", r.Mode, r.Epsilon, r.Delta, len(r.Releases))
	for _, rel := range r.Releases {
		fmt.Println(" ", rel.What)
	}
	fmt.Printf("e_comp below 0.1: %v\n", otd.EComp(syn.A, res.A) < 0.1)
	// Output:
	// agn-whitened: epsilon 50, delta 1e-05, 3 releases
	//   clipped mean word frequencies (D entries; the top words by noisy value are kept)
	//   clipped M2 of the selected words (upper triangle)
	//   clipped whitened tensor M3(W,W,W) (packed, C(K+2,3) entries)
	// e_comp below 0.1: true
}
