package main

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/dprec/dprec/models"
	"github.com/urfave/cli/v2"
)

func init() {
	flags := []cli.Flag{
		&cli.StringFlag{Name: "model", Aliases: []string{"m"}, Required: true, Usage: "model file"},
		&cli.StringFlag{Name: "data", Required: true, Usage: "test rating log (read with the input flags)"},
		&cli.StringFlag{Name: "train", Usage: "training rating log: items a user rated there are left out of that user's ranking"},
		&cli.IntFlag{Name: "k", Value: 10, Usage: "cut-off of precision@k, recall@k and NDCG@k"},
		&cli.Float64Flag{Name: "threshold", Value: 4, Usage: "a test item is relevant when its test rating is >= threshold"},
		&cli.BoolFlag{Name: "json", Usage: "JSON output"},
	}
	register(&cli.Command{
		Name:  "eval",
		Usage: "RMSE, MAE, precision@k, recall@k and NDCG@k of a saved model on a test log",
		Description: `Test users and items are matched to the model by external id. RMSE and MAE
cover every test rating (unknown ids use the documented fallbacks, counted
per fallback). Ranking metrics average over the test users the model knows
that have at least one relevant test item: all items are ranked (minus the
user's --train items), the top k are compared with the relevant test items;
NDCG uses binary gains and log2(rank+1) discounts.`,
		Flags:  append(flags, dataLoadFlags()...),
		Action: evalRun,
	})
}

func evalRun(c *cli.Context) error {
	p, err := predictLoad(c, c.String("model"))
	if err != nil {
		return err
	}
	opts, err := dataLoadOptions(c)
	if err != nil {
		return err
	}
	opts.Builder.KeepTimestamps = true
	test, _, err := dataLoadWith(c, c.String("data"), opts)
	if err != nil {
		return err
	}
	eo := models.EvalOptions{K: c.Int("k"), Threshold: c.Float64("threshold"), Threads: c.Int("threads")}
	if eo.K <= 0 {
		return cli.Exit(fmt.Sprintf("--k %d: must be positive", eo.K), exitUsage)
	}
	if path := c.String("train"); path != "" {
		if eo.Train, _, err = dataLoad(c, path); err != nil {
			return err
		}
	}
	res, err := models.Evaluate(p, test, eo)
	if err != nil {
		return fmt.Errorf("%s: %w", c.String("data"), err)
	}
	w := c.App.Writer
	if c.Bool("json") {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	fmt.Fprintf(w, "test ratings   %d\n", res.N)
	fmt.Fprintf(w, "RMSE           %.4f\n", res.RMSE)
	fmt.Fprintf(w, "MAE            %.4f\n", res.MAE)
	fmt.Fprintf(w, "precision@%-4d %.4f\n", res.K, res.Precision)
	fmt.Fprintf(w, "recall@%-7d %.4f\n", res.K, res.Recall)
	fmt.Fprintf(w, "NDCG@%-9d %.4f\n", res.K, res.NDCG)
	fmt.Fprintf(w, "ranked users   %d (relevance: rating >= %s; %d users unknown to the model skipped", res.RankedUsers, fmtFloat(res.Threshold), res.SkippedUsers)
	if res.ExcludedTrain > 0 {
		fmt.Fprintf(w, "; %d training ratings excluded from the rankings", res.ExcludedTrain)
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
