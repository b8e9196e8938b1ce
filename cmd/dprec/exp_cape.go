package main

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/otd/cape"
	"github.com/urfave/cli/v2"
	"gonum.org/v1/gonum/mat"
)

func init() {
	experimentCmd.Subcommands = append(experimentCmd.Subcommands, &cli.Command{
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
	if p := c.String("real-ratings"); p != "" {
		x, err := expCapeRatingRows(p, c.Int("real-items"))
		if err != nil {
			return err
		}
		cfg.Real = x
		cfg.RealName = fmt.Sprintf("%s, users x top-%d items", filepath.Base(p), c.Int("real-items"))
	}
	var runs []func(cape.ExperimentConfig) ([]cape.Table, error)
	switch c.String("only") {
	case "all":
		runs = append(runs, cape.PCAExperiment, cape.AGNExperiment)
	case "pca":
		runs = append(runs, cape.PCAExperiment)
	case "agn":
		runs = append(runs, cape.AGNExperiment)
	case "real":
		if cfg.Real == nil {
			return cli.Exit("--only real needs --real-ratings FILE", exitUsage)
		}
		cfg.RealOnly = true
		runs = append(runs, cape.PCAExperiment)
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

// expCapeRatingRows reads a ratings CSV (header, then user,item,rating,...)
// into a users x D matrix over the D most-rated items, each rating divided
// by 5 sqrt(D) (ratings are at most 5: a public bound) so every row has
// norm <= 1.
func expCapeRatingRows(path string, d int) (*mat.Dense, error) {
	if d < 2 {
		return nil, cli.Exit(fmt.Sprintf("--real-items %d: want at least 2", d), exitUsage)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cr := csv.NewReader(f)
	cr.FieldsPerRecord = -1
	type rating struct {
		u, i string
		r    float64
	}
	var all []rating
	count := map[string]int{}
	for line := 1; ; line++ {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(rec) < 3 {
			return nil, fmt.Errorf("%s: line %d: %d fields, want user,item,rating", path, line, len(rec))
		}
		r, err := strconv.ParseFloat(rec[2], 64)
		if err != nil {
			if line == 1 {
				continue // header
			}
			return nil, fmt.Errorf("%s: line %d: rating %q: %v", path, line, rec[2], err)
		}
		if !(r >= 0 && r <= 5) {
			return nil, fmt.Errorf("%s: line %d: rating %v outside [0, 5]", path, line, r)
		}
		all = append(all, rating{rec[0], rec[1], r})
		count[rec[1]]++
	}
	items := make([]string, 0, len(count))
	for it := range count {
		items = append(items, it)
	}
	sort.Slice(items, func(a, b int) bool {
		if count[items[a]] != count[items[b]] {
			return count[items[a]] > count[items[b]]
		}
		return items[a] < items[b]
	})
	if len(items) < d {
		return nil, fmt.Errorf("%s: only %d items, --real-items %d", path, len(items), d)
	}
	col := map[string]int{}
	for j, it := range items[:d] {
		col[it] = j
	}
	row := map[string]int{}
	for _, r := range all {
		if _, ok := row[r.u]; !ok {
			row[r.u] = len(row)
		}
	}
	x := mat.NewDense(len(row), d, nil)
	scale := 5 * math.Sqrt(float64(d))
	for _, r := range all {
		if j, ok := col[r.i]; ok {
			x.Set(row[r.u], j, r.r/scale)
		}
	}
	return x, nil
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
