package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/dprec/dprec/data"
	"github.com/urfave/cli/v2"
)

// datasplitDefaultSeed seeds splits when no --seed is given, so that a
// split is reproducible by default.
const datasplitDefaultSeed = 1

func datastatsCmd() *cli.Command {
	return &cli.Command{
		Name:      "stats",
		Usage:     "print statistics of a rating log (sizes, density, observations per user/item/time, rating histogram)",
		UsageText: "dprec data stats [FILE] [--json] [input flags]",
		Description: "Without FILE the embedded synthetic default log is used (the one \"dprec data synth\" writes with\n" +
			"default flags). Text on stdout, or JSON with --json.",
		Flags: append([]cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print JSON instead of text"},
		}, dataLoadFlags()...),
		Action: runWithOptions(datastatsOptionsOf, datastatsRun),
	}
}

// datastatsOptions are the arguments and flags of dprec data stats.
type datastatsOptions struct {
	globalOptions
	File string           // FILE ("": the embedded synthetic default log)
	JSON bool             // --json
	Load data.LoadOptions // the input flags
}

// datastatsOptionsOf reads data stats' argument and flags (given in any
// order, dataArgs).
func datastatsOptionsOf(c *cli.Context) (*datastatsOptions, error) {
	args, err := dataArgs(c)
	if err != nil {
		return nil, err
	}
	if len(args) > 1 {
		return nil, cli.Exit("data stats takes at most one FILE", exitUsage)
	}
	o := &datastatsOptions{globalOptions: globalOptionsOf(c), JSON: c.Bool("json")}
	if len(args) == 1 {
		o.File = args[0]
	}
	if o.Load, err = dataLoadOptions(c); err != nil {
		return nil, err
	}
	return o, nil
}

// datastatsRun prints the statistics of o.File on ios.Out.
func datastatsRun(o *datastatsOptions, ios *iostreams) error {
	var (
		s   *data.Store
		rep *data.LoadReport
		err error
	)
	source := o.File
	if source == "" {
		source = "embedded synthetic default"
		if !o.Quiet {
			fmt.Fprintln(ios.Err, "no FILE given: using the embedded synthetic default log (see dprec data synth)")
		}
		s, _, err = data.DefaultSynth()
	} else {
		s, rep, err = loadLog(ios, o.globalOptions, source, o.Load)
	}
	if err != nil {
		return err
	}
	st := data.ComputeStats(s)
	if o.JSON {
		enc := json.NewEncoder(ios.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Source string           `json:"source"`
			Load   *data.LoadReport `json:"load,omitempty"`
			Stats  *data.Stats      `json:"stats"`
		}{source, rep, st})
	}
	fmt.Fprintf(ios.Out, "source        %s\n", source)
	return st.WriteText(ios.Out)
}

func datasplitCmd() *cli.Command {
	return &cli.Command{
		Name:      "split",
		Usage:     "split a rating log into train and test parts (random, per user, by time, or k folds)",
		UsageText: "dprec data split FILE --method random|user|time|kfold [--fraction F | --per-user-k K | --cutoff T | --k K] [--out-dir DIR | --train F --test F] [--force]",
		Description: "Methods:\n" +
			"  random  hold out a fraction (--fraction) of all observations, uniformly at random\n" +
			"  user    hold out --per-user-k observations (or --fraction) of every user; users with fewer than\n" +
			"          twice that many observations stay entirely in train\n" +
			"  time    hold out the latest --fraction of each user's observations, or with --cutoff every\n" +
			"          observation at or after that time (Unix seconds or YYYY-MM-DD[THH:MM:SSZ])\n" +
			"  kfold   --k folds; writes k train/test pairs\n" +
			"Parts are written in the input's format (or --out-format) with raw time stamps, as\n" +
			"DIR/NAME.train.EXT and DIR/NAME.test.EXT (kfold: NAME.foldI.train.EXT ...). Random methods use\n" +
			"--seed; without it the seed is " + strconv.Itoa(datasplitDefaultSeed) + " (printed), so a split is always reproducible.",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "method", Value: "random", Usage: "random, user, time or kfold"},
			&cli.Float64Flag{Name: "fraction", Value: 0.2, Usage: "test fraction (random, user, time)"},
			&cli.IntFlag{Name: "per-user-k", Usage: "user method: hold out this many observations per user (instead of --fraction)"},
			&cli.StringFlag{Name: "cutoff", Usage: "time method: test on everything at or after this time (Unix seconds or a date)"},
			&cli.IntFlag{Name: "k", Value: 5, Usage: "kfold: number of folds"},
			&cli.StringFlag{Name: "out-dir", Value: ".", Usage: "directory of the output files"},
			&cli.StringFlag{Name: "train", Usage: "training output file (not with kfold)"},
			&cli.StringFlag{Name: "test", Usage: "test output file (not with kfold)"},
			&cli.StringFlag{Name: "out-format", Usage: "output format: csv, tsv, dat, arrow, arrows or parquet (default: the input's)"},
			&cli.Uint64Flag{Name: "seed", Usage: "seed of the random split", DefaultText: strconv.Itoa(datasplitDefaultSeed)},
			forceFlag("overwrite existing files", ""),
			&cli.BoolFlag{Name: "json", Usage: "print the summary as JSON"},
		}, dataLoadFlags()...),
		Action: runWithOptions(datasplitOptionsOf, datasplitRun),
	}
}

// datasplitPart is one written part, for the summary.
type datasplitPart struct {
	Fold         int    `json:"fold,omitempty"`
	Part         string `json:"part"`
	Path         string `json:"path"`
	Observations int    `json:"observations"`
}

// dataParseTime parses a cut-off: Unix seconds or an ISO-8601 date.
func dataParseTime(s string) (int64, error) {
	if v, err := strconv.ParseInt(s, 10, 64); err == nil {
		return v, nil
	}
	for _, layout := range []string{time.RFC3339, "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.Unix(), nil
		}
	}
	return 0, fmt.Errorf("time %q: want Unix seconds or YYYY-MM-DD[THH:MM:SSZ]", s)
}

// datasplitOptions are the argument and flags of dprec data split.
type datasplitOptions struct {
	globalOptions
	File      string      // FILE
	Method    string      // --method: random, user, time or kfold
	Fraction  float64     // --fraction
	PerUserK  int         // --per-user-k
	Cutoff    *int64      // --cutoff (nil: none)
	K         int         // --k folds
	OutDir    string      // --out-dir
	Train     string      // --train ("": named after FILE under OutDir)
	Test      string      // --test (likewise)
	OutFormat data.Format // --out-format (FormatAuto: the input's)
	Seed      uint64      // --seed, or datasplitDefaultSeed when not SeedGiven
	SeedGiven bool
	Force     bool             // --force
	JSON      bool             // --json
	Load      data.LoadOptions // the input flags
}

// datasplitOptionsOf reads data split's argument and flags (in any order,
// dataArgs) and checks --method, --train/--test and --cutoff before any
// file is read.
func datasplitOptionsOf(c *cli.Context) (*datasplitOptions, error) {
	args, err := dataArgs(c)
	if err != nil {
		return nil, err
	}
	if len(args) != 1 {
		return nil, cli.Exit("data split needs exactly one FILE", exitUsage)
	}
	o := &datasplitOptions{globalOptions: globalOptionsOf(c), File: args[0], Method: c.String("method"),
		Fraction: c.Float64("fraction"), PerUserK: c.Int("per-user-k"), K: c.Int("k"), OutDir: c.String("out-dir"),
		Train: c.String("train"), Test: c.String("test"), Force: c.Bool("force"), JSON: c.Bool("json")}
	switch o.Method {
	case "random", "user", "time", "kfold":
	default:
		return nil, cli.Exit(fmt.Sprintf("--method %q: want random, user, time or kfold", o.Method), exitUsage)
	}
	if (c.IsSet("train") || c.IsSet("test")) && (o.Method == "kfold" || !c.IsSet("train") || !c.IsSet("test")) {
		return nil, cli.Exit("--train and --test go together, and not with --method kfold (use --out-dir)", exitUsage)
	}
	// Named outputs may not name one file (the test part would replace
	// the train part); checkIO has refused an output that is the input.
	if err := datasplitDistinct([]string{o.Train, o.Test}); err != nil {
		return nil, err
	}
	if c.IsSet("cutoff") {
		if o.Method != "time" {
			return nil, cli.Exit("--cutoff needs --method time", exitUsage)
		}
		cutoff, err := dataParseTime(c.String("cutoff"))
		if err != nil {
			return nil, cli.Exit("--cutoff: "+err.Error(), exitUsage)
		}
		o.Cutoff = &cutoff
	}
	if o.OutFormat, err = data.ParseFormat(c.String("out-format")); err != nil {
		return nil, err
	}
	o.Seed, o.SeedGiven = seedOf(c)
	if !o.SeedGiven {
		o.Seed = datasplitDefaultSeed
	}
	if o.Load, err = dataLoadOptions(c); err != nil {
		return nil, err
	}
	return o, nil
}

// datasplitRun splits o.File, writes the parts and lists them on ios.Out.
func datasplitRun(o *datasplitOptions, ios *iostreams) error {
	in, method, seed := o.File, o.Method, o.Seed
	if o.OutDir != "" && (o.Train == "" || o.Test == "") {
		// Made before the log is read, as the experiments make their
		// --out: a missing folder is created, one that cannot be is
		// refused before any work.
		if err := os.MkdirAll(o.OutDir, 0o755); err != nil {
			return fmt.Errorf("--out-dir: %w", err)
		}
	}
	opts := o.Load
	opts.Builder.KeepTimestamps = true
	s, rep, err := loadLog(ios, o.globalOptions, in, opts)
	if err != nil {
		return err
	}
	// The output format: --out-format, else the input's detected format.
	f := o.OutFormat
	if f == data.FormatAuto {
		f = data.FormatCSV
		if rep != nil && rep.Format != data.FormatAuto {
			f = rep.Format
		}
	}
	if method != "time" && !o.Quiet {
		note := ""
		if !o.SeedGiven {
			note = " (default; pass --seed for another split)"
		}
		fmt.Fprintf(ios.Err, "split seed %d%s\n", seed, note)
	}
	splits, err := datasplitSplits(o, s, rand.NewPCG(seed, seed))
	if err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	parts, stores := datasplitParts(o, s, f, splits)
	if err := datasplitWrite(o, ios, f, parts, stores); err != nil {
		return err
	}
	if o.JSON {
		enc := json.NewEncoder(ios.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Input  string          `json:"input"`
			Method string          `json:"method"`
			Seed   uint64          `json:"seed"`
			Parts  []datasplitPart `json:"parts"`
		}{in, method, seed, parts})
	}
	for _, p := range parts {
		fmt.Fprintf(ios.Out, "%-5s %9d observations  %s\n", p.Part, p.Observations, p.Path)
	}
	return nil
}

// datasplitSplits splits s by o.Method.
func datasplitSplits(o *datasplitOptions, s *data.Store, src rand.Source) ([]data.Split, error) {
	var sp data.Split
	var err error
	switch o.Method {
	case "random":
		sp, err = data.RandomSplit(s, o.Fraction, src)
	case "user":
		sp, err = data.PerUserSplit(s, o.PerUserK, o.Fraction, src)
	case "time":
		if o.Cutoff != nil {
			sp, err = data.CutoffSplit(s, *o.Cutoff)
		} else {
			sp, err = data.TimeSplit(s, o.Fraction)
		}
	case "kfold":
		return data.KFold(s, o.K, src)
	}
	return []data.Split{sp}, err
}

// datasplitParts names the output of every split's train and test part
// (--train/--test, else the input's base name, the part, the fold and
// format f under --out-dir) and returns them with their stores.
func datasplitParts(o *datasplitOptions, s *data.Store, f data.Format, splits []data.Split) ([]datasplitPart, []*data.Store) {
	base := filepath.Base(o.File)
	base = strings.TrimSuffix(base, ".gz")
	base = strings.TrimSuffix(base, filepath.Ext(base))
	var parts []datasplitPart
	var stores []*data.Store
	for i, sp := range splits {
		train, test := sp.Stores(s)
		for _, p := range []struct {
			name, path string
			st         *data.Store
		}{{"train", o.Train, train}, {"test", o.Test, test}} {
			path := p.path
			fold := 0
			if path == "" {
				name := base + "." + p.name + "." + string(f)
				if o.Method == "kfold" {
					fold = i + 1
					name = fmt.Sprintf("%s.fold%d.%s.%s", base, fold, p.name, f)
				}
				path = filepath.Join(o.OutDir, name)
			}
			parts = append(parts, datasplitPart{Fold: fold, Part: p.name, Path: path, Observations: p.st.NNZ()})
			stores = append(stores, p.st)
		}
	}
	return parts, stores
}

// datasplitDistinct refuses (exit 2) two paths that name one file: the
// same path after filepath.Clean, or the same file as data.CheckNotInput
// judges it (after filepath.Abs and filepath.EvalSymlinks, or by
// os.SameFile when both exist, so symbolic and hard links count). Writing
// two parts to one file would keep only the last part. Empty paths (a part
// named after the input) are skipped.
func datasplitDistinct(paths []string) error {
	for i, p := range paths {
		if p == "" {
			continue
		}
		for _, q := range paths[:i] {
			if q == "" {
				continue
			}
			if filepath.Clean(p) == filepath.Clean(q) || data.CheckNotInput(p, q) != nil {
				return cli.Exit(fmt.Sprintf("%s and %s name the same file; every part needs its own output (the later part would replace the earlier)", q, p), exitUsage)
			}
		}
	}
	return nil
}

// datasplitWrite checks every output path before anything is written
// (none may name the same file as another part; checkIO has refused a
// part that is the input), then writes the parts (a part named "-" on
// ios.Out).
func datasplitWrite(o *datasplitOptions, ios *iostreams, f data.Format, parts []datasplitPart, stores []*data.Store) error {
	force := o.Force
	paths := make([]string, len(parts))
	for i, p := range parts {
		paths[i] = p.Path
	}
	if err := datasplitDistinct(paths); err != nil {
		return err
	}
	if !force {
		for _, p := range parts {
			if _, err := os.Lstat(p.Path); err == nil {
				return fmt.Errorf("%s: %w", p.Path, data.ErrExists)
			}
		}
	}
	for i, p := range parts {
		pf := f
		named := (p.Part == "train" && o.Train != "") || (p.Part == "test" && o.Test != "")
		if o.OutFormat == data.FormatAuto && named && data.DetectFormat(p.Path) != data.FormatAuto {
			pf = data.DetectFormat(p.Path) // --train/--test name their format
		}
		if err := ios.saveLog(p.Path, stores[i], data.WriteOptions{Format: pf, Force: force}); err != nil {
			return err
		}
	}
	return nil
}

func dataconvertCmd() *cli.Command {
	return &cli.Command{
		Name:      "convert",
		Usage:     "convert a rating log between CSV, TSV, dat, Arrow IPC and Parquet",
		UsageText: "dprec data convert IN OUT [--out-format F] [--force] [input flags]",
		Description: "The output format comes from --out-format or OUT's name (.csv, .tsv, .dat, .arrow, .arrows,\n" +
			".parquet; .gz compresses text). Raw time stamps are kept, so entries, IDs and times survive\n" +
			"exactly. Repeated (user, item, time bucket) cells are merged by --duplicates (the count is\n" +
			"printed); use --duplicates error to refuse any merge. OUT \"-\" writes CSV to standard output.",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "out-format", Usage: "output format (default: from OUT's name, CSV when unknown)"},
			forceFlag("overwrite OUT", ""),
		}, dataLoadFlags()...),
		Action: runWithOptions(dataconvertOptionsOf, dataconvertRun),
	}
}

// dataconvertOptions are the arguments and flags of dprec data convert.
type dataconvertOptions struct {
	globalOptions
	In, Out   string           // IN, OUT ("-": the output stream)
	OutFormat data.Format      // --out-format (FormatAuto: from OUT's name)
	Force     bool             // --force
	Load      data.LoadOptions // the input flags
}

// dataconvertOptionsOf reads data convert's arguments and flags (in any
// order, dataArgs).
func dataconvertOptionsOf(c *cli.Context) (*dataconvertOptions, error) {
	args, err := dataArgs(c)
	if err != nil {
		return nil, err
	}
	if len(args) != 2 {
		return nil, cli.Exit("data convert needs IN and OUT", exitUsage)
	}
	o := &dataconvertOptions{globalOptions: globalOptionsOf(c), In: args[0], Out: args[1], Force: c.Bool("force")}
	if o.OutFormat, err = data.ParseFormat(c.String("out-format")); err != nil {
		return nil, err
	}
	if o.Load, err = dataLoadOptions(c); err != nil {
		return nil, err
	}
	return o, nil
}

// dataconvertRun reads o.In and writes it to o.Out.
func dataconvertRun(o *dataconvertOptions, ios *iostreams) error {
	in, out := o.In, o.Out
	if out != "-" && !o.Force {
		if _, err := os.Lstat(out); err == nil {
			return fmt.Errorf("%s: %w", out, data.ErrExists)
		} else if !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	opts := o.Load
	opts.Builder.KeepTimestamps = true
	s, _, err := loadLog(ios, o.globalOptions, in, opts)
	if err != nil {
		return err
	}
	if err := ios.saveLog(out, s, data.WriteOptions{Format: o.OutFormat, Force: o.Force}); err != nil {
		return err
	}
	if !o.Quiet && out != "-" {
		fmt.Fprintf(ios.Err, "wrote %d observations to %s\n", s.NNZ(), out)
	}
	return nil
}
