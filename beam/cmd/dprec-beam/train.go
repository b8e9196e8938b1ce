package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/dprec/dprec/beam/pipeline"
	"github.com/dprec/dprec/completion"
)

func trainCmd(ctx context.Context, o *options, w io.Writer) error {
	if o.data == "" || o.out == "" {
		return usageError("train needs --data and --out")
	}
	if o.privacy != "" && o.privacy != "none" {
		return usageError(fmt.Sprintf("--privacy %s: the pipelines train non-private models only so far (use dprec train --privacy on one machine)", o.privacy))
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
