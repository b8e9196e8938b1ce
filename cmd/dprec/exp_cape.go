package main

import (
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/dprec/dprec/cmd/dprec/internal/experiment/capeexp"
	"github.com/dprec/dprec/data"
	"github.com/urfave/cli/v2"
)

// expCapeCmd builds the "dprec experiment cape" command (listed in commands.go).
func expCapeCmd() *cli.Command {
	return &cli.Command{
		Name:  "cape",
		Usage: "figures of Imtiaz and Sarwate 2018 (distributed): capePCA q_CE and capeAGN e_comp versus epsilon, N_s and delta, with conv, local and non-private curves",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "out", Value: "cape-results", Usage: "directory for the CSV tables and PNG plots"},
			&cli.BoolFlag{Name: "quick", Usage: "small grids, sizes and 2 repetitions (smoke run)"},
			&cli.IntFlag{Name: "reps", Usage: "repetitions per point (default 10, as in the paper; 2 with --quick)"},
			&cli.StringFlag{Name: "only", Value: "all", Usage: "pca, agn, real (only the --real-ratings table) or all"},
			forceFlag("overwrite existing files", ""),
			&cli.Uint64Flag{Name: "seed", Usage: "seed of data and noise (default 1; experiments are reproducible, NOT private)"},
			&cli.StringFlag{Name: "real-ratings", Usage: "MovieLens-style ratings CSV (userId,movieId,rating,...): adds a capePCA table on users x the most-rated item columns"},
			&cli.IntFlag{Name: "real-items", Value: 50, Usage: "number of item columns D of the real data set"},
		},
		Action: runWithOptions(expCapeOptionsOf, expCapeRun),
	}
}

// expCapeOptions are the flags of dprec experiment cape.
type expCapeOptions struct {
	globalOptions
	Out         string // --out: the results directory
	Quick       bool   // --quick
	Reps        int    // --reps (0: the default)
	Only        string // --only: pca, agn, real or all
	Force       bool   // --force
	Seed        uint64 // --seed (1 when not given)
	RealRatings string // --real-ratings ("": none)
	RealItems   int    // --real-items
}

// expCapeOptionsOf reads the flags; bad --only and --real-items values
// are usage errors.
func expCapeOptionsOf(c *cli.Context) (*expCapeOptions, error) {
	o := &expCapeOptions{globalOptions: globalOptionsOf(c), Out: c.String("out"), Quick: c.Bool("quick"), Reps: c.Int("reps"),
		Only: c.String("only"), Force: c.Bool("force"), RealRatings: c.String("real-ratings"), RealItems: c.Int("real-items")}
	var ok bool
	if o.Seed, ok = seedOf(c); !ok {
		o.Seed = 1
	}
	if o.RealRatings != "" && o.RealItems < 2 {
		return nil, cli.Exit(fmt.Sprintf("--real-items %d: want at least 2", o.RealItems), exitUsage)
	}
	switch o.Only {
	case "all", "pca", "agn":
	case "real":
		if o.RealRatings == "" {
			return nil, cli.Exit("--only real needs --real-ratings FILE", exitUsage)
		}
	default:
		return nil, cli.Exit(fmt.Sprintf("--only %q: want pca, agn or all", o.Only), exitUsage)
	}
	return o, nil
}

// expCapeRun runs the experiments, writes their tables and plots under
// o.Out and prints the tables on ios.Out unless --quiet.
func expCapeRun(o *expCapeOptions, ios *iostreams) error {
	dir := o.Out
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	cfg := capeexp.Config{Quick: o.Quick, Reps: o.Reps, Seed: o.Seed}
	if p := o.RealRatings; p != "" {
		x, err := capeexp.RatingRows(p, o.RealItems)
		if err != nil {
			return err
		}
		cfg.Real = x
		cfg.RealName = fmt.Sprintf("%s, users x top-%d items", filepath.Base(p), o.RealItems)
	}
	var runs []func(capeexp.Config) ([]capeexp.Table, error)
	switch o.Only {
	case "all":
		runs = append(runs, capeexp.PCA, capeexp.AGN)
	case "pca":
		runs = append(runs, capeexp.PCA)
	case "agn":
		runs = append(runs, capeexp.AGN)
	case "real":
		cfg.RealOnly = true
		runs = append(runs, capeexp.PCA)
	}
	for i, run := range runs {
		bar := ios.bar(o.globalOptions, -1, fmt.Sprintf("cape experiment %d/%d", i+1, len(runs)))
		cfg.Progress = func(done, total int) {
			bar.ChangeMax(total)
			_ = bar.Set(done)
		}
		tables, err := run(cfg)
		_ = bar.Finish()
		if err != nil {
			return err
		}
		for _, t := range tables {
			if err := expCapeWrite(dir, o.Force, t); err != nil {
				return err
			}
			if !o.Quiet {
				expCapePrint(ios.Out, t)
			}
		}
	}
	return nil
}

func expCapeWrite(dir string, force bool, t capeexp.Table) error {
	csvPath := filepath.Join(dir, t.Name+".csv")
	err := data.WriteFileAtomic(csvPath, force, func(w io.Writer) error {
		cw := csv.NewWriter(w)
		head := []string{t.XLabel}
		for _, s := range t.Series {
			head = append(head, s.Name, s.Name+" sd")
		}
		if err := cw.Write(head); err != nil {
			return err
		}
		for i, x := range t.X {
			row := []string{strconv.FormatFloat(x, 'g', -1, 64)}
			for _, s := range t.Series {
				row = append(row, strconv.FormatFloat(s.Y[i], 'g', 6, 64), strconv.FormatFloat(s.YErr[i], 'g', 4, 64))
			}
			if err := cw.Write(row); err != nil {
				return err
			}
		}
		cw.Flush()
		return cw.Error()
	})
	if err != nil {
		return err
	}
	series := make([]plotSeries, len(t.Series))
	for i, s := range t.Series {
		series[i] = plotSeries{Name: s.Name, X: t.X, Y: s.Y, YErr: s.YErr}
	}
	return plotLines(filepath.Join(dir, t.Name+".png"), force, t.Title, t.XLabel, t.YLabel, t.LogX, false, series)
}

func expCapePrint(w io.Writer, t capeexp.Table) {
	fmt.Fprintf(w, "\n%s\n%-10s", t.Title, t.XLabel)
	for _, s := range t.Series {
		fmt.Fprintf(w, " %20s", s.Name)
	}
	fmt.Fprintln(w)
	for i, x := range t.X {
		fmt.Fprintf(w, "%-10g", x)
		for _, s := range t.Series {
			fmt.Fprintf(w, " %11.4g ± %-6.2g", s.Y[i], s.YErr[i])
		}
		fmt.Fprintln(w)
	}
}
