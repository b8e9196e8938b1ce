package main

// No output may be an input.
//
// Every command declares in ioFlags which of its flags and positional
// arguments name files it reads and which name files it writes, and one
// check, checkIO, runs for every command before its action (installHooks
// in main.go), with or without --force: an output that is the same file as
// an input (the same path after filepath.Abs and filepath.EvalSymlinks, or
// the same file by os.SameFile, so symbolic and hard links count), an
// output inside an input directory (a text corpus reads every file there),
// a file an output directory would receive that is an input, and two
// outputs naming one file are usage errors (exit 2), reported before
// anything is read or written. "-" (standard input or output) never
// clashes. TestIOFlagsClassified fails when a command has a string flag or
// a positional argument that is neither declared here nor known not to be
// a path, so a new command or flag cannot skip the check.

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/models"
	"github.com/urfave/cli/v2"
)

// ioSpec declares the path flags and arguments of one command. Names are
// flag names, or the words of args for positional arguments.
type ioSpec struct {
	args []string // positional arguments in order, e.g. IN, OUT
	in   []string // files (or directories) the command reads
	out  []string // files the command writes
	// dir names an output directory; dirFiles returns the patterns
	// (filepath.Match, relative to the directory) of the files the command
	// writes there, given the positional arguments.
	dir      string
	dirFiles func(args []string) []string
}

// selectFlags hold FILE:VALUE; the file before the last colon is read.
var selectFlags = []string{"select", "heldout-select"}

// ioFlags lists the path flags and arguments of every command, by path.
var ioFlags = map[string]ioSpec{
	"dprec cape keys":      {dir: "dir", dirFiles: fixedFiles("aggregator.json", "noise.json", "site-*.json")},
	"dprec cape aggregate": {in: []string{"keys"}, out: []string{"out"}},
	"dprec cape noise":     {in: []string{"keys"}},
	"dprec cape site":      {in: []string{"keys", "data", "corpus", "vocab"}},
	"dprec data stats":     {args: []string{"FILE"}, in: []string{"FILE"}},
	"dprec data split": {args: []string{"FILE"}, in: []string{"FILE"}, out: []string{"train", "test"},
		dir: "out-dir", dirFiles: splitFiles},
	"dprec data convert":                    {args: []string{"IN", "OUT"}, in: []string{"IN"}, out: []string{"OUT"}},
	"dprec data synth":                      {out: []string{"out", "truth"}},
	"dprec eval":                            {in: []string{"model", "data", "train"}},
	"dprec experiment cape":                 {in: []string{"real-ratings"}, dir: "out", dirFiles: fixedFiles("pca_*.csv", "pca_*.png", "agn_*.csv", "agn_*.png")},
	"dprec experiment completion-synthetic": {out: []string{"out", "plot"}},
	"dprec experiment completion-speed":     {out: []string{"out"}},
	"dprec experiment completion-privacy":   {in: []string{"ratings"}, dir: "out", dirFiles: fixedFiles("completion_privacy.csv", "completion_privacy_*.png")},
	"dprec experiment spectral":             {dir: "out", dirFiles: fixedFiles("*.csv", "*.png")},
	"dprec export":                          {args: []string{"MODEL", "DIR"}, in: []string{"MODEL"}, dir: "DIR", dirFiles: fixedFiles(models.ExportFileNames()...)},
	"dprec inspect":                         {args: []string{"MODEL"}, in: []string{"MODEL"}},
	"dprec pca":                             {in: []string{"data"}, out: []string{"out"}},
	"dprec predict":                         {in: []string{"model", "input", "ratings", "user-log"}, out: []string{"out"}},
	"dprec recommend":                       {in: []string{"model", "exclude-rated", "items", "ratings"}, out: []string{"out"}},
	"dprec similar":                         {in: []string{"model"}},
	"dprec spectral":                        {in: []string{"corpus", "vocab", "select", "stop-words"}, out: []string{"out", "doc-topics"}},
	"dprec spectral infer":                  {in: []string{"model", "corpus", "vocab"}, out: []string{"out"}},
	"dprec spectral eval":                   {in: []string{"model", "corpus", "vocab", "select", "heldout", "heldout-vocab", "heldout-select", "labels"}},
	"dprec train":                           {in: []string{"data", "items"}, out: []string{"out"}},
	"dprec tune":                            {in: []string{"data"}, out: []string{"out"}},
}

// fixedFiles returns a dirFiles of fixed patterns.
func fixedFiles(patterns ...string) func([]string) []string {
	return func([]string) []string { return patterns }
}

// splitFiles are the parts data split names after FILE under --out-dir
// (datasplitParts), in any output format.
func splitFiles(args []string) []string {
	if len(args) == 0 {
		return nil
	}
	base := strings.TrimSuffix(filepath.Base(args[0]), ".gz")
	base = strings.TrimSuffix(base, filepath.Ext(base))
	var out []string
	for _, part := range []string{"train", "test"} {
		out = append(out, base+"."+part+".*", base+".fold*."+part+".*")
	}
	return out
}

// ioPath is one path of a command line and how it was given.
type ioPath struct {
	label string // "--out", "OUT"
	path  string
}

func (p ioPath) String() string { return p.label + " " + p.path }

// checkIO runs the check described at the top of this file for the
// command at path.
func checkIO(c *cli.Context, path string) error {
	spec, ok := ioFlags[path]
	if !ok {
		return nil
	}
	var args []string
	if len(spec.args) > 0 {
		var err error
		if args, err = ioArgs(c); err != nil {
			return err
		}
	}
	ins, outs := spec.paths(c, args, spec.in), spec.paths(c, args, spec.out)
	for i, o := range outs {
		for _, q := range outs[:i] {
			if sameFile(o.path, q.path) {
				return cli.Exit(fmt.Sprintf("%s and %s name the same file: every output needs its own", q, o), exitUsage)
			}
		}
		for _, in := range ins {
			if err := notInput(o, in); err != nil {
				return err
			}
		}
	}
	if spec.dir == "" {
		return nil
	}
	for _, d := range spec.paths(c, args, []string{spec.dir}) {
		ents, err := os.ReadDir(d.path)
		if err != nil {
			continue // not there yet: nothing in it can be an input
		}
		for _, e := range ents {
			if !slices.ContainsFunc(spec.dirFiles(args), func(p string) bool { ok, _ := filepath.Match(p, e.Name()); return ok }) {
				continue
			}
			o := ioPath{fmt.Sprintf("%s (writes %s there)", d, e.Name()), filepath.Join(d.path, e.Name())}
			for _, in := range ins {
				if err := notInput(o, in); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// ioArgs returns the positional arguments (the data commands also take
// flags after them: dataArgs).
func ioArgs(c *cli.Context) ([]string, error) {
	if slices.Contains(argCommands, c.Command.Name) {
		return dataArgs(c)
	}
	return c.Args().Slice(), nil
}

// paths returns the non-empty paths the flags or arguments names hold,
// leaving out "-".
func (s ioSpec) paths(c *cli.Context, args []string, names []string) []ioPath {
	var out []ioPath
	add := func(label, v string) {
		if v != "" && v != "-" {
			out = append(out, ioPath{label, v})
		}
	}
	for _, n := range names {
		if i := slices.Index(s.args, n); i >= 0 {
			if i < len(args) {
				add(n, args[i])
			}
			continue
		}
		if _, ok := flagDef(c.Command.Flags, n).(*cli.StringSliceFlag); ok {
			for _, v := range c.StringSlice(n) {
				add("--"+n, v)
			}
			continue
		}
		v := c.String(n)
		if slices.Contains(selectFlags, n) {
			i := strings.LastIndex(v, ":")
			if i <= 0 {
				continue // malformed: the command says so
			}
			v = v[:i]
		}
		add("--"+n, v)
	}
	return out
}

// notInput refuses an output that is the input in, or lies in the input
// directory in.
func notInput(o, in ioPath) error {
	if sameFile(o.path, in.path) {
		return cli.Exit(fmt.Errorf("%s: %w (it is %s)", o, data.ErrOutputIsInput, in), exitUsage)
	}
	if st, err := os.Stat(in.path); err == nil && st.IsDir() && sameFile(filepath.Dir(o.path), in.path) {
		return cli.Exit(fmt.Errorf("%s: %w (it is in the directory %s, whose every file is read)", o, data.ErrOutputIsInput, in), exitUsage)
	}
	return nil
}

// sameFile reports whether two paths name one file: the same path after
// Abs and EvalSymlinks, or the same existing file (hard links).
func sameFile(a, b string) bool {
	return data.CheckNotInput(a, b) != nil
}
