package main

import (
	"fmt"
	"io"
	"math"
	"runtime"
	"strconv"
	"strings"

	"github.com/dprec/dprec/data"
	"github.com/urfave/cli/v2"
)

// dataLoadFlags are the input flag group: the flags that control how a
// rating log is read. Every command that loads a rating log (data
// stats/split/convert, train, eval, predict, ...) includes them, parses
// them once with dataLoadOptions into its options (a data.LoadOptions) and
// loads with loadLog.
func dataLoadFlags() []cli.Flag {
	const cat = "Input"
	return []cli.Flag{
		&cli.StringFlag{Name: "format", Category: cat, Usage: "input format: csv, tsv, dat, arrow, arrows or parquet (default: from the file name, then the content)"},
		&cli.StringFlag{Name: "columns", Category: cat, Usage: `column roles: a role list for headerless files ("user,item,rating,time", "-" skips a column) or a name mapping ("user=uid,item=mid,rating=stars,time=ts"); a list without rating, or rating=-, reads a log without ratings (every row counts 1)`},
		&cli.StringFlag{Name: "delimiter", Category: cat, Usage: `field delimiter for text input: ",", "\t" (or "tab"), "::", ";", "|" or " " (default: detected)`},
		&cli.StringFlag{Name: "header", Category: cat, Value: "auto", Usage: "whether text input has a header row: auto, yes or no"},
		&cli.StringFlag{Name: "time-unit", Category: cat, Value: "day", Usage: "time bucket of the time mode: hour, day, week, month or none (2-way user x item store)"},
		&cli.StringFlag{Name: "duplicates", Category: cat, Value: "last", Usage: "repeated (user, item, time bucket) cells: last, mean, sum or error (train's implicit objective: sum unless given)"},
		&cli.BoolFlag{Name: "skip-invalid", Category: cat, Usage: "skip malformed rows (counted, first reasons shown) instead of failing"},
		&cli.IntFlag{Name: "threads", Category: cat, Usage: "parsing threads", DefaultText: "number of CPUs"},
		&cli.StringFlag{Name: "max-line", Category: cat, Value: "1MiB", Usage: "longest line of text input (longer lines are malformed rows): bytes, or with a unit (KiB, MiB, GiB)"},
		&cli.StringFlag{Name: "max-memory", Category: cat, Usage: "refuse a load, or a train or tune run, whose memory estimate exceeds this: bytes with a unit (e.g. 8GiB, 500MiB), or \"none\"", DefaultText: "half of the physical memory"},
	}
}

// dataParseBytes parses a byte count: an integer with an optional unit,
// binary (K, KiB, M, MiB, G, GiB, T, TiB) or decimal (KB, MB, GB, TB).
func dataParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := len(t)
	for i > 0 && (t[i-1] < '0' || t[i-1] > '9') {
		i--
	}
	num, unit := strings.TrimSpace(t[:i]), strings.ToLower(strings.TrimSpace(t[i:]))
	mul := map[string]int64{"": 1, "b": 1,
		"k": 1 << 10, "kib": 1 << 10, "kb": 1e3,
		"m": 1 << 20, "mib": 1 << 20, "mb": 1e6,
		"g": 1 << 30, "gib": 1 << 30, "gb": 1e9,
		"t": 1 << 40, "tib": 1 << 40, "tb": 1e12}[unit]
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || mul == 0 || n <= 0 || n > math.MaxInt64/mul {
		return 0, fmt.Errorf("%q is not a positive byte count (e.g. 1048576, 512KiB, 8GiB)", s)
	}
	return n * mul, nil
}

// dataLoadOptions turns the flags of dataLoadFlags into load options.
func dataLoadOptions(c *cli.Context) (data.LoadOptions, error) {
	var o data.LoadOptions
	var err error
	if o.Format, err = data.ParseFormat(c.String("format")); err != nil {
		return o, fmt.Errorf("--format: %w", err)
	}
	if o.Columns, err = dataParseColumns(c.String("columns")); err != nil {
		return o, err
	}
	o.Delimiter = c.String("delimiter")
	switch strings.ToLower(o.Delimiter) {
	case "tab", `\t`:
		o.Delimiter = "\t"
	case "space":
		o.Delimiter = " "
	case "comma":
		o.Delimiter = ","
	}
	switch h := strings.ToLower(c.String("header")); h {
	case "", "auto", "yes", "no":
		o.Header = h
	case "true":
		o.Header = "yes"
	case "false":
		o.Header = "no"
	default:
		return o, fmt.Errorf("--header %q: want auto, yes or no", h)
	}
	if o.Builder.TimeUnit, err = data.ParseTimeUnit(c.String("time-unit")); err != nil {
		return o, fmt.Errorf("--time-unit: %w", err)
	}
	if o.Builder.Duplicates, err = data.ParseDuplicatePolicy(c.String("duplicates")); err != nil {
		return o, fmt.Errorf("--duplicates: %w", err)
	}
	o.SkipInvalid = c.Bool("skip-invalid")
	o.Threads = c.Int("threads")
	if o.Threads < 0 {
		return o, fmt.Errorf("--threads %d: must be at least 0", o.Threads)
	}
	if o.Threads == 0 {
		o.Threads = runtime.GOMAXPROCS(0)
	}
	if s := c.String("max-line"); s != "" {
		n, err := dataParseBytes(s)
		if err != nil || n > math.MaxInt32 {
			return o, cli.Exit(fmt.Sprintf("--max-line %s: want a byte count below 2GiB", s), exitUsage)
		}
		o.MaxLine = int(n)
	}
	if o.MaxMemory, err = parseMaxMemory(c.String("max-memory")); err != nil {
		return o, cli.Exit("--max-memory: "+err.Error(), exitUsage)
	}
	return o, nil
}

// parseMaxMemory parses a --max-memory value (of the input flags, and of
// spectral) as data.LoadOptions.MaxMemory: 0 for "" (the default limit),
// -1 for "none" or "unlimited" (no limit), else a byte count
// (dataParseBytes).
func parseMaxMemory(v string) (int64, error) {
	switch s := strings.ToLower(v); s {
	case "":
		return 0, nil
	case "none", "unlimited":
		return -1, nil
	default:
		return dataParseBytes(s)
	}
}

// dataParseColumns parses --columns: either a role list in file order
// ("user,item,rating,time") or a name mapping ("user=uid,item=mid").
func dataParseColumns(s string) (data.Columns, error) {
	var cols data.Columns
	s = strings.TrimSpace(s)
	if s == "" {
		return cols, nil
	}
	parts := strings.Split(s, ",")
	if strings.Contains(s, "=") {
		for _, p := range parts {
			role, name, ok := strings.Cut(p, "=")
			role, name = strings.ToLower(strings.TrimSpace(role)), strings.TrimSpace(name)
			if !ok || name == "" {
				return cols, fmt.Errorf("--columns %q: %q is not role=name", s, p)
			}
			switch role {
			case "user":
				cols.User = name
			case "item":
				cols.Item = name
			case "rating":
				cols.Rating = name
			case "time":
				cols.Time = name
			default:
				return cols, fmt.Errorf("--columns %q: unknown role %q (want user, item, rating or time)", s, role)
			}
		}
		return cols, nil
	}
	seen := map[string]bool{}
	for _, p := range parts {
		role := strings.ToLower(strings.TrimSpace(p))
		switch role {
		case "user", "item", "rating", "time":
			if seen[role] {
				return cols, fmt.Errorf("--columns %q: role %q given twice", s, role)
			}
			seen[role] = true
		case "-", "":
			role = "-"
		default:
			return cols, fmt.Errorf("--columns %q: unknown role %q (want user, item, rating, time or -)", s, p)
		}
		cols.Order = append(cols.Order, role)
	}
	// Without a rating column every row counts 1 (implicit feedback).
	for _, r := range []string{"user", "item"} {
		if !seen[r] {
			return cols, fmt.Errorf("--columns %q: no %s column", s, r)
		}
	}
	return cols, nil
}

// loadLog loads the rating log at path with opts (the input flags group,
// parsed by dataLoadOptions), showing a progress bar on s, and prints what
// was detected, skipped and merged on s.Err unless g.Quiet.
func loadLog(s *iostreams, g globalOptions, path string, opts data.LoadOptions) (*data.Store, *data.LoadReport, error) {
	bar := s.bar(g, -1, "loading "+path)
	opts.Progress = func(done, total int64) {
		if total > 0 && bar.GetMax64() != total {
			bar.ChangeMax64(total)
		}
		_ = bar.Set64(done)
	}
	st, rep, err := data.Load(path, opts)
	_ = bar.Finish()
	if err != nil {
		return nil, rep, err
	}
	if !g.Quiet {
		dataPrintReport(s.Err, rep)
	}
	return st, rep, nil
}

// dataPrintReport prints the notes of a load report on w (the error stream).
func dataPrintReport(w io.Writer, rep *data.LoadReport) {
	if len(rep.Detected) > 0 {
		fmt.Fprintf(w, "%s: %s\n", rep.Path, strings.Join(rep.Detected, "; "))
	}
	if rep.Skipped > 0 {
		fmt.Fprintf(w, "%s: skipped %d malformed rows of %d", rep.Path, rep.Skipped, rep.Rows)
		if len(rep.SkipReasons) > 0 {
			fmt.Fprintf(w, "; first reasons:\n")
			for _, r := range rep.SkipReasons {
				fmt.Fprintf(w, "  %s\n", r)
			}
		} else {
			fmt.Fprintln(w)
		}
	}
	if rep.Duplicates.Cells > 0 {
		fmt.Fprintf(w, "%s: %d cells observed more than once; %d duplicate rows merged\n",
			rep.Path, rep.Duplicates.Cells, rep.Duplicates.Dropped)
	}
}

// dataArgs returns the positional arguments of c after applying any flags
// that follow them: urfave/cli stops parsing flags at the first positional
// argument, but "dprec data split FILE --method time" should work. Flags of
// the command and global flags are recognised; "--" ends flag parsing.
func dataArgs(c *cli.Context) ([]string, error) {
	args := c.Args().Slice()
	var pos []string
	flags := append(append([]cli.Flag(nil), c.Command.Flags...), c.App.Flags...)
	lookup := func(name string) cli.Flag {
		for _, f := range flags {
			for _, n := range f.Names() {
				if n == name {
					return f
				}
			}
		}
		return nil
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			pos = append(pos, a)
			continue
		}
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		f := lookup(name)
		if f == nil {
			return nil, cli.Exit(fmt.Sprintf("flag provided but not defined: %s", a), exitUsage)
		}
		if _, isBool := f.(*cli.BoolFlag); isBool && !hasVal {
			val = "true"
		} else if !hasVal {
			if i+1 >= len(args) {
				return nil, cli.Exit(fmt.Sprintf("flag needs an argument: %s", a), exitUsage)
			}
			i++
			val = args[i]
		}
		var err error
		for _, cc := range c.Lineage() {
			if err = cc.Set(name, val); err == nil {
				break
			}
		}
		if err != nil {
			return nil, cli.Exit(fmt.Sprintf("invalid value %q for flag %s: %v", val, a, err), exitUsage)
		}
	}
	return pos, nil
}
