package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// notPathFlags are the string flags that never name a file (enums, ids,
// times, sizes, lists of values, network addresses); notPathIn adds the
// names that are a path in some commands but not in these.
var (
	notPathFlags = []string{
		"format", "columns", "delimiter", "header", "time-unit", "duplicates", "max-line", "max-memory",
		"method", "ranking", "cutoff", "out-format", "kind", "ranks", "scale", "start", "time", "user", "item", "grid",
		"solver", "clamp", "time-biases", "privacy", "protect", "dp-sgd", "mechanism", "calibration",
		"accounting", "privacy-unit", "time-from", "time-to", "objective", "confidence", "only", "fractions",
		"sizes", "threads", "datasets", "epsilons", "modes", "ns", "listen", "aggregator", "noise", "job",
		"estimator", "budget-split", "metric", "lists", "als-positions",
	}
	notPathIn = map[string][]string{
		"dprec train":               {"model"},
		"dprec tune":                {"model"},
		"dprec spectral":            {"model"},
		"dprec cape aggregate":      {"model"},
		"dprec experiment spectral": {"model"},
	}
)

// walkCommands calls fn with the path of every command that runs an
// action.
func walkCommands(cmds []*cli.Command, parent string, fn func(path string, c *cli.Command)) {
	for _, c := range cmds {
		path := parent + " " + c.Name
		if c.Action != nil {
			fn(path, c)
		}
		walkCommands(c.Subcommands, path, fn)
	}
}

// stringFlag reports whether f takes a string value (which may be a path).
func stringFlag(f cli.Flag) bool {
	switch f.(type) {
	case *cli.StringFlag, *cli.StringSliceFlag, *cli.PathFlag, *cli.GenericFlag:
		return true
	}
	return false
}

// TestIOFlagsClassified walks the whole command tree: every command is in
// ioFlags, every string flag is declared there as a path (input, output
// or output directory) or known not to be one, every positional argument
// is declared, and ioFlags names nothing a command lacks. A new command or
// path flag therefore cannot miss checkIO (issue 24 item 5).
func TestIOFlagsClassified(t *testing.T) {
	seen := map[string]bool{}
	walkCommands(commandList(), "dprec", func(path string, c *cli.Command) {
		seen[path] = true
		spec, ok := ioFlags[path]
		if !ok {
			t.Errorf("%s: not in ioFlags (iocheck.go): declare its input and output paths", path)
			return
		}
		paths := append(append(slices.Clone(spec.in), spec.out...), spec.dir)
		for _, f := range c.Flags {
			if !stringFlag(f) {
				continue
			}
			name := f.Names()[0]
			path2 := slices.Contains(paths, name)
			notPath := slices.Contains(notPathFlags, name) || slices.Contains(notPathIn[path], name)
			switch {
			case !path2 && !notPath:
				t.Errorf("%s --%s: neither a path in ioFlags (iocheck.go) nor in notPathFlags (iocheck_test.go)", path, name)
			case path2 && notPath:
				t.Errorf("%s --%s: both a path in ioFlags and in notPathFlags", path, name)
			}
		}
		for _, n := range paths {
			if n != "" && !slices.Contains(spec.args, n) && flagDef(c.Flags, n) == nil {
				t.Errorf("%s: ioFlags names %q, which is neither a flag nor in its args", path, n)
			}
		}
		if takesArgs(c) != (len(spec.args) > 0) {
			t.Errorf("%s: takes positional arguments %v, ioFlags declares %v", path, takesArgs(c), spec.args)
		}
		for _, a := range spec.args {
			if !slices.Contains(paths, a) {
				t.Errorf("%s: argument %s is neither an input nor an output", path, a)
			}
		}
		if (spec.dir == "") != (spec.dirFiles == nil) {
			t.Errorf("%s: an output directory needs the patterns of the files written there (dirFiles)", path)
		}
	})
	for path := range ioFlags {
		if !seen[path] {
			t.Errorf("ioFlags lists %q, which is not a command", path)
		}
	}
}

// TestEveryCommandRefusesOutputOntoInput runs every command that has both
// input and output paths with each output onto each input: the same path,
// a symbolic link and a hard link to the input (for an output directory, a
// link in it under a name the command writes). Each run is a usage error
// (exit 2) that says why, and the input stays byte for byte (issue 24
// items 4 and 5).
func TestEveryCommandRefusesOutputOntoInput(t *testing.T) {
	const content = "user,item,rating\n1,2,3\n"
	runs := 0
	walkCommands(commandList(), "dprec", func(path string, c *cli.Command) {
		spec := ioFlags[path]
		outs := slices.Clone(spec.out)
		if spec.dir != "" {
			outs = append(outs, spec.dir)
		}
		for _, inName := range spec.in {
			for _, outName := range outs {
				for _, variant := range []string{"same path", "symbolic link", "hard link"} {
					dir := t.TempDir()
					in := filepath.Join(dir, "in.csv")
					out := in
					if outName == spec.dir {
						out = filepath.Join(dir, "outdir")
						if err := os.Mkdir(out, 0o755); err != nil {
							t.Fatal(err)
						}
						if variant == "same path" {
							fixed := spec.dirFiles(nil)
							if len(fixed) == 0 {
								continue // names follow the input (data split)
							}
							in = filepath.Join(out, strings.ReplaceAll(fixed[0], "*", "1"))
						}
					}
					if err := os.WriteFile(in, []byte(content), 0o644); err != nil {
						t.Fatal(err)
					}
					args := ioTestArgs(path, c, spec, inName, in, outName, out)
					if variant != "same path" {
						link := filepath.Join(dir, "link.csv")
						if outName == spec.dir {
							link = filepath.Join(out, strings.ReplaceAll(spec.dirFiles(args.pos)[0], "*", "1"))
						} else {
							args = ioTestArgs(path, c, spec, inName, in, outName, link)
						}
						var err error
						if variant == "hard link" {
							err = os.Link(in, link)
						} else {
							err = os.Symlink(in, link)
						}
						if err != nil {
							t.Fatal(err)
						}
					}
					_, errs, code := cliRun(t, args.all...)
					runs++
					if code != exitUsage || !strings.Contains(errs, "the output is an input") {
						t.Errorf("%s, output --%s onto input %s (%s): exit %d, want %d\n%v\n%s", path, outName, inName, variant, code, exitUsage, args.all, errs)
					}
					if b, err := os.ReadFile(in); err != nil || string(b) != content {
						t.Errorf("%s, output %s onto input %s (%s): the input was changed (%v)", path, outName, inName, variant, err)
					}
				}
			}
		}
	})
	if runs < 60 {
		t.Errorf("only %d runs: the walk lost commands", runs)
	}
}

// ioTestCmd is a command line built by ioTestArgs: all its arguments and
// the positional ones.
type ioTestCmd struct{ all, pos []string }

// ioTestArgs builds a command line for path with input inName = in and
// output outName = out, the other required flags and arguments filled with
// placeholders (checkIO runs before any other check) and --force.
func ioTestArgs(path string, c *cli.Command, spec ioSpec, inName, in, outName, out string) ioTestCmd {
	args := strings.Fields(path)[1:]
	value := func(name, v string) string {
		if slices.Contains(selectFlags, name) {
			return v + ":train"
		}
		return v
	}
	for _, f := range c.Flags {
		name := f.Names()[0]
		if rf, ok := f.(cli.RequiredFlag); ok && rf.IsRequired() && name != inName && name != outName {
			args = append(args, "--"+name, "1")
		}
	}
	if flagDef(c.Flags, "force") != nil {
		args = append(args, "--force")
	}
	var pos []string
	for _, a := range spec.args {
		switch a {
		case inName:
			pos = append(pos, in)
		case outName:
			pos = append(pos, out)
		default:
			pos = append(pos, "x")
		}
	}
	for _, p := range [][2]string{{inName, in}, {outName, out}} {
		if !slices.Contains(spec.args, p[0]) {
			args = append(args, "--"+p[0], value(p[0], p[1]))
		}
	}
	return ioTestCmd{all: append(args, pos...), pos: pos}
}

// TestIOCheckEdges: two outputs naming one file, an output inside an input
// directory and "-" (standard input and output).
func TestIOCheckEdges(t *testing.T) {
	dir := t.TempDir()
	docs := filepath.Join(dir, "docs")
	if err := os.Mkdir(docs, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	for _, tc := range []struct {
		args string
		code int
		want string
	}{
		{"data synth --out a.csv --truth ./a.csv", exitUsage, "--out a.csv and --truth ./a.csv name the same file"},
		{"spectral --corpus docs --topics 2 --out docs/r.json", exitUsage, "in the directory --corpus docs"},
		{"spectral --corpus docs --topics 2 --doc-topics " + filepath.Join(docs, "t.csv"), exitUsage, "in the directory --corpus docs"},
		// "-" is never an input clash: the missing model is the error.
		{"predict -m absent.arrow --input - --out -", exitError, "absent.arrow"},
	} {
		_, errs, code := cliRun(t, strings.Fields(tc.args)...)
		if code != tc.code || !strings.Contains(errs, tc.want) {
			t.Errorf("%s: exit %d, want %d with %q\n%s", tc.args, code, tc.code, tc.want, errs)
		}
	}
	if ents, _ := os.ReadDir(docs); len(ents) != 0 || fileExists("a.csv") {
		t.Errorf("a refused command wrote a file")
	}
}

func fileExists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}
