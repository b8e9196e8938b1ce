package main

import (
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/internal/experiment/capeexp"
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
			&cli.BoolFlag{Name: "force", Usage: "overwrite existing files"},
			&cli.Uint64Flag{Name: "seed", Usage: "seed of data and noise (default 1; experiments are reproducible, NOT private)"},
			&cli.StringFlag{Name: "real-ratings", Usage: "MovieLens-style ratings CSV (userId,movieId,rating,...): adds a capePCA table on users x the most-rated item columns"},
			&cli.IntFlag{Name: "real-items", Value: 50, Usage: "number of item columns D of the real data set"},
		},
		Action: expCapeRun,
	}
}

func expCapeRun(c *cli.Context) error {
	dir := c.String("out")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	seed, ok := seedOf(c)
	if !ok {
		seed = 1
	}
	cfg := capeexp.Config{Quick: c.Bool("quick"), Reps: c.Int("reps"), Seed: seed}
	if p := c.String("real-ratings"); p != "" {
		if d := c.Int("real-items"); d < 2 {
			return cli.Exit(fmt.Sprintf("--real-items %d: want at least 2", d), exitUsage)
		}
		x, err := capeexp.RatingRows(p, c.Int("real-items"))
		if err != nil {
			return err
		}
		cfg.Real = x
		cfg.RealName = fmt.Sprintf("%s, users x top-%d items", filepath.Base(p), c.Int("real-items"))
	}
	var runs []func(capeexp.Config) ([]capeexp.Table, error)
	switch c.String("only") {
	case "all":
		runs = append(runs, capeexp.PCA, capeexp.AGN)
	case "pca":
		runs = append(runs, capeexp.PCA)
	case "agn":
		runs = append(runs, capeexp.AGN)
	case "real":
		if cfg.Real == nil {
			return cli.Exit("--only real needs --real-ratings FILE", exitUsage)
		}
		cfg.RealOnly = true
		runs = append(runs, capeexp.PCA)
	default:
		return cli.Exit(fmt.Sprintf("--only %q: want pca, agn or all", c.String("only")), exitUsage)
	}
	for i, run := range runs {
		bar := newBar(c, -1, fmt.Sprintf("cape experiment %d/%d", i+1, len(runs)))
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
			if err := expCapeWrite(dir, c.Bool("force"), t); err != nil {
				return err
			}
			if !quiet(c) {
				expCapePrint(streamsOf(c).Out, t)
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
