package main

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/dprec/dprec/cmd/dprec/internal/experiment/otdexp"
	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/otd"
	"github.com/urfave/cli/v2"
)

// expSpectralCmd builds the "dprec experiment spectral" command (listed in
// commands.go).
func expSpectralCmd() *cli.Command {
	return &cli.Command{
		Name:  "spectral",
		Usage: "e_comp of non-private, AGN, AVN, DP-TPM and random vectors versus epsilon and N (Imtiaz and Sarwate 2018: orthogonal tensor decomposition fig. 1, distributed fig. 3)",
		Description: `Single-topic model (Imtiaz and Sarwate 2018, orthogonal, sec. 4: uniform weights, Dirichlet(1) topics, documents of
3 words, D=10,K=5 and D=50,K=10) and spherical Gaussian mixture (Imtiaz and Sarwate 2018, distributed, fig. 3: sigma^2 = 0.05,
means in the unit ball, rows divided by the public constant 1 + sigma (sqrt(D) + 3) and clipped to
norm 1). For each size: e_comp versus epsilon at --n documents, and versus N at --epsilon, averaged
over --runs runs (fresh model, data and noise per run). Topic estimates have negative entries zeroed
and are renormalised before e_comp. Budget split equal between the two releases (--split).

Writes DIR/<model>_D<d>_K<k>_vs_<epsilon|n>.csv (x, method, mean, sd, runs_ok, runs_failed) and
.png plots, and prints the tables on stdout. The noise is seeded (--seed, default 1): experiment
results are reproducible and NOT private.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "out", Value: "spectral-experiment", Usage: "output directory for CSV files and plots"},
			forceFlag("overwrite existing files in --out", ""),
			&cli.StringFlag{Name: "model", Value: "both", Usage: "stm, mog or both"},
			&cli.IntFlag{Name: "runs", Value: 10, Usage: "runs per point (the seeds use 10)"},
			&cli.BoolFlag{Name: "quick", Usage: "a small grid (D=10,K=5 only, 2 runs, 3 epsilons, 2 sizes) that runs in seconds"},
			&cli.StringFlag{Name: "epsilons", Value: "0.1,0.2,0.5,1,2,5,10", Usage: "comma-separated epsilon grid"},
			&cli.IntFlag{Name: "n", Value: 20000, Usage: "N of the error-versus-epsilon tables"},
			&cli.StringFlag{Name: "ns", Value: "1000,3000,10000,30000,100000", Usage: "comma-separated N grid"},
			&cli.Float64Flag{Name: "epsilon", Value: 1, Usage: "epsilon of the error-versus-N tables"},
			&cli.Float64Flag{Name: "delta", Value: 0.01, Usage: "total delta"},
			&cli.Float64Flag{Name: "split", Value: 0.5, Usage: "fraction of epsilon (and of delta, Gaussian stages) for the M2 release"},
			&cli.StringFlag{Name: "calibration", Value: "analytic", Usage: "Gaussian calibration: analytic, classic (epsilon per stage <= 1) or tight"},
			&cli.Uint64Flag{Name: "seed", Usage: "seed of the whole experiment (default 1)"},
		},
		Action: runWithOptions(expSpectralOptionsOf, expSpectralRun),
	}
}

// expSpectralFloats parses a comma-separated list of positive numbers.
func expSpectralFloats(flag, s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		v, err := strconv.ParseFloat(f, 64)
		if err != nil || !(v > 0) || math.IsInf(v, 0) {
			return nil, cli.Exit(fmt.Sprintf("--%s: %q is not a positive number", flag, f), exitUsage)
		}
		out = append(out, v)
	}
	return out, nil
}

// expSpectralOptions are the settings of experiment spectral.
type expSpectralOptions struct {
	globalOptions
	Config otdexp.Config // the grid, runs, budget and seed (Model set per model)
	Models []string      // stm, mog or both, in that order
	Out    string        // output directory
	Force  bool
}

// expSpectralOptionsOf reads and checks the flags of experiment spectral;
// --quick replaces the grid by a small one.
func expSpectralOptionsOf(c *cli.Context) (*expSpectralOptions, error) {
	eps, err := expSpectralFloats("epsilons", c.String("epsilons"))
	if err != nil {
		return nil, err
	}
	nsF, err := expSpectralFloats("ns", c.String("ns"))
	if err != nil {
		return nil, err
	}
	ns := make([]int, len(nsF))
	for i, v := range nsF {
		if v != math.Trunc(v) || v < 3 {
			return nil, cli.Exit(fmt.Sprintf("--ns: %v is not an integer >= 3", v), exitUsage)
		}
		ns[i] = int(v)
	}
	cal, err := parseCalibration(c.String("calibration"))
	if err != nil {
		return nil, err
	}
	var models []string
	switch m := c.String("model"); m {
	case "both":
		models = []string{"stm", "mog"}
	case "stm", "mog":
		models = []string{m}
	default:
		return nil, cli.Exit(fmt.Sprintf("--model %q: want stm, mog or both", m), exitUsage)
	}
	seed, ok := seedOf(c)
	if !ok {
		seed = 1
	}
	base := otdexp.Config{
		Epsilons: eps, FixedN: c.Int("n"), Ns: ns, FixedEpsilon: c.Float64("epsilon"),
		Delta: c.Float64("delta"), Runs: c.Int("runs"), Split: c.Float64("split"),
		Calibration: cal, Seed: seed,
	}
	if c.Bool("quick") {
		base.Settings = []otdexp.Setting{{D: 10, K: 5}}
		base.Epsilons = []float64{0.5, 2, 10}
		base.FixedN = 10000
		base.Ns = []int{1000, 30000}
		if !c.IsSet("runs") {
			base.Runs = 2
		}
	}
	if base.Runs < 1 {
		return nil, cli.Exit(fmt.Sprintf("--runs %d must be at least 1", base.Runs), exitUsage)
	}
	return &expSpectralOptions{globalOptions: globalOptionsOf(c), Config: base, Models: models,
		Out: c.String("out"), Force: c.Bool("force")}, nil
}

// expSpectralRun runs the experiment of o for each model, writes the
// tables' CSV files and plots in o.Out and prints the tables on s.Out.
func expSpectralRun(o *expSpectralOptions, s *iostreams) error {
	base, dir, force := o.Config, o.Out, o.Force
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if !o.Quiet {
		fmt.Fprintf(s.Err, "experiment noise is seeded (seed %d): reproducible, NOT private\n", base.Seed)
	}
	for _, m := range o.Models {
		cfg := base
		cfg.Model = otd.Model(m)
		bar := s.bar(o.globalOptions, -1, "spectral "+m)
		cfg.Progress = func(done, total int) {
			bar.ChangeMax(total)
			_ = bar.Set(done)
		}
		t0 := time.Now()
		tabs, err := otdexp.Spectral(cfg)
		_ = bar.Finish()
		if err != nil {
			return err
		}
		if !o.Quiet {
			fmt.Fprintf(s.Err, "%s: %d tables in %s\n", m, len(tabs), time.Since(t0).Round(time.Millisecond))
		}
		for _, t := range tabs {
			if err := expSpectralWrite(dir, force, &t); err != nil {
				return err
			}
			expSpectralPrint(s.Out, &t)
		}
	}
	return nil
}

// expSpectralWrite writes one table's CSV and plot.
func expSpectralWrite(dir string, force bool, t *otdexp.Table) error {
	csvPath := filepath.Join(dir, t.Name+".csv")
	err := data.WriteFileAtomic(csvPath, force, func(w io.Writer) error {
		cw := csv.NewWriter(w)
		_ = cw.Write([]string{t.Vary, "method", "ecomp_mean", "ecomp_sd", "runs_ok", "runs_failed", "fixed_" + map[string]string{"epsilon": "n", "n": "epsilon"}[t.Vary], "delta"})
		for mi, m := range t.Methods {
			for xi, x := range t.X {
				ok := t.Runs - t.Fail[mi][xi]
				_ = cw.Write([]string{
					strconv.FormatFloat(x, 'g', -1, 64), string(m),
					strconv.FormatFloat(t.Mean[mi][xi], 'g', 6, 64),
					strconv.FormatFloat(t.Std[mi][xi], 'g', 6, 64),
					strconv.Itoa(ok), strconv.Itoa(t.Fail[mi][xi]),
					strconv.FormatFloat(t.Fixed, 'g', -1, 64),
					strconv.FormatFloat(t.Delta, 'g', -1, 64),
				})
			}
		}
		cw.Flush()
		return cw.Error()
	})
	if err != nil {
		return err
	}
	var series []plotSeries
	for mi, m := range t.Methods {
		series = append(series, plotSeries{Name: string(m), X: t.X, Y: t.Mean[mi]})
	}
	xl, title := "epsilon", fmt.Sprintf("%s D=%d K=%d, N=%g, delta=%g", strings.ToUpper(string(t.Model)), t.D, t.K, t.Fixed, t.Delta)
	if t.Vary == "n" {
		xl, title = "N", fmt.Sprintf("%s D=%d K=%d, epsilon=%g, delta=%g", strings.ToUpper(string(t.Model)), t.D, t.K, t.Fixed, t.Delta)
	}
	return plotLines(filepath.Join(dir, t.Name+".png"), force, title, xl, "e_comp (mean of runs)", true, true, series)
}

// expSpectralPrint prints a table as aligned text.
func expSpectralPrint(w io.Writer, t *otdexp.Table) {
	fixed := "N"
	if t.Vary == "n" {
		fixed = "epsilon"
	}
	fmt.Fprintf(w, "\n%s (%s = %g, delta = %g, %d runs; e_comp mean)\n", t.Name, fixed, t.Fixed, t.Delta, t.Runs)
	fmt.Fprintf(w, "%-11s", t.Vary)
	for _, x := range t.X {
		fmt.Fprintf(w, " %9g", x)
	}
	fmt.Fprintln(w)
	for mi, m := range t.Methods {
		fmt.Fprintf(w, "%-11s", m)
		for xi := range t.X {
			s := strconv.FormatFloat(t.Mean[mi][xi], 'f', 4, 64)
			if f := t.Fail[mi][xi]; f > 0 {
				s += fmt.Sprintf("!%d", f)
			}
			fmt.Fprintf(w, " %9s", s)
		}
		fmt.Fprintln(w)
	}
}
