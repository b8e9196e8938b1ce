package main

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"

	"github.com/dprec/dprec/completion"
	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/models"
	"github.com/urfave/cli/v2"
)

// evalCmd builds the "dprec eval" command (listed in commands.go).
func evalCmd() *cli.Command {
	flags := []cli.Flag{
		&cli.StringFlag{Name: "model", Aliases: []string{"m"}, Required: true, Usage: "model file"},
		&cli.StringFlag{Name: "data", Required: true, Usage: "test rating log (read with the input flags)"},
		&cli.StringFlag{Name: "train", Usage: "training rating log: items a user rated there are also left out of that user's ranking (the model's own stored training items are left out already)"},
		&cli.BoolFlag{Name: "include-seen", Usage: "keep the model's stored training items in the rankings (recommend --include-seen)"},
		&cli.StringFlag{Name: "time", Usage: "rank at this time (as recommend --time); default: averaged over the trained period, as recommend does"},
		&cli.IntFlag{Name: "k", Value: 10, Usage: "cut-off of precision@k, recall@k, NDCG@k and MAP@k"},
		&cli.Float64Flag{Name: "threshold", Value: 4, Usage: "a test item is relevant when its test rating is >= threshold"},
		&cli.BoolFlag{Name: "json", Usage: "JSON output"},
	}
	return &cli.Command{
		Name:  "eval",
		Usage: "RMSE, MAE and the ranking metrics (precision, recall, NDCG, MAP at k, coverage) of a saved model on a test log, beside a most-popular baseline",
		Description: `Test users and items are matched to the model by external id. RMSE and MAE
cover every test rating (unknown ids use the documented fallbacks, counted
per fallback; for an --objective implicit model they compare preference
scores with ratings and mean little). Ranking metrics score the lists
recommend gives: ranked at the same time (averaged over the trained period
unless --time), leaving out the model's stored training items (unless
--include-seen) and the user's --train items; they average over the test
users the model knows that have at least one relevant test item. NDCG uses
binary gains and log2(rank+1) discounts; MAP@k divides by min(k, relevant);
coverage is the distinct items of those users' top-k lists over the
catalogue. The most-popular baseline (items by distinct training users,
minus the same left-out items) is printed beside every metric.

A billboard model (--privacy bias or als: no user rows are released) needs
--train: every test user is folded in from their own training ratings (row,
bias and time-bucket biases, the penalties of predict --ratings) and scored
from that, as the user would be served.`,
		Flags:  append(append(flags, rankingFlags()...), dataLoadFlags()...),
		Action: runWithOptions(evalOptionsOf, evalRun),
	}
}

// evalOptions are the flags of dprec eval.
type evalOptions struct {
	globalOptions
	Model string // --model
	Data  string // --data: the test log
	Train string // --train: a training log whose items are left out of the rankings ("": none)
	// Eval holds --k, --threshold, --time, --include-seen and --threads;
	// its Train is loaded from the Train path by evalRun.
	Eval models.EvalOptions
	Rank rankingOptions   // --ranking, --shrinkage
	JSON bool             // --json
	Load data.LoadOptions // the input flags, for --data and --train
}

// evalOptionsOf reads eval's flags.
func evalOptionsOf(c *cli.Context) (*evalOptions, error) {
	o := &evalOptions{
		globalOptions: globalOptionsOf(c),
		Model:         c.String("model"),
		Data:          c.String("data"),
		Train:         c.String("train"),
		Eval:          models.EvalOptions{K: c.Int("k"), Threshold: c.Float64("threshold"), Threads: c.Int("threads"), IncludeSeen: c.Bool("include-seen")},
		JSON:          c.Bool("json"),
	}
	var err error
	if o.Rank, err = rankingOptionsOf(c); err != nil {
		return nil, err
	}
	if o.Eval.Time, err = predictParseTime(c.String("time")); err != nil {
		return nil, cli.Exit(fmt.Sprintf("--time: %v", err), exitUsage)
	}
	if o.Eval.K <= 0 {
		return nil, cli.Exit(fmt.Sprintf("--k %d: must be positive", o.Eval.K), exitUsage)
	}
	if o.Load, err = dataLoadOptions(c); err != nil {
		return nil, err
	}
	return o, nil
}

// evalRun scores the model o.Model on the test log o.Data and prints the
// metrics on s.Out.
func evalRun(o *evalOptions, s *iostreams) error {
	p, err := loadPredictor(s, o.globalOptions, o.Model)
	if err != nil {
		return err
	}
	if err := checkModelTime(p, o.Model, o.Eval.Time); err != nil {
		return err
	}
	p = o.Rank.apply(p)
	opts := o.Load
	opts.Builder.KeepTimestamps = true
	test, _, err := loadLog(s, o.globalOptions, o.Data, opts)
	if err != nil {
		return err
	}
	eo := o.Eval
	if p.File().Billboard() {
		if o.Train == "" {
			return cli.Exit(fmt.Sprintf("%s is a billboard model (privacy mode %s: no user rows are released): give the training log with --train so that each test user is folded in from their own ratings", o.Model, p.File().Privacy.Mode), exitUsage)
		}
		fold := completion.BillboardFoldFor(p.File().Privacy)
		eo.Fold = &fold
		if f := p.File(); f.Header.Objective == models.ObjectiveImplicit {
			// Users fold in as the training's user half-steps solved them.
			eo.FoldRow = func(items []int32, values []float64) (models.Row, error) {
				row, _, err := implicitFoldIn(f, o.Model, items, values, 0)
				return row, err
			}
		}
	}
	if o.Train != "" {
		tl := o.Load
		tl.Builder.KeepTimestamps = true
		if eo.Train, _, err = loadLog(s, o.globalOptions, o.Train, tl); err != nil {
			return err
		}
	}
	res, err := models.Evaluate(p, test, eo)
	if err != nil {
		return fmt.Errorf("%s: %w", o.Data, err)
	}
	w := s.Out
	if o.JSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	fmt.Fprintf(w, "test ratings   %d\n", res.N)
	if eo.FoldRow != nil {
		fmt.Fprintf(w, "fold-in        every test user solved from their own --train events (the implicit objective's user half-step): the billboard model's lists\n")
	} else if eo.Fold != nil {
		fmt.Fprintf(w, "fold-in        every test user solved from their own --train ratings (lambda %g, time-bucket lambda %g): the billboard model's predictions\n", eo.Fold.Row, eo.Fold.Bucket)
	}
	note := ""
	if p.File().Header.Objective == models.ObjectiveImplicit {
		note = "   (implicit model: preference scores against ratings; not meaningful)"
	}
	if p.File().ItemItem() {
		note = "   (item-item model: sums of item-item weights against ratings; not meaningful)"
	}
	fmt.Fprintf(w, "RMSE           %.4f%s\n", res.RMSE, note)
	fmt.Fprintf(w, "MAE            %.4f%s\n", res.MAE, note)
	fmt.Fprintf(w, "ranking        %s\n", res.Ranking)
	pop := res.Popularity
	row := func(name string, v float64, b func(*models.RankMetrics) float64) {
		if pop != nil {
			fmt.Fprintf(w, "%-14s %.4f   most-popular %.4f\n", name, v, b(pop))
			return
		}
		fmt.Fprintf(w, "%-14s %.4f\n", name, v)
	}
	k := strconv.Itoa(res.K)
	row("precision@"+k, res.Precision, func(m *models.RankMetrics) float64 { return m.Precision })
	row("recall@"+k, res.Recall, func(m *models.RankMetrics) float64 { return m.Recall })
	row("NDCG@"+k, res.NDCG, func(m *models.RankMetrics) float64 { return m.NDCG })
	row("MAP@"+k, res.MAP, func(m *models.RankMetrics) float64 { return m.MAP })
	row("coverage", res.Coverage, func(m *models.RankMetrics) float64 { return m.Coverage })
	fmt.Fprintf(w, "distinct items %d of %d", res.Distinct, res.Catalogue)
	if pop != nil {
		fmt.Fprintf(w, "   most-popular %d", pop.Distinct)
	}
	fmt.Fprintln(w)
	if pop == nil {
		fmt.Fprintln(w, "(no most-popular baseline: the model stores no training items and no --train was given)")
	}
	fmt.Fprintf(w, "ranked users   %d (relevance: rating >= %s; %d users unknown to the model skipped", res.RankedUsers, fmtFloat(res.Threshold), res.SkippedUsers)
	if res.ExcludedSeen > 0 {
		fmt.Fprintf(w, "; %d stored training items left out", res.ExcludedSeen)
	}
	if res.ExcludedTrain > 0 {
		fmt.Fprintf(w, "; %d --train ratings left out", res.ExcludedTrain)
	}
	fmt.Fprintln(w, ")")
	keys := make([]string, 0, len(res.Fallbacks))
	for k := range res.Fallbacks {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "fallback       %-28s %d\n", k, res.Fallbacks[k])
	}
	return nil
}
