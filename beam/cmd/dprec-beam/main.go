// Command dprec-beam runs dprec jobs as Apache Beam pipelines: stats,
// train (ALS, one pipeline per half-sweep; --privacy bias or als at entry
// level, and bias at the user unit, over a public item catalogue), eval
// and recommend --all-users.
// Prism runs in-process by default; --runner universal --endpoint HOST:PORT
// submits to a Flink, Spark or Prism job server, --runner dataflow to
// Google Cloud Dataflow (see docs/scale-out.md).
//
// Usage:
//
//	dprec-beam stats --data GLOB --out DIR
//	dprec-beam train --data GLOB --out model.arrow [--rank R] [--seed S] [--epochs N]
//	dprec-beam train --privacy bias|als --items items.csv --epsilon E [--delta D] --data GLOB --out model.arrow
//	dprec-beam train --privacy bias --privacy-unit user --max-ratings-per-user K --items items.csv --epsilon E --delta D --data GLOB --out model.arrow
//	dprec-beam eval --model model.arrow --data GLOB [--k 10]
//	dprec-beam recommend --all-users --model model.arrow --out DIR [--n 10]
//	dprec-beam job-server [--job_port 8073]
//
// Beam's own flags (--runner, --endpoint, --environment_type, Dataflow's
// --project, --region, --temp_location, ...) are accepted by every
// command; on a cluster the same binary starts as a worker (beam.Init).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	beamlog "github.com/apache/beam/sdks/v2/go/pkg/beam/log"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners"

	"github.com/dprec/dprec/beam/pipeline"
	"github.com/dprec/dprec/models"
)

// options are every command's flags (one flag set: Beam registers its
// flags in the standard set, and a worker is started with those only).
type options struct {
	data, out, model, valid, train, work string
	format, delimiter, header            string
	userCol, itemCol, ratingCol          string
	skipInvalid                          bool
	rank, epochs, patience, shards       int
	seed                                 uint64
	reg, regBias, initScale              float64
	noBias, seen, allUsers, jsonOut      bool
	force, verbose, noMemoryCheck        bool
	k, n                                 int
	threshold, shrinkage                 float64
	ranking                              string
	privacy, items, mechanism, unit      string
	maxPerUser                           int
	epsilon, delta                       float64
	ratingMin, ratingMax                 float64
	jobPort                              int
}

func defineFlags(fs *flag.FlagSet, o *options) {
	fs.StringVar(&o.data, "data", "", "rating log glob(s), comma-separated (CSV, TSV, ::, Arrow, Parquet; local or any Beam filesystem path)")
	fs.StringVar(&o.out, "out", "", "output: a directory (stats, recommend) or the model file (train)")
	fs.StringVar(&o.model, "model", "", "model file (eval, recommend)")
	fs.StringVar(&o.valid, "validation", "", "train: validation log glob for early stopping (--patience)")
	fs.StringVar(&o.train, "train", "", "eval: training log glob whose items are left out of each user's ranking")
	fs.StringVar(&o.work, "work", "", "scratch directory for the data between pipelines (default: a temporary directory; on a cluster a path every worker reaches)")
	fs.StringVar(&o.format, "format", "", "input format (csv, tsv, dat, arrow, parquet; default by file name)")
	fs.StringVar(&o.delimiter, "delimiter", "", "delimiter of text input (default: detected)")
	fs.StringVar(&o.header, "header", "", "header of text input: auto, yes or no")
	fs.StringVar(&o.userCol, "user-col", "", "user column name")
	fs.StringVar(&o.itemCol, "item-col", "", "item column name")
	fs.StringVar(&o.ratingCol, "rating-col", "", "rating column name")
	fs.BoolVar(&o.skipInvalid, "skip-invalid", false, "skip malformed rows instead of failing")
	fs.IntVar(&o.rank, "rank", 10, "train: rank of the factors")
	fs.IntVar(&o.epochs, "epochs", 0, "train: ALS sweeps (0: completion.DefaultALSSweeps)")
	fs.IntVar(&o.patience, "patience", 0, "train: sweeps without validation improvement before stopping (0: default; negative: never)")
	fs.IntVar(&o.shards, "shards", 0, "number of output files of sharded outputs (0: 4)")
	fs.Uint64Var(&o.seed, "seed", 1, "train: seed of the initial factors; with --privacy, seeds the noise too (reproducible, NOT private)")
	fs.Float64Var(&o.reg, "reg", 0, "train: per-observation factor penalty (0: completion.DefaultALSReg)")
	fs.Float64Var(&o.regBias, "reg-bias", 0, "train: bias penalty (0: completion.DefaultALSRegBias; negative: none)")
	fs.Float64Var(&o.initScale, "init-scale", 0, "train: standard deviation of the initial factors (0: default)")
	fs.BoolVar(&o.noBias, "no-bias", false, "train: no global mean and bias terms")
	fs.BoolVar(&o.seen, "seen", true, "train: store every user's training items in the model (read into the driver; turn off for logs that do not fit it)")
	fs.BoolVar(&o.allUsers, "all-users", false, "recommend: top-N for every user of the model")
	fs.BoolVar(&o.jsonOut, "json", false, "print the result as JSON")
	fs.BoolVar(&o.force, "force", false, "train: replace an existing model file")
	fs.BoolVar(&o.noMemoryCheck, "no-memory-check", false, "run on Prism in-process even when the input looks too large for this machine's memory")
	fs.BoolVar(&o.verbose, "verbose", false, "show the runner's and SDK's informational logs")
	fs.IntVar(&o.k, "k", 10, "eval: ranking cut-off")
	fs.IntVar(&o.n, "n", 10, "recommend: list length")
	fs.StringVar(&o.ranking, "ranking", "", "eval, recommend: how rating models' lists are ranked, as dprec eval and recommend --ranking: relevance (the default), credibility (K = --shrinkage) or prediction")
	fs.Float64Var(&o.shrinkage, "shrinkage", models.DefaultShrinkage, "eval, recommend: K, the credibility constant of --ranking credibility; without --ranking, 0 ranks by the prediction, as dprec eval and recommend")
	fs.Float64Var(&o.threshold, "threshold", 4, "eval: relevance threshold of a test rating")
	fs.StringVar(&o.privacy, "privacy", "none", "train: privacy mode (entry level: one rating's value is protected, positions public): none; bias (global mean and item biases from noisy sums); als (the residual route of dprec train --privacy als: the bias release at 5% of epsilon, every rating's clipped residual from it with Laplace noise drawn in the workers, then ALS on the noisy residuals as post-processing; needs --delta > 0, of which it spends none)")
	fs.StringVar(&o.items, "items", "", "train --privacy bias|als: public item catalogue (CSV, item ID in the first column, optional header); the model's items are exactly these (required)")
	fs.Float64Var(&o.epsilon, "epsilon", 1, "train --privacy: total epsilon")
	fs.Float64Var(&o.delta, "delta", 0, "train --privacy: total delta (bias with --mechanism gaussian; als needs > 0, as dprec train)")
	fs.StringVar(&o.mechanism, "mechanism", "", "train --privacy bias: laplace (entry unit's default) or gaussian (user unit's default; needs --delta > 0)")
	fs.StringVar(&o.unit, "privacy-unit", "entry", "train --privacy: privacy unit, entry (one rating's value) or user (add or remove one user with all their ratings; --privacy bias only; needs --max-ratings-per-user and --items; the model file has no user dictionary, user rows or exact counts)")
	fs.IntVar(&o.maxPerUser, "max-ratings-per-user", 0, "train --privacy-unit user: k, the most ratings one user contributes (a random subset of k, one per item, is kept in the group-by-user step; the item counts and sums read all of them, one per item, each weighted by min(1, sqrt(k/m)) for a user with m items, k/m under laplace)")
	fs.Float64Var(&o.ratingMin, "rating-min", 0.5, "train --privacy: public lower end of the rating scale (ratings are clamped to it)")
	fs.Float64Var(&o.ratingMax, "rating-max", 5, "train --privacy: public upper end of the rating scale")
	fs.IntVar(&o.jobPort, "job_port", 8073, "job-server: port of Prism's job management service (0: any free port)")
}

func (o *options) load() pipeline.LoadSpec {
	return pipeline.LoadSpec{Format: o.format, Delimiter: o.delimiter, Header: o.header,
		User: o.userCol, Item: o.itemCol, Rating: o.ratingCol, SkipInvalid: o.skipInvalid}
}

const usage = `usage: dprec-beam COMMAND [flags]

commands:
  stats       users, items, ratings and per-item count and mean of a log
  train       ALS (biases and rank-R factors), one pipeline per half-sweep;
              --privacy bias|als --items CATALOGUE: private at entry level;
              --privacy bias --privacy-unit user --max-ratings-per-user K:
              private at the user unit
  eval        RMSE, MAE and ranking metrics of a model on a test log
  recommend   --all-users: top-N for every user, sharded Parquet
  job-server  a Prism job server on loopback (for --runner universal)

Run "dprec-beam COMMAND -help" for the flags.`

func main() {
	args := os.Args[1:]
	cmd := ""
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	var o options
	defineFlags(flag.CommandLine, &o)
	flag.CommandLine.Usage = func() {
		fmt.Fprintln(os.Stderr, usage)
		flag.PrintDefaults()
	}
	if err := flag.CommandLine.Parse(args); err != nil {
		os.Exit(2)
	}
	if !o.verbose {
		beamlog.LogLevel = "warn" // beam.Init sets up slog with it
	}
	// After the flags: on a cluster this binary also starts as a worker,
	// and Init then runs the worker harness and does not return.
	beam.Init()
	if err := run(context.Background(), cmd, &o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "dprec-beam:", err)
		var ue usageError
		var se *pipeline.ScaleError
		if errors.As(err, &ue) || errors.As(err, &se) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

type usageError string

func (e usageError) Error() string { return string(e) }

func run(ctx context.Context, cmd string, o *options, w io.Writer) error {
	need := func(name, v string) error {
		if v == "" {
			return usageError(fmt.Sprintf("%s needs --%s", cmd, name))
		}
		return nil
	}
	if o.data != "" && !o.noMemoryCheck && prismInProcess() && (cmd == "stats" || cmd == "train" || cmd == "eval") {
		globs := o.data
		if o.valid != "" {
			globs += "," + o.valid
		}
		if err := pipeline.CheckPrismMemory(ctx, globs, 0.8); err != nil {
			return err
		}
	}
	switch cmd {
	case "stats":
		if err := errors.Join(need("data", o.data), need("out", o.out)); err != nil {
			return err
		}
		c, err := pipeline.Stats(ctx, pipeline.StatsOptions{Data: o.data, Out: o.out, Shards: o.shards, Load: o.load()})
		if err != nil {
			return err
		}
		if o.jsonOut {
			return printJSON(w, c)
		}
		fmt.Fprintf(w, "%d files, %d rows, %d ratings, %d users, %d items, mean %.4f, range [%g, %g]; per-item counts and means in %s/items-*\n",
			c.Files, c.Rows, c.Ratings, c.Users, c.Items, c.Mean, c.Min, c.Max, strings.TrimSuffix(o.out, "/"))
		return nil
	case "train":
		return trainCmd(ctx, o, w)
	case "eval":
		return evalCmd(ctx, o, w)
	case "recommend":
		return recommendCmd(ctx, o, w)
	case "job-server":
		return jobServer(ctx, o, w)
	case "":
		return usageError(usage)
	}
	return usageError(fmt.Sprintf("unknown command %q\n%s", cmd, usage))
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func seconds(ds []time.Duration) []float64 {
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = d.Seconds()
	}
	return out
}

// prismInProcess reports whether the pipelines run on Prism in this
// process (the default runner without a job server endpoint).
func prismInProcess() bool {
	r := strings.ToLower(*runners.Runner)
	return (r == "" || r == "prism" || r == "prismrunner") && *jobopts.Endpoint == ""
}
