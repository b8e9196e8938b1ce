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
		&cli.StringFlag{Name: "grid", Usage: `parameters and values, e.g. "rank=10,30 reg=0.1,0.15 solver=als,gibbs" (names: rank, solver, epochs, lr, decay, reg, reg-bias, reg-core, reg-time, reg-pair, item-periods, burn-in, time-biases)`, Required: true},
		&cli.IntFlag{Name: "random", Usage: "score this many points drawn at random from the grid instead of all of them (0: all)"},
		&cli.IntFlag{Name: "folds", Usage: "k-fold cross-validation over the training log (0 or 1: one random hold-out of --validation)"},
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
	Data   string    `json:"data"`
	Folds  int       `json:"folds"`
	Points []tuneRow `json:"points"`
	Best   *tuneRow  `json:"best,omitempty"`
	Failed int       `json:"failed,omitempty"`
	Out    string    `json:"out,omitempty"`
	Secs   float64   `json:"seconds"`
}

// tuneRow is one grid point as printed. A point whose training failed
// carries its error and no rmse, rmse_sd or epochs: a script that takes the
// lowest RMSE must not pick a failure (a zero RMSE would be the lowest).
type tuneRow struct {
	Values map[string]string `json:"values"`
	RMSE   *float64          `json:"rmse,omitempty"`
	SD     *float64          `json:"rmse_sd,omitempty"`
	Epochs *float64          `json:"epochs,omitempty"`
	Err    string            `json:"error,omitempty"`
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
	grid, err := completion.ParseGrid(c.String("grid"))
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
	st, _, err := loadLog(s, o.globalOptions, o.Data, o.Load)
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
	sum := tuneSummary{Data: o.Data, Folds: max(1, cfg.Folds)}
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
