package completion_test

import (
	"fmt"

	"github.com/dprec/dprec/completion"
)

// ExampleNewInputPerturbation shows the sensitivity of input perturbation
// on a 1-5 star scale, per rating and per user with at most 20 ratings.
func ExampleNewInputPerturbation() {
	o := &completion.PrivateOptions{Epsilon: 1, RatingMin: 1, RatingMax: 5}
	if _, err := completion.NewInputPerturbation(o); err != nil {
		panic(err)
	}
	l1, l2 := completion.InputSensitivity(o)
	fmt.Printf("entry: l1 %g, l2 %g\n", l1, l2)
	o.Unit, o.MaxRatingsPerUser = completion.UnitUser, 20
	l1, l2 = completion.InputSensitivity(o)
	fmt.Printf("user:  l1 %g, l2 %.2f\n", l1, l2)
	// Output:
	// entry: l1 4, l2 4
	// user:  l1 80, l2 17.89
}
