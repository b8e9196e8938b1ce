package main

import (
	"errors"
	"fmt"

	"github.com/dprec/dprec"
	"github.com/dprec/dprec/completion"
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
		&cli.StringFlag{Name: "privacy", Category: cat, Value: "none", Usage: "differential privacy mode: none, bias (item biases from noisy sums; user biases solved at prediction time, never released), als (private ALS, joint DP: item side released, user rows solved at prediction time; needs --delta), input (noisy ratings, covers everything), gradient (DP-SGD on every parameter, covers every released one; needs --delta; its epsilon is for zero-out neighbours, one rating replaced by a null, and its report also gives the value-change epsilon, about twice as large; at a noise multiplier >= 3, epsilon below about 16 at 60 epochs, user rows are not released and users are solved at prediction time, and at >= 15, below about 2.4, it releases the bias mode's model at the whole budget instead; for CP models of rank >= 4 with biases one more step chooses privately between the own user rows, where released, and folding users into the trained item rows or into rows with the free columns), output (noisy refit of the last factor, covers nothing); implies --validation 0"},
		&cli.Float64Flag{Name: "epsilon", Category: cat, Usage: "total privacy budget epsilon of the training run (required with --privacy)"},
		&cli.Float64Flag{Name: "delta", Category: cat, Usage: "total privacy budget delta (0 for pure modes; gradient --protect all and input --mechanism gaussian need > 0)"},
		&cli.StringFlag{Name: "protect", Category: cat, Value: "all", Usage: "gradient mode target: all (every parameter, Gaussian noise, covers the whole model; needs --delta) or C (Wei et al. 2021, Algorithm 2: only the last mode's factor gradient, a per-step guarantee that covers no released parameter)"},
		&cli.StringFlag{Name: "dp-sgd", Category: cat, Value: "minibatch", Usage: "gradient --protect all algorithm: minibatch (DP-SGD on full batches by default, one noisy sum of the clipped per-rating gradients per step, damped Gauss-Newton steps, RDP; Poisson subsampling with amplification through the API) or per-entry (every rating's clipped gradient noised, no subsampling)"},
		&cli.Float64Flag{Name: "clip", Category: cat, Usage: fmt.Sprintf("gradient mode: per-entry gradient clipping norm m (default %g; minibatch DP-SGD: 0.5 (r_max - r_min)/4 sqrt(order) x max(1, sqrt(30/sigma)), sigma the noise multiplier); output mode: row-norm bound of the fixed factors (default %g)", completion.DefaultClip, completion.DefaultRowClip)},
		&cli.Float64Flag{Name: "rating-min", Category: cat, Value: trainPrivacyDefaultMin, Usage: "public lower end of the rating scale (ratings are clamped to it; declared, never taken from the data)"},
		&cli.Float64Flag{Name: "rating-max", Category: cat, Value: trainPrivacyDefaultMax, Usage: "public upper end of the rating scale"},
		&cli.StringFlag{Name: "mechanism", Category: cat, Value: "laplace", Usage: "input and bias mode noise: laplace (pure epsilon-DP) or gaussian; --privacy-unit user defaults to gaussian"},
		&cli.StringFlag{Name: "calibration", Category: cat, Value: "analytic", Usage: "Gaussian calibration: analytic (Balle-Wang, optimal), classic (epsilon <= 1 only) or tight (corrected closed form)"},
		&cli.StringFlag{Name: "accounting", Category: cat, DefaultText: "best (the tightest that applies)", Usage: "composition used to fit the budget: rdp, advanced, basic or best"},
		&cli.StringFlag{Name: "privacy-unit", Category: cat, Value: "entry", Usage: "privacy unit: entry (one rating value changes, or for --privacy gradient --protect all one rating is replaced by a null; positions, counts, dictionaries and time range are public) or user (add or remove one user with all their ratings; --privacy bias or als only; needs --max-ratings-per-user, and --items or a private item selection; the model file has no user dictionary, user rows or exact counts)"},
		&cli.IntFlag{Name: "max-ratings-per-user", Category: cat, Usage: "--privacy-unit user: k, the most ratings one user contributes (a random subset of k, one per item, is kept; the item counts and sums read all of them, one per item, each weighted by min(1, sqrt(k/m)) for a user with m items (k/m under laplace); the implicit objective reads every event, weighted the same way; all of a user's ratings still serve that user's own predictions)"},
		&cli.StringFlag{Name: "items", Category: cat, Usage: "--privacy-unit user: public item catalogue (CSV, item id in the first column, optional header): the model's items are exactly these; ratings of unlisted items are dropped. Without it the items are selected privately (--selection-epsilon)"},
		&cli.StringFlag{Name: "time-from", Category: cat, Usage: "--privacy-unit user with a time mode: start of the public time range (Unix seconds, RFC 3339 or YYYY-MM-DD); ratings outside are dropped"},
		&cli.StringFlag{Name: "time-to", Category: cat, Usage: "--privacy-unit user with a time mode: end of the public time range (inclusive)"},
		&cli.Float64Flag{Name: "selection-epsilon", Category: cat, Usage: fmt.Sprintf("--privacy-unit user without --items: epsilon of the private item selection, taken from --epsilon (default %g of it; half of --delta goes with it)", dprec.DefaultSelectionShare)},
		&cli.StringFlag{Name: "lists", Category: cat, DefaultText: "positions for bias and als at the entry unit when EASE of the positions beats most-popular on their validation part, else ratings", Usage: "what ranks the private model's top-N lists: positions (EASE item-item weights fitted on which items each user rated, stored in the model; the entry unit's relation makes the positions public, so they spend no budget; predictions still come from the private model) or ratings (the private model's predictions)"},
		&cli.StringFlag{Name: "als-positions", Category: cat, Value: "auto", Usage: "--privacy als: auto (on a dense log, learn the item rows from the released covariance of the residuals, at either unit; else, at the entry unit, from a spectral embedding of the public positions when they have structure and the residual route is not in its regime: docs/privacy.md, \"Private ALS\") or off (at the entry unit the residual route only, as dprec-beam runs it; at the user unit the item steps or their fallback)"},
		&cli.Float64Flag{Name: "output-lambda", Category: cat, Usage: fmt.Sprintf("output mode: ridge penalty of the refit (default %g); Delta_O = (r_max - r_min) max|z| / lambda", completion.DefaultOutputLambda)},
	}
}

// trainPrivacyOf reads the privacy flags (nil: --privacy none) and the
// notes to say before the run.
func trainPrivacyOf(c *cli.Context) (*dprec.Privacy, []string, error) {
	mode, err := dprec.ParsePrivacyMode(c.String("privacy"))
	if err != nil {
		return nil, nil, cli.Exit("--privacy: "+err.Error(), exitUsage)
	}
	if mode == "" {
		for _, f := range trainUserFlags {
			if c.IsSet(f) {
				return nil, nil, fmt.Errorf("--%s needs --privacy bias, als, input, gradient or output", f)
			}
		}
		return nil, nil, nil
	}
	if !c.IsSet("epsilon") {
		return nil, nil, fmt.Errorf("--privacy %s needs --epsilon (the total budget)", mode)
	}
	if err := (perturb.Budget{Epsilon: c.Float64("epsilon"), Delta: c.Float64("delta")}).Validate(); err != nil {
		return nil, nil, cli.Exit("--epsilon/--delta: "+err.Error(), exitUsage)
	}
	cal, err := perturb.ParseCalibration(c.String("calibration"))
	if err != nil {
		return nil, nil, fmt.Errorf("--calibration: %w", err)
	}
	unit, err := completion.ParseUnit(c.String("privacy-unit"))
	if err != nil {
		return nil, nil, cli.Exit("--privacy-unit: "+err.Error(), exitUsage)
	}
	protect, err := completion.ParseProtect(c.String("protect"))
	if err != nil {
		return nil, nil, cli.Exit("--protect: "+err.Error(), exitUsage)
	}
	variant, err := completion.ParseDPSGDVariant(c.String("dp-sgd"))
	if err != nil {
		return nil, nil, fmt.Errorf("--dp-sgd: %w", err)
	}
	lists, err := dprec.ParseListSource(c.String("lists"))
	if err != nil {
		return nil, nil, cli.Exit("--lists: "+err.Error(), exitUsage)
	}
	p := &dprec.Privacy{Mode: mode, Lists: lists}
	o := &p.PrivateOptions
	*o = completion.PrivateOptions{
		Epsilon:           c.Float64("epsilon"),
		Delta:             c.Float64("delta"),
		RatingMin:         c.Float64("rating-min"),
		RatingMax:         c.Float64("rating-max"),
		Unit:              unit,
		MaxRatingsPerUser: c.Int("max-ratings-per-user"),
		Mechanism:         c.String("mechanism"),
		Calibration:       cal,
		Accounting:        perturb.Composition(c.String("accounting")),
		Protect:           protect,
		Clip:              c.Float64("clip"),
		Lambda:            c.Float64("output-lambda"),
		DPSGD:             variant,
	}
	switch v := c.String("als-positions"); v {
	case "auto":
	case "off":
		o.ALSPositions = completion.ALSPositionsOff
	default:
		return nil, nil, cli.Exit(fmt.Sprintf("--als-positions %q: want auto or off", v), exitUsage)
	}
	var notes []string
	if _, ok := seedOf(c); ok {
		// The library seeds the noise from the run's seed.
		notes = append(notes, "warning: --seed makes the privacy noise reproducible: the model is NOT private (never release it)")
	}
	if !c.IsSet("rating-min") && !c.IsSet("rating-max") {
		notes = append(notes, fmt.Sprintf("note: ratings clamped to the documented default public scale [%g, %g]; set --rating-min/--rating-max for another scale", o.RatingMin, o.RatingMax))
	}
	if err := trainCheckUnit(c, o); err != nil {
		return nil, nil, err
	}
	if _, err := p.PositionLists(); err != nil {
		var oe *dprec.OptionError
		if errors.As(err, &oe) {
			err = errors.New(oe.Msg)
		}
		return nil, nil, cli.Exit("--lists: "+err.Error(), exitUsage)
	}
	if err := trainCheckDelta(c, string(mode), protect); err != nil {
		return nil, nil, err
	}
	if err := trainCheckModeFlags(c, string(mode), o); err != nil {
		return nil, nil, err
	}
	if o.Unit == completion.UnitUser {
		if !c.IsSet("mechanism") {
			o.Mechanism = "" // the user unit's default: gaussian (l2 sensitivities sqrt(k) times smaller than l1)
		}
		p.ItemsFile = c.String("items")
		p.SelectionEpsilon = c.Float64("selection-epsilon")
		if c.IsSet("selection-epsilon") && !(p.SelectionEpsilon > 0 && p.SelectionEpsilon < o.Epsilon) {
			return nil, nil, cli.Exit(fmt.Sprintf("--selection-epsilon %g: must be in (0, --epsilon %g)", p.SelectionEpsilon, o.Epsilon), exitUsage)
		}
		if p.ItemsFile == "" && !(o.Delta > 0) {
			return nil, nil, cli.Exit("--privacy-unit user without --items selects the items privately and needs --delta > 0", exitUsage)
		}
		for _, t := range []struct {
			flag string
			to   **int64
		}{{"time-from", &p.TimeFrom}, {"time-to", &p.TimeTo}} {
			if !c.IsSet(t.flag) {
				continue
			}
			v, err := predictParseTime(c.String(t.flag))
			if err != nil || v == nil {
				return nil, nil, cli.Exit(fmt.Sprintf("--%s: %v", t.flag, err), exitUsage)
			}
			*t.to = v
		}
	}
	return p, notes, nil
}

// trainUserFlags are the privacy flags that need --privacy.
var trainUserFlags = []string{"lists", "als-positions", "epsilon", "delta", "protect", "dp-sgd", "clip", "mechanism", "privacy-unit", "max-ratings-per-user", "output-lambda", "items", "time-from", "time-to", "selection-epsilon", "rating-min", "rating-max"}

// trainCheckUnit refuses unit flags that do not fit the unit and mode.
func trainCheckUnit(c *cli.Context, o *completion.PrivateOptions) error {
	mode := c.String("privacy")
	if o.Unit == completion.UnitEntry {
		for _, f := range []string{"max-ratings-per-user", "items", "time-from", "time-to", "selection-epsilon"} {
			if c.IsSet(f) {
				return cli.Exit(fmt.Sprintf("--%s belongs to --privacy-unit user", f), exitUsage)
			}
		}
		return nil
	}
	if mode != "bias" && mode != "als" {
		return cli.Exit(fmt.Sprintf("--privacy-unit user is offered for --privacy bias and als only: --privacy %s keeps every user's positions, dictionary entry and rows in the model file, so whether a user is in the log would show", mode), exitUsage)
	}
	if o.MaxRatingsPerUser < 1 {
		return cli.Exit("--privacy-unit user needs --max-ratings-per-user k >= 1 (the sensitivities are those of one user with at most k ratings)", exitUsage)
	}
	if c.IsSet("items") && c.IsSet("selection-epsilon") {
		return cli.Exit("--selection-epsilon selects the items privately: it does not go with a public catalogue (--items)", exitUsage)
	}
	return nil
}

// trainCheckDelta refuses (usage) a delta of 0 for a run whose mechanism
// is Gaussian, before any data is read.
func trainCheckDelta(c *cli.Context, mode string, protect completion.Protect) error {
	if c.Float64("delta") != 0 {
		return nil
	}
	const how = "its Gaussian noise has no pure epsilon (give a delta well below 1/(number of ratings), e.g. 1e-6)"
	gaussian := c.String("mechanism") == "gaussian"
	user := c.String("privacy-unit") == "user"
	switch {
	case mode == "als":
		return cli.Exit("--privacy als needs --delta > 0: "+how, exitUsage)
	case mode == "gradient" && protect == completion.ProtectAll:
		which := "--protect all, the default"
		if c.IsSet("protect") {
			which = "--protect all"
		}
		return cli.Exit("--privacy gradient ("+which+") needs --delta > 0: "+how+"; --protect C is pure epsilon but covers no released parameter", exitUsage)
	case (mode == "bias" || mode == "input") && gaussian:
		return cli.Exit("--mechanism gaussian needs --delta > 0: "+how, exitUsage)
	case mode == "bias" && user && !c.IsSet("mechanism"):
		return cli.Exit("--privacy-unit user uses --mechanism gaussian by default, which needs --delta > 0: "+how+"; or give --mechanism laplace", exitUsage)
	}
	return nil
}

// trainCheckModeFlags refuses (usage) a privacy flag that the chosen mode
// would ignore: a setting the user asked for must take effect or fail.
func trainCheckModeFlags(c *cli.Context, mode string, o *completion.PrivateOptions) error {
	// The user unit's Gaussian releases are calibrated by their noise
	// multiplier (NewGaussianSigma, accounted by GDP/RDP), never by
	// --calibration: it applies at entry level only.
	entryGaussian := o.Unit == completion.UnitEntry && o.Mechanism == "gaussian"
	perEntryGaussian := mode == "gradient" && o.Protect == completion.ProtectAll && o.DPSGD == completion.DPSGDPerEntry &&
		(o.Accounting == perturb.Basic || o.Accounting == perturb.Advanced)
	for _, r := range []struct {
		flag    string
		applies bool
		where   string
	}{
		{"protect", mode == "gradient", "--privacy gradient"},
		{"dp-sgd", mode == "gradient" && o.Protect == completion.ProtectAll, "--privacy gradient --protect all"},
		{"clip", mode == "gradient" || mode == "output", "--privacy gradient and output"},
		{"output-lambda", mode == "output", "--privacy output"},
		{"als-positions", mode == "als", "--privacy als"},
		{"mechanism", mode == "input" || mode == "bias", "--privacy input and bias (als picks its own: Laplace biases at entry level, Gaussian at user level)"},
		{"calibration", (mode == "input" || mode == "bias") && entryGaussian || perEntryGaussian,
			"Gaussian noise calibrated to one (epsilon, delta) at entry level: --mechanism gaussian (input, bias), or gradient --dp-sgd per-entry with --accounting basic or advanced (every other Gaussian release, the user unit's included, is calibrated by its noise multiplier and accounted by RDP or GDP)"},
	} {
		if c.IsSet(r.flag) && !r.applies {
			return cli.Exit(fmt.Sprintf("--%s does not apply to --privacy %s here and would be ignored (it applies to %s)", r.flag, mode, r.where), exitUsage)
		}
	}
	return nil
}
