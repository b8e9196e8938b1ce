package main

import (
	"fmt"
	"math"
	"strings"

	"github.com/dprec/dprec/models"
	"github.com/urfave/cli/v2"
)

// trainImplicitFlags are the flags only --objective implicit uses.
var trainImplicitFlags = []string{"iterations", "alpha", "confidence", "unobserved-weight", "select"}

// checkTrainValues refuses train's flag values that completion would
// refuse only after the log had loaded (exit 1, in its own words), and
// flags the chosen objective would ignore: every float flag given must be
// finite; --objective implicit's settings are checked by
// trainImplicitSettings; its flags are refused with the rating objective;
// a --privacy mode needs a public rating scale with min < max, a
// non-negative --output-lambda and its own solver.
func checkTrainValues(c *cli.Context) error {
	for _, f := range c.Command.Flags {
		name := f.Names()[0]
		if _, ok := f.(*cli.Float64Flag); !ok || !c.IsSet(name) {
			continue
		}
		if err := finiteFloat(name)(c); err != nil {
			return err
		}
	}
	if strings.EqualFold(c.String("objective"), models.ObjectiveItemItem) {
		return nil // train_ease.go checks its flags
	}
	for _, f := range []string{"lambda", "max-items"} {
		if c.IsSet(f) {
			return fmt.Errorf("--%s is for --objective ease", f)
		}
	}
	// A log without a rating column trains the implicit objective unless
	// --objective says otherwise (trainAutoImplicit).
	autoImplicit := !c.IsSet("objective") && trainNoRatingColumn(c) && trainRatingOnlyFlag(c) == ""
	if strings.ToLower(c.String("objective")) == models.ObjectiveImplicit || autoImplicit {
		_, err := trainImplicitSettings(c, true)
		return err
	}
	for _, f := range trainImplicitFlags {
		if c.IsSet(f) {
			return fmt.Errorf("--%s is for --objective implicit: the rating objective would ignore it", f)
		}
	}
	mode := strings.ToLower(c.String("privacy"))
	if mode == "" || mode == "none" {
		return nil
	}
	switch s := strings.ToLower(c.String("solver")); s {
	case "gibbs", "als":
		if mode == "input" {
			break
		}
		return fmt.Errorf("--solver %s is for non-private training and --privacy input: the other --privacy modes bring their own solver (private ALS is --privacy als; gradient and output train by SGD, bias from noisy sums)", s)
	}
	if lo, hi := c.Float64("rating-min"), c.Float64("rating-max"); !(lo < hi) {
		return fmt.Errorf("--rating-min %g, --rating-max %g: the public rating scale needs min < max", lo, hi)
	}
	if v := c.Float64("output-lambda"); v < 0 {
		return fmt.Errorf("--output-lambda %g: must be at least 0 (0: the default)", v)
	}
	return nil
}

// finiteFloat checks that a float flag, when given, is a finite number.
func finiteFloat(name string) flagCheck {
	return func(c *cli.Context) error {
		if v := c.Float64(name); c.IsSet(name) && (math.IsNaN(v) || math.IsInf(v, 0)) {
			return fmt.Errorf("--%s %g: must be a finite number", name, v)
		}
		return nil
	}
}
