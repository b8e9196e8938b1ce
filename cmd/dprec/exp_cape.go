package main

import (
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/otd/cape"
	"github.com/urfave/cli/v2"
)

func init() {
	experimentCmd.Subcommands = append(experimentCmd.Subcommands, &cli.Command{
		Name:  "cape",
		Usage: "seed 002 figures: capePCA q_CE and capeAGN e_comp versus epsilon, N_s and delta, with conv, local and non-private curves",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "out", Value: "cape-results", Usage: "directory for the CSV tables and PNG plots"},
			&cli.BoolFlag{Name: "quick", Usage: "small grids, sizes and 2 repetitions (smoke run)"},
			&cli.IntFlag{Name: "reps", Usage: "repetitions per point (default 10, the seed's; 2 with --quick)"},
			&cli.StringFlag{Name: "only", Value: "all", Usage: "pca, agn or all"},
			&cli.BoolFlag{Name: "force", Usage: "overwrite existing files"},
			&cli.Uint64Flag{Name: "seed", Usage: "seed of data and noise (default 1; experiments are reproducible, NOT private)"},
		},
		Action: expCapeRun,
	})
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
	cfg := cape.ExperimentConfig{Quick: c.Bool("quick"), Reps: c.Int("reps"), Seed: seed}
	var runs []func(cape.ExperimentConfig) ([]cape.Table, error)
	switch c.String("only") {
	case "all":
		runs = append(runs, cape.PCAExperiment, cape.AGNExperiment)
	case "pca":
		runs = append(runs, cape.PCAExperiment)
	case "agn":
		runs = append(runs, cape.AGNExperiment)
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
				expCapePrint(os.Stdout, t)
			}
		}
	}
	return nil
}

func expCapeWrite(dir string, force bool, t cape.Table) error {
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

func expCapePrint(w io.Writer, t cape.Table) {
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
