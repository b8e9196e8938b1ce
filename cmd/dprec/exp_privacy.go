package main

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/dprec/dprec/cmd/dprec/internal/experiment/completionexp"
	"github.com/dprec/dprec/completion"
	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/models"
	"github.com/dprec/dprec/perturb"
	"github.com/urfave/cli/v2"
)

// expPrivacyCmd builds the "dprec experiment completion-privacy" command (listed in commands.go).
func expPrivacyCmd() *cli.Command {
	return &cli.Command{
		Name:  "completion-privacy",
		Usage: "test RMSE (and NDCG@k on a rating log) versus epsilon for every private mode and non-private training, on the synthetic set-ups of Wei et al. 2021 (CP, Tucker) and a rating log",
		Description: `Each dataset is split at random 90/10 per seed; every mode trains on the
training part at every epsilon and is scored on the test part: RMSE, and on a
rating log (--ratings, read with the input flags) NDCG@k of the lists each
released model gives, scored as eval --train scores them (the users'
training items left out of their lists; the users of a billboard model,
bias and als, folded in from their own training ratings; lists ranked by
relevance as eval ranks them, or by the prediction with --shrinkage 0). A test item is relevant when its test rating is >=
--threshold. Reference rows: most-popular (items by number of training
ratings, non-private) and, after each bias run, most-popular-private (items
by the bias release's item counts: public at entry level, where the two
lists are the same); the non-private model (none) and the bias-only model
(the private bias mode, and its non-private fit) are drawn as reference
lines. Results: completion_privacy.csv (one row per run, with rmse and
ndcg), completion_privacy_<dataset>.png (RMSE) and
completion_privacy_ndcg_<dataset>.png (NDCG@k) under --out, and the mean
and sd over seeds printed as a table. Noise is seeded: the runs are
reproducible and NOT private.`,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "out", Value: "privacy-results", Usage: "directory for completion_privacy.csv and the PNG plots (RMSE per dataset, NDCG per rating log)"},
			&cli.StringFlag{Name: "ratings", Usage: "a rating log in any format the input flags read (e.g. ml-latest-small/ratings.csv; weekly time buckets unless --time-unit; 90/10 random split per seed) added as the dataset \"ratings\"; omit to run the synthetic set-ups only"},
			&cli.Float64Flag{Name: "rating-min", Value: 0.5, Usage: "public rating scale of --ratings (lower end)"},
			&cli.Float64Flag{Name: "rating-max", Value: 5, Usage: "public rating scale of --ratings (upper end)"},
			&cli.StringFlag{Name: "datasets", Value: "synthetic-cp,synthetic-tucker,ratings", Usage: "which datasets to run: synthetic-cp, synthetic-tucker, ratings (the last needs --ratings)"},
			&cli.StringFlag{Name: "epsilons", Value: "0.1,0.5,1,2,5,10", Usage: "comma-separated privacy budgets"},
			&cli.StringFlag{Name: "modes", Value: "none,bias,als,input,gradient-C,gradient-all,output", Usage: "comma-separated modes: none (the non-private default solver), none-als (non-private ALS: the reference of als), bias, als, input, gradient-C, gradient-all, output; implicit (the implicit objective's private mode, lists only, needs --max-ratings-per-user) and none-implicit (its non-private reference)"},
			&cli.IntFlag{Name: "seeds", Value: 3, Usage: "number of seeds (data split, initialisation and noise) per point"},
			&cli.Float64Flag{Name: "delta", Value: 1e-5, Usage: "delta of gradient-all, of als, and of bias at the user unit"},
			&cli.IntFlag{Name: "max-ratings-per-user", Usage: "k > 0: run bias and als at the user unit (add or remove one user with all their ratings, each user bounded to k, one per item, the item counts and sums weighted instead; the other private modes have no user unit and are refused); 0: the entry unit"},
			&cli.IntFlag{Name: "epochs", Value: 30, Usage: "training epochs (all modes, no early stopping)"},
			&cli.Float64Flag{Name: "lr", Usage: "learning rate (default: the trainer's)"},
			&cli.Float64Flag{Name: "reg", Usage: "lambda_o (default: the trainer's)"},
			&cli.Float64Flag{Name: "init-scale", Usage: "standard deviation of the initial factors (default: the trainer's; the synthetic set-ups default to 0.5, since rank-3 CP without biases stalls at the zero saddle from 0.1)"},
			&cli.Float64Flag{Name: "private-lr-scale", Value: 1, Usage: "s: at privacy budget epsilon the private modes train with the dataset's learning rate times min(1, s epsilon)"},
			&cli.Float64Flag{Name: "private-reg", Usage: "r: at privacy budget epsilon the private modes use lambda_o = max(--reg, r/epsilon^2) (the ridge optimum grows like the noise variance); default --reg"},
			&cli.Float64Flag{Name: "clip", Usage: fmt.Sprintf("gradient clipping norm m (default %g)", completion.DefaultClip)},
			&cli.IntFlag{Name: "rank", Value: 10, Usage: "rank of the rating-log model (CP with biases); the synthetic set-ups use rank 3"},
			&cli.IntFlag{Name: "threads", Value: 2, Usage: "training threads (also ranking and parsing threads)"},
			&cli.Float64Flag{Name: "threshold", Usage: "a test item is relevant to its user when its test rating is >= threshold", DefaultText: "the top quarter of the public range, rating-max - (rating-max - rating-min)/4: 3.875 on 0.5-5, 4 on 1-5"},
			&cli.IntFlag{Name: "k", Value: 10, Usage: "cut-off of NDCG@k"},
			&cli.Float64Flag{Name: "shrinkage", Value: models.DefaultShrinkage, Usage: "rankings as eval ranks them at its default --ranking relevance (K > 0; the credibility constant of a model without a rating range) or, with 0, by the prediction"},
			forceFlag("overwrite existing files", ""),
		}, expPrivacyLoadFlags()...),
		Action: runWithOptions(expPrivacyOptionsOf, expPrivacyRun),
	}
}

// expPrivacyLoadFlags are the input flags of --ratings: dataLoadFlags
// without its --threads (the command's --threads serves) and with weekly
// time buckets by default.
func expPrivacyLoadFlags() []cli.Flag {
	var out []cli.Flag
	for _, f := range dataLoadFlags() {
		switch f.Names()[0] {
		case "threads":
			continue
		case "time-unit":
			tu := *f.(*cli.StringFlag)
			tu.Value = "week"
			f = &tu
		}
		out = append(out, f)
	}
	return out
}

func expPrivacyFloats(s, name string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil {
			return nil, fmt.Errorf("--%s: %q is not a number", name, f)
		}
		if err := perturb.CheckEpsilon(v); err != nil {
			return nil, fmt.Errorf("--%s: %w", name, err)
		}
		out = append(out, v)
	}
	return out, nil
}

// expPrivacyOptions are the flags of dprec experiment completion-privacy.
type expPrivacyOptions struct {
	globalOptions
	Out       string  // --out: the results directory
	Ratings   string  // --ratings ("": the synthetic set-ups only)
	RatingMin float64 // --rating-min
	RatingMax float64 // --rating-max
	// ScaleSet: --rating-min or --rating-max was given (else --ratings
	// outside the default scale is refused, not clamped).
	ScaleSet bool
	Datasets []string // --datasets
	Epsilons []float64
	Modes    []string
	Seeds    int     // --seeds: seeds per point
	Delta    float64 // --delta of gradient-all
	Clip     float64 // --clip (0: the default)
	UserK    int     // --max-ratings-per-user (0: the entry unit)
	Rank     int     // --rank of the rating-log model
	Force    bool    // --force
	Seed     uint64  // --seed: the base seed (0 when not given)
	// Threshold (--threshold; NaN: DefaultThreshold of the rating range),
	// K (--k) and Shrinkage (--shrinkage) of the ranking metrics.
	Threshold    float64
	K            int
	Shrinkage    float64
	Load         data.LoadOptions // the input flags, for --ratings
	Settings     completion.Settings
	InitScaleSet bool // --init-scale was given (else the synthetic set-ups use 0.5)
	LRSet        bool // --lr was given (else synthetic Tucker uses 0.002)
	// PrivateSchedule says --private-lr-scale or --private-reg was given:
	// the private modes then train with PrivateLRScale and PrivateReg.
	PrivateSchedule bool
	PrivateLRScale  float64
	PrivateReg      float64
}

// expPrivacyOptionsOf reads the flags; bad --epsilons, --modes and --seeds
// are usage errors.
func expPrivacyOptionsOf(c *cli.Context) (*expPrivacyOptions, error) {
	eps, modes, err := expPrivacyFlags(c)
	if err != nil {
		return nil, err
	}
	o := &expPrivacyOptions{globalOptions: globalOptionsOf(c), Out: c.String("out"), Ratings: c.String("ratings"),
		RatingMin: c.Float64("rating-min"), RatingMax: c.Float64("rating-max"), Epsilons: eps, Modes: modes,
		Seeds: c.Int("seeds"), Delta: c.Float64("delta"), Clip: c.Float64("clip"), UserK: c.Int("max-ratings-per-user"), Rank: c.Int("rank"), Force: c.Bool("force"),
		Settings: completion.Settings{Epochs: c.Int("epochs"), Threads: c.Int("threads"), LearningRate: c.Float64("lr"),
			Reg: c.Float64("reg"), InitScale: c.Float64("init-scale")},
		InitScaleSet: c.IsSet("init-scale"), LRSet: c.IsSet("lr"), ScaleSet: c.IsSet("rating-min") || c.IsSet("rating-max"),
		PrivateSchedule: c.IsSet("private-lr-scale") || c.IsSet("private-reg"),
		PrivateLRScale:  c.Float64("private-lr-scale"), PrivateReg: c.Float64("private-reg")}
	for _, name := range strings.Split(c.String("datasets"), ",") {
		o.Datasets = append(o.Datasets, strings.TrimSpace(name))
	}
	o.Seed, _ = seedOf(c)
	o.K, o.Shrinkage, o.Threshold = c.Int("k"), c.Float64("shrinkage"), math.NaN()
	if c.IsSet("threshold") {
		o.Threshold = c.Float64("threshold")
		if math.IsNaN(o.Threshold) || math.IsInf(o.Threshold, 0) {
			return nil, cli.Exit(fmt.Sprintf("--threshold %g: want a finite rating", o.Threshold), exitUsage)
		}
	}
	if v := o.Shrinkage; !(v >= 0) || math.IsInf(v, 0) {
		return nil, cli.Exit(fmt.Sprintf("--shrinkage %g: want a finite K >= 0 (0: rank by the prediction)", v), exitUsage)
	}
	if o.Load, err = dataLoadOptions(c); err != nil {
		return nil, err
	}
	if o.UserK < 0 {
		return nil, cli.Exit(fmt.Sprintf("--max-ratings-per-user %d: want k >= 1, or 0 for the entry unit", o.UserK), exitUsage)
	}
	if o.UserK > 0 {
		for _, m := range o.Modes {
			if !completionexp.NonPrivate(m) && m != completionexp.ExpBias && m != completionexp.ExpALS && m != completionexp.ExpImplicit {
				return nil, cli.Exit(fmt.Sprintf("--max-ratings-per-user: mode %s has no user unit (only bias, als and implicit do): drop it from --modes", m), exitUsage)
			}
		}
	} else if slices.Contains(o.Modes, completionexp.ExpImplicit) {
		return nil, cli.Exit("--modes implicit is private at the user unit only: give --max-ratings-per-user k", exitUsage)
	}
	return o, nil
}

// expPrivacyRun runs the experiment, writes the CSV and plots under o.Out
// and prints the summary table on ios.Out.
func expPrivacyRun(o *expPrivacyOptions, ios *iostreams) error {
	eps, modes := o.Epsilons, o.Modes
	dir := o.Out
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	csvPath := filepath.Join(dir, "completion_privacy.csv")
	if _, err := os.Stat(csvPath); err == nil && !o.Force {
		// Refuse before the runs, not after them.
		return fmt.Errorf("%s: file exists (use --force to overwrite)", csvPath)
	}
	all, baselines, err := expPrivacyRows(o, ios)
	if err != nil {
		return err
	}
	force := o.Force
	if err := expPrivacyWriteCSV(csvPath, force, all); err != nil {
		return err
	}
	summary := completionexp.SummarizePrivacy(all)
	if !o.Quiet {
		fmt.Fprintf(ios.Err, "wrote %s (noise seeded: reproducible, NOT private)\n", csvPath)
	}
	expPrivacyTable(ios.Out, o, summary, baselines)
	if err := expPrivacyPlots(dir, force, summary, modes, eps, baselines); err != nil {
		return err
	}
	return expPrivacyNDCGPlots(dir, force, o.K, summary, modes, eps)
}

// expPrivacyTable prints the mean and sd over seeds of RMSE and NDCG@k of
// every point, then the non-private bias-only baselines; "-" marks a
// metric a point has not (NDCG of a synthetic set-up, RMSE of a
// most-popular list).
func expPrivacyTable(w io.Writer, o *expPrivacyOptions, summary []completionexp.PrivacySummary, baselines map[string]float64) {
	k := strconv.Itoa(o.K)
	f4 := func(v float64) string {
		if math.IsNaN(v) {
			return "-"
		}
		return strconv.FormatFloat(v, 'f', 4, 64)
	}
	fmt.Fprintf(w, "dataset\tmode\tepsilon\tmean_rmse\tsd\tmean_ndcg@%s\tsd\truns\tfailed\tnote\n", k)
	for _, s := range summary {
		e := "-"
		if !completionexp.NonPrivate(s.Mode) && s.Mode != completionexp.ExpPopular && s.Mode != completionexp.ExpPositions {
			e = fmtG(s.Epsilon)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\n", s.Dataset, s.Mode, e, f4(s.Mean), f4(s.SD), f4(s.NDCGMean), f4(s.NDCGSD), s.Runs, s.Failed, s.Note)
	}
	names := make([]string, 0, len(baselines))
	for name := range baselines {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Fprintf(w, "%s\tbias-only (non-private)\t-\t%.4f\t-\t-\t-\t%d\t0\tmu + b_u + b_i, ridge 5, fitted on the training part\n", name, baselines[name], o.Seeds)
	}
	if slices.ContainsFunc(summary, func(s completionexp.PrivacySummary) bool { return !math.IsNaN(s.NDCGMean) }) {
		th := "rating-max - (rating-max - rating-min)/4 = " + fmtG(completionexp.DefaultThreshold(o.RatingMin, o.RatingMax))
		if !math.IsNaN(o.Threshold) {
			th = fmtG(o.Threshold)
		}
		fmt.Fprintf(w, "NDCG@%s: relevant = test rating >= %s; lists rank the catalogue minus the user's training items (%s; bias and als users folded in from their training ratings)\n", k, th, expRankingNote(o.Shrinkage))
	}
}

// expPrivacyFlags checks --epsilons, --modes and --seeds.
func expPrivacyFlags(c *cli.Context) ([]float64, []string, error) {
	eps, err := expPrivacyFloats(c.String("epsilons"), "epsilons")
	if err != nil {
		return nil, nil, cli.Exit(err.Error(), exitUsage)
	}
	modes := strings.Split(c.String("modes"), ",")
	for i, m := range modes {
		modes[i] = strings.TrimSpace(m)
		switch modes[i] {
		case completionexp.ExpNone, completionexp.ExpNoneALS, completionexp.ExpBias, completionexp.ExpALS, completionexp.ExpInput, completionexp.ExpGradientC, completionexp.ExpGradientAll, completionexp.ExpOutput, completionexp.ExpImplicit, completionexp.ExpNoneImplicit:
		default:
			return nil, nil, cli.Exit(fmt.Sprintf("--modes: unknown mode %q", m), exitUsage)
		}
	}
	if c.Int("seeds") < 1 {
		return nil, nil, cli.Exit("--seeds must be >= 1", exitUsage)
	}
	return eps, modes, nil
}

// expPrivacyRows runs the experiment on every dataset and seed, and
// returns its rows and, per rating-log dataset, the mean RMSE over seeds
// of the non-private bias-only baseline.
func expPrivacyRows(o *expPrivacyOptions, ios *iostreams) ([]completionexp.PrivacyExpRow, map[string]float64, error) {
	eps, modes, base, nSeeds := o.Epsilons, o.Modes, o.Seed, o.Seeds
	var all []completionexp.PrivacyExpRow
	baselines := map[string]float64{}
	var ratings *data.Store
	for _, name := range o.Datasets {
		if name == "ratings" && o.Ratings != "" && ratings == nil {
			var err error
			if ratings, _, err = loadLog(ios, o.globalOptions, o.Ratings, o.Load); err != nil {
				return nil, nil, err
			}
			if err := expPrivacyCheckScale(o, ratings); err != nil {
				return nil, nil, err
			}
		}
		for s := 0; s < nSeeds; s++ {
			seed := base + uint64(s) + 1
			ds, err := expPrivacyDataset(o, name, seed, o.Settings, ratings)
			if err != nil {
				return nil, nil, err
			}
			if ds == nil {
				break // ratings without --ratings
			}
			if o.PrivateSchedule {
				ds.PrivateSettings = completionexp.PrivateSchedule(ds.Settings, o.PrivateLRScale, o.PrivateReg)
			}
			if name == "ratings" {
				baselines[name] += completionexp.BiasBaselineRMSE(ds.Train, ds.Test, 5, ds.RatingMin, ds.RatingMax) / float64(nSeeds)
			}
			bar := ios.bar(o.globalOptions, int64(len(modes)*len(eps)), fmt.Sprintf("%s seed %d", name, seed))
			rows, err := completionexp.RunPrivacyExperiment(completionexp.PrivacyExpConfig{
				Datasets: []completionexp.PrivacyExpDataset{*ds}, Modes: modes, Epsilons: eps,
				Seeds: []uint64{seed}, Delta: o.Delta, Clip: o.Clip, MaxRatingsPerUser: o.UserK,
			}, func(completionexp.PrivacyExpRow) { _ = bar.Add(1) })
			_ = bar.Finish()
			if err != nil {
				return nil, nil, err
			}
			all = append(all, rows...)
		}
	}
	return all, baselines, nil
}

// expPrivacyWriteCSV writes one CSV row per run.
func expPrivacyWriteCSV(path string, force bool, all []completionexp.PrivacyExpRow) error {
	return data.WriteFileAtomic(path, force, func(w io.Writer) error {
		cw := csv.NewWriter(w)
		_ = cw.Write([]string{"dataset", "kind", "mode", "epsilon", "delta", "seed", "rmse", "ndcg", "covered", "seconds", "error", "note", "unit"})
		for _, r := range all {
			_ = cw.Write([]string{r.Dataset, r.Kind, r.Mode, fmtG(r.Epsilon), fmtG(r.Delta), strconv.FormatUint(r.Seed, 10),
				fmtNaN(r.RMSE), fmtNaN(r.NDCG), strconv.FormatBool(r.Covered), fmtG(r.Seconds), r.Err, r.Note, r.Unit})
		}
		cw.Flush()
		return cw.Error()
	})
}

// expPrivacyPlots draws one plot per dataset: mean RMSE over seeds versus
// epsilon per mode; the non-private RMSE and the bias-only baseline are
// drawn as flat lines.
func expPrivacyPlots(dir string, force bool, summary []completionexp.PrivacySummary, modes []string, eps []float64, baselines map[string]float64) error {
	byDS := map[string][]completionexp.PrivacySummary{}
	for _, s := range summary {
		byDS[s.Dataset] = append(byDS[s.Dataset], s)
	}
	for name, pts := range byDS {
		var series []plotSeries
		for _, mode := range modes {
			ps := plotSeries{Name: mode}
			if completionexp.NonPrivate(mode) {
				ps.Name += " (non-private)"
			}
			for _, p := range pts {
				if p.Mode != mode || math.IsNaN(p.Mean) {
					continue
				}
				if completionexp.NonPrivate(mode) {
					for _, e := range eps {
						ps.X, ps.Y, ps.YErr = append(ps.X, e), append(ps.Y, p.Mean), append(ps.YErr, p.SD)
					}
					continue
				}
				ps.X, ps.Y, ps.YErr = append(ps.X, p.Epsilon), append(ps.Y, p.Mean), append(ps.YErr, p.SD)
			}
			if len(ps.X) > 0 {
				series = append(series, ps)
			}
		}
		if b, ok := baselines[name]; ok {
			ps := plotSeries{Name: "bias-only (non-private)"}
			for _, e := range eps {
				ps.X, ps.Y = append(ps.X, e), append(ps.Y, b)
			}
			series = append(series, ps)
		}
		path := filepath.Join(dir, "completion_privacy_"+name+".png")
		if err := plotLines(path, force, "test RMSE vs epsilon: "+name, "epsilon", "test RMSE", true, false, series); err != nil {
			return err
		}
	}
	return nil
}

func fmtG(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }

// fmtNaN is fmtG with an empty field for NaN (no value: a failed run's
// RMSE, a most-popular list's RMSE, NDCG without ranking).
func fmtNaN(v float64) string {
	if math.IsNaN(v) {
		return ""
	}
	return fmtG(v)
}

// expPrivacyNDCGPlots draws, per dataset with ranking metrics,
// completion_privacy_ndcg_<dataset>.png: mean NDCG@k over seeds versus
// epsilon per mode and of the private most-popular list, with the
// non-private model and the non-private most-popular list as flat lines.
func expPrivacyNDCGPlots(dir string, force bool, k int, summary []completionexp.PrivacySummary, modes []string, eps []float64) error {
	byDS := map[string][]completionexp.PrivacySummary{}
	for _, s := range summary {
		if !math.IsNaN(s.NDCGMean) {
			byDS[s.Dataset] = append(byDS[s.Dataset], s)
		}
	}
	names := append(slices.Clone(modes), completionexp.ExpPositions, completionexp.ExpPopularPrivate, completionexp.ExpPopular)
	for name, pts := range byDS {
		var series []plotSeries
		for _, mode := range names {
			ps := plotSeries{Name: mode}
			if completionexp.NonPrivate(mode) || mode == completionexp.ExpPopular {
				ps.Name += " (non-private)"
			}
			for _, p := range pts {
				if p.Mode != mode {
					continue
				}
				if completionexp.NonPrivate(mode) || mode == completionexp.ExpPopular || mode == completionexp.ExpPositions {
					for _, e := range eps {
						ps.X, ps.Y, ps.YErr = append(ps.X, e), append(ps.Y, p.NDCGMean), append(ps.YErr, p.NDCGSD)
					}
					continue
				}
				ps.X, ps.Y, ps.YErr = append(ps.X, p.Epsilon), append(ps.Y, p.NDCGMean), append(ps.YErr, p.NDCGSD)
			}
			if len(ps.X) > 0 {
				series = append(series, ps)
			}
		}
		path := filepath.Join(dir, "completion_privacy_ndcg_"+name+".png")
		if err := plotLines(path, force, fmt.Sprintf("test NDCG@%d vs epsilon: %s", k, name), "epsilon", fmt.Sprintf("NDCG@%d", k), true, false, series); err != nil {
			return err
		}
	}
	return nil
}

// expPrivacyCheckScale refuses --ratings outside the default public
// scale when no scale was declared and a rating mode runs (as train does):
// the private modes would clamp every rating to the wrong scale.
func expPrivacyCheckScale(o *expPrivacyOptions, st *data.Store) error {
	if o.ScaleSet || len(st.Val) == 0 {
		return nil
	}
	rating := false
	for _, m := range o.Modes {
		rating = rating || m != "implicit" && m != "none-implicit"
	}
	lo, hi := slices.Min(st.Val), slices.Max(st.Val)
	if !rating || lo >= o.RatingMin && hi <= o.RatingMax {
		return nil
	}
	return cli.Exit(fmt.Sprintf("%s: ratings run from %g to %g, outside the default public rating scale [%g, %g] that the private modes clamp to; declare the data source's scale with --rating-min and --rating-max",
		o.Ratings, lo, hi, o.RatingMin, o.RatingMax), exitUsage)
}

// expPrivacyDataset builds one dataset for a seed (nil for "ratings"
// without --ratings); st is the loaded --ratings log.
func expPrivacyDataset(o *expPrivacyOptions, name string, seed uint64, s completion.Settings, st *data.Store) (*completionexp.PrivacyExpDataset, error) {
	switch name {
	case "synthetic-cp", "synthetic-tucker":
		kind := decomposition.CP
		if name == "synthetic-tucker" {
			kind = decomposition.Tucker
		}
		// Seed 001: 20 x 20 x 20, rank 3, SNR 1; 50% of the cells observed
		// for training, 10% held out for testing.
		tr, te, lo, hi, err := completionexp.SyntheticSeed001(kind, []int{20, 20, 20}, 3, 1, 0.5, 0.1, perturb.StreamSource(seed, 77))
		if err != nil {
			return nil, err
		}
		if !o.InitScaleSet {
			s.InitScale = 0.5
		}
		if kind == decomposition.Tucker && !o.LRSet {
			// Tucker entries have variance rank^3 = 27 (std 7.3 with the
			// noise): the trainer's default step (tuned for 1-5 ratings)
			// diverges; 0.002 reaches the noise floor in 30 epochs.
			s.LearningRate = 0.002
		}
		return &completionexp.PrivacyExpDataset{Name: name, Train: tr, Test: te, RatingMin: lo, RatingMax: hi, Kind: kind, Rank: 3, Settings: s}, nil
	case "ratings":
		if st == nil {
			return nil, nil
		}
		tr, te := completionexp.SplitStore(st, 0.1, perturb.StreamSource(seed, 78))
		th := o.Threshold
		if math.IsNaN(th) {
			th = completionexp.DefaultThreshold(o.RatingMin, o.RatingMax)
		}
		return &completionexp.PrivacyExpDataset{Name: name, Train: tr, Test: te, RatingMin: o.RatingMin, RatingMax: o.RatingMax,
			Kind: decomposition.CP, Rank: o.Rank, Bias: true, Settings: s,
			Ranking: &completionexp.Ranking{K: o.K, Threshold: th, Shrinkage: o.Shrinkage, Threads: s.Threads}}, nil
	}
	return nil, fmt.Errorf("--datasets: unknown dataset %q (want synthetic-cp, synthetic-tucker or ratings)", name)
}

// expRankingNote names the experiment's ranking for its --shrinkage.
func expRankingNote(kappa float64) string {
	if kappa > 0 {
		return "ranked by relevance, as eval ranks them"
	}
	return "ranked by the prediction (--shrinkage 0)"
}
