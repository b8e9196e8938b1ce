package main

import (
	"fmt"
	"path/filepath"

	"github.com/dprec/dprec/models"
	"github.com/urfave/cli/v2"
)

// exportCmd builds the "dprec export" command (listed in commands.go).
func exportCmd() *cli.Command {
	return &cli.Command{
		Name:      "export",
		Usage:     "write a model's factors, biases, core and id dictionaries as Parquet tables (plus header.json)",
		ArgsUsage: "MODEL DIR",
		UsageText: "dprec export m.arrow m-export/\n   duckdb -c \"SELECT id, bias FROM 'm-export/items.parquet' ORDER BY bias DESC LIMIT 5\"",
		Description: `Writes users.parquet, items.parquet, times.parquet (one row per index:
index, id, [start,] [bias,] f0..f{R-1}), core.parquet (p, q[, t], value; for
CP the superdiagonal of ones), for a model with time biases
user_time_bias.parquet and item_period_bias.parquet (user or item index,
period, bias) and header.json (global mean, clamp range, time bucketing,
settings, privacy report, and how the tables combine into a prediction), so
DuckDB, pandas or Spark read the model without dprec; every file written is
listed on stderr. A new DIR is created whole or not at all; files in an
existing DIR are replaced only with --force.`,
		Flags: []cli.Flag{
			forceFlag("replace existing files in DIR", ""),
		},
		Action: runWithOptions(exportOptionsOf, exportRun),
	}
}

// exportOptions are the arguments and flags of dprec export.
type exportOptions struct {
	globalOptions
	Model string // MODEL
	Dir   string // DIR
	Force bool   // --force
}

// exportOptionsOf reads export's arguments and flags.
func exportOptionsOf(c *cli.Context) (*exportOptions, error) {
	if c.NArg() != 2 {
		return nil, usagef("want a model file and an output directory: dprec export MODEL DIR")
	}
	return &exportOptions{globalOptions: globalOptionsOf(c), Model: c.Args().Get(0), Dir: c.Args().Get(1), Force: c.Bool("force")}, nil
}

// exportRun writes the model's tables into o.Dir and lists them on s.Err
// unless --quiet.
func exportRun(o *exportOptions, s *iostreams) error {
	dir := o.Dir
	f, err := models.Load(o.Model)
	if err != nil {
		return err
	}
	if err := models.Export(dir, f, o.Force); err != nil {
		return err
	}
	if !o.Quiet {
		for _, n := range models.ExportFilesOf(f) {
			fmt.Fprintln(s.Err, "wrote", filepath.Join(dir, n))
		}
	}
	return nil
}
