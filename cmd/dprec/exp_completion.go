package main

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/dprec/dprec/cmd/dprec/internal/experiment/completionexp"
	"github.com/dprec/dprec/decomposition"
	"github.com/urfave/cli/v2"
)

func expCompletionSyntheticCmd() *cli.Command {
	return &cli.Command{
		Name:  "completion-synthetic",
		Usage: "test RMSE and recovery error of CP/Tucker completion versus the observed fraction (synthetic set-up of Wei et al. 2021)",
		Description: `Seed 001: a 20x20x20 tensor of rank 3 with standard-normal factors (CP) or factors and core
(Tucker), Gaussian noise at SNR 1 (sigma^2 = mean(X^2)), observed at each fraction of cells (10% of
the observed cells held back for early stopping). For each kind, fraction and seed the model of the
same kind and rank is fitted by SGD (300 epochs, step 0.02, decay 0.01, reg 0.01, patience 20, no
bias terms); the test RMSE is
on the unobserved noisy cells and the recovery error |Xhat - X|_F / |X|_F against the noiseless tensor.

Writes one CSV row per run (kind, fraction, seed, observed, sigma, test_rmse, recovery, epochs) to
--out or stdout, and with --plot a PNG/SVG of the mean recovery error (and test RMSE / sigma) with
standard deviations over seeds.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "kind", Value: "both", Usage: "cp, tucker or both"},
			&cli.StringFlag{Name: "fractions", Value: "0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9", Usage: "comma-separated observed fractions in (0,1)"},
			&cli.IntFlag{Name: "seeds", Value: 5, Usage: "repetitions per fraction"},
			&cli.IntFlag{Name: "size", Value: 20, Usage: "size of each of the three modes"},
			&cli.IntFlag{Name: "rank", Value: 3, Usage: "rank of the truth and the model"},
			&cli.Float64Flag{Name: "snr", Value: 1, Usage: "signal-to-noise ratio mean(X^2)/sigma^2"},
			&cli.StringFlag{Name: "out", Usage: "CSV file (default stdout)"},
			&cli.StringFlag{Name: "plot", Usage: "write a plot to this .png or .svg file"},
			forceFlag("overwrite existing output files", ""),
			&cli.Uint64Flag{Name: "seed", Usage: "seed of the whole experiment (default 1)"},
		},
		Action: runWithOptions(expCompletionSyntheticOptionsOf, expCompletionSyntheticRun),
	}
}

// expCompletionFloats parses a comma-separated list of numbers.
func expCompletionFloats(flag, s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		v, err := strconv.ParseFloat(f, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, cli.Exit(fmt.Sprintf("--%s: %q is not a number", flag, f), exitUsage)
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		return nil, cli.Exit(fmt.Sprintf("--%s: empty list", flag), exitUsage)
	}
	return out, nil
}

// expCompletionKinds parses --kind.
func expCompletionKinds(s string) ([]decomposition.Kind, error) {
	switch s {
	case "both":
		return []decomposition.Kind{decomposition.CP, decomposition.Tucker}, nil
	case "cp", "tucker":
		return []decomposition.Kind{decomposition.Kind(s)}, nil
	}
	return nil, cli.Exit(fmt.Sprintf("--kind %q: want cp, tucker or both", s), exitUsage)
}

// expCompletionWrite writes a CSV table to path (atomically, --force to
// replace) or to s.Out when path is empty or "-".
func expCompletionWrite(s *iostreams, path string, force bool, header []string, rows [][]string) error {
	write := func(w io.Writer) error {
		cw := csv.NewWriter(w)
		if err := cw.Write(header); err != nil {
			return err
		}
		if err := cw.WriteAll(rows); err != nil {
			return err
		}
		cw.Flush()
		return cw.Error()
	}
	if path == "" {
		path = "-"
	}
	if err := s.writeFile(path, force, write); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

func expCompletionG(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }

// expCompletionSyntheticOptions are the flags of dprec experiment
// completion-synthetic.
type expCompletionSyntheticOptions struct {
	globalOptions
	Kinds     []decomposition.Kind // --kind
	Fractions []float64            // --fractions
	Seeds     int                  // --seeds
	Size      int                  // --size
	Rank      int                  // --rank
	SNR       float64              // --snr
	Out       string               // --out ("" or "-": the output stream)
	Plot      string               // --plot ("": none)
	Force     bool                 // --force
	Seed      uint64               // --seed (1 when not given)
}

// expCompletionSyntheticOptionsOf reads the flags; bad values are usage
// errors.
func expCompletionSyntheticOptionsOf(c *cli.Context) (*expCompletionSyntheticOptions, error) {
	kinds, err := expCompletionKinds(c.String("kind"))
	if err != nil {
		return nil, err
	}
	fr, err := expCompletionFloats("fractions", c.String("fractions"))
	if err != nil {
		return nil, err
	}
	for _, f := range fr {
		if !(f > 0 && f < 1) {
			return nil, cli.Exit(fmt.Sprintf("--fractions: %g is not in (0,1)", f), exitUsage)
		}
	}
	o := &expCompletionSyntheticOptions{globalOptions: globalOptionsOf(c), Kinds: kinds, Fractions: fr, Seeds: c.Int("seeds"),
		Size: c.Int("size"), Rank: c.Int("rank"), SNR: c.Float64("snr"), Out: c.String("out"), Plot: c.String("plot"), Force: c.Bool("force")}
	if o.Seeds < 1 || o.Size < 2 || o.Rank < 1 || o.Rank > o.Size || !(o.SNR > 0) {
		return nil, cli.Exit("--seeds, --size, --rank and --snr must be positive (rank <= size)", exitUsage)
	}
	var ok bool
	if o.Seed, ok = seedOf(c); !ok {
		o.Seed = 1
	}
	return o, nil
}

// expCompletionSyntheticRun runs the experiment, writes the CSV (and the
// plot) and prints the summary on ios.Err unless --quiet.
func expCompletionSyntheticRun(o *expCompletionSyntheticOptions, ios *iostreams) error {
	kinds, fr, seed, n := o.Kinds, o.Fractions, o.Seed, o.Size
	var all []completionexp.SyntheticRow
	bar := ios.bar(o.globalOptions, int64(len(kinds)*len(fr)*o.Seeds), "completion-synthetic")
	for i, k := range kinds {
		cfg := completionexp.SyntheticConfig{Kind: k, Dims: []int{n, n, n}, Rank: o.Rank, Fractions: fr, Seeds: o.Seeds, SNR: o.SNR}
		rows, err := completionexp.CompletionSynthetic(cfg, rand.NewPCG(seed, uint64(i)), func(completionexp.SyntheticRow) { _ = bar.Add(1) })
		if err != nil {
			_ = bar.Finish()
			return err
		}
		all = append(all, rows...)
	}
	_ = bar.Finish()
	var out [][]string
	for _, r := range all {
		out = append(out, []string{r.Kind, expCompletionG(r.Fraction), strconv.Itoa(r.Seed), strconv.Itoa(r.Observed),
			expCompletionG(r.Sigma), expCompletionG(r.TestRMSE), expCompletionG(r.Recovery), strconv.Itoa(r.Epochs)})
	}
	if err := expCompletionWrite(ios, o.Out, o.Force,
		[]string{"kind", "fraction", "seed", "observed", "sigma", "test_rmse", "recovery", "epochs"}, out); err != nil {
		return err
	}
	sum := completionexp.SummarizeSynthetic(all)
	if !o.Quiet {
		fmt.Fprintln(ios.Err, "kind    fraction  test_rmse/sigma  recovery (mean ± sd over seeds)")
		for _, s := range sum {
			fmt.Fprintf(ios.Err, "%-7s %8.2f  %15.3f  %.3f ± %.3f\n", s.Kind, s.Fraction, s.TestRMSE/s.Sigma, s.Recovery, s.RecoverySD)
		}
	}
	if p := o.Plot; p != "" {
		var series []plotSeries
		for _, k := range kinds {
			rec := plotSeries{Name: string(k) + " recovery error"}
			tst := plotSeries{Name: string(k) + " test RMSE / sigma"}
			for _, s := range sum {
				if s.Kind != string(k) {
					continue
				}
				rec.X, rec.Y, rec.YErr = append(rec.X, s.Fraction), append(rec.Y, s.Recovery), append(rec.YErr, s.RecoverySD)
				tst.X, tst.Y = append(tst.X, s.Fraction), append(tst.Y, s.TestRMSE/s.Sigma)
			}
			series = append(series, rec, tst)
		}
		title := fmt.Sprintf("%dx%dx%d rank %d, SNR %g, %d seeds", n, n, n, o.Rank, o.SNR, o.Seeds)
		if err := plotLines(p, o.Force, title, "observed fraction", "error", false, false, series); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
	}
	return nil
}

func expCompletionSpeedCmd() *cli.Command {
	return &cli.Command{
		Name:  "completion-speed",
		Usage: "seconds per SGD epoch and entries per second on synthetic tensors (SPLATT comparison)",
		Description: `Times stratified SGD epochs (rank 10 CP by default, step 0.01, reg 0.005: SPLATT's settings in
bench/README.md) on uniform synthetic tensors: by default MovieLens-100K-shaped (943x1682x212, 100,000
entries) and the 10M tensor (200,000x50,000x500), at 1 and all threads. Custom sizes:
--sizes "IxJxK:NNZ,..." (or IxJ:NNZ for matrices). Writes CSV (size, dims, nnz, kind, rank, threads,
epochs, seconds_per_epoch, entries_per_second, train_rmse) to --out or stdout.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "sizes", Value: "ml100k,10m", Usage: "ml100k, 10m or IxJxK:NNZ, comma-separated"},
			&cli.StringFlag{Name: "threads", Usage: "comma-separated worker counts (default 1 and all cores)"},
			&cli.IntFlag{Name: "epochs", Value: 5, Usage: "epochs timed per run"},
			&cli.IntFlag{Name: "rank", Value: 10, Usage: "rank"},
			&cli.StringFlag{Name: "kind", Value: "cp", Usage: "cp or tucker"},
			&cli.BoolFlag{Name: "bias", Usage: "train bias terms too"},
			&cli.StringFlag{Name: "out", Usage: "CSV file (default stdout)"},
			forceFlag("overwrite --out", ""),
			&cli.Uint64Flag{Name: "seed", Usage: "seed (default 1)"},
		},
		Action: runWithOptions(expCompletionSpeedOptionsOf, expCompletionSpeedRun),
	}
}

// expCompletionSizes parses --sizes.
func expCompletionSizes(s string) ([]completionexp.SpeedSize, error) {
	var out []completionexp.SpeedSize
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		switch strings.ToLower(f) {
		case "":
			continue
		case "ml100k":
			out = append(out, completionexp.DefaultSpeedSizes[0])
			continue
		case "10m":
			out = append(out, completionexp.DefaultSpeedSizes[1])
			continue
		}
		dimS, nnzS, ok := strings.Cut(f, ":")
		nnz, err := strconv.Atoi(nnzS)
		if !ok || err != nil || nnz < 1 {
			return nil, cli.Exit(fmt.Sprintf("--sizes: %q is not IxJ[xK]:NNZ", f), exitUsage)
		}
		var dims []int
		for _, d := range strings.Split(dimS, "x") {
			v, err := strconv.Atoi(d)
			if err != nil || v < 1 {
				return nil, cli.Exit(fmt.Sprintf("--sizes: %q has a bad mode size %q", f, d), exitUsage)
			}
			dims = append(dims, v)
		}
		if len(dims) < 2 || len(dims) > 3 {
			return nil, cli.Exit(fmt.Sprintf("--sizes: %q must have 2 or 3 modes", f), exitUsage)
		}
		out = append(out, completionexp.SpeedSize{Name: f, Dims: dims, NNZ: nnz})
	}
	if len(out) == 0 {
		return nil, cli.Exit("--sizes: empty list", exitUsage)
	}
	return out, nil
}

// expCompletionSpeedOptions are the flags of dprec experiment
// completion-speed.
type expCompletionSpeedOptions struct {
	globalOptions
	// Config holds --sizes, --kind, --rank, --epochs, --bias and --threads.
	Config completionexp.SpeedConfig
	Out    string // --out ("" or "-": the output stream)
	Force  bool   // --force
	Seed   uint64 // --seed (1 when not given)
}

// expCompletionSpeedOptionsOf reads the flags; bad values are usage errors.
func expCompletionSpeedOptionsOf(c *cli.Context) (*expCompletionSpeedOptions, error) {
	sizes, err := expCompletionSizes(c.String("sizes"))
	if err != nil {
		return nil, err
	}
	kinds, err := expCompletionKinds(c.String("kind"))
	if err != nil || len(kinds) != 1 {
		return nil, cli.Exit(fmt.Sprintf("--kind %q: want cp or tucker", c.String("kind")), exitUsage)
	}
	cfg := completionexp.SpeedConfig{Sizes: sizes, Kind: kinds[0], Rank: c.Int("rank"), Epochs: c.Int("epochs"), Bias: c.Bool("bias")}
	if cfg.Rank < 1 || cfg.Epochs < 1 {
		return nil, cli.Exit("--rank and --epochs must be positive", exitUsage)
	}
	if s := c.String("threads"); s != "" {
		th, err := expCompletionFloats("threads", s)
		if err != nil {
			return nil, err
		}
		for _, v := range th {
			if v < 1 || v != math.Trunc(v) {
				return nil, cli.Exit(fmt.Sprintf("--threads: %g is not a positive integer", v), exitUsage)
			}
			cfg.Threads = append(cfg.Threads, int(v))
		}
	}
	o := &expCompletionSpeedOptions{globalOptions: globalOptionsOf(c), Config: cfg, Out: c.String("out"), Force: c.Bool("force")}
	var ok bool
	if o.Seed, ok = seedOf(c); !ok {
		o.Seed = 1
	}
	return o, nil
}

// expCompletionSpeedRun times the epochs, reporting each run on ios.Err
// unless --quiet, and writes the CSV.
func expCompletionSpeedRun(o *expCompletionSpeedOptions, ios *iostreams) error {
	rows, err := completionexp.CompletionSpeed(o.Config, rand.NewPCG(o.Seed, 0), func(r completionexp.SpeedRow) {
		if !o.Quiet {
			fmt.Fprintf(ios.Err, "%s threads %d: %.4f s/epoch, %.3g entries/s\n", r.Size, r.Threads, r.SecondsPerEpoch, r.EntriesPerSecond)
		}
	})
	if err != nil {
		return err
	}
	var out [][]string
	for _, r := range rows {
		dims := make([]string, len(r.Dims))
		for i, d := range r.Dims {
			dims[i] = strconv.Itoa(d)
		}
		out = append(out, []string{r.Size, strings.Join(dims, "x"), strconv.Itoa(r.NNZ), r.Kind, strconv.Itoa(r.Rank),
			strconv.Itoa(r.Threads), strconv.Itoa(r.Epochs), expCompletionG(r.SecondsPerEpoch), expCompletionG(r.EntriesPerSecond), expCompletionG(r.TrainRMSE)})
	}
	return expCompletionWrite(ios, o.Out, o.Force,
		[]string{"size", "dims", "nnz", "kind", "rank", "threads", "epochs", "seconds_per_epoch", "entries_per_second", "train_rmse"}, out)
}
