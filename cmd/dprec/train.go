package main

import (
	crand "crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dprec/dprec/completion"
	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/models"
	"github.com/dprec/dprec/perturb"
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
		&cli.StringFlag{Name: "solver", Category: "Training", Value: "default", Usage: "optimiser: gibbs (Bayesian CP/Tucker sampler), als (alternating least squares) or sgd; default: gibbs (als for a Tucker core above " + strconv.Itoa(completion.MaxGibbsCore) + " entries), sgd for the --privacy modes"},
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
		Action: trainRun,
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

// trainFingerprintSeen hashes the data fingerprint of train and, when
// withSeen, gathers the seen items of st (every rating, validation part
// included) for m's modes at the same time: two serial passes over the
// store, on two cores.
func trainFingerprintSeen(st, train *data.Store, m *decomposition.Model, withSeen bool) (*models.DataInfo, *models.Exclusions, error) {
	var seen *models.Exclusions
	var seenErr error
	seenDone := make(chan struct{})
	go func() {
		defer close(seenDone)
		if withSeen {
			seen, seenErr = models.SeenFromStore(st, m.Dims[0], m.Dims[1])
		}
	}()
	info := models.Fingerprint(train)
	<-seenDone
	return info, seen, seenErr
}

// trainRefitClamp refits the model on every rating of st for the epochs
// early stopping chose (res) and clamps it with the new fingerprint.
func trainRefitClamp(c *cli.Context, st *data.Store, res *completion.Result, rng rand.Source) (*decomposition.Model, *models.DataInfo, error) {
	m, err := trainRefit(st, res, rng)
	if err != nil {
		return nil, nil, fmt.Errorf("refit on all ratings: %w", err)
	}
	info := models.Fingerprint(st)
	if err := trainClamp(c, m, info); err != nil {
		return nil, nil, err
	}
	return m, info, nil
}

func trainRun(c *cli.Context) error {
	start := time.Now()
	out := c.String("out")
	if !c.Bool("force") {
		// Fail before training rather than after.
		if err := trainCheckOut(out); err != nil {
			return err
		}
	}
	tf, err := trainParseFlags(c)
	if err != nil {
		return err
	}
	st, src, merged, err := trainLoad(c)
	if err != nil {
		return err
	}
	obj, objNote := trainAutoImplicit(c, st, src)
	if obj == models.ObjectiveImplicit && !c.IsSet("objective") && !c.IsSet("duplicates") && merged > 0 {
		// As --objective implicit: repeated events add up as confidence.
		_ = c.Set("duplicates", string(data.DupSum))
		st = nil
		if st, src, _, err = trainLoad(c); err != nil {
			return err
		}
	}
	if objNote != "" && !quiet(c) {
		fmt.Fprintln(streamsOf(c).Err, objNote)
	}
	ranks, err := trainRanks(c, tf.kind, st.Order())
	if err := errors.Join(err, checkGibbsCore(tf, ranks)); err != nil {
		return cli.Exit(err.Error(), exitUsage)
	}
	if err := guardTrainData(c, st, ranks); err != nil { // sizeguard.go
		return err
	}
	seed, seeded, err := trainSeed(c)
	if err != nil {
		return err
	}
	rng := rand.NewPCG(seed, 0x9e3779b97f4a7c15) // second PCG word: any fixed constant
	switch obj {
	case models.ObjectiveImplicit:
		return trainImplicitRun(c, st, src, rng, start, objNote)
	case models.ObjectiveRating, "":
	default:
		return cli.Exit(fmt.Sprintf("--objective %q: want rating or implicit", obj), exitUsage)
	}
	train, valid, err := trainHoldOut(c, st, rng)
	if err != nil {
		return err
	}
	// Privacy, model, settings.
	ul, priv, err := trainPrivacyPlan(c, train)
	if err != nil {
		return err
	}
	dims := train.Dims
	if ul != nil {
		train, dims = ul.store, ul.dims()
	}
	bias := c.Bool("bias") && !c.Bool("no-bias")
	m, err := decomposition.NewModel(tf.kind, dims, ranks, bias)
	if err != nil {
		return err
	}
	info, seen, err := trainFingerprintSeen(st, train, m, ul == nil && !tf.private)
	if err != nil {
		return err
	}
	if err := trainClamp(c, m, info); err != nil {
		return err
	}
	s := trainSettings(c, tf, priv)
	var warnings []string
	if w := timeBucketWarning(train); w != "" {
		warnings = append(warnings, w)
	}
	res, err := trainWithBar(c, train, valid, m, s, rng)
	if err != nil {
		return err
	}
	refitted := valid != nil && c.Bool("refit") && !tf.private && res.BestEpoch > 0
	final := train
	if refitted {
		// Early stopping chose the number of epochs on the held-out part;
		// the final model is trained on every rating for that many.
		if m, info, err = trainRefitClamp(c, st, res, rng); err != nil {
			return err
		}
		final = st
	}
	if err := trainSave(c, out, final, m, res, info, ul, seen); err != nil {
		return err
	}
	sum := trainSummarize(out, src, tf.kind, m, train, valid, res, time.Since(start), refitted)
	if ul != nil {
		sum.TrainRatingsNote = trainUserCountNote
	}
	sum.Warnings = append(warnings, sum.Warnings...)
	if prov, _ := res.Privacy.Provenance(); seeded && res.Privacy.Private() && prov != perturb.ProvenanceSeeded {
		sum.Warnings = append(sum.Warnings, "--seed was given: the run is reproducible and NOT private")
	}
	if w := trainDeltaWarning(res.Privacy, train.NNZ()); w != "" {
		sum.Warnings = append(sum.Warnings, w)
	}
	return trainPrint(c, &sum)
}

// trainDeltaWarning warns when an entry-level guarantee's delta is not
// below 1/n for n training ratings: (epsilon, delta)-DP then allows a
// mechanism that publishes a random rating in the clear, so delta should be
// well below 1/n (the advice of Google's DP library and of Dwork and Roth).
// At user level the number of users is not public and nothing is said.
func trainDeltaWarning(r *perturb.Report, n int) string {
	if r == nil || !r.Private() || r.Unit != "entry" || r.Delta == 0 || n == 0 || r.Delta < 1/float64(n) {
		return ""
	}
	return fmt.Sprintf("delta %g is not below 1/n = %.3g (n = %d training ratings): a guarantee this weak allows publishing a rating in the clear with that probability; use a delta well below 1/n (e.g. 1e-6)", r.Delta, 1/float64(n), n)
}

// trainSummary builds what train prints from the result.
func trainSummarize(out, src string, kind decomposition.Kind, m *decomposition.Model, train, valid *data.Store, res *completion.Result, took time.Duration, refitted bool) trainSummary {
	sum := trainSummary{Out: out, Data: src, Kind: kind, Dims: m.Dims, Ranks: m.Ranks,
		TrainRatings: train.NNZ(), Epochs: len(res.History), BestEpoch: res.BestEpoch,
		EarlyStopped: res.EarlyStopped, Seconds: took.Seconds(), History: res.History,
		Privacy: res.Privacy, Warnings: inspectPrivacyWarnings(res.Privacy),
		Solver: res.Settings.Solver.String(), Refit: refitted}
	if valid != nil {
		sum.ValidRatings = valid.NNZ()
	}
	if n := len(res.History); n > 0 && res.BestEpoch > 0 {
		best := res.History[res.BestEpoch-1]
		sum.TrainRMSE = best.TrainRMSE
		if valid != nil {
			v := best.ValidRMSE
			sum.ValidRMSE = &v
		}
	}
	return sum
}

// trainHoldOut splits --validation of the ratings off at random.
func trainHoldOut(c *cli.Context, st *data.Store, rng rand.Source) (train, valid *data.Store, err error) {
	frac, err := trainValidationFraction(c)
	if err != nil {
		return nil, nil, err
	}
	if !(frac >= 0 && frac < 1) {
		return nil, nil, cli.Exit(fmt.Sprintf("--validation %g: want a fraction in [0, 1)", frac), exitUsage)
	}
	train, valid = trainSplit(st, frac, rng)
	return train, valid, nil
}

// trainFlags are train's parsed enum flags.
type trainFlags struct {
	kind       decomposition.Kind
	solver     completion.Solver
	timeBiases completion.Toggle
	private    bool // a --privacy mode other than none
}

// trainParseFlags parses and checks the flags train can check before
// reading any data (usage errors exit 2).
func trainParseFlags(c *cli.Context) (trainFlags, error) {
	var tf trainFlags
	tf.kind = decomposition.Kind(strings.ToLower(c.String("model")))
	if tf.kind != decomposition.CP && tf.kind != decomposition.Tucker {
		return tf, cli.Exit(fmt.Sprintf("--model %q: want cp or tucker", c.String("model")), exitUsage)
	}
	if !c.IsSet("duplicates") && (c.String("objective") == models.ObjectiveImplicit ||
		!c.IsSet("objective") && trainNoRatingColumn(c) && trainRatingOnlyFlag(c) == "") {
		// Repeated events add up as confidence (a log without a rating
		// column trains the implicit objective: trainAutoImplicit).
		_ = c.Set("duplicates", string(data.DupSum))
	}
	var err error
	if tf.solver, err = completion.ParseSolver(strings.ToLower(c.String("solver"))); err != nil {
		return tf, cli.Exit("--solver: "+err.Error(), exitUsage)
	}
	if err := tf.timeBiases.UnmarshalText([]byte(strings.ToLower(c.String("time-biases")))); err != nil {
		return tf, cli.Exit("--time-biases: "+err.Error(), exitUsage)
	}
	tf.private = c.String("privacy") != "" && c.String("privacy") != "none"
	if c.Int("epochs") < 0 {
		return tf, cli.Exit(fmt.Sprintf("--epochs %d: must be positive", c.Int("epochs")), exitUsage)
	}
	return tf, nil
}

// trainLoad loads --data, or the embedded synthetic log without it, and
// returns the store, a name for it and the number of rows merged into
// repeated cells.
func trainLoad(c *cli.Context) (*data.Store, string, int, error) {
	if path := c.String("data"); path != "" {
		s, rep, err := dataLoad(c, path)
		if err != nil {
			return nil, "", 0, err
		}
		return s, path, rep.Duplicates.Dropped, nil
	}
	s, _, err := data.DefaultSynth()
	if err != nil {
		return nil, "", 0, fmt.Errorf("embedded synthetic log: %w", err)
	}
	return s, "embedded synthetic log", 0, nil
}

// trainSeed returns --seed, or a seed from crypto/rand without it.
func trainSeed(c *cli.Context) (seed uint64, seeded bool, err error) {
	seed, seeded = seedOf(c)
	if !seeded {
		var b [8]byte
		if _, err := crand.Read(b[:]); err != nil {
			return 0, false, err
		}
		seed = binary.LittleEndian.Uint64(b[:])
	}
	return seed, seeded, nil
}

// trainSettings builds the completion settings from the flags.
func trainSettings(c *cli.Context, tf trainFlags, priv completion.Privacy) *completion.Settings {
	return &completion.Settings{
		Solver:       tf.solver,
		RegTime:      c.Float64("reg-time"),
		TimeBiases:   tf.timeBiases,
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
		Privacy:      priv,
	}
}

// trainWithBar trains with a progress bar showing each epoch's loss and
// RMSE.
func trainWithBar(c *cli.Context, train, valid *data.Store, m *decomposition.Model, s *completion.Settings, rng rand.Source) (*completion.Result, error) {
	bar := newBar(c, int64(s.Resolved().Epochs), "training")
	res, err := trainFit(train, valid, m, s, rng, func(r completion.EpochRecord) {
		desc := fmt.Sprintf("epoch %d loss %.5g train RMSE %.4f", r.Epoch, r.TrainLoss, r.TrainRMSE)
		if valid != nil {
			desc += fmt.Sprintf(" valid RMSE %.4f", r.ValidRMSE)
		}
		bar.Describe(desc)
		bar.Add(1)
	})
	bar.Finish()
	if err != nil {
		var div *completion.ErrDiverged
		if errors.As(err, &div) {
			if div.Privacy.Private() {
				// The error already says that the budget is spent.
				return nil, fmt.Errorf("%w (no model saved; a retry with a smaller --lr or a larger --reg spends its own --epsilon and --delta on top of this run's)", err)
			}
			return nil, fmt.Errorf("%w (no model saved; try a smaller --lr or a larger --reg)", err)
		}
		return nil, err
	}
	return res, nil
}

// trainSave saves the model trained on final (the training part, or every
// rating after a refit) to out, with its settings, released history, data
// fingerprint and, for a non-private model, seen (the seen items of every
// rating).
func trainSave(c *cli.Context, out string, final *data.Store, m *decomposition.Model, res *completion.Result, info *models.DataInfo, ul *userLevel, seen *models.Exclusions) error {
	settingsJSON, err := trainSettingsJSON(res.Settings)
	if res.Privacy != nil && res.Privacy.Billboard {
		// The billboard modes (bias, als, input's bias-only fallback)
		// train no SGD or ALS loop with these settings: their constants are
		// public and named in the report's notes, so only the thread count
		// is kept (the SGD fields would read as if they had been used).
		settingsJSON, err = json.Marshal(struct{ Threads int }{res.Settings.Threads})
	}
	if err != nil {
		return err
	}
	hist, err := json.Marshal(trainReleasedHistory(res.History, res.Privacy))
	if err != nil {
		return err
	}
	dicts := final.Dicts
	if len(dicts) < m.Order() {
		dicts = append(append([]*data.Dict(nil), dicts...), make([]*data.Dict, m.Order()-len(dicts))...)
	}
	if ul != nil {
		if dicts, info, err = ul.release(dicts, m, res.Privacy); err != nil {
			return err
		}
		seen = nil
	} else if res.Privacy != nil && res.Privacy.Private() {
		// The hash and statistics are functions of the private ratings.
		info = info.Public()
		seen = nil
	} else if seen == nil {
		return errors.New("internal error: a non-private model without its seen items")
	}
	f := &models.File{
		Header: models.Header{
			Settings: settingsJSON,
			History:  hist,
			Data:     info,
			Created:  time.Now().UTC().Truncate(time.Second),
			Software: trainVersion(),
		},
		Model:   m,
		Dicts:   dicts[:m.Order()],
		Time:    final.Time,
		Privacy: res.Privacy,
		Seen:    seen, // every rated item, validation part included (non-private only)
	}
	return models.Save(out, f, c.Bool("force"))
}

func trainPrint(c *cli.Context, s *trainSummary) error {
	w := streamsOf(c).Out
	if c.Bool("json") {
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

// trainRanks resolves --rank / --ranks for a model of the given order.
func trainRanks(c *cli.Context, kind decomposition.Kind, order int) ([]int, error) {
	if s := c.String("ranks"); s != "" {
		if kind == decomposition.CP {
			return nil, errors.New("--ranks is for Tucker models; CP takes --rank")
		}
		parts := strings.Split(s, ",")
		if len(parts) != order {
			return nil, fmt.Errorf("--ranks %q: want %d ranks for an order-%d log", s, order, order)
		}
		out := make([]int, order)
		for i, p := range parts {
			v, err := strconv.Atoi(strings.TrimSpace(p))
			if err != nil || v <= 0 {
				return nil, fmt.Errorf("--ranks %q: %q is not a positive integer", s, p)
			}
			out[i] = v
		}
		return out, nil
	}
	r := c.Int("rank")
	if r <= 0 {
		return nil, fmt.Errorf("--rank %d: must be positive", r)
	}
	out := make([]int, order)
	for i := range out {
		out[i] = r
	}
	return out, nil
}

// checkGibbsCore refuses --solver gibbs for a Tucker core above
// completion.MaxGibbsCore entries (the sampler draws the core jointly; the
// default solver takes ALS for such a core).
func checkGibbsCore(tf trainFlags, ranks []int) error {
	if tf.solver != completion.SolverGibbs || tf.kind != decomposition.Tucker {
		return nil
	}
	size := 1
	for _, r := range ranks {
		size *= r
	}
	if size > completion.MaxGibbsCore {
		return fmt.Errorf("--solver gibbs draws a Tucker core of at most %d entries, and ranks %v make %d: lower --rank or --ranks, or use --solver als",
			completion.MaxGibbsCore, ranks, size)
	}
	return nil
}

// trainClamp sets the model's prediction range from --clamp.
func trainClamp(c *cli.Context, m *decomposition.Model, info *models.DataInfo) error {
	switch s := strings.TrimSpace(c.String("clamp")); s {
	case "none":
	case "", "data":
		if c.String("privacy") != "none" && c.String("privacy") != "" {
			// The data's range is not private: use the declared public
			// rating scale of the privacy flags.
			lo, hi := c.Float64("rating-min"), c.Float64("rating-max")
			if !(lo < hi) {
				return cli.Exit(`a private model needs a public rating scale: give --clamp lo,hi or --clamp none`, exitUsage)
			}
			m.ClampLo, m.ClampHi = lo, hi
			return nil
		}
		if info.NNZ > 0 {
			// One value throughout (a one-rating log) is a one-point
			// range: every prediction is that value.
			m.SetClamp(info.Min, info.Max)
		}
	default:
		lo, hi, ok := strings.Cut(s, ",")
		a, err1 := strconv.ParseFloat(strings.TrimSpace(lo), 64)
		b, err2 := strconv.ParseFloat(strings.TrimSpace(hi), 64)
		if !ok || err1 != nil || err2 != nil || !(a < b) || math.IsInf(a, 0) || math.IsInf(b, 0) {
			return cli.Exit(fmt.Sprintf(`--clamp %q: want "lo,hi" with lo < hi, "data" or "none"`, s), exitUsage)
		}
		m.ClampLo, m.ClampHi = a, b
	}
	return nil
}

// trainSplit holds out a random fraction of the ratings for validation.
// Both parts keep the full dictionaries and dimensions.
func trainSplit(st *data.Store, frac float64, src rand.Source) (train, valid *data.Store) {
	n := st.NNZ()
	nv := int(math.Round(frac * float64(n)))
	if frac <= 0 || nv == 0 || nv >= n {
		return st, nil
	}
	perm := rand.New(src).Perm(n)
	v, t := perm[:nv], perm[nv:]
	slices.Sort(v)
	slices.Sort(t)
	return st.Subset(t), st.Subset(v)
}

// trainSettingsJSON encodes the resolved settings for the model header,
// without the privacy plug-in (described by the privacy report instead).
func trainSettingsJSON(s completion.Settings) ([]byte, error) {
	s.Privacy = nil
	b, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	delete(m, "Privacy")
	return json.Marshal(m)
}

// trainVersion is the program version recorded in model files.
func trainVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return "dprec " + bi.Main.Version
	}
	return "dprec (devel)"
}

// trainUserCountNote labels the exact number of training ratings of a
// user-level run, printed to the operator like the drop counts.
const trainUserCountNote = "exact count after the per-user bound, for you only: not released, the model file holds no count"

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

// trainReleasedHistory returns the training history as it may be written
// into the model file. Losses and RMSEs are functions of the training
// ratings: for a private model they are released only when computed from
// already-perturbed values (input perturbation, where they are
// post-processing); for the other private modes only the epoch numbers
// and step sizes are kept. Wall times are dropped from every private
// model: an epoch's time depends on the private data (batch sizes, which
// rows a batch touches, the values), a timing channel no report covers.
// The full history is still printed to the data owner running the
// command.
func trainReleasedHistory(h []completion.EpochRecord, r *perturb.Report) []completion.EpochRecord {
	if r == nil || !r.Private() {
		return h
	}
	out := make([]completion.EpochRecord, len(h))
	for i, e := range h {
		if r.Mode == "input" {
			out[i] = e
			out[i].Seconds = 0
			continue
		}
		out[i] = completion.EpochRecord{Epoch: e.Epoch, LearningRate: e.LearningRate}
	}
	return out
}

// trainRefit trains a fresh model like res.Model on every rating of all for
// res.BestEpoch epochs, with the settings res used.
func trainRefit(all *data.Store, res *completion.Result, src rand.Source) (*decomposition.Model, error) {
	old := res.Model
	m, err := decomposition.NewModel(old.Kind, all.Dims, old.Ranks, old.HasBias)
	if err != nil {
		return nil, err
	}
	s := res.Settings
	s.Epochs, s.Patience = res.BestEpoch, -1
	if _, err := completion.Train(all, nil, m, &s, src, nil); err != nil {
		return nil, err
	}
	return m, nil
}

// timeBucketWarning warns when most used time buckets of an order-3 store
// hold fewer than two ratings (the median over non-empty buckets): the time
// rows and user x time biases then have almost nothing to learn from. Empty
// buckets cost nothing and are only counted.
func timeBucketWarning(st *data.Store) string {
	if st.Order() != 3 || st.Time == nil {
		return ""
	}
	counts := make([]int, st.Dims[2])
	for _, k := range st.Idx[2] {
		counts[k]++
	}
	var used []int
	for _, n := range counts {
		if n > 0 {
			used = append(used, n)
		}
	}
	if len(used) == 0 {
		return ""
	}
	slices.Sort(used)
	med := used[len(used)/2]
	if med >= 2 {
		return ""
	}
	return fmt.Sprintf("--time-unit %s: the median non-empty time bucket holds %d rating (%d buckets used of %d, largest %d): a coarser --time-unit or --time-unit none may fit better",
		st.Time.Unit, med, len(used), len(counts), used[len(used)-1])
}
