package main

import (
	"fmt"
	"os"

	"github.com/dprec/dprec/completion"
	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/perturb"
	"github.com/urfave/cli/v2"
)

// trainPrivacyCategory groups the privacy flags in `dprec train --help`.
const trainPrivacyCategory = "Privacy"

// Documented default public rating scale: MovieLens' half-star scale
// [0.5, 5]. It is a declaration about the data source, never measured on
// the data; logs on another scale must pass --rating-min/--rating-max.
const (
	trainPrivacyDefaultMin = 0.5
	trainPrivacyDefaultMax = 5.0
)

// trainPrivacyFlags returns the privacy flags of `dprec train`.
func trainPrivacyFlags() []cli.Flag {
	cat := trainPrivacyCategory
	return []cli.Flag{
		&cli.StringFlag{Name: "privacy", Category: cat, Value: "none", Usage: "differential privacy mode: none, input (noisy ratings, covers everything), gradient (noisy SGD), output (noisy refit of the last factor)"},
		&cli.Float64Flag{Name: "epsilon", Category: cat, Usage: "total privacy budget epsilon of the training run (required with --privacy)"},
		&cli.Float64Flag{Name: "delta", Category: cat, Usage: "total privacy budget delta (0 for pure modes; gradient --protect all and input --mechanism gaussian need > 0)"},
		&cli.StringFlag{Name: "protect", Category: cat, Value: "C", Usage: "gradient mode target: C (Wei et al. 2021, Algorithm 2: only the last mode's factor gradient, per-step guarantee) or all (every parameter, Gaussian noise, covers the whole model)"},
		&cli.Float64Flag{Name: "clip", Category: cat, Usage: fmt.Sprintf("gradient mode: per-entry gradient clipping norm m (default %g); output mode: row-norm bound of the fixed factors (default %g)", completion.DefaultClip, completion.DefaultRowClip)},
		&cli.Float64Flag{Name: "rating-min", Category: cat, Value: trainPrivacyDefaultMin, Usage: "public lower end of the rating scale (ratings are clamped to it; declared, never taken from the data)"},
		&cli.Float64Flag{Name: "rating-max", Category: cat, Value: trainPrivacyDefaultMax, Usage: "public upper end of the rating scale"},
		&cli.StringFlag{Name: "mechanism", Category: cat, Value: "laplace", Usage: "input mode noise: laplace (pure epsilon-DP) or gaussian"},
		&cli.StringFlag{Name: "calibration", Category: cat, Value: "analytic", Usage: "Gaussian calibration: analytic (Balle-Wang, optimal), classic (epsilon <= 1 only) or tight (corrected closed form)"},
		&cli.StringFlag{Name: "accounting", Category: cat, DefaultText: "best (the tightest that applies)", Usage: "composition used to fit the budget: rdp, advanced, basic or best"},
		&cli.StringFlag{Name: "privacy-unit", Category: cat, Value: "entry", Usage: "privacy unit: entry (one rating value) or user (all of one user's ratings; needs --max-ratings-per-user)"},
		&cli.IntFlag{Name: "max-ratings-per-user", Category: cat, Usage: "user unit: keep at most this many ratings per user (chosen at random) before training"},
		&cli.Float64Flag{Name: "output-lambda", Category: cat, Usage: fmt.Sprintf("output mode: ridge penalty of the refit (default %g); Delta_O = (r_max - r_min) max|z| / lambda", completion.DefaultOutputLambda)},
	}
}

// trainPrivacy builds the privacy plug-in of a `dprec train` run from the
// flags. With --privacy-unit user it first bounds every user to
// --max-ratings-per-user ratings, replacing *train's observations in place
// (positions only are used to choose, so this costs no budget).
func trainPrivacy(c *cli.Context, train *data.Store) (completion.Privacy, error) {
	mode := c.String("privacy")
	if mode == "none" || mode == "" {
		for _, f := range []string{"epsilon", "delta", "protect", "clip", "mechanism", "privacy-unit", "max-ratings-per-user", "output-lambda"} {
			if c.IsSet(f) {
				return nil, fmt.Errorf("--%s needs --privacy input, gradient or output", f)
			}
		}
		return completion.NoPrivacy{}, nil
	}
	if c.Float64("validation") > 0 {
		return nil, fmt.Errorf("--privacy %s needs --validation 0: held-out ratings would steer early stopping and be reported in the model file without noise", mode)
	}
	if !c.IsSet("epsilon") {
		return nil, fmt.Errorf("--privacy %s needs --epsilon (the total budget)", mode)
	}
	cal, err := perturb.ParseCalibration(c.String("calibration"))
	if err != nil {
		return nil, fmt.Errorf("--calibration: %w", err)
	}
	o := &completion.PrivateOptions{
		Epsilon:           c.Float64("epsilon"),
		Delta:             c.Float64("delta"),
		RatingMin:         c.Float64("rating-min"),
		RatingMax:         c.Float64("rating-max"),
		Unit:              c.String("privacy-unit"),
		MaxRatingsPerUser: c.Int("max-ratings-per-user"),
		Mechanism:         c.String("mechanism"),
		Calibration:       cal,
		Accounting:        c.String("accounting"),
		Protect:           c.String("protect"),
		Clip:              c.Float64("clip"),
		Lambda:            c.Float64("output-lambda"),
	}
	if seed, ok := seedOf(c); ok {
		o.Seeded, o.Seed = true, seed
		if !quiet(c) {
			fmt.Fprintln(os.Stderr, "warning: --seed makes the privacy noise reproducible: the model is NOT private (never release it)")
		}
	}
	if !c.IsSet("rating-min") && !c.IsSet("rating-max") && !quiet(c) {
		fmt.Fprintf(os.Stderr, "note: ratings clamped to the documented default public scale [%g, %g]; set --rating-min/--rating-max for another scale\n", o.RatingMin, o.RatingMax)
	}
	switch o.Unit {
	case completion.UnitEntry:
		if c.IsSet("max-ratings-per-user") {
			return nil, fmt.Errorf("--max-ratings-per-user needs --privacy-unit user")
		}
	case completion.UnitUser:
		if o.MaxRatingsPerUser < 1 {
			return nil, fmt.Errorf("--privacy-unit user needs --max-ratings-per-user k >= 1")
		}
		if mode == "output" {
			return nil, fmt.Errorf("--privacy output supports only --privacy-unit entry")
		}
	default:
		return nil, fmt.Errorf("--privacy-unit %q: want entry or user", o.Unit)
	}
	var p completion.Privacy
	switch mode {
	case "input":
		p, err = completion.NewInputPerturbation(o)
	case "gradient":
		p, err = completion.NewGradientPerturbation(o)
	case "output":
		p, err = completion.NewOutputPerturbation(o)
	default:
		return nil, fmt.Errorf("--privacy %q: want none, input, gradient or output", mode)
	}
	if err != nil {
		return nil, err
	}
	if o.Unit == completion.UnitUser {
		src := perturb.SecureSource()
		if o.Seeded {
			src = perturb.StreamSource(o.Seed, 1<<32)
		}
		bounded, _, err := completion.BoundUserRatings(train, o.MaxRatingsPerUser, src)
		if err != nil {
			return nil, err
		}
		if !quiet(c) && bounded.NNZ() < train.NNZ() {
			fmt.Fprintf(os.Stderr, "user contribution bound: kept %d of %d ratings (at most %d per user)\n", bounded.NNZ(), train.NNZ(), o.MaxRatingsPerUser)
		}
		*train = *bounded
	}
	return p, nil
}
