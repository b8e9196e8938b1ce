package main

import (
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/dprec/dprec/data"
	"github.com/urfave/cli/v2"
)

func datasynthCmd() *cli.Command {
	d := data.DefaultSynthOptions()
	return &cli.Command{
		Name:      "synth",
		Usage:     "write a synthetic MovieLens-like rating log drawn from a known low-rank model, with its ground truth",
		UsageText: "dprec data synth --out FILE [--truth FILE] [model and size flags]",
		Description: "Draws distinct (user, item, time) cells by popularity, gives them the value of a CP or Tucker model\n" +
			"plus biases, adds Gaussian noise and rounds to the rating scale. The log is written in the format of\n" +
			"--out's name (csv, tsv, dat, arrow, arrows, parquet; .gz for compressed text) with raw Unix time\n" +
			"stamps; the model (factors, core, biases) is written as JSON beside it. With the default flags and\n" +
			"no --seed the output is the embedded default data set every command uses when --data is absent.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "out", Aliases: []string{"o"}, Required: true, Usage: "output rating log (\"-\" for standard output, CSV)"},
			&cli.StringFlag{Name: "truth", Usage: "ground-truth JSON file", DefaultText: "OUT.truth.json"},
			&cli.StringFlag{Name: "format", Usage: "output format (default: from the file name, CSV when unknown)"},
			&cli.IntFlag{Name: "users", Value: d.Users, Usage: "number of users to draw from"},
			&cli.IntFlag{Name: "items", Value: d.Items, Usage: "number of items to draw from"},
			&cli.IntFlag{Name: "times", Value: d.Times, Usage: "number of time buckets (0: no time column, a user x item log)"},
			&cli.IntFlag{Name: "ratings", Value: d.Ratings, Usage: "number of distinct observed cells"},
			&cli.StringFlag{Name: "kind", Value: d.Kind, Usage: "model: cp or tucker"},
			&cli.IntFlag{Name: "rank", Value: d.Rank, Usage: "CP rank"},
			&cli.StringFlag{Name: "ranks", Value: "5,5,3", Usage: "Tucker ranks P,Q,T"},
			&cli.BoolFlag{Name: "bias", Value: d.Bias, Usage: "add user, item and time biases (--bias=false to drop)"},
			&cli.Float64Flag{Name: "mean", Value: d.Mean, Usage: "global mean rating"},
			&cli.Float64Flag{Name: "noise", Value: d.Noise, Usage: "standard deviation of the Gaussian noise"},
			&cli.StringFlag{Name: "scale", Value: d.Scale, Usage: "rating scale: 0.5-5 (half stars), 1-5 (whole stars) or continuous"},
			&cli.Float64Flag{Name: "skew", Value: d.Skew, Usage: "Zipf exponent of user and item popularity (0: uniform)"},
			&cli.Float64Flag{Name: "choice", Usage: "> 0: write a click log (user, item; no rating or time column, needs --times 0) whose positions follow the model: each user's items are drawn with weight popularity x exp(choice x z), z the model's standardised user x item value; --ratings is the number of events"},
			&cli.StringFlag{Name: "time-unit", Value: string(d.TimeUnit), Usage: "width of a time bucket: hour, day, week or month"},
			&cli.StringFlag{Name: "start", Value: "2015-01-01", Usage: "start of the first time bucket: YYYY-MM-DD (UTC) or Unix seconds"},
			&cli.Uint64Flag{Name: "seed", Usage: "random seed (same seed, same log)", DefaultText: strconv.Itoa(data.DefaultSynthSeed)},
			forceFlag("overwrite existing files", ""),
		},
		Action: runWithOptions(datasynthOptionsOf, datasynthRun),
	}
}

// datasynthOptions are the flags of dprec data synth.
type datasynthOptions struct {
	globalOptions
	Synth  data.SynthOptions // the model and size flags
	Format data.Format       // --format (FormatAuto: from Out's name)
	Seed   uint64            // --seed (data.DefaultSynthSeed when not given)
	Out    string            // --out ("-": the output stream, no truth file unless Truth)
	Truth  string            // --truth ("": OUT.truth.json)
	Force  bool              // --force
}

// datasynthOptionsOf reads data synth's flags; bad values are usage errors.
func datasynthOptionsOf(c *cli.Context) (*datasynthOptions, error) {
	so, err := datasynthSynthOptions(c)
	if err != nil {
		return nil, cli.Exit("data synth: "+err.Error(), exitUsage)
	}
	format, err := data.ParseFormat(c.String("format"))
	if err != nil {
		return nil, cli.Exit("data synth: "+err.Error(), exitUsage)
	}
	seed, ok := seedOf(c)
	if !ok {
		seed = data.DefaultSynthSeed
	}
	return &datasynthOptions{globalOptions: globalOptionsOf(c), Synth: so, Format: format, Seed: seed,
		Out: c.String("out"), Truth: c.String("truth"), Force: c.Bool("force")}, nil
}

// datasynthSynthOptions reads the model and size flags.
func datasynthSynthOptions(c *cli.Context) (data.SynthOptions, error) {
	o := data.SynthOptions{
		Users: c.Int("users"), Items: c.Int("items"), Times: c.Int("times"), Ratings: c.Int("ratings"),
		Kind: c.String("kind"), Rank: c.Int("rank"), Bias: c.Bool("bias"), Mean: c.Float64("mean"),
		Noise: c.Float64("noise"), Scale: c.String("scale"), Skew: c.Float64("skew"), Choice: c.Float64("choice"),
	}
	if o.Scale == "continuous" || o.Scale == "none" {
		o.Scale = ""
	}
	if o.Mean == 0 {
		return o, fmt.Errorf("--mean 0 is not supported (zero means the default 3.5)")
	}
	parts := strings.Split(c.String("ranks"), ",")
	if len(parts) < 2 || len(parts) > 3 {
		return o, fmt.Errorf("--ranks %q: want P,Q,T", c.String("ranks"))
	}
	for m, p := range parts {
		v, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || v < 1 {
			return o, fmt.Errorf("--ranks %q: %q is not a positive integer", c.String("ranks"), p)
		}
		o.Ranks[m] = v
	}
	tu, err := data.ParseTimeUnit(c.String("time-unit"))
	if err != nil {
		return o, err
	}
	o.TimeUnit = tu
	start := c.String("start")
	if v, err := strconv.ParseInt(start, 10, 64); err == nil {
		o.Start = v
	} else if tm, err := time.Parse("2006-01-02", start); err == nil {
		o.Start = tm.Unix()
	} else {
		return o, fmt.Errorf("--start %q: want YYYY-MM-DD or Unix seconds", start)
	}
	if o.Start == 0 {
		return o, fmt.Errorf("--start 0 is not supported (zero means the default 2015-01-01)")
	}
	return o, nil
}

// datasynthRun draws the log, writes it and its ground truth, and reports
// on ios.Err unless --quiet.
func datasynthRun(opts *datasynthOptions, ios *iostreams) error {
	o, seed, out, force := opts.Synth, opts.Seed, opts.Out, opts.Force
	t0 := time.Now()
	s, truth, err := data.Synth(o, rand.NewPCG(seed, seed))
	if err != nil {
		return err
	}
	if err := ios.saveLog(out, s, data.WriteOptions{Format: opts.Format, Force: force}); err != nil {
		return err
	}
	truthPath := opts.Truth
	if truthPath == "" && out != "-" {
		truthPath = out + ".truth.json"
	}
	if truthPath != "" {
		err := ios.writeFile(truthPath, force, func(w io.Writer) error { return data.WriteSynthTruth(w, truth) })
		if err != nil {
			return err
		}
	}
	if !opts.Quiet {
		shape := fmt.Sprintf("%d users x %d items", s.Dims[0], s.Dims[1])
		if s.Order() == 3 {
			shape += fmt.Sprintf(" x %d %s buckets", s.Dims[2], s.Time.Unit)
		}
		model := fmt.Sprintf("CP rank %d", o.Rank)
		if o.Kind == "tucker" {
			model = fmt.Sprintf("Tucker ranks %v", truth.Ranks)
		}
		note := ""
		if truthPath != "" {
			note = "; truth in " + truthPath
		}
		if o.Choice > 0 {
			fmt.Fprintf(ios.Err, "dprec: wrote a click log of %d events, every value 1 (%s; %s, choice %g, seed %d) to %s in %.2fs%s\n",
				s.NNZ(), shape, model, o.Choice, seed, out, time.Since(t0).Seconds(), note)
			return nil
		}
		fmt.Fprintf(ios.Err, "dprec: wrote %d ratings (%s; %s, noise %g, scale %s, seed %d) to %s in %.2fs%s\n",
			s.NNZ(), shape, model, o.Noise, datasynthScaleName(o.Scale), seed, out, time.Since(t0).Seconds(), note)
	}
	return nil
}

func datasynthScaleName(s string) string {
	if s == "" {
		return "continuous"
	}
	return s
}
