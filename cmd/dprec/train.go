package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/dprec/dprec"
	"github.com/dprec/dprec/completion"
	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/itemitem"
	"github.com/dprec/dprec/models"
	"github.com/dprec/dprec/perturb"
	"github.com/schollz/progressbar/v3"
	"github.com/urfave/cli/v2"
)

// trainCmd builds the "dprec train" command (listed in commands.go).
func trainCmd() *cli.Command {
	const cat = "Model"
	flags := []cli.Flag{
		&cli.StringFlag{Name: "data", Usage: "training rating log (default: the embedded synthetic log)"},
		&cli.StringFlag{Name: "model", Category: cat, Value: "cp", Usage: "model kind: cp or tucker"},
		&cli.IntFlag{Name: "rank", Category: cat, Value: 10, Usage: "rank R (CP; Tucker uses R in every mode unless --ranks)"},
		&cli.StringFlag{Name: "ranks", Category: cat, Usage: "Tucker ranks P,Q[,T] (one per mode)"},
		&cli.BoolFlag{Name: "bias", Category: cat, Value: true, Usage: "global mean and per-user/item/time biases"},
		&cli.BoolFlag{Name: "no-bias", Category: cat, Usage: "no bias terms (same as --bias=false)"},
		&cli.StringFlag{Name: "clamp", Category: cat, Value: "data", Usage: `prediction range "lo,hi", "data" (the training ratings' min and max; for private models the public --rating-min/--rating-max) or "none"`},
		&cli.StringFlag{Name: "solver", Category: "Training", Value: "default", Usage: "optimiser: gibbs (Bayesian CP/Tucker sampler), als (alternating least squares) or sgd; default: gibbs (als for a Tucker core above " + strconv.Itoa(completion.MaxGibbsCore) + " entries), also for --privacy input (the solver is post-processing of the noisy ratings); sgd for the other --privacy modes"},
		&cli.IntFlag{Name: "epochs", Category: "Training", Usage: fmt.Sprintf("maximum number of epochs (SGD) or sweeps (ALS, Gibbs) (default: %d SGD, %d ALS, %d Gibbs)", completion.DefaultEpochs, completion.DefaultALSSweeps, completion.DefaultGibbsSweeps)},
		&cli.Float64Flag{Name: "lr", Category: "Training", Value: completion.DefaultLearningRate, Usage: "initial learning rate (SGD)"},
		&cli.Float64Flag{Name: "decay", Category: "Training", Value: completion.DefaultDecay, Usage: "learning-rate decay (SGD): lr_t = lr / (1 + decay t); negative for a constant rate"},
		&cli.Float64Flag{Name: "reg", Category: "Training", Usage: fmt.Sprintf("factor penalty; SGD: per update (default %g), ALS: per observation of the row (default %g); negative for none", completion.DefaultReg, completion.DefaultALSReg)},
		&cli.Float64Flag{Name: "reg-core", Category: "Training", Usage: fmt.Sprintf("Tucker core penalty; SGD: per update (default %g), ALS: per observation, toward the CP core (default %g; Gibbs: prior precision, times the noise precision); negative for none (Gibbs: a precision learned under a Gamma hyperprior)", completion.DefaultRegCore, float64(completion.DefaultALSRegCore))},
		&cli.Float64Flag{Name: "reg-bias", Category: "Training", Usage: fmt.Sprintf("bias penalty (SGD default: --reg; ALS default %g pseudo-ratings)", float64(completion.DefaultALSRegBias))},
		&cli.Float64Flag{Name: "reg-time", Category: "Training", Usage: fmt.Sprintf("ALS penalty (Gibbs: prior precision, times the noise precision) per observation on each time row's distance from all-ones, i.e. from matrix factorisation (default %g)", float64(completion.DefaultALSRegTime))},
		&cli.StringFlag{Name: "time-biases", Category: "Training", Value: "default", Usage: "ALS and Gibbs user x time-bucket and item x period biases: on or off (default: on for logs with a time column)"},
		&cli.IntFlag{Name: "item-periods", Category: "Training", Usage: fmt.Sprintf("number of item-bias periods over the time range (default %d)", completion.DefaultItemPeriods)},
		&cli.Float64Flag{Name: "reg-pair", Category: "Training", Usage: fmt.Sprintf("penalty of each user x time and item x period bias, in pseudo-ratings (default %g)", float64(completion.DefaultALSRegPair))},
		&cli.IntFlag{Name: "burn-in", Category: "Training", Usage: "Gibbs sweeps discarded before the parameters are averaged (default: a quarter of --epochs)"},
		&cli.BoolFlag{Name: "refit", Category: "Training", Value: true, Usage: "after early stopping picks the number of epochs on the validation split, retrain on all ratings for that many (non-private runs)"},
		&cli.Float64Flag{Name: "init-scale", Category: "Training", Value: completion.DefaultInitScale, Usage: "standard deviation of the initial factors"},
		&cli.Float64Flag{Name: "validation", Category: "Training", Value: 0.1, Usage: "fraction of the ratings held out for validation RMSE and early stopping (0: none)"},
		&cli.IntFlag{Name: "patience", Category: "Training", Usage: fmt.Sprintf("stop after this many epochs without validation improvement (default %d SGD, %d ALS; Gibbs runs every sweep; negative: never)", completion.DefaultPatience, completion.DefaultALSPatience)},
		&cli.Uint64Flag{Name: "seed", Category: "Training", Usage: "seed the split, initialisation and shuffling (and any privacy noise: then NOT private)"},
		&cli.StringFlag{Name: "out", Aliases: []string{"o"}, Category: "Output", Value: "model.arrow", Usage: "model file to write"},
		forceFlag("overwrite --out", "Output"),
		&cli.BoolFlag{Name: "json", Category: "Output", Usage: "print the summary as JSON"},
	}
	flags = append(flags, dataLoadFlags()...)
	flags = append(flags, trainPrivacyFlags()...)
	flags = append(flags, trainObjectiveFlags()...)
	flags = append(flags, trainEASEFlags()...)
	return &cli.Command{
		Name:  "train",
		Usage: "train a CP or Tucker completion model (Gibbs sampler, ALS or SGD) and save it",
		Description: `Without --data, trains on the embedded synthetic rating log. A fraction
(--validation) of the ratings is held out at random to report validation
RMSE and stop early. --threads sets both parsing and training workers;
--threads N --seed S gives bit-identical models run to run.

A log with no rating column (--columns without rating) or whose ratings all
have one value has no rating to fit: without --objective, train fits the
implicit objective to it (repeated events add up) and says so on stderr;
--objective rating fits the ratings (a one-value log then predicts that
value), and so does a run given a flag of the rating objective only
(--privacy, --solver, --epochs, ...).

Private runs (--privacy): the report's epsilon and delta cover this run
only. Choosing its flags (--epsilon split, --rank, --epochs, --lr, --reg,
--clip, the mode...) by looking at the private log, at scores computed on
it (dprec tune, a non-private run, a validation or test RMSE) or at an
earlier private run's results is a release of that log that no report
accounts for: choose them from public data or from another log. A run
that diverges has spent its budget all the same; a retry adds its own.`,
		Flags:  flags,
		Action: runWithOptions(trainOptionsOf, trainRun),
	}
}

// trainSummary is what train prints at the end.
type trainSummary struct {
	Out          string                   `json:"out"`
	Data         string                   `json:"data"`
	Kind         decomposition.Kind       `json:"kind"`
	Dims         []int                    `json:"dims"`
	Ranks        []int                    `json:"ranks"`
	TrainRatings int                      `json:"train_ratings"`
	ValidRatings int                      `json:"validation_ratings"`
	Epochs       int                      `json:"epochs"`
	BestEpoch    int                      `json:"best_epoch"`
	EarlyStopped bool                     `json:"early_stopped"`
	TrainRMSE    float64                  `json:"train_rmse"`
	ValidRMSE    *float64                 `json:"validation_rmse,omitempty"`
	Seconds      float64                  `json:"seconds"`
	History      []completion.EpochRecord `json:"history"`
	Privacy      *perturb.Report          `json:"privacy"`
	Warnings     []string                 `json:"warnings,omitempty"`
	Solver       string                   `json:"solver"`
	// Refit says the saved model was retrained on all ratings (training
	// and validation) for BestEpoch epochs after early stopping.
	Refit bool `json:"refit"`
	// TrainRatingsNote labels TrainRatings under the user unit: the exact
	// number of bounded ratings is for the operator only (the model file
	// and the report withhold it; only a noisy count is released).
	TrainRatingsNote string `json:"train_ratings_note,omitempty"`
}

// trainOptions are the flags of "dprec train", parsed once: the run
// function sees only these.
type trainOptions struct {
	Data   string // --data ("": the embedded synthetic log)
	Out    string // --out
	Force  bool   // --force
	JSON   bool   // --json
	Global globalOptions
	// Fit is the library call's options (load, objective, model, privacy).
	Fit dprec.Options
	// Job is the size guard's view of the flags, MaxMemory its limit.
	Job       trainJobFlags
	MaxMemory float64
	// Notes are said on stderr before loading (unless --quiet).
	Notes []string
	// DefaultScale: a private run whose rating scale was not declared
	// (neither --rating-min nor --rating-max): training ratings outside
	// the documented default scale are refused, not clamped.
	DefaultScale bool
}

// trainOptionsOf parses and checks train's flags (usage errors exit 2).
func trainOptionsOf(c *cli.Context) (*trainOptions, error) {
	o := &trainOptions{Data: c.String("data"), Out: c.String("out"), Force: c.Bool("force"), JSON: c.Bool("json"),
		Global: globalOptionsOf(c), Job: trainJobFlagsOf(c), MaxMemory: sizeMemLimit(c)}
	if strings.EqualFold(c.String("objective"), models.ObjectiveItemItem) {
		return trainEASEOptionsOf(c, o)
	}
	f := &o.Fit
	f.Kind = decomposition.Kind(strings.ToLower(c.String("model")))
	if f.Kind != decomposition.CP && f.Kind != decomposition.Tucker {
		return nil, cli.Exit(fmt.Sprintf("--model %q: want cp or tucker", c.String("model")), exitUsage)
	}
	if c.IsSet("objective") {
		switch obj := dprec.Objective(strings.ToLower(c.String("objective"))); obj {
		case dprec.ObjectiveRating, dprec.ObjectiveImplicit:
			f.Objective = obj
		default:
			return nil, cli.Exit(fmt.Sprintf("--objective %q: want rating, implicit or ease", c.String("objective")), exitUsage)
		}
	}
	f.RatingOnly = trainRatingOnlyFlag(c)
	var err error
	if f.Load, err = dataLoadOptions(c); err != nil {
		return nil, err
	}
	if !c.IsSet("duplicates") {
		// The library chooses: repeated events add up for the implicit
		// objective, the last one counts for the rating objective.
		f.Load.Builder.Duplicates = ""
	}
	if c.IsSet("rank") {
		if f.Rank = c.Int("rank"); f.Rank <= 0 {
			return nil, cli.Exit(fmt.Sprintf("--rank %d: must be positive", f.Rank), exitUsage)
		}
	}
	if s := c.String("ranks"); s != "" {
		if f.Kind == decomposition.CP {
			return nil, cli.Exit("--ranks is for Tucker models; CP takes --rank", exitUsage)
		}
		for _, p := range strings.Split(s, ",") {
			v, err := strconv.Atoi(strings.TrimSpace(p))
			if err != nil || v <= 0 {
				return nil, cli.Exit(fmt.Sprintf("--ranks %q: %q is not a positive integer", s, p), exitUsage)
			}
			f.Ranks = append(f.Ranks, v)
		}
	}
	f.NoBias = !c.Bool("bias") || c.Bool("no-bias")
	f.NoRefit = !c.Bool("refit")
	if f.Clamp, err = trainClampOf(c.String("clamp")); err != nil {
		return nil, err
	}
	f.Seed, f.Seeded = seedOf(c)
	if f.Settings, err = trainSettingsOf(c); err != nil {
		return nil, err
	}
	if f.Kind == decomposition.Tucker && f.Settings.Solver == completion.SolverGibbs {
		// The core size needs the log's order when --rank is given; the
		// library refuses it then, and this names the flags.
		size, order := 1, len(f.Ranks)
		ranks := f.Ranks
		if order == 0 {
			ranks = []int{max(1, c.Int("rank")), max(1, c.Int("rank"))}
			if c.String("time-unit") != "none" {
				ranks = append(ranks, ranks[0])
			}
		}
		for _, r := range ranks {
			size *= r
		}
		if size > completion.MaxGibbsCore {
			return nil, cli.Exit(fmt.Sprintf("--solver gibbs draws a Tucker core of at most %d entries, and ranks %v make %d: lower --rank or --ranks, or use --solver als",
				completion.MaxGibbsCore, ranks, size), exitUsage)
		}
	}
	if f.Privacy, o.Notes, err = trainPrivacyOf(c); err != nil {
		return nil, err
	}
	if f.Privacy != nil && (f.Objective == dprec.ObjectiveImplicit || f.Objective == dprec.ObjectiveAuto && trainNoRatingColumn(c) && trainRatingOnlyFlag(c) == "") {
		// The implicit objective's private mode uses no rating scale and
		// holds nothing out: the rating notes do not apply.
		o.Notes = nil
	} else if f.Privacy != nil {
		o.DefaultScale = !c.IsSet("rating-min") && !c.IsSet("rating-max")
		if f.Clamp == (dprec.Clamp{}) && !(f.Privacy.RatingMin < f.Privacy.RatingMax) {
			return nil, cli.Exit(`a private model needs a public rating scale: give --clamp lo,hi or --clamp none`, exitUsage)
		}
		if c.IsSet("validation") && c.Float64("validation") != 0 {
			return nil, cli.Exit(fmt.Sprintf("--privacy %s needs --validation 0 (the default with --privacy): held-out ratings would steer early stopping and be reported in the model file without noise", f.Privacy.Mode), exitUsage)
		}
		if !c.IsSet("validation") {
			o.Notes = append(o.Notes, fmt.Sprintf("note: --privacy %s implies --validation 0 (no held-out ratings: their error would be released without noise)", f.Privacy.Mode))
		}
	} else {
		v := c.Float64("validation")
		if !(v >= 0 && v < 1) {
			return nil, cli.Exit(fmt.Sprintf("--validation %g: want a fraction in [0, 1)", v), exitUsage)
		}
		if f.Validation = v; v == 0 {
			f.Validation = -1 // none (the library's zero is its default)
		}
	}
	f.NoSelect = !c.Bool("select")
	if f.Objective == dprec.ObjectiveImplicit || f.Objective == dprec.ObjectiveAuto && (c.IsSet("iterations") || trainNoRatingColumn(c) && f.RatingOnly == "") {
		if f.Implicit, err = trainImplicitSettings(c, f.Objective == dprec.ObjectiveImplicit); err != nil {
			return nil, err
		}
	} else if f.Implicit, err = trainImplicitSettings(c, false); err != nil {
		return nil, err
	}
	return o, nil
}

// trainSettingsOf reads the rating objective's settings.
func trainSettingsOf(c *cli.Context) (completion.Settings, error) {
	solver, err := completion.ParseSolver(strings.ToLower(c.String("solver")))
	if err != nil {
		return completion.Settings{}, cli.Exit("--solver: "+err.Error(), exitUsage)
	}
	var tb completion.Toggle
	if err := tb.UnmarshalText([]byte(strings.ToLower(c.String("time-biases")))); err != nil {
		return completion.Settings{}, cli.Exit("--time-biases: "+err.Error(), exitUsage)
	}
	if c.Int("epochs") < 0 {
		return completion.Settings{}, cli.Exit(fmt.Sprintf("--epochs %d: must be positive", c.Int("epochs")), exitUsage)
	}
	return completion.Settings{
		Solver:       solver,
		RegTime:      c.Float64("reg-time"),
		TimeBiases:   tb,
		ItemPeriods:  c.Int("item-periods"),
		RegPair:      c.Float64("reg-pair"),
		BurnIn:       c.Int("burn-in"),
		Epochs:       c.Int("epochs"),
		Threads:      c.Int("threads"),
		LearningRate: c.Float64("lr"),
		Decay:        c.Float64("decay"),
		Reg:          c.Float64("reg"),
		RegCore:      c.Float64("reg-core"),
		RegBias:      c.Float64("reg-bias"),
		InitScale:    c.Float64("init-scale"),
		Patience:     c.Int("patience"),
	}, nil
}

// trainClampOf parses --clamp: "data" (or empty), "none" or "lo,hi".
func trainClampOf(s string) (dprec.Clamp, error) {
	switch s = strings.TrimSpace(s); s {
	case "", "data":
		return dprec.Clamp{}, nil
	case "none":
		return dprec.Clamp{None: true}, nil
	}
	lo, hi, ok := strings.Cut(s, ",")
	a, err1 := strconv.ParseFloat(strings.TrimSpace(lo), 64)
	b, err2 := strconv.ParseFloat(strings.TrimSpace(hi), 64)
	if !ok || err1 != nil || err2 != nil || !(a < b) || math.IsInf(a, 0) || math.IsInf(b, 0) {
		return dprec.Clamp{}, cli.Exit(fmt.Sprintf(`--clamp %q: want "lo,hi" with lo < hi, "data" or "none"`, s), exitUsage)
	}
	return dprec.Clamp{Lo: a, Hi: b}, nil
}

// trainRun trains with the library's one entry (dprec.Fit, or dprec.Train
// on the embedded synthetic log), saves the model and prints the summary.
func trainRun(o *trainOptions, s *iostreams) error {
	start := time.Now()
	if !o.Force {
		// Fail before training rather than after.
		if err := trainCheckOut(o.Out); err != nil {
			return err
		}
	}
	say := func(msg string) {
		if !o.Global.Quiet {
			fmt.Fprintln(s.Err, msg)
		}
	}
	for _, n := range o.Notes {
		say(n)
	}
	f := o.Fit
	f.Software = trainVersion()
	f.Check = func(p dprec.Plan) error {
		if p.Objective == dprec.ObjectiveEASE {
			return nil // itemitem refuses a catalogue too large for its closed form
		}
		if err := trainCheckScale(o, p); err != nil {
			return err
		}
		jf := o.Job
		jf.Implicit = p.Objective == dprec.ObjectiveImplicit
		note, err := trainJob(jf, p.Dims, p.NNZ, p.Ranks).check(o.MaxMemory)
		if err != nil {
			return cli.Exit(err.Error(), exitUsage)
		}
		if note != "" {
			say(note)
		}
		return nil
	}
	validating := f.Validation >= 0 && f.Privacy == nil
	var bar *progressbar.ProgressBar
	f.Events = dprec.Events{
		Loaded: func(rep *data.LoadReport) {
			if !o.Global.Quiet {
				dataPrintReport(s.Err, rep)
			}
		},
		Note:  say,
		Start: func(n int, what string) { bar = s.bar(o.Global, int64(n), what) },
		Epoch: func(r completion.EpochRecord) {
			desc := fmt.Sprintf("epoch %d loss %.5g train RMSE %.4f", r.Epoch, r.TrainLoss, r.TrainRMSE)
			if validating {
				desc += fmt.Sprintf(" valid RMSE %.4f", r.ValidRMSE)
			}
			bar.Describe(desc)
			bar.Add(1)
		},
		Sweep: func(r completion.ImplicitRecord) {
			bar.Describe(fmt.Sprintf("sweep %d loss %.6g", r.Iteration, r.Loss))
			bar.Add(1)
		},
		Done: func() { bar.Finish() },
	}
	var res *dprec.Result
	var err error
	src := o.Data
	if src != "" {
		loadBar := s.bar(o.Global, -1, "loading "+src)
		f.Load.Progress = func(done, total int64) {
			if total > 0 && loadBar.GetMax64() != total {
				loadBar.ChangeMax64(total)
			}
			_ = loadBar.Set64(done)
		}
		loaded := f.Events.Loaded
		f.Events.Loaded = func(rep *data.LoadReport) { _ = loadBar.Finish(); loaded(rep) }
		res, err = dprec.Fit(context.Background(), src, &f)
		_ = loadBar.Finish()
	} else {
		src = "embedded synthetic log"
		st, _, lerr := data.DefaultSynth()
		if lerr != nil {
			return fmt.Errorf("embedded synthetic log: %w", lerr)
		}
		res, err = dprec.Train(context.Background(), st, src, &f)
	}
	if err != nil {
		return trainError(err)
	}
	if err := models.Save(o.Out, res.File(), o.Force); err != nil {
		return err
	}
	if res.Objective == dprec.ObjectiveEASE {
		return trainEASEPrint(s.Out, o.JSON, trainEASESummarize(o.Out, src, res, time.Since(start)))
	}
	if res.Objective == dprec.ObjectiveImplicit {
		return trainImplicitPrint(s.Out, o.JSON, trainImplicitSummarize(o.Out, src, res, time.Since(start)))
	}
	sum := trainSummarize(o.Out, src, res, time.Since(start))
	if res.UserLevel {
		sum.TrainRatingsNote = trainUserCountNote
	}
	if prov, _ := sum.Privacy.Provenance(); res.Seeded && sum.Privacy.Private() && prov != perturb.ProvenanceSeeded {
		sum.Warnings = append(sum.Warnings, "--seed was given: the run is reproducible and NOT private")
	}
	return trainPrint(s.Out, o.JSON, &sum)
}

// trainCheckScale refuses a private run on the documented default rating
// scale when the training ratings leave it: clamping a log on another
// scale (say [-10, 10]) to [0.5, 5] would train on the wrong data
// without a word. The check is the data owner's, before anything is
// released; a declared scale is clamped to as documented.
func trainCheckScale(o *trainOptions, p dprec.Plan) error {
	pr := o.Fit.Privacy
	if !o.DefaultScale || pr == nil || p.Objective != dprec.ObjectiveRating || p.NNZ == 0 {
		return nil
	}
	if p.Low >= pr.RatingMin && p.High <= pr.RatingMax {
		return nil
	}
	src := o.Data
	if src == "" {
		src = "embedded synthetic log"
	}
	return cli.Exit(fmt.Sprintf("%s: training ratings run from %g to %g, outside the default public rating scale [%g, %g] that private training clamps to; declare the data source's scale with --rating-min and --rating-max (a fact about the source, such as -10 and 10 for a joke log, never measured on the data)",
		src, p.Low, p.High, pr.RatingMin, pr.RatingMax), exitUsage)
}

// trainError turns a library error into the command's: invalid options
// are usage errors; a diverged run says what to try.
func trainError(err error) error {
	var oe *dprec.OptionError
	var tl *itemitem.TooLargeError
	if errors.As(err, &oe) || errors.As(err, &tl) {
		// The command prints its own "dprec: " before the message.
		return cli.Exit(strings.TrimPrefix(err.Error(), "dprec: "), exitUsage)
	}
	var div *completion.ErrDiverged
	if errors.As(err, &div) {
		if div.Privacy.Private() {
			// The error already says that the budget is spent.
			return fmt.Errorf("%w (no model saved; a retry with a smaller --lr or a larger --reg spends its own --epsilon and --delta on top of this run's)", err)
		}
		return fmt.Errorf("%w (no model saved; try a smaller --lr or a larger --reg)", err)
	}
	return err
}

// trainSummarize builds what train prints from the library's result.
func trainSummarize(out, src string, res *dprec.Result, took time.Duration) trainSummary {
	r, m := res.Rating, res.File().Model
	sum := trainSummary{Out: out, Data: src, Kind: m.Kind, Dims: m.Dims, Ranks: m.Ranks,
		TrainRatings: res.TrainRatings, ValidRatings: res.ValidRatings, Epochs: len(r.History), BestEpoch: r.BestEpoch,
		EarlyStopped: r.EarlyStopped, Seconds: took.Seconds(), History: r.History,
		Privacy: r.Privacy, Warnings: append(inspectPrivacyWarnings(r.Privacy), res.Warnings...),
		Solver: r.Settings.Solver.String(), Refit: res.Refit}
	if n := len(r.History); n > 0 && r.BestEpoch > 0 {
		best := r.History[r.BestEpoch-1]
		sum.TrainRMSE = best.TrainRMSE
		if res.ValidRatings > 0 {
			v := best.ValidRMSE
			sum.ValidRMSE = &v
		}
	}
	return sum
}

func trainPrint(w io.Writer, asJSON bool, s *trainSummary) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(s)
	}
	fmt.Fprintf(w, "trained %s model, ranks %v, on %s: dims %v, %d training ratings", s.Kind, s.Ranks, s.Data, s.Dims, s.TrainRatings)
	if s.TrainRatingsNote != "" {
		fmt.Fprintf(w, " (%s)", s.TrainRatingsNote)
	}
	if s.ValidRatings > 0 {
		fmt.Fprintf(w, ", %d held out", s.ValidRatings)
	}
	fmt.Fprintln(w)
	stop := ""
	if s.EarlyStopped {
		stop = " (early stop)"
	}
	if s.Epochs == 0 && s.Privacy != nil && (s.Privacy.Mode == "bias" || s.Privacy.Mode == "als") {
		fmt.Fprintf(w, "solver          %s mode: noisy statistics, %.3gs\n", s.Privacy.Mode, s.Seconds)
	} else {
		fmt.Fprintf(w, "solver          %s\n", s.Solver)
		fmt.Fprintf(w, "epochs          %d%s, best epoch %d, %.3gs\n", s.Epochs, stop, s.BestEpoch, s.Seconds)
	}
	if s.Refit {
		fmt.Fprintf(w, "refit           on all %d ratings for %d epochs\n", s.TrainRatings+s.ValidRatings, s.BestEpoch)
	}
	if s.BestEpoch > 0 {
		fmt.Fprintf(w, "train RMSE      %.4f%s\n", s.TrainRMSE, trainRMSELabel(s.Privacy))
	}
	if s.ValidRMSE != nil {
		fmt.Fprintf(w, "validation RMSE %.4f\n", *s.ValidRMSE)
	}
	inspectPrivacyText(w, s.Privacy)
	for _, x := range s.Warnings {
		fmt.Fprintln(w, "WARNING:", x)
	}
	fmt.Fprintf(w, "saved           %s\n", s.Out)
	return nil
}

// trainCheckOut refuses an existing output file before training starts.
func trainCheckOut(out string) error {
	if _, err := os.Lstat(out); err == nil {
		return fmt.Errorf("%s: %w", out, data.ErrExists)
	}
	return nil
}

// trainVersion is the program version recorded in model files.
func trainVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return "dprec " + bi.Main.Version
	}
	return "dprec (devel)"
}

// trainRMSELabel says, for a private run, what the printed train RMSE is
// measured against: the noisy values (input mode: post-processing, and far
// above a test RMSE since it includes the noise) or the raw ratings (the
// other modes: for the operator only, never saved).
func trainRMSELabel(r *perturb.Report) string {
	switch {
	case r == nil || !r.Private():
		return ""
	case r.Mode == "input":
		return " (against the noisy values trained on, noise included)"
	}
	return " (raw ratings: for you only, not in the model file)"
}
