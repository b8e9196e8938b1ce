package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/dprec/dprec/beam/pipeline"
	"github.com/dprec/dprec/completion"
	"github.com/dprec/dprec/perturb"
)

func trainCmd(ctx context.Context, o *options, w io.Writer) error {
	if o.data == "" || o.out == "" {
		return usageError("train needs --data and --out")
	}
	if err := checkUnit(o); err != nil {
		return err
	}
	switch o.privacy {
	case "", "none":
	case "bias":
		return trainBias(ctx, o, w)
	case "als":
		return trainALS(ctx, o, w)
	default:
		return usageError(fmt.Sprintf("--privacy %s: the pipelines train --privacy none, bias (entry and user level) and als (entry level) so far (use dprec train --privacy on one machine)", o.privacy))
	}
	start := 0
	res, err := pipeline.Train(ctx, pipeline.TrainOptions{
		Data: o.data, Load: o.load(), Out: o.out, Force: o.force, Work: o.work,
		Rank: o.rank, NoBias: o.noBias, Seed: o.seed, Seen: o.seen, Shards: o.shards,
		Validation: o.valid,
		Settings: completion.Settings{Epochs: o.epochs, Reg: o.reg, RegBias: o.regBias,
			InitScale: o.initScale, Patience: o.patience},
		Progress: func(r completion.EpochRecord) {
			start++
			msg := fmt.Sprintf("sweep %d: train RMSE %.4f", r.Epoch, r.TrainRMSE)
			if o.valid != "" {
				msg += fmt.Sprintf(", validation RMSE %.4f", r.ValidRMSE)
			}
			fmt.Fprintf(os.Stderr, "%s (%.1f s)\n", msg, r.Seconds)
		},
	})
	if err != nil {
		var div *completion.ErrDiverged
		if errors.As(err, &div) {
			return fmt.Errorf("%w (no model saved; try a larger --reg)", err)
		}
		return err
	}
	if o.jsonOut {
		return printJSON(w, map[string]any{"out": o.out, "counts": res.Counts, "history": res.History,
			"best_epoch": res.BestEpoch, "early_stopped": res.EarlyStopped,
			"prepare_seconds": res.Prepare.Seconds(), "half_sweep_seconds": seconds(res.HalfSweeps)})
	}
	last := res.History[len(res.History)-1]
	fmt.Fprintf(w, "trained cp model, rank %d, on %d ratings (%d users, %d items) in %d sweeps: train RMSE %.4f; wrote %s\n",
		o.rank, res.Counts.Ratings, res.File.Model.Dims[0], res.File.Model.Dims[1], len(res.History), last.TrainRMSE, o.out)
	return nil
}

// trainBias trains the private bias mode at entry level or at the user
// unit.
func trainBias(ctx context.Context, o *options, w io.Writer) error {
	if o.items == "" {
		return usageError("train --privacy bias needs --items, the public item catalogue (a CSV whose first column is the item ID)")
	}
	po := completion.PrivateOptions{Epsilon: o.epsilon, Delta: o.delta, RatingMin: o.ratingMin, RatingMax: o.ratingMax, Mechanism: o.mechanism}
	user := o.unit == string(completion.UnitUser)
	if user {
		po.Unit, po.MaxRatingsPerUser = completion.UnitUser, o.maxPerUser
		if (o.mechanism == "" || o.mechanism == perturb.MechGaussian) && !(o.delta > 0) {
			return usageError("train --privacy bias --privacy-unit user draws Gaussian noise by default and needs --delta > 0 (or --mechanism laplace)")
		}
	}
	if flagSet("seed") {
		po.Noise = perturb.SeededNoise(o.seed)
		fmt.Fprintln(os.Stderr, "warning: --seed makes the privacy noise reproducible: the model is NOT private (never release it)")
	}
	res, err := pipeline.TrainPrivateBias(ctx, pipeline.PrivateBiasOptions{Data: o.data, Load: o.load(), Items: o.items,
		Privacy: po, UndeclaredScale: !flagSet("rating-min") && !flagSet("rating-max"), Out: o.out, Force: o.force, Work: o.work, Shards: o.shards})
	if err != nil {
		return err
	}
	rep := res.File.Privacy
	if user {
		if o.jsonOut {
			return printJSON(w, map[string]any{"out": o.out, "ratings": res.Ratings, "dropped": res.Dropped, "users": res.Users,
				"bounded": res.Bounded, "privacy": rep})
		}
		// The counts are the curator's (functions of the private log):
		// printed here, never saved in the model file.
		fmt.Fprintf(w, "trained private bias model (user level, k = %d, epsilon %g, delta %g) on %d ratings of %d users over %d catalogue items (%d ratings dropped by the bound of %d per user, one per item, from every release but the weighted item counts and sums; %d ratings of other items dropped; these counts are for you only, not in the model); wrote %s\n",
			o.maxPerUser, rep.Epsilon, rep.Delta, res.Ratings, res.Users, res.File.Model.Dims[1], res.Bounded, o.maxPerUser, res.Dropped, o.out)
		return nil
	}
	if o.jsonOut {
		return printJSON(w, map[string]any{"out": o.out, "ratings": res.Ratings, "dropped": res.Dropped, "privacy": rep})
	}
	eps, delta := rep.Epsilon, rep.Delta
	fmt.Fprintf(w, "trained private bias model (entry level, epsilon %g, delta %g) on %d ratings of %d catalogue items (%d ratings of other items dropped); wrote %s\n",
		eps, delta, res.Ratings, res.File.Model.Dims[1], res.Dropped, o.out)
	return nil
}

// trainALS trains private ALS at entry level (the residual route).
func trainALS(ctx context.Context, o *options, w io.Writer) error {
	if o.items == "" {
		return usageError("train --privacy als needs --items, the public item catalogue (a CSV whose first column is the item ID)")
	}
	if o.mechanism != "" && o.mechanism != perturb.MechLaplace {
		return usageError(fmt.Sprintf("--mechanism %s: train --privacy als at entry level releases the residuals with Laplace noise (--mechanism applies to --privacy bias)", o.mechanism))
	}
	if !(o.delta > 0) {
		return usageError("train --privacy als needs --delta > 0, as dprec train --privacy als does (the entry unit's residual route is pure and spends none of it; use a delta well below 1/ratings, e.g. 1e-6)")
	}
	po := completion.PrivateOptions{Epsilon: o.epsilon, Delta: o.delta, RatingMin: o.ratingMin, RatingMax: o.ratingMax}
	if flagSet("seed") {
		po.Noise = perturb.SeededNoise(o.seed)
		fmt.Fprintln(os.Stderr, "warning: --seed makes the privacy noise reproducible: the model is NOT private (never release it)")
	}
	res, err := pipeline.TrainPrivateALS(ctx, pipeline.PrivateALSOptions{Data: o.data, Load: o.load(), Items: o.items,
		Rank: o.rank, Privacy: po, UndeclaredScale: !flagSet("rating-min") && !flagSet("rating-max"), Out: o.out, Force: o.force, Work: o.work, Shards: o.shards,
		Progress: func(r completion.EpochRecord) {
			fmt.Fprintf(os.Stderr, "fit on the released residuals, sweep %d (%.1f s)\n", r.Epoch, r.Seconds)
		}})
	if err != nil {
		return err
	}
	rep := res.File.Privacy
	if o.jsonOut {
		return printJSON(w, map[string]any{"out": o.out, "ratings": res.Ratings, "dropped": res.Dropped, "users": res.Users,
			"plan": res.Plan, "privacy": rep})
	}
	route := "too few ratings on learnable items: the bias mode took the whole budget, item rows zero"
	if pl := res.Plan; pl != nil {
		route = fmt.Sprintf("residual route: clip %.4g, Laplace scale %.4g, rank %d", pl.Clip, 2*pl.Clip/pl.ResidualEpsilon, pl.Rank)
	}
	fmt.Fprintf(w, "trained private ALS model (entry level, epsilon %g, delta %g; %s) on %d ratings of %d catalogue items (%d ratings of other items dropped); wrote %s\n",
		rep.Epsilon, rep.Delta, route, res.Ratings, res.File.Model.Dims[1], res.Dropped, o.out)
	return nil
}

// checkUnit refuses the privacy unit flags where they do not apply, as
// dprec train does: --privacy-unit is entry or user; the user unit is the
// bias mode's only (here), with --max-ratings-per-user k >= 1 and a
// catalogue; --max-ratings-per-user belongs to the user unit.
func checkUnit(o *options) error {
	switch o.unit {
	case "", string(completion.UnitEntry):
		if o.maxPerUser != 0 || flagSet("max-ratings-per-user") {
			return usageError("--max-ratings-per-user applies to --privacy-unit user only")
		}
		return nil
	case string(completion.UnitUser):
	default:
		return usageError(fmt.Sprintf("--privacy-unit %s: want entry or user", o.unit))
	}
	switch o.privacy {
	case "bias":
	case "als":
		return usageError("--privacy-unit user with --privacy als: user level: bias only in dprec-beam (use dprec train --privacy als --privacy-unit user on one machine)")
	default:
		return usageError(fmt.Sprintf("--privacy-unit user needs --privacy bias (got --privacy %s): user level: bias only in dprec-beam", o.privacy))
	}
	if o.maxPerUser < 1 {
		return usageError("--privacy-unit user needs --max-ratings-per-user k >= 1 (the sensitivities are those of one user with at most k ratings)")
	}
	if o.items == "" {
		return usageError("--privacy-unit user needs --items, the public item catalogue: dprec-beam selects no items privately (the set of items in the log is private at the user unit; use dprec train without --items for a private item selection)")
	}
	return nil
}

// flagSet reports whether a flag was given on the command line.
func flagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
