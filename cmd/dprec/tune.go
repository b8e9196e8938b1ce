package main

import (
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/dprec/dprec"
	"github.com/dprec/dprec/completion"
	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/models"
	"github.com/urfave/cli/v2"
)

// tuneCmd builds the "dprec tune" command (listed in commands.go).
func tuneCmd() *cli.Command {
	flags := []cli.Flag{
		&cli.StringFlag{Name: "data", Usage: "training rating log (required); tuning never reads a test file", Required: true},
		&cli.StringFlag{Name: "grid", Usage: `parameters and values, e.g. "rank=10,30 reg=0.1,0.15 solver=als,gibbs" (names: rank, solver, epochs, lr, decay, reg, reg-bias, reg-core, reg-time, reg-pair, item-periods, burn-in, time-biases; --objective implicit: rank, reg, alpha, unobserved-weight, confidence, iterations; --objective ease: lambda, max-items)`, Required: true},
		&cli.StringFlag{Name: "metric", Value: "rmse", Usage: "score to choose by: rmse (held-out ratings) or a ranking metric of the top-k lists, ndcg@k, recall@k, map@k or precision@k (per-user hold-out: a fraction --validation of each user's events, at least one, users with one event stay in training; the user's training items are left out of their list, ranked as eval and recommend rank them by default)"},
		&cli.StringFlag{Name: "objective", Value: "rating", Usage: "objective of every point: rating, implicit or ease (implicit and ease need a ranking --metric)"},
		&cli.Float64Flag{Name: "threshold", Usage: "ranking metrics: a held-out event is relevant when its value is >= threshold (default: 4 on a log with a rating column whose values reach 4 with more than one value, as dprec eval; otherwise every held-out event)"},
		&cli.IntFlag{Name: "random", Usage: "score this many points drawn at random from the grid instead of all of them (0: all)"},
		&cli.IntFlag{Name: "folds", Usage: "k-fold cross-validation over the training log (0 or 1: one random hold-out of --validation); ranking metrics: k independent per-user hold-outs"},
		&cli.Float64Flag{Name: "validation", Value: 0.1, Usage: "hold-out fraction when --folds is 0 or 1"},
		&cli.StringFlag{Name: "model", Value: "cp", Usage: "model kind: cp or tucker"},
		&cli.IntFlag{Name: "rank", Value: 10, Usage: "rank when the grid has no rank"},
		&cli.StringFlag{Name: "solver", Value: "default", Usage: "solver when the grid has no solver: gibbs, als or sgd (default: gibbs; als for a Tucker core above " + fmt.Sprint(completion.MaxGibbsCore) + " entries)"},
		&cli.IntFlag{Name: "epochs", Usage: "epochs or sweeps when the grid has no epochs (default: the solver's)"},
		&cli.BoolFlag{Name: "bias", Value: true, Usage: "global mean and biases"},
		&cli.Uint64Flag{Name: "seed", Usage: "seed the folds, random points and training (default: random)"},
		&cli.StringFlag{Name: "out", Aliases: []string{"o"}, Usage: "also train the best point on the whole log and save it here"},
		forceFlag("overwrite --out", ""),
		&cli.BoolFlag{Name: "json", Usage: "print the table as one JSON document"},
	}
	flags = append(flags, dataLoadFlags()...)
	return &cli.Command{
		Name:  "tune",
		Usage: "score completion settings on validation folds carved from the training log (grid or random search)",
		Description: `Every point of the grid is trained on the same folds (or one random hold-out)
cut from --data and scored by validation RMSE; the table is sorted best first.
With --out the best point is retrained on the whole log (for the mean number
of epochs early stopping chose) and saved. Like Surprise's GridSearchCV, it
never looks at a test set: split one off first with "dprec data split".

tune has no privacy mode: its scores are computed from the log without
noise. Choosing the flags of a private run (dprec train --privacy) from
tune's table on the private log itself is a release of that log that no
privacy report accounts for (the private run's epsilon and delta do not
cover it): tune on public data or on another log.`,
		Flags:  flags,
		Action: runWithOptions(tuneOptionsOf, tuneRun),
	}
}

type tuneSummary struct {
	Data   string `json:"data"`
	Metric string `json:"metric"`
	Folds  int    `json:"folds"`
	// Threshold is a ranking tune's relevance threshold.
	Threshold *float64  `json:"threshold,omitempty"`
	Points    []tuneRow `json:"points"`
	Best      *tuneRow  `json:"best,omitempty"`
	Failed    int       `json:"failed,omitempty"`
	Out       string    `json:"out,omitempty"`
	Secs      float64   `json:"seconds"`
}

// tuneRow is one grid point as printed. A point whose training failed
// carries its error and no rmse, rmse_sd or epochs: a script that takes the
// lowest RMSE must not pick a failure (a zero RMSE would be the lowest).
type tuneRow struct {
	Values map[string]string `json:"values"`
	// Score, ScoreSD and Popularity are a ranking metric's mean, its
	// standard deviation over the hold-outs and most-popular's score.
	Score      *float64 `json:"score,omitempty"`
	ScoreSD    *float64 `json:"score_sd,omitempty"`
	Popularity *float64 `json:"popularity,omitempty"`
	RMSE       *float64 `json:"rmse,omitempty"`
	SD         *float64 `json:"rmse_sd,omitempty"`
	Epochs     *float64 `json:"epochs,omitempty"`
	Err        string   `json:"error,omitempty"`
}

// tuneRowOf converts a scored point.
func tuneRowOf(p completion.TunePoint) tuneRow {
	r := tuneRow{Values: p.Values, Err: p.Err}
	if p.Err == "" {
		r.RMSE, r.SD, r.Epochs = &p.RMSE, &p.SD, &p.Epochs
	}
	return r
}

// tuneOptions are the flags of dprec tune.
type tuneOptions struct {
	globalOptions
	Data string // --data: the training log
	// Config holds --model, --rank, --bias, --solver, --epochs,
	// --threads, --grid, --random, --folds and --validation; tuneRun sets
	// its clamp range from the data.
	Config completion.TuneConfig
	Seed   uint64 // --seed, when Seeded
	Seeded bool
	Out    string           // --out: save the retrained best point here ("": do not)
	Force  bool             // --force
	JSON   bool             // --json
	Load   data.LoadOptions // the input flags
	// Metric is --metric; a ranking metric tunes through dprec.TuneRanking
	// with Objective (--objective) and Threshold (--threshold, when
	// ThresholdSet).
	Metric       dprec.Metric
	Objective    dprec.Objective
	Threshold    float64
	ThresholdSet bool
}

// tuneOptionsOf reads tune's flags; bad values are usage errors.
func tuneOptionsOf(c *cli.Context) (*tuneOptions, error) {
	kind := decomposition.Kind(strings.ToLower(c.String("model")))
	if kind != decomposition.CP && kind != decomposition.Tucker {
		return nil, cli.Exit(fmt.Sprintf("--model %q: want cp or tucker", c.String("model")), exitUsage)
	}
	solver, err := completion.ParseSolver(strings.ToLower(c.String("solver")))
	if err != nil {
		return nil, cli.Exit("--solver: "+err.Error(), exitUsage)
	}
	metric, err := dprec.ParseMetric(c.String("metric"))
	if err != nil {
		return nil, cli.Exit("--metric: "+err.Error(), exitUsage)
	}
	obj := dprec.Objective(strings.ToLower(c.String("objective")))
	switch {
	case obj != dprec.ObjectiveRating && obj != dprec.ObjectiveImplicit && obj != dprec.ObjectiveEASE:
		return nil, cli.Exit(fmt.Sprintf("--objective %q: want rating, implicit or ease", c.String("objective")), exitUsage)
	case obj != dprec.ObjectiveRating && !metric.Ranking():
		return nil, cli.Exit(fmt.Sprintf("--objective %s fits no ratings: choose by a ranking --metric (ndcg@10, recall@20, map@10...)", obj), exitUsage)
	case obj != dprec.ObjectiveRating && kind != decomposition.CP:
		return nil, cli.Exit("--objective implicit trains a CP model: drop --model tucker", exitUsage)
	case c.IsSet("threshold") && !metric.Ranking():
		return nil, cli.Exit("--threshold is for ranking metrics (--metric ndcg@10 ...)", exitUsage)
	}
	grid, err := dprec.ParseGrid(c.String("grid"), obj)
	if err != nil {
		return nil, cli.Exit("--grid: "+err.Error(), exitUsage)
	}
	if c.Int("rank") <= 0 || c.Int("folds") < 0 || c.Int("random") < 0 {
		return nil, cli.Exit("--rank must be positive, --folds and --random at least 0", exitUsage)
	}
	if f := c.Float64("validation"); !(f > 0 && f < 1) {
		return nil, cli.Exit(fmt.Sprintf("--validation %g: want a fraction in (0, 1)", f), exitUsage)
	}
	o := &tuneOptions{
		globalOptions: globalOptionsOf(c),
		Data:          c.String("data"),
		Config: completion.TuneConfig{Kind: kind, Rank: c.Int("rank"), Bias: c.Bool("bias"),
			Base: completion.Settings{Threads: c.Int("threads"), Solver: solver, Epochs: c.Int("epochs")}, Grid: grid, Random: c.Int("random"),
			Folds: c.Int("folds"), Fraction: c.Float64("validation")},
		Out:   c.String("out"),
		Force: c.Bool("force"),
		JSON:  c.Bool("json"),
	}
	o.Seed, o.Seeded = seedOf(c)
	if o.Load, err = dataLoadOptions(c); err != nil {
		return nil, err
	}
	if obj != dprec.ObjectiveRating && !c.IsSet("duplicates") {
		o.Load.Builder.Duplicates = data.DupSum // repeated events add up, as in train
	}
	o.Metric, o.Objective = metric, obj
	o.Threshold, o.ThresholdSet = c.Float64("threshold"), c.IsSet("threshold")
	return o, nil
}

// tuneRun scores the grid on folds of o.Data, prints the table on s.Out
// and with o.Out saves the best point retrained on the whole log.
func tuneRun(o *tuneOptions, s *iostreams) error {
	start := time.Now()
	out := o.Out
	if out != "" && !o.Force {
		if err := trainCheckOut(out); err != nil {
			return err
		}
	}
	st, rep, err := loadLog(s, o.globalOptions, o.Data, o.Load)
	if err != nil {
		return err
	}
	seed := o.Seed
	if !o.Seeded {
		var b [8]byte
		if _, err := crand.Read(b[:]); err != nil {
			return err
		}
		seed = binary.LittleEndian.Uint64(b[:])
	}
	if o.Metric.Ranking() {
		return tuneRankingRun(o, s, st, rep.RatingColumn == "", seed, start)
	}
	info := models.Fingerprint(st)
	cfg := o.Config
	if info.NNZ > 0 {
		// A one-point range (one value throughout) clamps to that value.
		cfg.ClampLo, cfg.ClampHi = decomposition.ClampRange(info.Min, info.Max)
	}
	note, err := guardTuneData(&cfg, st, o.Load.MaxMemory) // sizeguard.go
	if err != nil {
		return err
	}
	if note != "" && !o.Quiet {
		fmt.Fprintln(s.Err, note)
	}
	bar := s.bar(o.globalOptions, 1, "tuning")
	pts, err := completion.Tune(st, &cfg, rand.NewPCG(seed, 0x7475), func(done, total int) {
		bar.ChangeMax(total)
		bar.Set(done)
	})
	bar.Finish()
	if err != nil {
		return err
	}
	sum := tuneSummary{Data: o.Data, Metric: "rmse", Folds: max(1, cfg.Folds)}
	for _, p := range pts {
		sum.Points = append(sum.Points, tuneRowOf(p))
		if p.Err != "" {
			sum.Failed++
		}
	}
	if len(pts) == 0 || pts[0].Err != "" {
		// Every point failed (they sort last): print them, then fail.
		sum.Secs = time.Since(start).Seconds()
		if err := tunePrint(s.Out, o.JSON, &sum, cfg.Grid); err != nil {
			return err
		}
		msg := "no grid point trained without error"
		if len(pts) > 0 {
			msg = fmt.Sprintf("all %d grid points failed (the first: %s)", len(pts), pts[0].Err)
		}
		if out != "" {
			msg += "; nothing saved to " + out
		}
		return errors.New(msg)
	}
	sum.Best = &sum.Points[0]
	if out != "" {
		if err := tuneSaveBest(st, o.Data, &cfg, &pts[0], seed, out, o.Force); err != nil {
			return err
		}
		sum.Out = out
	}
	sum.Secs = time.Since(start).Seconds()
	return tunePrint(s.Out, o.JSON, &sum, cfg.Grid)
}

// tuneSaveBest trains the best point on the whole log for its mean best
// epoch count through the library's one entry (dprec.Train: the same
// clamp range, seen items and header as "dprec train") and saves it.
func tuneSaveBest(st *data.Store, name string, cfg *completion.TuneConfig, best *completion.TunePoint, seed uint64, out string, force bool) error {
	s, rank, err := cfg.Settings(best.Values)
	if err != nil {
		return err
	}
	s.Epochs, s.Patience = max(1, int(math.Round(best.Epochs))), -1
	res, err := dprec.Train(context.Background(), st, name, &dprec.Options{
		Objective: dprec.ObjectiveRating, Kind: cfg.Kind, Rank: rank, NoBias: !cfg.Bias,
		Validation: -1, Seed: seed, Seeded: true, Settings: s, Software: trainVersion(),
	})
	if err != nil {
		return trainError(err)
	}
	return models.Save(out, res.File(), force)
}

// tunePrint writes the table (or with asJSON the summary) on w.
func tunePrint(w io.Writer, asJSON bool, s *tuneSummary, grid []completion.Param) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(s)
	}
	names := make([]string, len(grid))
	for i, p := range grid {
		names[i] = p.Name
	}
	fmt.Fprintf(w, "%d points on %s, ", len(s.Points), s.Data)
	if s.Metric != "rmse" {
		return tunePrintRanking(w, s, names)
	}
	if s.Folds > 1 {
		fmt.Fprintf(w, "%d-fold cross-validation\n", s.Folds)
	} else {
		fmt.Fprintln(w, "one random hold-out")
	}
	for _, n := range names {
		fmt.Fprintf(w, "%-12s ", n)
	}
	fmt.Fprintf(w, "%-8s %-8s %s\n", "rmse", "sd", "epochs")
	for _, p := range s.Points {
		for _, n := range names {
			fmt.Fprintf(w, "%-12s ", p.Values[n])
		}
		if p.Err != "" {
			fmt.Fprintf(w, "failed: %s\n", p.Err)
			continue
		}
		fmt.Fprintf(w, "%-8.4f %-8.4f %.1f\n", *p.RMSE, *p.SD, *p.Epochs)
	}
	if s.Best != nil {
		var b []string
		for _, n := range names {
			b = append(b, n+"="+s.Best.Values[n])
		}
		slices.Sort(b)
		fmt.Fprintf(w, "best: %s (validation RMSE %.4f)\n", strings.Join(b, " "), *s.Best.RMSE)
	}
	if s.Out != "" {
		fmt.Fprintf(w, "saved %s (best point retrained on the whole log)\n", s.Out)
	}
	return nil
}

// tuneRankingRun scores the grid by a ranking metric on per-user
// hold-outs of st (dprec.TuneRanking), prints the table and with o.Out
// saves the best point trained on the whole log (dprec.Train).
func tuneRankingRun(o *tuneOptions, s *iostreams, st *data.Store, noRating bool, seed uint64, start time.Time) error {
	thr := o.Threshold
	if !o.ThresholdSet {
		thr = 0
		if !noRating {
			thr = tuneDefaultThreshold(st)
		}
	}
	base := dprec.Options{Objective: o.Objective, Kind: o.Config.Kind, Rank: o.Config.Rank, NoBias: !o.Config.Bias,
		Settings: o.Config.Base, Seed: seed, Seeded: true, Software: trainVersion()}
	base.Implicit.Threads = o.Config.Base.Threads
	limit := sizeLimitBytes(o.Load.MaxMemory)
	base.Check = func(p dprec.Plan) error {
		if p.Objective == dprec.ObjectiveEASE {
			return nil // itemitem refuses a catalogue too large for its closed form
		}
		f := trainJobFlags{Kind: o.Config.Kind, Rank: o.Config.Rank, Solver: o.Config.Base.Solver, Bias: o.Config.Bias,
			Threads: o.Config.Base.Threads, Epochs: o.Config.Base.Epochs, Implicit: p.Objective == dprec.ObjectiveImplicit}
		if _, err := trainJob(f, p.Dims, p.NNZ, p.Ranks).check(limit); err != nil {
			return cli.Exit(err.Error(), exitUsage)
		}
		return nil
	}
	topt := &dprec.TuneOptions{Base: base, Grid: o.Config.Grid, Metric: o.Metric, Fraction: o.Config.Fraction,
		Repeats: max(1, o.Config.Folds), Threshold: thr, Random: o.Config.Random}
	bar := s.bar(o.globalOptions, 1, "tuning")
	topt.Progress = func(done, total int) {
		bar.ChangeMax(total)
		bar.Set(done)
	}
	pts, err := dprec.TuneRanking(context.Background(), st, topt)
	bar.Finish()
	if err != nil {
		return trainError(err)
	}
	sum := tuneSummary{Data: o.Data, Metric: o.Metric.String(), Folds: topt.Repeats, Threshold: &thr}
	for _, p := range pts {
		r := tuneRow{Values: p.Values, Err: p.Err}
		if p.Err == "" {
			r.Score, r.ScoreSD, r.Popularity = &p.Score, &p.SD, &p.Popularity
		} else {
			sum.Failed++
		}
		sum.Points = append(sum.Points, r)
	}
	if len(pts) == 0 || pts[0].Err != "" {
		sum.Secs = time.Since(start).Seconds()
		if err := tunePrint(s.Out, o.JSON, &sum, o.Config.Grid); err != nil {
			return err
		}
		msg := "no grid point trained without error"
		if len(pts) > 0 {
			msg = fmt.Sprintf("all %d grid points failed (the first: %s)", len(pts), pts[0].Err)
		}
		return errors.New(msg)
	}
	sum.Best = &sum.Points[0]
	if o.Out != "" {
		opts, err := topt.Options(pts[0].Values)
		if err != nil {
			return err
		}
		res, err := dprec.Train(context.Background(), st, o.Data, &opts)
		if err != nil {
			return trainError(err)
		}
		if err := models.Save(o.Out, res.File(), o.Force); err != nil {
			return err
		}
		sum.Out = o.Out
	}
	sum.Secs = time.Since(start).Seconds()
	return tunePrint(s.Out, o.JSON, &sum, o.Config.Grid)
}

// tuneDefaultThreshold is the relevance threshold of a ranking tune
// without --threshold on a log with a rating column: 4, as dprec eval, on a
// log of several values reaching 4; otherwise 0 (every held-out event is
// relevant: implicit feedback, as for a log without a rating column).
func tuneDefaultThreshold(st *data.Store) float64 {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range st.Val {
		lo, hi = min(lo, v), max(hi, v)
	}
	if lo < hi && hi >= 4 {
		return 4
	}
	return 0
}

// tunePrintRanking prints the table of a ranking tune.
func tunePrintRanking(w io.Writer, s *tuneSummary, names []string) error {
	fmt.Fprintf(w, "%s on ", s.Metric)
	if s.Folds > 1 {
		fmt.Fprintf(w, "%d per-user hold-outs", s.Folds)
	} else {
		fmt.Fprint(w, "a per-user hold-out")
	}
	fmt.Fprintf(w, " (relevant: held-out value >= %g; training items left out of the lists)\n", *s.Threshold)
	for _, n := range names {
		fmt.Fprintf(w, "%-18s ", n)
	}
	fmt.Fprintf(w, "%-8s %-8s %s\n", s.Metric, "sd", "popular")
	for _, p := range s.Points {
		for _, n := range names {
			fmt.Fprintf(w, "%-18s ", p.Values[n])
		}
		if p.Err != "" {
			fmt.Fprintf(w, "failed: %s\n", p.Err)
			continue
		}
		fmt.Fprintf(w, "%-8.4f %-8.4f %.4f\n", *p.Score, *p.ScoreSD, *p.Popularity)
	}
	if s.Best != nil {
		var b []string
		for _, n := range names {
			b = append(b, n+"="+s.Best.Values[n])
		}
		slices.Sort(b)
		fmt.Fprintf(w, "best: %s (validation %s %.4f; most popular %.4f)\n", strings.Join(b, " "), s.Metric, *s.Best.Score, *s.Best.Popularity)
		if *s.Best.Score <= *s.Best.Popularity {
			fmt.Fprintf(w, "note: the most-popular lists score at least as well as every point of this grid on the hold-out: widen the grid or serve popularity\n")
		}
	}
	if s.Out != "" {
		fmt.Fprintf(w, "saved %s (best point trained on the whole log)\n", s.Out)
	}
	return nil
}
